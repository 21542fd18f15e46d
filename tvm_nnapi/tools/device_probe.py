# SPDX-License-Identifier: Apache-2.0
"""What a target's NNAPI devices really take, and a device profile written from it
(``tvm-nnapi devices --target T --write-profile phone.json``, docs/targets.md).

The probes are small Relax programs, one operator each in float32 and float16, and a few QDQ
(uint8 activations, int8 weights) ones, partitioned and
lowered by this backend exactly as a model's subgraphs are; each resulting graph is built on the
target's NNAPI (not compiled) and NNAPI is asked, device by device, which of its operations it
supports (``ANeuralNetworksModel_getSupportedOperationsForDevices``). So the answer covers the
NNAPI operations and operand types this backend emits, as the target's drivers see them.

:func:`profile_from_probe` turns the answer into a device profile: the devices' real names,
types, feature levels and versions, their probed support, and cost-model parameters taken from
a base profile (the device of the same type there) and labelled as defaults until calibrated
(``tvm-nnapi calibrate``). With it, ``explain``/``estimate``/``run --profile phone.json`` on the
mock partition for that phone's drivers.
"""

from __future__ import annotations

import copy
import datetime
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tvm
from tvm import relax

from ..compiler.codegen import lower_function
from ..compiler.partition import nnapi_subgraphs, partition
from ..compiler.patterns import PartitionOptions
from .partition_target import FEATURE_LEVELS

__all__ = [
    "DEVICE_TYPES",
    "DeviceSupport",
    "Probe",
    "probe_graphs",
    "probe_support",
    "profile_from_probe",
]

#: NNAPI's ANEURALNETWORKS_DEVICE_* codes by name (a profile's device ``type``).
DEVICE_TYPES = {0: "UNKNOWN", 1: "OTHER", 2: "CPU", 3: "GPU", 4: "ACCELERATOR"}

Builder = Callable[[relax.BlockBuilder, relax.Var, str], relax.Expr]


def _const(shape: Sequence[int], dtype: str, seed: int = 0) -> relax.Constant:
    values = np.random.default_rng(seed).standard_normal(shape).astype(dtype) * 0.1
    return relax.const(values, dtype)


#: One probe per Relax operator the backend lowers: (label, input shape, the call on input x).
PROBES: tuple[tuple[str, tuple[int, ...], Builder], ...] = (
    ("add", (1, 8, 8, 8), lambda bb, x, t: relax.op.add(x, _const((1, 8, 8, 8), t))),
    ("subtract", (1, 8, 8, 8), lambda bb, x, t: relax.op.subtract(x, _const((1, 8, 8, 8), t))),
    ("multiply", (1, 8, 8, 8), lambda bb, x, t: relax.op.multiply(x, _const((1, 8, 8, 8), t))),
    ("divide", (1, 8, 8, 8), lambda bb, x, t: relax.op.divide(x, relax.const(2.0, t))),
    ("maximum", (1, 8, 8, 8), lambda bb, x, t: relax.op.maximum(x, _const((1, 8, 8, 8), t))),
    ("minimum", (1, 8, 8, 8), lambda bb, x, t: relax.op.minimum(x, _const((1, 8, 8, 8), t))),
    ("relu", (1, 8, 8, 8), lambda bb, x, t: relax.op.nn.relu(x)),
    ("sigmoid", (1, 8, 8, 8), lambda bb, x, t: relax.op.sigmoid(x)),
    ("tanh", (1, 8, 8, 8), lambda bb, x, t: relax.op.tanh(x)),
    ("exp", (1, 8, 8, 8), lambda bb, x, t: relax.op.exp(x)),
    ("sqrt", (1, 8, 8, 8), lambda bb, x, t: relax.op.sqrt(relax.op.abs(x))),
    ("rsqrt", (1, 8, 8, 8), lambda bb, x, t: relax.op.rsqrt(relax.op.abs(x))),
    ("negative", (1, 8, 8, 8), lambda bb, x, t: relax.op.negative(x)),
    ("softmax", (1, 64), lambda bb, x, t: relax.op.nn.softmax(x, axis=-1)),
    (
        "conv2d",
        (1, 8, 16, 16),
        lambda bb, x, t: relax.op.nn.conv2d(x, _const((8, 8, 3, 3), t), padding=(1, 1)),
    ),
    (
        "depthwise conv2d",
        (1, 8, 16, 16),
        lambda bb, x, t: relax.op.nn.conv2d(x, _const((8, 1, 3, 3), t), padding=(1, 1), groups=8),
    ),
    (
        "matmul (weights)",
        (1, 64),
        lambda bb, x, t: relax.op.matmul(x, _const((64, 32), t)),
    ),
    (
        "matmul (batched)",
        (2, 8, 16),
        lambda bb, x, t: relax.op.matmul(x, relax.op.permute_dims(x, [0, 2, 1])),
    ),
    ("max_pool2d", (1, 8, 16, 16), lambda bb, x, t: relax.op.nn.max_pool2d(x, (2, 2), (2, 2))),
    ("avg_pool2d", (1, 8, 16, 16), lambda bb, x, t: relax.op.nn.avg_pool2d(x, (2, 2), (2, 2))),
    ("mean", (1, 8, 16, 16), lambda bb, x, t: relax.op.mean(x, axis=[2, 3], keepdims=True)),
    ("sum", (1, 8, 16), lambda bb, x, t: relax.op.sum(x, axis=[2])),
    ("max", (1, 8, 16), lambda bb, x, t: relax.op.max(x, axis=[2])),
    ("reshape", (1, 8, 16), lambda bb, x, t: relax.op.nn.relu(relax.op.reshape(x, (1, 128)))),
    ("permute_dims", (1, 8, 16), lambda bb, x, t: relax.op.permute_dims(x, [0, 2, 1])),
    ("concat", (1, 8, 16), lambda bb, x, t: relax.op.concat([x, x], axis=1)),
    (
        "strided_slice",
        (1, 8, 16),
        lambda bb, x, t: relax.op.strided_slice(x, axes=[2], begin=[2], end=[10]),
    ),
    (
        "layer_norm",
        (1, 8, 16),
        lambda bb, x, t: relax.op.nn.layer_norm(x, _const((16,), t), _const((16,), t, 1), [-1]),
    ),
    ("gelu", (1, 8, 16), lambda bb, x, t: relax.op.nn.gelu(x)),
)


def _dq(x: relax.Expr) -> relax.Expr:
    """A uint8 activation dequantized (scale 0.05, zero point 128)."""
    return relax.op.dequantize(
        x, relax.const(0.05, "float32"), relax.const(128, "uint8"), axis=1, out_dtype="float32"
    )


def _dq_weights(shape: Sequence[int], axis: int = 0) -> relax.Expr:
    """Constant int8 weights dequantized (scale 0.01, zero point 0)."""
    values = np.random.default_rng(0).integers(-20, 20, shape).astype("int8")
    return relax.op.dequantize(
        relax.const(values),
        relax.const(0.01, "float32"),
        relax.const(0, "int8"),
        axis=axis,
        out_dtype="float32",
    )


def _q(y: relax.Expr) -> relax.Expr:
    """A float result quantized to uint8 (scale 0.1, zero point 128)."""
    return relax.op.quantize(
        y, relax.const(0.1, "float32"), relax.const(128, "uint8"), axis=1, out_dtype="uint8"
    )


#: Quantized (QDQ) probes: uint8 activations, int8 weights, as a QDQ model reaches NNAPI.
QUANTIZED_PROBES: tuple[tuple[str, tuple[int, ...], Builder], ...] = (
    (
        "conv2d",
        (1, 8, 16, 16),
        lambda bb, x, t: _q(relax.op.nn.conv2d(_dq(x), _dq_weights((8, 8, 3, 3)), padding=(1, 1))),
    ),
    (
        "depthwise conv2d",
        (1, 8, 16, 16),
        lambda bb, x, t: _q(
            relax.op.nn.conv2d(_dq(x), _dq_weights((8, 1, 3, 3)), padding=(1, 1), groups=8)
        ),
    ),
    (
        "matmul (weights)",
        (1, 64),
        lambda bb, x, t: _q(relax.op.matmul(_dq(x), _dq_weights((64, 32), axis=1))),
    ),
    ("add", (1, 8, 8, 8), lambda bb, x, t: _q(relax.op.add(_dq(x), _dq(x)))),
    (
        "avg_pool2d",
        (1, 8, 16, 16),
        lambda bb, x, t: _q(relax.op.nn.avg_pool2d(_dq(x), (2, 2), (2, 2))),
    ),
)


@dataclass
class Probe:
    """One lowered probe graph: the NNAPI operations it holds and their first input's type."""

    label: str
    dtype: str
    graph_json: str
    constants: bytes
    shapes: list[list[int]]
    operations: list[tuple[str, str]]  # (NNAPI operation, operand type of its first input)


def _module(shape: Sequence[int], dtype: str, make: Builder) -> tvm.IRModule:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(list(shape), dtype))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(make(bb, x, dtype))
        bb.emit_func_output(out)
    return bb.get()


def probe_graphs(dtypes: Sequence[str] = ("float32", "float16")) -> tuple[list[Probe], list[str]]:
    """The probe graphs (each float probe in ``dtypes``, and the quantized probes), and one
    line per probe that yields no NNAPI graph here (with why)."""
    options = PartitionOptions(feature_level=FEATURE_LEVELS[8])
    probes: list[Probe] = []
    skipped: list[str] = []
    cases = [(label, shape, make, dtype) for label, shape, make in PROBES for dtype in dtypes]
    cases += [(label, shape, make, "uint8") for label, shape, make in QUANTIZED_PROBES]
    for label, shape, make, dtype in cases:
        try:
            partitioned = partition(_module(shape, dtype, make), options)
            names = nnapi_subgraphs(partitioned)
        except Exception as error:  # a probe the backend cannot take is reported, not fatal
            skipped.append(f"{label} {dtype}: {type(error).__name__}: {error}")
            continue
        if not names:
            skipped.append(f"{label} {dtype}: the partition keeps it on the host")
            continue
        for name in names:
            builder = lower_function(partitioned[name].with_attr("global_symbol", name))
            document = builder.to_dict()
            operands = document["operands"]
            operations = [
                (op["op"], str(operands[op["inputs"][0]]["type"]) if op["inputs"] else "")
                for op in document["operations"]
            ]
            shapes = [[int(d) for d in operands[i]["shape"]] for i in document["inputs"]]
            probes.append(
                Probe(
                    label,
                    dtype,
                    builder.to_json(),
                    bytes(builder.constants),
                    shapes,
                    operations,
                )
            )
    return probes, skipped


@dataclass
class DeviceSupport:
    """A device's answers: per NNAPI operation, the first-input operand types it took and
    refused in the probes."""

    name: str
    supported: dict[str, set[str]] = field(default_factory=dict)
    refused: dict[str, set[str]] = field(default_factory=dict)

    def operations(self) -> list[str]:
        return sorted(self.supported)

    def data_types(self) -> list[str]:
        return sorted({t for types in self.supported.values() for t in types if t})


def probe_support(
    target: Any, progress: Callable[[str], None] | None = None
) -> tuple[dict[str, DeviceSupport], list[Probe], list[str]]:
    """Asks the target's NNAPI, device by device, which operations of each probe graph it
    supports. Returns the devices' support (by name), the probes and the skipped probes."""
    say = progress or (lambda message: None)
    probes, skipped = probe_graphs()
    support: dict[str, DeviceSupport] = {}
    for index, probe in enumerate(probes):
        say(f"probing {probe.label} ({probe.dtype}), {index + 1} of {len(probes)}...")
        answer = target.supported_operations(probe.graph_json, probe.constants, probe.shapes)
        for device, flags in answer["devices"].items():
            entry = support.setdefault(device, DeviceSupport(device))
            for (operation, operand_type), ok in zip(probe.operations, flags, strict=True):
                table = entry.supported if ok else entry.refused
                table.setdefault(operation, set()).add(operand_type)
    return support, probes, skipped


def _cost_parameters(base: dict[str, Any], device_type: str) -> tuple[dict[str, Any], str]:
    """The cost-model fields of the base profile's device of ``device_type`` (else its first
    device), and that device's name."""
    devices = base["devices"]
    like = next((d for d in devices if d["type"] == device_type), devices[0])
    keys = (
        "throughput",
        "memory_bandwidth_gbps",
        "efficiency",
        "compute_efficiency",
        "memory_efficiency",
        "fuse_elementwise",
        "overhead_us",
        "compilation_us",
        "energy",
        "transfer",
    )
    fields = {key: copy.deepcopy(like[key]) for key in keys if key in like}
    if device_type != "CPU" and "transfer" not in fields:
        fields["transfer"] = {"latency_us": 50, "bandwidth_gbps": 10}
    if device_type == "CPU":
        fields.pop("transfer", None)
    return fields, str(like["name"])


def profile_from_probe(
    info: dict[str, Any],
    support: dict[str, DeviceSupport],
    base: dict[str, Any],
    name: str,
    where: str,
    skipped: Sequence[str] = (),
) -> dict[str, Any]:
    """A device profile of the probed target: ``info`` is the target's
    ``tvm_nnapi.testing.nnapi_devices`` answer, ``support`` :func:`probe_support`'s, ``base``
    the profile document whose devices lend their cost-model parameters (labelled as defaults
    until calibrated), ``where`` names the target in the sources."""
    today = datetime.date.today().isoformat()
    devices = []
    sources = []
    seen_runtime_cpu = False
    for device in info["devices"]:
        device_type = DEVICE_TYPES.get(int(device["type"]), "OTHER")
        probed = support.get(device["name"], DeviceSupport(device["name"]))
        cost, lent_by = _cost_parameters(base, device_type if device_type != "UNKNOWN" else "CPU")
        entry: dict[str, Any] = {
            "name": device["name"],
            "type": device_type if device_type in ("CPU", "GPU", "ACCELERATOR") else "OTHER",
            "version": device["version"] or "unknown",
            "feature_level": int(device["feature_level"]),
            "support": {
                "operations": probed.operations(),
                "data_types": probed.data_types() or "all",
                "max_rank": 6,
                "notes": "probed on the target: the operations of this backend's probe graphs "
                "the device accepted (getSupportedOperationsForDevices); operations no probe "
                "emits are not listed",
            },
            **cost,
        }
        if device_type == "CPU" and not seen_runtime_cpu:
            entry["runtime_cpu"] = True
            seen_runtime_cpu = True
        devices.append(entry)
        index = len(devices) - 1
        sources.append(
            {
                "fields": [f"devices[{index}].name", f"devices[{index}].support"],
                "source": f"Probed with `tvm-nnapi devices --write-profile` on {where} "
                f"({info.get('library', 'NNAPI')}), {today}.",
                "estimate": False,
            }
        )
        sources.append(
            {
                "fields": [f"devices[{index}].{key}" for key in cost],
                "source": f"Defaults until calibrated: copied from device {lent_by} of profile "
                f"{base.get('name')} (the same device type); fit them with tvm-nnapi calibrate.",
                "estimate": True,
            }
        )
    if not devices:
        raise ValueError(f"{where}: its NNAPI library lists no device")
    level = int(info.get("feature_level", FEATURE_LEVELS[8]))
    profile = {
        "schema": base.get("schema", "mock_nnapi.device_profile/1"),
        "name": name,
        "description": f"The NNAPI devices of {where} as probed on {today}: their names, types, "
        "feature levels and versions, and the operations they accepted; cost-model parameters "
        f"are defaults from {base.get('name')} until calibrated.",
        "runtime": {
            "feature_level": level,
            "overhead_us": base.get("runtime", {}).get("overhead_us", 0),
        },
        "sources": [
            *sources,
            {
                "fields": ["runtime.overhead_us"],
                "source": f"Default from profile {base.get('name')} until calibrated.",
                "estimate": True,
            },
        ],
        "devices": devices,
    }
    if skipped:
        profile["sources"].append(
            {
                "fields": ["devices"],
                "source": "Probes that gave no NNAPI graph here: " + "; ".join(skipped),
                "estimate": False,
            }
        )
    return profile


def write_profile(profile: dict[str, Any], path: str) -> None:
    """Writes a probed profile (JSON, indented)."""
    with open(path, "w", encoding="utf-8") as file:
        json.dump(profile, file, indent=2)
        file.write("\n")
