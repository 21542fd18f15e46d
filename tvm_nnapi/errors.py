# SPDX-License-Identifier: Apache-2.0
"""Exceptions raised by tvm_nnapi: one hierarchy under :class:`NnapiBackendError`.

    NnapiBackendError (RuntimeError)
    ├── CodegenError                 a subgraph cannot be lowered (names subgraph and operator)
    │   └── UnsupportedShapeError    + ValueError: a shape the graph JSON cannot express
    ├── ModelLoadError               + ValueError: a MODEL argument cannot be loaded
    ├── WeightError                  + ValueError: a checkpoint does not fit the model
    ├── ReportError                  + ValueError: a differential report cannot be read
    ├── CalibrationError             + ValueError: a measurement row or file cannot be used
    ├── ToolError                    the tool itself failed on valid input (the CLI exits 3)
    └── TargetUnavailableError       a test target cannot be used here

The second bases are those the classes had before they joined the hierarchy, kept so that
``except ValueError`` still catches them. Each class stays importable from the module that
raises it (``tvm_nnapi.tools.sources.ModelLoadError``, ``tvm_nnapi.llm.WeightError``, ...).
The mock's own errors (``mock_nnapi.NnapiError``, ...) belong to the mock_nnapi package, which
does not depend on tvm_nnapi.
"""

from __future__ import annotations

import re

_CODEGEN_MESSAGE = re.compile(r"NNAPI codegen of subgraph '(.*?)', operator (.*?): (.*)", re.S)


class NnapiBackendError(RuntimeError):
    """Base class of tvm_nnapi errors."""


class CodegenError(NnapiBackendError):
    """A partitioned subgraph cannot be lowered to NNAPI; the message names the operator.

    ``CodegenError(message)`` re-creates the error from its message alone: tvm-ffi does that
    when an error raised in the codegen (which ``RunCodegen`` calls from C++) reaches Python
    again, so ``tvm_nnapi.build`` raises the same class with the same fields.
    """

    def __init__(self, subgraph: str, operator: str | None = None, reason: str | None = None):
        if operator is None and reason is None:
            message = subgraph
            match = _CODEGEN_MESSAGE.fullmatch(message)
            subgraph, operator, reason = match.groups() if match else ("", "", message)
        else:
            message = f"NNAPI codegen of subgraph '{subgraph}', operator {operator}: {reason}"
        self.subgraph = subgraph
        self.operator = operator
        self.reason = reason
        super().__init__(message)


class UnsupportedShapeError(CodegenError, ValueError):
    """A shape expression cannot be expressed in the graph JSON.

    The graph JSON builder raises it with the expression only (``subgraph`` is empty); the
    codegen raises it again naming the subgraph and the operator whose shape it is.
    """


class ModelLoadError(NnapiBackendError, ValueError):
    """A MODEL argument cannot be loaded; the message names the file, node or symbol at fault."""


class WeightError(NnapiBackendError, ValueError):
    """A checkpoint does not fit the model: a tensor is missing or has the wrong shape."""


class ReportError(NnapiBackendError, ValueError):
    """A report file that cannot be read (names the file and what is wrong)."""


class CalibrationError(NnapiBackendError, ValueError):
    """A measurement file, row or profile the calibration cannot use (the message names it)."""


class UsageError(NnapiBackendError, ValueError):
    """Bad input to a command (an option, a file, a name): the CLI prints one line and exits 2."""


class ToolError(NnapiBackendError):
    """A step of a command failed inside the tool although its input was accepted (an internal
    error, not the user's to fix): the message says which step, on which model, and carries the
    original error; the CLI prints one line and exits 3. Deliberately not a ValueError, so that
    the internal error it wraps is never reported as bad input (exit 2)."""


class TargetUnavailableError(NnapiBackendError):
    """A target cannot be used here; the message says what is missing and how to provide it."""


class TargetError(NnapiBackendError):
    """Work on a target failed there (its NNAPI refused a model, the runtime raised): the
    message says what was being done and carries the target's own message."""


_REMOTE_PREFIXES = re.compile(r"^(?:\s*(?:RPCError|Error caught from RPC call):?\s*)+")


def target_failure(error: BaseException, what: str) -> TargetError:
    """A :class:`TargetError` for ``error`` raised while doing ``what`` on a target, without
    the RPC layer's wrapping (``RPCError: Error caught from RPC call: ...``)."""
    message = _REMOTE_PREFIXES.sub("", str(error)).strip()
    return TargetError(f"{what}: {message}")
