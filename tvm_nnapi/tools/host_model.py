# SPDX-License-Identifier: Apache-2.0
"""The host model: MODELLED time of TVM's CPU code on a profile's phone (docs/cost-model.md,
"Host code").

The equation is the mock's own (:class:`mock_nnapi.cost_model.CostModel`, the one
implementation of the per-operation time): TVM's code for a Relax operator is costed as an
operation of the profile's host CPU device, with the efficiencies of a preset. Nothing here
needs TVM.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "HOST_MODELS",
    "TVM_DEFAULT_CODE_EFFICIENCY",
    "TVM_DLIGHT_PROJECTION_EFFICIENCY",
    "HostModel",
    "HostWork",
]

#: The efficiency of TVM's *unscheduled* CPU code (``relax.build(mod, "llvm")`` with the default
#: pipeline, no dlight or MetaSchedule tuning), measured by ``bench/bench_host_efficiency.py``:
#: its LLM projection (an NT matmul) ran at 1.1%-1.3% of OpenBLAS's speed on the same x86 host;
#: with OpenBLAS near 80% of peak, that is about 1% of peak. See docs/cost-model.md.
TVM_DEFAULT_CODE_EFFICIENCY = 0.01

#: The efficiencies (fractions of peak compute and of memory bandwidth) of an LLM projection's
#: TVM code compiled with MLC-LLM's CPU schedules (dlight, :mod:`tvm_nnapi.llm.host_pipeline`),
#: measured by ``bench/bench_host_efficiency.py`` (docs/cost-model.md, "Host code"):
#: ``compute``, prefill's matrix-matrix product (about 1.2%-2.4% of OpenBLAS's sgemm, taken at
#: 80% of peak); ``memory``, decode's matrix-vector product over a weight larger than the
#: caches (0.05-0.09 of the bandwidth OpenBLAS's sgemv and numpy's add reach).
TVM_DLIGHT_PROJECTION_EFFICIENCY = {"compute": 0.015, "memory": 0.06}

#: The classes of the projections (and attention's products) dlight schedules.
_PROJECTION_CLASSES = ("matmul", "fully_connected")

HOST_MODELS = ("profile-cpu", "tvm-default", "tvm-dlight")


@dataclass
class HostWork:
    """Work of one host operator or extern call: FLOPs, bytes and its cost-model classes
    (:func:`mock_nnapi.cost_model.operation_classes`; ``other`` takes the profile's default
    efficiency unless the profile lists ``other``)."""

    flops: float
    bytes: float
    data_class: str = "float32"
    operation_class: str = "other"


@dataclass(frozen=True)
class HostModel:
    """The modelled time of TVM's CPU code for one Relax operator (docs/cost-model.md, "Host
    code"): the mock's per-operation equation on the profile's host CPU device,

        busy = max(F / (peak[c] x compute_efficiency[k][c]),
                   B / (bandwidth x memory_efficiency[k][c]))
        time = busy + operation_overhead

    ``peak`` (GFLOP/s per data class) and ``bandwidth`` (GB/s) are the profile's host CPU
    device (the ``runtime_cpu`` one, else the first CPU: its ``throughput`` and
    ``memory_bandwidth_gbps``); the efficiencies depend on the preset:

    - ``profile-cpu`` (default): the CPU device's own efficiency tables, i.e. TVM's code is
      assumed as good as the profile's estimate of an optimised mobile CPU implementation
      (the NNAPI CPU driver). This favours the host.
    - ``tvm-default``: :data:`TVM_DEFAULT_CODE_EFFICIENCY` for every class, TVM's unscheduled
      code as measured.
    - ``tvm-dlight``: TVM's code with MLC-LLM's CPU schedules: ``tvm-default``, except that
      the projection classes (``matmul``, ``fully_connected``) take the compute and memory
      efficiencies of :data:`TVM_DLIGHT_PROJECTION_EFFICIENCY`, as measured (dlight schedules
      nothing else on a CPU).

    Made by :meth:`from_profile`; the other fields describe the model in reports.
    """

    name: str
    profile: str
    device: str
    peak_gflops: Mapping[str, float]
    bandwidth_gbps: float
    efficiency: Mapping[str, float]
    operation_overhead_us: float = 0.0
    #: ``compute_efficiency`` / ``memory_efficiency`` tables of the CPU device (profile-cpu
    #: only; docs/device-profiles.md), refining ``efficiency`` per side and data class.
    split_efficiency: Mapping[str, Any] = field(default_factory=dict)
    #: The profile document the cost model reads: the host device with the preset's tables.
    document: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_profile(cls, profile: str, preset: str = "profile-cpu") -> HostModel:
        """The host model of ``profile`` (a built-in name or a path) with a preset."""
        from mock_nnapi.device_profiles import host_cpu_device, load_profile

        if preset not in HOST_MODELS:
            raise ValueError(f"unknown host model {preset!r}; known: {HOST_MODELS}")
        data = load_profile(profile)
        cpu = host_cpu_device(data)
        peak = dict(cpu["throughput"])
        peak.setdefault("relaxed_float32", peak["float32"])
        split: dict[str, Any] = {}
        document = copy.deepcopy(data)
        host = next(d for d in document["devices"] if d["name"] == cpu["name"])
        if preset == "profile-cpu":
            efficiency = dict(cpu["efficiency"])
            split = {
                key: cpu[key] for key in ("compute_efficiency", "memory_efficiency") if key in cpu
            }
        else:
            efficiency = {"default": TVM_DEFAULT_CODE_EFFICIENCY}
            host["efficiency"] = dict(efficiency)
            host.pop("compute_efficiency", None)
            host.pop("memory_efficiency", None)
            if preset == "tvm-dlight":
                split = {
                    f"{side}_efficiency": dict.fromkeys(
                        _PROJECTION_CLASSES, TVM_DLIGHT_PROJECTION_EFFICIENCY[side]
                    )
                    for side in ("compute", "memory")
                }
                host.update(copy.deepcopy(split))
        return cls(
            name=preset,
            profile=str(data["name"]),
            device=str(cpu["name"]),
            peak_gflops=peak,
            bandwidth_gbps=float(cpu["memory_bandwidth_gbps"]),
            efficiency=efficiency,
            split_efficiency=split,
            document=document,
        )

    @functools.cached_property
    def _cost_model(self) -> Any:
        from mock_nnapi.cost_model import CostModel

        if not self.document:
            raise ValueError("a HostModel is made by HostModel.from_profile (no profile document)")
        return CostModel(self.document)

    def efficiency_of(self, operation_class: str) -> float:
        """The preset's single ``efficiency`` entry of a class (its ``default`` when the class
        is not listed); :meth:`side_efficiency` gives what the model uses."""
        return float(self.efficiency.get(operation_class, self.efficiency["default"]))

    def side_efficiency(self, side: str, operation_class: str, data_class: str) -> float:
        """``compute`` or ``memory`` efficiency of a class, as the cost model reads it."""
        return float(self._cost_model.efficiency(self.device, side, operation_class, data_class))

    def time_us(self, flops: float, bytes_: float, data_class: str, operation_class: str) -> float:
        """Modelled microseconds of one operator."""
        cost = self._cost_model.operation(self.device, operation_class, data_class, flops, bytes_)
        return float(cost.busy_us) + self.operation_overhead_us

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "profile": self.profile,
            "device": self.device,
            "peak_gflops": dict(self.peak_gflops),
            "bandwidth_gbps": self.bandwidth_gbps,
            "efficiency": dict(self.efficiency),
            "operation_overhead_us": self.operation_overhead_us,
            **({"split_efficiency": dict(self.split_efficiency)} if self.split_efficiency else {}),
        }
