# SPDX-License-Identifier: Apache-2.0
"""The cost strategy of the partition (``PartitionOptions(strategy="cost")``, ``--partition
cost``): which offload candidates run where at the least MODELLED time on a profile.

:class:`CostOracle` takes the partition of every offloadable operator (``all``) and costs each
candidate (a composite of an NNAPI subgraph) with the one cost model: its NNAPI operations'
modelled times from the mock's cost-only trace of its subgraph on the profile (on the device
Android would pick, with the per-operation overheads), its Relax operators' host time from the
host model (:class:`tvm_nnapi.tools.host_model.HostModel`), the transfers of the subgraph's
inputs and outputs from the same trace, the transfer a value between two candidates would need
from the cost model (``CostModel.transfer_us`` of the producing device), and the per-execution
overhead (runtime and driver step) from the traces. :func:`tvm_nnapi.compiler.placement.place`
solves the placement (a minimum cut, then the per-subgraph rule); the candidates it leaves on
the host are refused with kind ``cost`` and their numbers.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tvm
from mock_nnapi.cost_model import CostModel
from tvm import relax

from ..compiler.codegen import lower_function
from ..compiler.graph_json import PROBE_DIMENSION
from ..compiler.partition import CODEGEN_NAME
from ..compiler.patterns import CandidateKey, RefusalKind, composite_key
from ..compiler.placement import Candidate, place
from .estimate import _NUMPY_DTYPES
from .host_model import HostModel
from .program_work import operator_work

__all__ = ["CostOracle"]


@dataclass
class _Costed:
    key: CandidateKey
    nnapi_us: float = 0.0
    host_us: float = 0.0
    transfer_us: float = 0.0
    devices: list[str] = field(default_factory=list)


@dataclass
class CostOracle:
    """Refuses the candidates the modelled placement keeps on the host (see the module
    docstring). ``profile``: a built-in name or a path; ``host_model``: the host model's preset
    (``profile-cpu`` or ``tvm-default``)."""

    profile: str
    host_model: str = "profile-cpu"
    #: The placement of the last call: modelled totals, for reports and tests.
    last: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        return f"cost on {self.profile}"

    def refused_candidates(self, mod: tvm.IRModule) -> dict[CandidateKey, tuple[RefusalKind, str]]:
        from mock_nnapi import control

        from .estimate import _cost_only, _profile_selected

        host = HostModel.from_profile(self.profile, self.host_model)
        costed: dict[CandidateKey, _Costed] = {}
        edges: dict[tuple[CandidateKey, CandidateKey], float] = defaultdict(float)
        overheads: list[float] = []
        calls = _call_counts(mod)
        with _profile_selected(self.profile), _cost_only():
            costs = CostModel(control.profile())
            for gvar, func in mod.functions.items():
                if (getattr(func, "attrs", None) or {}).get("Codegen") != CODEGEN_NAME:
                    continue
                count = max(calls.get(gvar.name_hint, 1), 1)
                self._cost_subgraph(func, count, host, costs, costed, edges, overheads)
        if not costed:
            return {}
        names = {key: f"c{i}" for i, key in enumerate(costed)}
        candidates = {
            names[key]: Candidate(names[key], c.nnapi_us, c.host_us, c.transfer_us)
            for key, c in costed.items()
        }
        edge_list = [(names[a], names[b], us) for (a, b), us in edges.items() if a != b]
        overhead = float(np.mean(overheads)) if overheads else 0.0
        placement = place(candidates, edge_list, overhead)
        self.last = {
            "modelled_us": placement.modelled_us,
            "on_nnapi": len(placement.on_nnapi),
            "candidates": len(candidates),
            "overhead_us": overhead,
        }
        refused = {}
        for key, c in costed.items():
            if names[key] in placement.on_nnapi:
                continue
            where = ", ".join(c.devices) or "NNAPI"
            refused[key] = (
                RefusalKind.COST,
                f"kept on the host (modelled on {self.profile}): {_us(c.nnapi_us + c.transfer_us)} "
                f"on {where} including {_us(c.transfer_us)} of transfers, {_us(c.host_us)} on "
                f"the host, per execution overhead {_us(overhead)}",
            )
        return refused

    def _cost_subgraph(
        self,
        func: relax.Function,
        count: int,
        host: HostModel,
        costs: CostModel,
        costed: dict[CandidateKey, _Costed],
        edges: dict[tuple[CandidateKey, CandidateKey], float],
        overheads: list[float],
    ) -> None:
        spans: dict[relax.Var, tuple[relax.Function, range]] = {}
        builder = lower_function(func, spans=spans)
        trace = _trace(func, builder)
        if trace is None:
            return  # not costable at these sizes: stays as partitioned
        owner: dict[int, CandidateKey] = {}
        for composite, span in spans.values():
            key = composite_key(composite)
            entry = costed.setdefault(key, _Costed(key))
            for binding in (b for block in composite.body.blocks for b in block.bindings):
                call = binding.value
                if isinstance(call, relax.Call) and isinstance(call.op, tvm.ir.Op):
                    work = operator_work(call)
                    entry.host_us += count * host.time_us(
                        work.flops, work.bytes, work.data_class, work.operation_class
                    )
            for index in span:
                owner[index] = key
        producer: dict[int, CandidateKey] = {}
        readers: dict[int, list[CandidateKey]] = defaultdict(list)
        for index, operation in enumerate(builder.operations):
            if index not in owner:
                continue
            for operand in operation.outputs:
                producer[operand] = owner[index]
            for operand in operation.inputs:
                readers[operand].append(owner[index])
        overhead = 0.0
        for event in trace["events"]:
            kind = event["kind"]
            if kind == "operation" and int(event["operation"]) in owner:
                entry = costed[owner[int(event["operation"])]]
                entry.nnapi_us += count * float(event["duration_us"])
                if event["device"] not in entry.devices:
                    entry.devices.append(str(event["device"]))
            elif kind in ("runtime", "driver"):
                overhead += float(event["duration_us"])
            elif kind == "transfer":
                operand = int(event["operand"])
                payer = producer.get(operand) if event["direction"] == "device_to_host" else None
                if payer is None and readers.get(operand):
                    payer = readers[operand][0]
                if payer is not None:
                    costed[payer].transfer_us += count * float(event["duration_us"])
        overheads.append(overhead)
        # A value between two candidates crosses when they are apart: the transfer latency and
        # bandwidth of the device that runs them (the producer's, else the reader's, else the
        # subgraph's first) for its bytes.
        first = next((e["device"] for e in trace["events"] if e["kind"] == "operation"), None)
        for operand, key in producer.items():
            for reader in set(readers.get(operand, [])):
                if reader == key:
                    continue
                named = costed[key].devices or costed[reader].devices or ([first] if first else [])
                if named:
                    edges[(key, reader)] += count * costs.transfer_us(
                        named[0], _operand_bytes(builder, operand)
                    )

    # ---- helpers ----


def _us(value: float) -> str:
    return f"{value / 1000:.3g} ms" if value >= 1000 else f"{value:.3g} µs"


def _operand_bytes(builder: Any, operand: int) -> int:
    """The size of a lowered operand at the probe value of its symbolic dimensions."""
    size = 1
    for dim in builder.shape_values(operand, PROBE_DIMENSION):
        size *= dim
    return size * np.dtype(_NUMPY_DTYPES[builder.operands[operand].type]).itemsize


def _call_counts(mod: tvm.IRModule) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for _, func in mod.functions.items():
        if not isinstance(func, relax.Function) or (func.attrs or {}).get("Codegen"):
            continue
        for gvar in relax.analysis.all_global_vars(func):
            counts[gvar.name_hint] += 1
    return counts


def _trace(func: relax.Function, builder: Any) -> dict[str, Any] | None:
    """The mock's cost-only trace of one execution of a lowered subgraph at its sizes (symbols
    at the probe value), or None when it cannot be run so."""
    from mock_nnapi import control

    from ..runtime._library import runtime_function
    from .estimate import _ZeroBuffers

    shapes = builder.input_shapes(PROBE_DIMENSION)
    if shapes is None or builder.skip_arguments:
        return None
    create = runtime_function("tvm_nnapi.runtime.create")
    module = create(builder.symbol, builder.to_json(), bytes(builder.constants))
    buffers = _ZeroBuffers()
    try:
        args = []
        for index, shape in zip(builder.inputs, shapes, strict=True):
            args.append(buffers.array(shape, _NUMPY_DTYPES[builder.operands[index].type]))
        for index in builder.outputs:
            shape = builder.shape_values(index, PROBE_DIMENSION)
            args.append(buffers.array(shape, _NUMPY_DTYPES[builder.operands[index].type]))
        control.clear_traces()
        module[builder.symbol](*args)
        trace = control.last_execution_trace()
    except Exception:  # a subgraph the mock cannot cost at the probe sizes stays as it is
        return None
    finally:
        del module
        buffers.close()
    if trace is None or trace.get("result") != "NO_ERROR":
        return None
    return dict(json.loads(json.dumps(trace)))
