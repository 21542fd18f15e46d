# SPDX-License-Identifier: Apache-2.0
"""Where each offload candidate runs, NNAPI or the host, at the least modelled time.

The problem is the graph colouring of docs/cli.md ("Partition strategies"): each candidate
(a composite the patterns matched) costs ``nnapi_us`` on the NNAPI device Android would pick
and ``host_us`` as TVM's host code; a value that crosses between host and NNAPI costs a
transfer; every NNAPI subgraph execution costs a fixed overhead. Without the last term this is
a two-terminal minimum cut, solved exactly here (:func:`min_cut_placement`, scipy's maximum
flow on costs in nanoseconds). The per-subgraph overhead is then applied by one documented rule
(:func:`place`): an NNAPI group (candidates joined by values that do not cross) whose modelled
time, with its boundary transfers and one execution overhead, is not below its host time goes
to the host, and the rule repeats until no group moves; the result is the best of that, every
candidate on NNAPI and none (by the same modelled total). Nothing here needs TVM.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Candidate", "Placement", "min_cut_placement", "place"]


@dataclass
class Candidate:
    """One offload candidate: its modelled times and the transfers it needs.

    ``host_transfer_us``: the transfers between this candidate and host code (the values it
    reads from or gives to operators that stay on the host), paid when it runs on NNAPI."""

    name: str
    nnapi_us: float
    host_us: float
    host_transfer_us: float = 0.0


@dataclass
class Placement:
    """The result: the candidates on NNAPI, and the modelled total of the whole placement."""

    on_nnapi: set[str] = field(default_factory=set)
    modelled_us: float = 0.0
    groups: list[set[str]] = field(default_factory=list)


def _cost(
    candidates: Mapping[str, Candidate],
    edges: Sequence[tuple[str, str, float]],
    on_nnapi: set[str],
    overhead_us: float,
) -> tuple[float, list[set[str]]]:
    total = 0.0
    for name, candidate in candidates.items():
        if name in on_nnapi:
            total += candidate.nnapi_us + candidate.host_transfer_us
        else:
            total += candidate.host_us
    for a, b, transfer in edges:
        if (a in on_nnapi) != (b in on_nnapi):
            total += transfer
    groups = _groups(on_nnapi, edges)
    return total + overhead_us * len(groups), groups


def _groups(on_nnapi: set[str], edges: Sequence[tuple[str, str, float]]) -> list[set[str]]:
    """The NNAPI candidates joined by values that stay on NNAPI (one subgraph each)."""
    parent = {name: name for name in on_nnapi}

    def find(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for a, b, _ in edges:
        if a in on_nnapi and b in on_nnapi:
            parent[find(a)] = find(b)
    groups: dict[str, set[str]] = {}
    for name in sorted(on_nnapi):
        groups.setdefault(find(name), set()).add(name)
    return list(groups.values())


def min_cut_placement(
    candidates: Mapping[str, Candidate], edges: Sequence[tuple[str, str, float]]
) -> set[str]:
    """The candidates that run on NNAPI in the placement of least node and transfer cost
    (no per-subgraph overhead): a minimum s-t cut with NNAPI as the source side. ``edges`` are
    values between two candidates ``(a, b, transfer_us)``, paid when they are apart. Ties go
    to the host."""
    names = sorted(candidates)
    index = {name: i + 2 for i, name in enumerate(names)}  # 0: NNAPI, 1: host
    size = len(names) + 2
    capacity = np.zeros((size, size), dtype=np.int64)

    def ns(us: float) -> int:
        return max(round(us * 1000.0), 0)

    for name, candidate in candidates.items():
        node = index[name]
        capacity[0, node] += ns(candidate.host_us)  # cut when the candidate is on the host
        capacity[node, 1] += ns(candidate.nnapi_us + candidate.host_transfer_us)
    for a, b, transfer in edges:
        capacity[index[a], index[b]] += ns(transfer)
        capacity[index[b], index[a]] += ns(transfer)
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    flow = maximum_flow(csr_matrix(capacity), 0, 1).flow.toarray()
    residual = capacity - flow
    # The source side of a minimum cut: what the source reaches in the residual graph.
    reached = {0}
    frontier = [0]
    while frontier:
        node = frontier.pop()
        for other in np.nonzero(residual[node] > 0)[0]:
            if int(other) not in reached:
                reached.add(int(other))
                frontier.append(int(other))
    return {name for name in names if index[name] in reached}


def place(
    candidates: Mapping[str, Candidate],
    edges: Sequence[tuple[str, str, float]],
    overhead_us: float,
) -> Placement:
    """The minimum cut, then the per-subgraph rule: a group whose NNAPI time (its
    candidates' ``nnapi_us`` and ``host_transfer_us``, the transfers of values it shares with
    host-side candidates, and one ``overhead_us``) is not below its host time moves to the
    host; repeated until no group moves."""
    on_nnapi = min_cut_placement(candidates, edges)
    while True:
        moved = False
        for group in _groups(on_nnapi, edges):
            nnapi = overhead_us + sum(
                candidates[n].nnapi_us + candidates[n].host_transfer_us for n in group
            )
            nnapi += sum(
                transfer
                for a, b, transfer in edges
                if (a in group) != (b in group) and (a in group or b in group)
            )
            host = sum(candidates[n].host_us for n in group)
            if nnapi >= host:
                on_nnapi -= group
                moved = True
        if not moved:
            break
    # The rule is a heuristic: it never returns worse than offloading every candidate or none.
    options = [on_nnapi, set(candidates), set()]
    costed = [(_cost(candidates, edges, option, overhead_us), option) for option in options]
    (total, groups), best = min(costed, key=lambda item: item[0][0])
    return Placement(best, total, groups)
