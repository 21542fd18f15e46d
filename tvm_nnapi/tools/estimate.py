# SPDX-License-Identifier: Apache-2.0
"""Modelled latency of a Relax program on a phone profile: NNAPI-offloaded vs all on the host.

    from tvm_nnapi.tools.estimate import estimate
    result = estimate(mod, "snapdragon-8-gen-2", shapes={"seq_len": 128}, entry="prefill")
    print(result.format())
    json.dump(result.to_dict(), file)

Every time here is **modelled**, never measured (docs/cost-model.md):

- NNAPI side: each NNAPI subgraph is lowered to its graph JSON, handed to the real runtime
  module and executed once on ``mock_nnapi`` with the profile selected, in the mock's
  *cost-only* mode (operations are validated and shaped, kernels are skipped, inputs are never
  read). Its times are read from the mock's trace, so the mock's C++ cost model stays the only
  source of NNAPI-side times. Inputs (weights included) are zero pages that are never touched,
  so a 7B model is costed without allocating its 28 GB of weights.
- Host side: every Relax operator (those left on the host, and the same operators inside each
  NNAPI subgraph for the all-host program) is costed by
  :class:`~tvm_nnapi.tools.host_model.HostModel`: the profile's CPU device in the mock's cost
  model, with the efficiencies of a preset (docs/cost-model.md, "Host code"). An operator's
  work (FLOPs, bytes, operation class) comes from :mod:`.program_work`.

The breakdown of an NNAPI subgraph call follows the trace: *input set-up* is the host-to-device
copies of the subgraph's inputs (its activations and, when the build passes them at run time,
its weights), *compute* the devices' busy time, *transfers* the other copies (between devices
and the outputs back to the host), *driver overhead* the per-operation and per-step driver costs
plus the NNAPI runtime's own per-execution cost. Compilation is one-off and reported apart.
"""

from __future__ import annotations

import contextlib
import gc
import math
import mmap
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import tvm
from tvm import IRModule, relax

from ..compiler.ir_utils import bindings
from ..compiler.partition import CODEGEN_NAME, partition_with_report
from ..compiler.patterns import PartitionOptions
from .host_model import HOST_MODELS, TVM_DEFAULT_CODE_EFFICIENCY, HostModel, HostWork
from .program_work import (
    Fusion,
    _extern_name,
    _operator_calls,
    _weight_vars,
    operation_class,
    operator_work,
    tir_call_work,
)
from .timeline import Step, overlap_us, timeline_steps

__all__ = [
    "HOST_MODELS",
    "TVM_DEFAULT_CODE_EFFICIENCY",
    "Estimate",
    "ExternWork",
    "GraphTransform",
    "HostModel",
    "HostWork",
    "PreparedEstimate",
    "all_host_us",
    "estimate",
    "operation_class",
    "operator_work",
    "why_nnapi_loses",
]

#: Work of an extern (packed) function call the estimate cannot see into, e.g. the KV-cache
#: attention of an LLM: ``(call) -> HostWork`` or None when unknown.
ExternWork = Callable[[relax.Call], "HostWork | None"]

#: A modelling hook: ``(graph JSON document, constant blob) -> (document, blob)`` applied to
#: each lowered NNAPI subgraph before it is costed on the mock (e.g. the W8A8 what-if of
#: :mod:`tvm_nnapi.tools.w8a8_what_if`). The rewritten graph may change the types and shapes of its
#: inputs (the cost-only buffers follow the graph); the host side still costs the Relax
#: operators.
GraphTransform = Callable[[dict[str, Any], bytes], tuple[dict[str, Any], bytes]]

#: The numpy dtype that holds each NNAPI tensor type (the runtime's DTypeMatches).
_NUMPY_DTYPES = {
    "TENSOR_FLOAT32": "float32",
    "TENSOR_FLOAT16": "float16",
    "TENSOR_INT32": "int32",
    "TENSOR_BOOL8": "bool",
    "TENSOR_QUANT8_ASYMM": "uint8",
    "TENSOR_QUANT8_ASYMM_SIGNED": "int8",
    "TENSOR_QUANT8_SYMM": "int8",
    "TENSOR_QUANT8_SYMM_PER_CHANNEL": "int8",
    "TENSOR_QUANT16_ASYMM": "uint16",
    "TENSOR_QUANT16_SYMM": "int16",
}


# ---- results -------------------------------------------------------------------------------------


@dataclass
class SubgraphRow:
    """One NNAPI subgraph: its NNAPI operations and, per call, the modelled NNAPI time with its
    breakdown next to the modelled host time of the same Relax operators. ``calls`` is how many
    times the entry function calls it (structurally equal subgraphs share one function)."""

    name: str
    calls: int
    nnapi_operations: dict[str, int]
    relax_operators: dict[str, int]
    devices: list[str]
    flops: float
    modelled_compilation_us: float  # one-off (per distinct shape signature), not per call
    modelled_input_setup_us: float
    modelled_weight_setup_us: float  # the part of the input set-up that copies weights
    modelled_compute_us: float
    modelled_transfer_us: float
    modelled_driver_overhead_us: float
    modelled_nnapi_us: float
    modelled_host_us: float

    @property
    def modelled_speedup(self) -> float:
        return self.modelled_host_us / self.modelled_nnapi_us if self.modelled_nnapi_us else 0.0


@dataclass
class HostRow:
    """Operators (or an extern function) left on the host, aggregated by name."""

    name: str
    kind: str  # "operator" or "extern"
    calls: int
    flops: float
    bytes: float
    modelled_host_us: float  # all calls together
    modelled: bool = True  # False: an extern call whose work is unknown (counted as 0)


@dataclass
class Estimate:
    """Modelled latency of one entry function on one profile (see the module docstring)."""

    profile: str
    entry: str
    shapes: dict[str, int]
    host_model: dict[str, Any]
    # "input" (passed at run time), "resident" (bound as NNAPI constants) or "int8" (the int8
    # path, tools.llm_int8: int8 weights bound as NNAPI constants)
    weights: str
    subgraphs: list[SubgraphRow] = field(default_factory=list)
    host_rows: list[HostRow] = field(default_factory=list)
    # Time the overlapped build hides: subgraph calls started while independent bindings run
    # on the host (tvm_nnapi.compiler.overlap), on the program's modelled timeline.
    modelled_overlap_us: float = 0.0

    # ---- totals ----
    @property
    def modelled_host_only_us(self) -> float:
        """Operators on the host in both programs."""
        return sum(r.modelled_host_us for r in self.host_rows)

    @property
    def modelled_serial_nnapi_program_us(self) -> float:
        """Every subgraph call on NNAPI plus the host rest, one after the other."""
        return (
            sum(s.modelled_nnapi_us * s.calls for s in self.subgraphs) + self.modelled_host_only_us
        )

    @property
    def modelled_nnapi_program_us(self) -> float:
        """The NNAPI-offloaded program as the build runs it: the serial time less what the
        overlap of started subgraph calls with host code hides."""
        return self.modelled_serial_nnapi_program_us - self.modelled_overlap_us

    #: The all-host program costed from the entry function before partitioning, where TVM's
    #: fusion sees across what the partition splits (e.g. a weight's dequantization fused into
    #: its matmul); None: the sum of the subgraphs' host time and the host rows.
    all_host_us: float | None = None

    @property
    def modelled_host_program_us(self) -> float:
        """The same program with every operator on the host (TVM's CPU backend)."""
        if self.all_host_us is not None:
            return self.all_host_us
        return (
            sum(s.modelled_host_us * s.calls for s in self.subgraphs) + self.modelled_host_only_us
        )

    @property
    def modelled_speedup(self) -> float:
        nnapi = self.modelled_nnapi_program_us
        return self.modelled_host_program_us / nnapi if nnapi else 0.0

    @property
    def modelled_compilation_us(self) -> float:
        """One-off NNAPI compilation of every distinct subgraph for these shapes."""
        return sum(s.modelled_compilation_us for s in self.subgraphs)

    def modelled_breakdown_us(self) -> dict[str, float]:
        """The NNAPI-offloaded program's time by category (sums over all calls)."""
        keys = (
            "modelled_input_setup_us",
            "modelled_weight_setup_us",
            "modelled_compute_us",
            "modelled_transfer_us",
            "modelled_driver_overhead_us",
        )
        result = {k: sum(getattr(s, k) * s.calls for s in self.subgraphs) for k in keys}
        result["modelled_host_operators_us"] = self.modelled_host_only_us
        result["modelled_compilation_us"] = self.modelled_compilation_us
        return result

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dictionary (every time field's name says it is modelled)."""
        return {
            "modelled": True,
            "profile": self.profile,
            "entry": self.entry,
            "shapes": dict(self.shapes),
            "weights": self.weights,
            "host_model": self.host_model,
            "subgraphs": [
                {**asdict(s), "modelled_speedup": s.modelled_speedup} for s in self.subgraphs
            ],
            "host_rows": [asdict(r) for r in self.host_rows],
            "totals": {
                "modelled_nnapi_program_us": self.modelled_nnapi_program_us,
                "modelled_host_program_us": self.modelled_host_program_us,
                "modelled_speedup": self.modelled_speedup,
                "modelled_host_only_us": self.modelled_host_only_us,
                "modelled_overlap_us": self.modelled_overlap_us,
                **self.modelled_breakdown_us(),
            },
        }

    def format(self) -> str:
        """A text table (all times modelled, in milliseconds)."""
        shapes = ", ".join(f"{k}={v}" for k, v in self.shapes.items()) or "static shapes"
        lines = [
            f"MODELLED latency of '{self.entry}' ({shapes}) on profile {self.profile}; host "
            f"model {self.host_model['name']}; weights {self.weights} (times in ms, modelled, "
            "not measured)",
            "",
            f"{'NNAPI subgraph':<28}{'calls':>6}{'ops':>5}{'setup':>10}{'compute':>10}"
            f"{'transfer':>10}{'driver':>9}{'NNAPI':>10}{'host':>11}{'x':>7}{'compile':>9}",
        ]
        for s in self.subgraphs:
            lines.append(
                f"{s.name[:27]:<28}{s.calls:>6}{sum(s.nnapi_operations.values()):>5}"
                f"{s.modelled_input_setup_us / 1e3:>10.3f}{s.modelled_compute_us / 1e3:>10.3f}"
                f"{s.modelled_transfer_us / 1e3:>10.3f}"
                f"{s.modelled_driver_overhead_us / 1e3:>9.3f}{s.modelled_nnapi_us / 1e3:>10.3f}"
                f"{s.modelled_host_us / 1e3:>11.3f}{s.modelled_speedup:>7.2f}"
                f"{s.modelled_compilation_us / 1e3:>9.1f}"
            )
        lines.append("  (per call; 'compile' is one-off; 'x' = modelled host / modelled NNAPI)")
        if self.host_rows:
            lines += [
                "",
                f"{'on the host in both programs':<40}{'calls':>6}{'GFLOP':>10}{'ms':>12}",
            ]
            for r in self.host_rows:
                mark = "" if r.modelled else "  (work unknown: not modelled)"
                lines.append(
                    f"{r.name[:39]:<40}{r.calls:>6}{r.flops / 1e9:>10.3f}"
                    f"{r.modelled_host_us / 1e3:>12.3f}{mark}"
                )
        b = self.modelled_breakdown_us()
        lines += [
            "",
            f"NNAPI-offloaded program: {self.modelled_nnapi_program_us / 1e3:.3f} ms modelled "
            f"(input set-up {b['modelled_input_setup_us'] / 1e3:.3f}, of which weights "
            f"{b['modelled_weight_setup_us'] / 1e3:.3f}; compute "
            f"{b['modelled_compute_us'] / 1e3:.3f}; transfers "
            f"{b['modelled_transfer_us'] / 1e3:.3f}; driver "
            f"{b['modelled_driver_overhead_us'] / 1e3:.3f}; host operators "
            f"{b['modelled_host_operators_us'] / 1e3:.3f})",
            f"all-host program (TVM CPU backend): {self.modelled_host_program_us / 1e3:.3f} ms "
            "modelled",
            f"modelled speedup: {self.modelled_speedup:.2f}x; one-off NNAPI compilation "
            f"{self.modelled_compilation_us / 1e3:.1f} ms modelled",
        ]
        return "\n".join(lines)


# ---- a subgraph of the partitioned program -------------------------------------------------------


@dataclass
class _Subgraph:
    gvar: tvm.ir.GlobalVar
    func: relax.Function
    weight_params: tuple[int, ...]  # parameter positions that receive weights
    calls: int = 0
    call_args: list[relax.Expr] = field(default_factory=list)


# ---- the estimate --------------------------------------------------------------------------------


def _specialised(mod: IRModule, entry: str, shapes: Mapping[str, int]) -> IRModule:
    """A module of ``entry`` alone with ``shapes`` bound to its symbolic dimensions (every one
    must have a value; ``ValueError`` names the missing or unknown ones)."""
    if not any(g.name_hint == entry for g in mod.get_global_vars()):
        raise ValueError(f"the module has no function named {entry!r}")
    func = mod[entry]
    symbols = {str(v): v for v in relax.analysis.defined_symbolic_vars(func)}
    unknown = sorted(set(shapes) - set(symbols))
    if unknown:
        raise ValueError(
            f"{entry}: no symbolic dimension named {unknown}; it has {sorted(symbols)}"
        )
    missing = sorted(set(symbols) - set(shapes))
    if missing:
        raise ValueError(f"{entry}: give a value for the symbolic dimensions {missing}")
    if shapes:
        func = func.bind_symbolic_vars({symbols[k]: v for k, v in shapes.items()})
    return IRModule({tvm.ir.GlobalVar(entry): func})


def _host_call(
    value: relax.Call, fusion: Fusion, extern_work: Mapping[str, ExternWork]
) -> tuple[str, str, HostWork | None] | None:
    """``(name, kind, work)`` of a host call: an extern (its work from ``extern_work``, None
    when not modelled) or an operator or kernel (with ``fusion``); None for a call that is
    neither (a call of a function of the module)."""
    extern = _extern_name(value)
    if extern is not None:
        work = extern_work.get(extern)
        return extern, "extern", work(value) if work is not None else None
    if not isinstance(value.op, tvm.ir.Op):
        return None
    name = str(value.op.name)
    if name == "relax.call_tir":
        return name, "operator", tir_call_work(value, fusion)
    if name == "relax.call_dps_packed":
        return name, "extern", None
    return name, "operator", operator_work(value, fusion)


def _host_works(
    func: relax.Function, extern_work: Mapping[str, ExternWork]
) -> list[HostWork | None]:
    """The work of every operator, kernel and extern call of the unpartitioned ``func``, as
    TVM's CPU backend runs it (with :class:`Fusion`); None for an extern not modelled."""
    func_bindings = bindings(func)
    fusion = Fusion.of(func_bindings)
    found = (
        _host_call(b.value, fusion, extern_work)
        for b in func_bindings
        if isinstance(b.value, relax.Call)
    )
    return [work for _, _, work in filter(None, found)]


def all_host_us(
    mod: IRModule,
    profile: str,
    shapes: Mapping[str, int] | None = None,
    entry: str | None = None,
    host_model: str | HostModel = "profile-cpu",
    extern_work: Mapping[str, ExternWork] | None = None,
) -> float:
    """The modelled time of ``entry`` of ``mod`` all on the host (what
    :attr:`Estimate.modelled_host_program_us` is), without partitioning or costing NNAPI
    subgraphs; the arguments are :func:`estimate`'s."""
    entry = entry or _default_entry(mod)
    func = _specialised(mod, entry, dict(shapes or {}))[entry]
    works = _host_works(func, dict(extern_work or {}))
    return _host_time_us(works, _host_model(profile, host_model))


def _host_model(profile: str, host_model: str | HostModel) -> HostModel:
    """``host_model`` itself, or the preset of that name on ``profile``."""
    if isinstance(host_model, HostModel):
        return host_model
    return HostModel.from_profile(profile, host_model)


def _host_time_us(works: Sequence[HostWork | None], host: HostModel) -> float:
    """The modelled time of ``works`` one after the other on the host (None: not modelled)."""
    return sum(
        host.time_us(w.flops, w.bytes, w.data_class, w.operation_class)
        for w in works
        if w is not None
    )


class PreparedEstimate:
    """A partitioned entry function ready to be estimated on any number of profiles.

    Partitioning and lowering happen once here; :meth:`run` selects a profile and costs the
    subgraphs on the mock."""

    def __init__(
        self,
        mod: IRModule,
        shapes: Mapping[str, int] | None = None,
        entry: str | None = None,
        options: PartitionOptions | None = None,
        extern_work: Mapping[str, ExternWork] | None = None,
        graph_transform: GraphTransform | None = None,
    ) -> None:
        import json

        from ..compiler.codegen import lower_function

        self.entry = entry or _default_entry(mod)
        self.shapes = dict(shapes or {})
        specialised = _specialised(mod, self.entry, self.shapes)
        result = partition_with_report(specialised, options, entry_functions=[self.entry])
        self.module = result.module
        self.refusals = result.refusals
        self.extern_work = dict(extern_work or {})
        self._subgraphs: dict[tuple[str, tuple[int, ...]], _Subgraph] = {}
        self._host: dict[str, list[Any]] = {}
        self._analyse(self.module[self.entry])
        self._all_host = _host_works(specialised[self.entry], self.extern_work)
        self._traces: dict[str, dict[tuple[str, tuple[int, ...]], dict[str, Any]]] = {}
        self._graphs: dict[str, tuple[str, str, bytes]] = {}
        for sub in self._subgraphs.values():
            name = sub.gvar.name_hint
            if name not in self._graphs:
                builder = lower_function(sub.func)
                graph_json, constants = builder.to_json(), bytes(builder.constants)
                if graph_transform is not None:
                    document, constants = graph_transform(json.loads(graph_json), constants)
                    graph_json = json.dumps(document)
                self._graphs[name] = (builder.symbol, graph_json, constants)
        self.graph_transform = graph_transform

    def graph_documents(self) -> dict[str, dict[str, Any]]:
        """The graph JSON document of each NNAPI subgraph as it is costed (after the
        ``graph_transform``, if any), by subgraph name."""
        import json

        return {name: json.loads(graph) for name, (_, graph, _) in self._graphs.items()}

    def _analyse(self, func: relax.Function) -> None:
        func_bindings = bindings(func)
        weights = _weight_vars(func, func_bindings)
        fusion = Fusion.of(func_bindings)
        self._steps = timeline_steps(func, self._is_subgraph_call)
        step_of = {step.var: step for steps in self._steps for step in steps}
        for binding in func_bindings:
            value = binding.value
            step = step_of.get(binding.var)
            if not isinstance(value, relax.Call):
                continue
            if isinstance(value.op, tvm.ir.GlobalVar):
                callee = self.module[value.op]
                if (callee.attrs or {}).get("Codegen") != CODEGEN_NAME:
                    raise ValueError(
                        f"{self.entry} calls {value.op.name_hint}, which is not an NNAPI subgraph; "
                        "only single-function programs are estimated"
                    )
                flags = tuple(i for i, a in enumerate(value.args) if a in weights)
                key = (value.op.name_hint, flags)
                if step is not None:
                    step.subgraph = key
                sub = self._subgraphs.setdefault(key, _Subgraph(value.op, callee, flags))
                sub.calls += 1
                if not sub.call_args:
                    sub.call_args = list(value.args)
                continue
            found = _host_call(value, fusion, self.extern_work)
            if found is not None:
                self._add_host(*found, step)

    def _add_host(
        self, name: str, kind: str, work: HostWork | None, step: Step | None = None
    ) -> None:
        self._host.setdefault(name, [kind, []])[1].append(work)
        if step is not None:
            step.host_work = work

    def _is_subgraph_call(self, value: relax.Expr) -> bool:
        if not (isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.GlobalVar)):
            return False
        callee = self.module[value.op]
        return bool((callee.attrs or {}).get("Codegen") == CODEGEN_NAME)

    def overlap_us(self, subgraph_us: Mapping[Any, float], host: HostModel) -> float:
        """The time the overlapped build hides (:func:`tvm_nnapi.tools.timeline.overlap_us`),
        with ``subgraph_us`` per call of each subgraph and host bindings timed by ``host``."""
        return overlap_us(
            self._steps,
            lambda key: subgraph_us[key],
            lambda w: host.time_us(w.flops, w.bytes, w.data_class, w.operation_class),
        )

    # ---- costing ----

    def host_rows(self, host: HostModel) -> list[HostRow]:
        rows = []
        for name, (kind, works) in self._host.items():
            known = [w for w in works if w is not None]
            rows.append(
                HostRow(
                    name=name,
                    kind=kind,
                    calls=len(works),
                    flops=sum(w.flops for w in known),
                    bytes=sum(w.bytes for w in known),
                    modelled_host_us=sum(
                        host.time_us(w.flops, w.bytes, w.data_class, w.operation_class)
                        for w in known
                    ),
                    modelled=len(known) == len(works),
                )
            )
        return sorted(rows, key=lambda r: -r.modelled_host_us)

    def run(
        self,
        profile: str,
        host_model: str | HostModel = "profile-cpu",
        weights: str = "input",
    ) -> Estimate:
        """Cost every subgraph on the mock with ``profile`` selected.

        ``weights``: ``"input"`` models the build as it is (weights are arguments of the NNAPI
        subgraphs, copied to the device at every call); ``"resident"`` models weights bound as
        NNAPI constants (on the device since compilation): the same trace without the weight
        copies, the only term of the cost model in which a constant differs from an input.
        """
        if weights not in ("input", "resident"):
            raise ValueError(f"weights must be 'input' or 'resident', got {weights!r}")
        host = _host_model(profile, host_model)
        from mock_nnapi.device_profiles import load_profile

        name = str(load_profile(profile).get("name", profile))
        result = Estimate(name, self.entry, dict(self.shapes), host.to_dict(), weights)
        parts = self.nnapi_traces(profile)
        per_call = {}
        for key, sub in self._subgraphs.items():
            row = self._row(sub, parts[key], host, weights)
            result.subgraphs.append(row)
            per_call[key] = row.modelled_nnapi_us
        result.host_rows = self.host_rows(host)
        result.all_host_us = _host_time_us(self._all_host, host)
        result.modelled_overlap_us = self.overlap_us(per_call, host)
        return result

    def nnapi_traces(self, profile: str) -> dict[tuple[str, tuple[int, ...]], dict[str, Any]]:
        """The mock's cost-only trace of one call of each subgraph on ``profile`` (cached: the
        NNAPI side does not depend on the host model or the weights option)."""
        if profile not in self._traces:
            with _profile_selected(profile), _cost_only():
                self._traces[profile] = {
                    key: self._trace(sub) for key, sub in self._subgraphs.items()
                }
        return self._traces[profile]

    def _trace(self, sub: _Subgraph) -> dict[str, Any]:
        import json

        from mock_nnapi import control

        from ..runtime._library import runtime_function

        symbol, graph_json, constants = self._graphs[sub.gvar.name_hint]
        create = runtime_function("tvm_nnapi.runtime.create")
        module = create(symbol, graph_json, constants)
        buffers = _ZeroBuffers()
        # A transformed graph may retype its inputs: their buffers follow the graph.
        graph = json.loads(graph_json) if self.graph_transform is not None else None
        try:
            args = []
            for index, (param, arg) in enumerate(zip(sub.func.params, sub.call_args, strict=True)):
                if isinstance(param.ty, relax.TensorType) and graph is not None:
                    operand = graph["operands"][graph["inputs"][_input_index(graph, index)]]
                    args.append(buffers.array(operand["shape"], _NUMPY_DTYPES[operand["type"]]))
                elif isinstance(param.ty, relax.TensorType):
                    args.append(buffers.tensor(param.ty))
                else:
                    args.append(_shape_value(arg, param))
            ret = sub.func.body.ty
            outputs = list(ret.fields) if isinstance(ret, relax.TupleType) else [ret]
            args += [buffers.tensor(ty) for ty in outputs]
            control.clear_traces()
            module[symbol](*args)
            trace = control.last_execution_trace()
        finally:
            del module
            buffers.close()
        if trace is None:
            raise RuntimeError(
                f"{sub.gvar.name_hint}: the mock kept no execution trace; tracing is off "
                "(mock_nnapi.control.set_trace_capacity(0)): turn it on to estimate"
            )
        if trace.get("result") != "NO_ERROR":
            raise RuntimeError(f"{sub.gvar.name_hint}: the cost-only run failed: {trace['result']}")
        return trace

    def _row(
        self, sub: _Subgraph, trace: dict[str, Any], host: HostModel, weights: str
    ) -> SubgraphRow:
        import json

        graph = json.loads(self._graphs[sub.gvar.name_hint][1])
        input_operands = {int(i) for i in graph["inputs"]}
        weight_operands = {int(graph["inputs"][_input_index(graph, p)]) for p in sub.weight_params}
        setup = weight_setup = compute = transfer = driver = 0.0
        operations: Counter = Counter()
        devices: list[str] = []
        for event in trace["events"]:
            kind, duration = event["kind"], float(event["duration_us"])
            if kind == "operation":
                compute += float(event["busy_us"])
                driver += float(event["overhead_us"])
                operations[event["name"]] += 1
                if event["device"] not in devices:
                    devices.append(event["device"])
            elif kind in ("driver", "runtime"):
                driver += duration
            elif kind == "transfer":
                operand = int(event["operand"])
                is_input = event["direction"] == "host_to_device" and operand in input_operands
                if is_input and operand in weight_operands:
                    weight_setup += duration
                elif is_input:
                    setup += duration
                else:
                    transfer += duration
        total = float(trace["modelled_total_us"])
        if weights == "resident":
            total -= weight_setup
            weight_setup = 0.0
        relax_ops: Counter = Counter()
        host_us = flops = 0.0
        for call, fusion in _operator_calls(sub.func):
            relax_ops[str(call.op.name)] += 1
            work = operator_work(call, fusion)
            flops += work.flops
            host_us += host.time_us(work.flops, work.bytes, work.data_class, work.operation_class)
        return SubgraphRow(
            name=sub.gvar.name_hint,
            calls=sub.calls,
            nnapi_operations=dict(operations),
            relax_operators=dict(relax_ops),
            devices=devices,
            flops=flops,
            modelled_compilation_us=float(trace["compilation"]["modelled_us"]),
            modelled_input_setup_us=setup + weight_setup,
            modelled_weight_setup_us=weight_setup,
            modelled_compute_us=compute,
            modelled_transfer_us=transfer,
            modelled_driver_overhead_us=driver,
            modelled_nnapi_us=total,
            modelled_host_us=host_us,
        )


def _input_index(graph: dict[str, Any], param_index: int) -> int:
    """Position among the graph's inputs of Relax parameter ``param_index`` (shape parameters
    listed in ``skip_arguments`` have no input)."""
    skipped = [s for s in graph.get("skip_arguments", []) if s < param_index]
    return param_index - len(skipped)


def _shape_value(arg: relax.Expr, param: relax.Var) -> tvm.runtime.ShapeTuple:
    values = getattr(arg, "values", None)
    if values is None and isinstance(param.ty, relax.ShapeType):
        values = param.ty.values
    if values is None:
        raise ValueError(f"cannot evaluate the shape argument {param.name_hint}")
    return tvm.runtime.ShapeTuple([int(v) for v in values])


def _default_entry(mod: IRModule) -> str:
    names = [g.name_hint for g, f in mod.functions.items() if isinstance(f, relax.Function)]
    for name in ("main", "prefill"):
        if name in names:
            return name
    entries = [
        g.name_hint
        for g, f in mod.functions.items()
        if isinstance(f, relax.Function) and not (f.attrs or {}).get("Codegen")
    ]
    if len(entries) == 1:
        return entries[0]
    raise ValueError(f"the module has several functions {sorted(entries)}; name the entry")


class _ZeroBuffers:
    """Tensors over private anonymous mappings: they read as zeros and take no memory until
    written (the cost-only mock never writes or reads them)."""

    def __init__(self) -> None:
        self._maps: list[mmap.mmap] = []
        self._arrays: list[np.ndarray] = []

    def tensor(self, ty: object) -> tvm.runtime.Tensor:
        if not isinstance(ty, relax.TensorType) or ty.shape is None:
            raise ValueError(f"cannot make a buffer for {ty}")
        return self.array([int(v.value) for v in ty.shape.values], str(ty.dtype))

    def array(self, shape: Sequence[int], dtype_name: str) -> tvm.runtime.Tensor:
        shape = [int(d) for d in shape]
        dtype = np.dtype(dtype_name)
        nbytes = int(math.prod(shape)) * dtype.itemsize
        if nbytes == 0:
            array = np.zeros(shape, dtype)
        else:
            mapping = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)
            self._maps.append(mapping)
            array = np.frombuffer(mapping, dtype=dtype).reshape(shape)
        self._arrays.append(array)
        return tvm.runtime.from_dlpack(array)

    def close(self) -> None:
        self._arrays.clear()
        gc.collect()
        for mapping in self._maps:
            with contextlib.suppress(BufferError):
                mapping.close()
        self._maps.clear()


@contextlib.contextmanager
def _profile_selected(profile: str) -> Iterator[None]:
    from mock_nnapi.constants import ResultCode

    from mock_nnapi import control

    previous = control.profile_selection()
    if profile in (previous, control.profile_name()):
        yield
        return
    gc.collect()  # compilations of dropped modules hold the current devices
    try:
        control.set_profile(profile)
    except control.NnapiError as error:
        if error.code != ResultCode.BAD_STATE:
            raise
        raise RuntimeError(
            f"cannot select the profile {profile!r}: NNAPI compilations of programs built in "
            f"this process still use the active profile {previous!r}; estimate before building "
            "and running programs, or drop them first (or select the profile yourself with "
            "mock_nnapi.control.set_profile before building)"
        ) from error
    try:
        yield
    finally:
        gc.collect()
        control.set_profile(previous)


@contextlib.contextmanager
def _cost_only() -> Iterator[None]:
    from mock_nnapi import control

    from .. import runtime

    options = runtime.options_in_effect()
    runtime.configure(policy="nnapi", cache_dir="")
    try:
        with control.CostOnlyExecution():
            yield
    finally:
        runtime.configure(
            policy=options.get("policy", "nnapi"), cache_dir=options.get("cache_dir", "")
        )


def estimate(
    mod: IRModule,
    profile: str,
    shapes: Mapping[str, int] | None = None,
    entry: str | None = None,
    host_model: str | HostModel = "profile-cpu",
    weights: str = "input",
    options: PartitionOptions | None = None,
    extern_work: Mapping[str, ExternWork] | None = None,
    graph_transform: GraphTransform | None = None,
) -> Estimate:
    """Modelled latency of ``entry`` (default ``main``) of ``mod`` on ``profile``, NNAPI-offloaded
    vs all on the host.

    ``shapes`` gives every symbolic dimension of the entry a value (``{"seq_len": 128}``). The
    entry is partitioned for NNAPI as :func:`tvm_nnapi.build` does; ``mod`` itself is not
    changed. ``host_model``: a :class:`HostModel` or a preset name (:data:`HOST_MODELS`).
    ``weights``: see :meth:`PreparedEstimate.run`. ``extern_work`` gives the work of extern
    calls by function name (unknown ones are listed as not modelled). Weights are the
    parameters after the entry's ``num_input`` attribute (as ``nn.Module.export_tvm`` marks
    them); without it every parameter counts as an activation. To estimate one program on
    several profiles, use :class:`PreparedEstimate` (partitions once). ``graph_transform``
    rewrites each subgraph's graph JSON before it is costed (a what-if, :data:`GraphTransform`).
    """
    prepared = PreparedEstimate(mod, shapes, entry, options, extern_work, graph_transform)
    return prepared.run(profile, host_model, weights)


# What dominates the NNAPI side, with the lever that reduces it (why_nnapi_loses).
_LOSS_CAUSES = (
    (
        "modelled_driver_overhead_us",
        "driver overhead",
        "a fixed cost per call and per operation, which small inputs do not amortise",
    ),
    (
        "modelled_input_setup_us",
        "input and weight set-up",
        "inputs and weights are handed to NNAPI at every call (--weights resident models "
        "weights given once)",
    ),
    (
        "modelled_transfer_us",
        "host<->device transfers",
        "values copied between host memory and the devices",
    ),
    (
        "modelled_compute_us",
        "compute",
        "the devices that run these operations compute them slower than the host CPU",
    ),
)


def why_nnapi_loses(estimate: dict[str, Any]) -> str | None:
    """One line saying why the NNAPI-offloaded program is slower than the all-host one (from
    :meth:`Estimate.to_dict`), or None when it is not slower. All figures are MODELLED: the
    largest part of the NNAPI subgraphs' time against the host time of the same operators."""
    totals = estimate.get("totals", {})
    nnapi = float(totals.get("modelled_nnapi_program_us", 0.0))
    host = float(totals.get("modelled_host_program_us", 0.0))
    subgraphs = estimate.get("subgraphs", [])
    if not subgraphs or not nnapi or host >= nnapi:
        return None
    offloaded = sum(float(s["modelled_nnapi_us"]) * int(s.get("calls", 1)) for s in subgraphs)
    on_host = sum(float(s["modelled_host_us"]) * int(s.get("calls", 1)) for s in subgraphs)
    key, label, lever = max(_LOSS_CAUSES, key=lambda cause: float(totals.get(cause[0], 0.0)))
    part = float(totals.get(key, 0.0))
    from .report import _format_us

    return (
        f"NNAPI is slower here (modelled): {label} is {_format_us(part)} of the "
        f"{_format_us(offloaded)} its subgraphs take, while the host CPU runs the same operators "
        f"in {_format_us(on_host)}; {lever}"
    )
