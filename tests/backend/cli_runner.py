# SPDX-License-Identifier: Apache-2.0
"""Running the real ``tvm-nnapi`` command line in a fresh process, for the CLI tests: device
profiles, injected faults and the NNAPI library are per process.

A plain call (no ``setup``; an ``env`` of the runtime's options only) runs in a process forked
from a server that has already imported the command line (:mod:`multiprocessing`'s forkserver,
one per test worker): a fresh process as far as the mock, the runtime and the command's state
go, without paying for Python's start and TVM's import (about 3 s) at every call. A call that
sets other environment variables or runs setup code first, and ``fresh=True`` (what a user's
shell does, imports included: for the entry point and for what importing prints), start
``python -m tvm_nnapi`` itself.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

_SERVER: multiprocessing.context.ForkServerContext | None = None


def _forkserver() -> multiprocessing.context.ForkServerContext:
    global _SERVER
    if _SERVER is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["tvm_nnapi.cli"])
        _SERVER = context
    return _SERVER


def _run_in_child(
    args: list[str], columns: int, stdout: str, stderr: str, env: dict[str, str]
) -> None:
    """The forked process: the command with its output in the two files, exit with its code."""
    import traceback

    os.environ["COLUMNS"] = str(columns)
    os.environ.update(env)
    for fd, path in ((1, stdout), (2, stderr)):
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(handle, fd)
        os.close(handle)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
    code = 1
    try:
        from tvm_nnapi.cli import main

        code = int(main(args))
    except SystemExit as exit_:  # argparse's usage errors
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:  # what the interpreter would print for an uncaught exception
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def _forkable(env: dict[str, str] | None) -> bool:
    """Whether the forked process can take ``env``: the runtime's options (``TVM_NNAPI_*``,
    read when the runtime first needs its configuration, which the server never does), not
    what is read when a library loads (``TVM_NNAPI_LIBRARY``, ``MOCK_NNAPI_*``, ...)."""
    return all(key.startswith("TVM_NNAPI_") and key != "TVM_NNAPI_LIBRARY" for key in env or {})


def _run_forked(
    args: list[str], columns: int, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="tvm-nnapi-cli-") as directory:
        stdout, stderr = Path(directory, "stdout"), Path(directory, "stderr")
        process = _forkserver().Process(
            target=_run_in_child, args=(args, columns, str(stdout), str(stderr), dict(env or {}))
        )
        process.start()
        process.join()
        return subprocess.CompletedProcess(
            ["tvm-nnapi", *args],
            process.exitcode if process.exitcode is not None else -1,
            stdout.read_text(encoding="utf-8") if stdout.exists() else "",
            stderr.read_text(encoding="utf-8") if stderr.exists() else "",
        )


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    setup: str = "",
    columns: int = 250,
    check: bool = False,
    fresh: bool = False,
) -> subprocess.CompletedProcess:
    """``tvm-nnapi ARGS`` with output captured as text. ``setup`` is Python run in the same
    process before the command (e.g. arming a mock fault); ``env`` adds variables (the
    runtime's options still in a forked process, others in a new interpreter); ``columns``
    is the terminal width the tables are laid out for; ``check`` asserts exit code 0 (the
    message shows stderr and stdout); ``fresh`` starts a new interpreter even for a plain call
    (see the module docstring)."""
    if _forkable(env) and not (setup or fresh):
        completed = _run_forked(list(args), columns, env)
    else:
        if setup:
            program = "import sys\n" + textwrap.dedent(setup)
            program += "\nfrom tvm_nnapi.cli import main\nsys.exit(main(sys.argv[1:]))\n"
            command = [sys.executable, "-c", program, *args]
        else:
            command = [sys.executable, "-m", "tvm_nnapi", *args]
        completed = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "COLUMNS": str(columns), **(env or {})},
        )
    if check:
        assert completed.returncode == 0, completed.stderr + completed.stdout
    return completed
