"""Exceptions raised by tvm_nnapi."""

from __future__ import annotations


class NnapiBackendError(RuntimeError):
    """Base class of tvm_nnapi errors."""


class CodegenError(NnapiBackendError):
    """A partitioned subgraph cannot be lowered to NNAPI; the message names the operator."""

    def __init__(self, subgraph: str, operator: str, reason: str) -> None:
        self.subgraph = subgraph
        self.operator = operator
        self.reason = reason
        super().__init__(f"NNAPI codegen of subgraph '{subgraph}', operator {operator}: {reason}")
