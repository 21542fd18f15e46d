# SPDX-License-Identifier: Apache-2.0
"""The ``tvm-nnapi`` commands (docs/cli.md), one module each.

A command module defines ``register(commands)``, which adds its parser to the subcommands and
sets ``handler`` (``args -> exit code``); the handler runs the command to its result (a JSON
document for ``--json``) and renders it. :func:`build_parser` assembles them in
:data:`COMMANDS` order; :func:`main` runs one. Shared pieces are in :mod:`.common` (exit codes,
errors, progress) and :mod:`.pipeline` (the MODEL commands ``explain``, ``estimate``, ``run``).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

from . import (
    calibrate,
    compare_reports,
    demo,
    devices,
    estimate,
    explain,
    llm,
    models,
    run,
)
from .common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    DebugSubparsers,
    SuggestingParser,
    error,
    one_line,
    user_error,
    version,
)

__all__ = ["COMMANDS", "build_parser", "main"]

#: The command modules, in the order ``tvm-nnapi --help`` lists them.
COMMANDS: tuple[ModuleType, ...] = (
    demo,
    devices,
    models,
    explain,
    estimate,
    run,
    llm,
    compare_reports,
    calibrate,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``tvm-nnapi`` argument parser with every command of :data:`COMMANDS`."""
    parser = SuggestingParser(
        prog="tvm-nnapi",
        description="TVM Relax + Android NNAPI: see what is offloaded and why, estimate it on a "
        "phone profile, run it on the mock NNAPI. Documentation: docs/cli.md.",
    )
    parser.add_argument("--version", action="version", version=f"tvm-nnapi {version()}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="let errors through with their Python traceback (also accepted after COMMAND)",
    )
    commands = DebugSubparsers(
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    )
    for command in COMMANDS:
        command.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Bad input (UsageError, a model that cannot be loaded, a missing file) is
    one line on stderr and exit code 2; any other failure one line and exit code 3. ``--debug``
    lets the exception (and its traceback) through instead."""
    args = build_parser().parse_args(argv)
    with warnings.catch_warnings():
        if not getattr(args, "debug", False):
            # Frontends' and TVM's warnings are for developers of those libraries; a command
            # says what matters itself (--debug shows them).
            warnings.simplefilter("ignore")
        return _handle(args)


def _handle(args: argparse.Namespace) -> int:
    try:
        return int(args.handler(args))
    except Exception as failure:
        if getattr(args, "debug", False):
            raise
        message = user_error(failure)
        if message is not None:
            error(message)
            return EXIT_BAD_INPUT
        error(
            f"{args.command} failed: {type(failure).__name__}: {one_line(str(failure))} "
            "(--debug shows the traceback)"
        )
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
