# SPDX-License-Identifier: Apache-2.0
"""The modelled timeline of a partitioned function's bindings, for the overlap of started
subgraph calls with host code (:mod:`tvm_nnapi.compiler.overlap`).

Host bindings run one at a time on the host; subgraph calls run one at a time on one NNAPI lane
(all NNAPI devices together: the model does not run two subgraphs at once); a call the build
starts lets the host go on until its join, placed as the compiler places it
(:func:`~tvm_nnapi.compiler.overlap.join_points`). The estimate (:mod:`.estimate`) fills in
each step's subgraph or host work and asks how much time the overlap hides.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from tvm import relax

from ..compiler.overlap import join_points


@dataclass
class Step:
    """One binding on the timeline."""

    var: relax.Var
    subgraph: Hashable | None = None  # the key of a subgraph call
    host_work: Any = None  # a host binding's work (None: no modelled work)
    started: bool = False  # a subgraph call the build starts and joins later
    joins: list[relax.Var] = field(default_factory=list)  # started calls joined before it
    joins_after: list[relax.Var] = field(default_factory=list)  # ... and after it


def timeline_steps(
    func: relax.Function, is_subgraph_call: Callable[[relax.Expr], bool]
) -> list[list[Step]]:
    """The steps of each block of ``func``, with the build's starts and joins marked."""
    blocks = []
    if isinstance(func.body, relax.SeqExpr):
        for block in func.body.blocks:
            steps = [Step(binding.var) for binding in block.bindings]
            for i, join in join_points(list(block.bindings), is_subgraph_call).items():
                steps[i].started = True
                if join.reader < len(steps):
                    steps[join.reader].joins.append(steps[i].var)
                else:
                    steps[-1].joins_after.append(steps[i].var)
            blocks.append(steps)
    return blocks


def overlap_us(
    blocks: list[list[Step]],
    subgraph_us: Callable[[Hashable], float],
    host_us: Callable[[Any], float],
) -> float:
    """The time hidden by the overlap: the serial sum of every step's time less the time at
    which the timeline ends (``subgraph_us(key)`` per subgraph call, ``host_us(work)`` per host
    binding with work; other bindings take no time)."""
    serial = clock = lane = 0.0
    for steps in blocks:
        pending: dict[relax.Var, float] = {}
        for step in steps:
            for var in step.joins:
                clock = max(clock, pending.pop(var))
            duration = 0.0
            if step.subgraph is not None:
                duration = subgraph_us(step.subgraph)
                finish = max(clock, lane) + duration
                lane = finish
                if step.started:
                    pending[step.var] = finish
                else:
                    clock = finish
            elif step.host_work is not None:
                duration = host_us(step.host_work)
                clock += duration
            serial += duration
            for var in step.joins_after:
                clock = max(clock, pending.pop(var))
    return max(serial - clock, 0.0)
