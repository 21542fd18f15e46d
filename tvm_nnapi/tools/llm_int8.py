# SPDX-License-Identifier: Apache-2.0
"""The MODELLED cost of an LLM's int8 weight path (:mod:`tvm_nnapi.llm.int8`), from the real
graphs: the int8 QDQ model partitioned and lowered as the engine's build does it (its
projections QUANTIZE -> CONV_2D with a per-channel filter -> DEQUANTIZE), each NNAPI subgraph
costed on the mock with a device profile (:mod:`tvm_nnapi.tools.estimate`).

The model is exported without weights (:func:`costing_module`): its int8
weights are inputs of the subgraphs, and the estimate runs in its ``resident`` mode, which
leaves out their copies (the engine binds them as constants; a copy is the only term of the
cost model in which a constant differs from an input). The estimate's ``weights`` field says
``int8``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from tvm import relax

from ..compiler.patterns import PartitionOptions
from ..llm.config import LlamaConfig
from ..llm.dispatch import ATTENTION_BUILTIN
from ..llm.int8 import Calibration, projection_sites
from ..llm.model import export_model
from .estimate import Estimate, PreparedEstimate
from .llm_work import attention_work

__all__ = ["Int8Estimator", "bind_items", "costing_module"]


def costing_module(
    config: LlamaConfig, dtype: str, entries: Sequence[str] = ("prefill", "decode")
) -> tuple[Any, list[tuple[str, Any]]]:
    """``(module, named_params)``: the int8 model of ``config`` in ``dtype`` for the estimate,
    without weights. The ``entries``' per-channel weight scales are bound as constants (ones): NNAPI
    needs them in the filters' operand types, while the int8 weights stay inputs of the
    subgraphs, whose copies the estimate's resident mode leaves out (they are constants in the
    engine's build). Activation ranges are :meth:`Calibration.placeholder`'s: the modelled cost
    depends on the operations and shapes, not on the scales' values."""
    calibration = Calibration.placeholder(projection_sites(config))
    mod, named_params, _ = export_model(config, dtype, int8=calibration)
    scales = {
        index: np.ones(int(param.shape[0]), np.float32)
        for index, (name, param) in enumerate(named_params)
        if name.endswith(".q8_scale")
    }
    for entry in entries:
        mod = bind_items(mod, entry, scales)
    return mod, named_params


def bind_items(mod: Any, entry: str, values: Mapping[int, np.ndarray]) -> Any:
    """``mod`` with the items ``values`` (by position) of ``entry``'s packed weight parameter
    (the tuple after its ``num_input`` inputs) replaced by constants; the parameter stays."""
    from tvm.relax.expr_functor import PyExprMutator, mutator

    func = mod[entry]
    num_input = int((func.attrs or {}).get("num_input", len(func.params)))
    packed = func.params[num_input:]
    if len(packed) != 1 or not isinstance(packed[0].ty, relax.TupleType):
        raise ValueError(f"{entry} has no packed weight parameter to bind items of")
    param = packed[0]
    constants = {index: relax.const(array) for index, array in values.items()}

    @mutator
    class _Binder(PyExprMutator):
        def visit_tuple_getitem_(self, op: relax.TupleGetItem) -> relax.Expr:
            if op.tuple_value.same_as(param) and int(op.index) in constants:
                return constants[int(op.index)]
            return super().visit_tuple_getitem_(op)

    body = _Binder().visit_expr(func.body)
    bound = relax.Function(func.params, body, func.ret_ty, func.is_pure, func.attrs)
    result = mod.__class__(dict(mod.functions), attrs=mod.attrs, global_infos=mod.global_infos)
    result[mod.get_global_var(entry)] = bound
    return result


class Int8Estimator:
    """Estimates of one configuration's int8 ``prefill`` and ``decode`` (exported once)."""

    def __init__(
        self, config: LlamaConfig, dtype: str, options: PartitionOptions | None = None
    ) -> None:
        self.config, self.dtype, self.options = config, dtype, options
        self.module, _ = costing_module(config, dtype)
        self._prepared: dict[tuple[str, int], PreparedEstimate] = {}

    def prepared(self, phase: str, length: int) -> PreparedEstimate:
        """``phase`` ``prefill`` (``length`` = prompt tokens) or ``decode`` (``length`` = tokens
        already in the KV cache)."""
        key = (phase, length)
        if key not in self._prepared:
            if phase == "prefill":
                shapes = {"seq_len": length}
                work = attention_work(self.config, self.dtype, length, 0)
            elif phase == "decode":
                shapes, work = {}, attention_work(self.config, self.dtype, 1, length)
            else:
                raise ValueError(f"phase must be 'prefill' or 'decode', got {phase!r}")
            self._prepared[key] = PreparedEstimate(
                self.module, shapes, phase, self.options, extern_work={ATTENTION_BUILTIN: work}
            )
        return self._prepared[key]

    def estimate(
        self, phase: str, length: int, profile: str, host_model: str = "profile-cpu"
    ) -> Estimate:
        result = self.prepared(phase, length).run(profile, host_model, "resident")
        result.weights = "int8"
        return result
