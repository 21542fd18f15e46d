# SPDX-License-Identifier: Apache-2.0
"""``tvm-nnapi models``: the built-in MODEL names."""

from __future__ import annotations

import argparse
from typing import Any


def cmd_models(args: argparse.Namespace) -> int:
    """List the built-in MODEL names (MODEL can also be a .py, TVMScript, .onnx or .pt2 file)."""
    from tvm_nnapi.tools.sources import builtin_model_names

    for name in builtin_model_names():
        print(name)
    return 0


def register(commands: Any) -> None:
    """Adds ``models`` to the ``tvm-nnapi`` subcommands."""
    models = commands.add_parser(
        "models", help="list the built-in MODEL names", description=cmd_models.__doc__
    )
    models.set_defaults(handler=cmd_models)
