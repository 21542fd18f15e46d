# SPDX-License-Identifier: Apache-2.0
"""``tvm-nnapi explain``: which operators go to NNAPI (as which NNAPI operations) and why the
others stay on the host."""

from __future__ import annotations

import argparse
from typing import Any

from .common import Progress
from .estimate import devices_from_estimate
from .pipeline import ModelCommand, add_model_arguments, run_model_command


def _stage(
    args: argparse.Namespace, source: Any, document: dict[str, Any], graph: Any, progress: Progress
) -> None:
    if args.profile:
        document["explain"]["subgraph_devices"] = devices_from_estimate(
            args, source, document["profile"], progress
        )
    if source.kind == "llm":
        # The build as explained passes each projection's weight at every call (the engine's
        # other weight paths: docs/llm.md, "Quantized weights").
        from tvm_nnapi.llm.int8 import projection_report

        document["explain"]["projections"] = projection_report(source.llm_config, "input")


def _render(console: Any, document: dict[str, Any]) -> None:
    from rich.markup import escape

    from tvm_nnapi.llm.int8 import projection_lines

    rows = document["explain"].get("projections")
    if rows:
        heading = "projections, weights input (as built; --resident/--int8 paths: docs/llm.md):"
        for line in projection_lines(heading, rows):
            console.print(escape(line))


EXPLAIN = ModelCommand("explain", _stage, _render)


def cmd_explain(args: argparse.Namespace) -> int:
    """Show, for a model, which operators go to NNAPI (and as which NNAPI operations) and why
    the others stay on the host (typed reasons: dtype, rank, attribute, feature level, device
    support, cost policy). Nothing is built or run."""
    return run_model_command(args, EXPLAIN)


def register(commands: Any) -> None:
    """Adds ``explain`` to the ``tvm-nnapi`` subcommands."""
    explain = commands.add_parser(
        "explain",
        help="which operators go to NNAPI, as which NNAPI operations, and why others do not",
        description=cmd_explain.__doc__,
    )
    add_model_arguments(
        explain,
        "device profile of the target: its runtime feature level and the operations its "
        "devices support decide what is offloaded",
    )
    explain.set_defaults(handler=cmd_explain)
