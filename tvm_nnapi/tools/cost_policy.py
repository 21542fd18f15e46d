# SPDX-License-Identifier: Apache-2.0
"""A ``cost:`` device-selection policy of the runtime (docs/runtime.md) from a device profile.

The runtime's ``cost:`` policy decides per shape signature between NNAPI and TVM's host code
with four figures; this derives them from a profile through the mock's cost model (the one
implementation of the efficiency look-up). It runs where the program is built, not on the phone.
"""

from __future__ import annotations

from mock_nnapi.cost_model import CostModel
from mock_nnapi.device_profiles import host_cpu_device, load_profile

__all__ = ["cost_policy_from_profile"]


def cost_policy_from_profile(
    profile: str, dtype: str = "float32", device: str | None = None, host_efficiency: float = 1.0
) -> str:
    """A ``cost:`` device-selection policy from a device profile (the runtime's ``policy``
    option, :func:`tvm_nnapi.runtime.configure`).

    NNAPI side: the named ``device`` (default: the non-CPU device with the highest throughput
    for ``dtype``) at its throughput times its matmul compute efficiency, with the runtime's and the
    device's per-execution overheads plus the transfer latency as the per-call cost and the
    transfer bandwidth for inputs and outputs. Host side: TVM's CPU code, modelled with the
    profile's CPU device throughput times ``host_efficiency``. All figures are modelled.
    """
    data = load_profile(profile)
    devices = data["devices"]
    host = host_cpu_device(data)
    candidates = [d for d in devices if d["type"] != "CPU" and dtype in d.get("throughput", {})]
    if device is not None:
        candidates = [d for d in devices if d["name"] == device]
        if not candidates:
            raise ValueError(f"profile {profile!r} has no device named {device!r}")
    if not candidates:
        candidates = [d for d in devices if d["type"] == "CPU"]
    chosen = max(candidates, key=lambda d: d["throughput"].get(dtype, 0))
    efficiency = CostModel(data).efficiency(chosen["name"], "compute", "matmul", dtype)
    nnapi_gflops = chosen["throughput"][dtype] * efficiency
    transfer = chosen.get("transfer") or {"latency_us": 0, "bandwidth_gbps": 1e6}
    call_us = (
        data.get("runtime", {}).get("overhead_us", 0)
        + chosen.get("overhead_us", {}).get("execution", 0)
        + transfer["latency_us"]
    )
    host_gflops = host["throughput"].get(dtype, host["throughput"]["float32"])
    return (
        f"cost:nnapi_gflops={nnapi_gflops:g},host_gflops={host_gflops * host_efficiency:g},"
        f"call_us={call_us:g},transfer_gbps={transfer['bandwidth_gbps']:g}"
    )
