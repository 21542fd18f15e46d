# SPDX-License-Identifier: Apache-2.0
"""What the accelerators buy, MODELLED (docs/experiments.md "Precision"): CV networks
per phone profile and precision, LLM prefill with relaxed float16, a W8A8 LLM prefill what-if,
and the measured accuracy of that W8A8 scheme. ``bench/precision_experiments.py`` runs it and
writes the docs section.

Every time is **modelled** by :mod:`tvm_nnapi.tools.estimate` (the mock's cost model for the
NNAPI side, the host roofline for TVM's CPU backend); nothing here is a measurement except the
accuracy check, which is measured in numpy on the host (:mod:`tvm_nnapi.llm.w8a8_accuracy`).

- **CV**: each network is partitioned as ``tvm-nnapi estimate --profile P`` does (the profile's
  feature level and supported operations) in float32, with relaxed float16
  (``PartitionOptions(relax_fp32_to_fp16=True)``) and, for int8, as a real QDQ model: the
  network's ONNX export quantized by onnxruntime's ``quantize_static`` (QDQ, per-channel int8
  weights, uint8 activations, calibrated on random images;
  :func:`tvm_nnapi.models.quantized_torchvision.quantized_torchvision_model`), imported with
  TVM's ONNX frontend and partitioned through the normal pipeline. Where no NNAPI subgraph of
  that model has a quant8 operand the rows are left out and the reason is recorded, never
  estimated otherwise. ``int8+relaxed-fp16`` is the same QDQ model with relaxed float16 (the
  operators it keeps in float may then run on an NPU/DSP that computes float32 as float16).
  The CPU backend is the float32 program all on the host, for the int8
  rows too (the QDQ program on the host is kept as ``modelled_qdq_host_ms``).
- **LLM**: prefill of the LLM configurations, float32, relaxed float16 (on the profiles whose
  NPU accepts it) and W8A8 (:func:`tvm_nnapi.tools.w8a8_what_if.w8a8_graph`, the rest
  relaxed), against TVM's CPU backend (float32, host model ``profile-cpu``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..compiler.patterns import PartitionOptions
from ..tools.estimate import Estimate, PreparedEstimate
from ..tools.partition_target import partition_options
from ..tools.w8a8_what_if import w8a8_graph
from .llm import MODELS, PHONE_PROFILES, PROMPT_LENGTHS, THESIS_BAND, LlmEstimator

BUILTIN_CV = ("residual", "mobilenet_v2_small", "mobilenet_v2")
#: int8+relaxed-fp16: the QDQ model with relaxed float16 (``--relax-fp16``), so the operators
#: left in float between DEQUANTIZE and QUANTIZE (those NNAPI has no quant8 form of at the
#: model's quantization) may run on an NPU/DSP that computes float32 only as float16.
PRECISIONS = ("float32", "relaxed-fp16", "int8", "int8+relaxed-fp16")
LLM_VARIANTS = ("float32", "relaxed-fp16", "w8a8")
Say = Callable[[str], None]


def relaxed_profiles(profiles: Sequence[str]) -> list[str]:
    """The profiles with a non-CPU, non-GPU device that accepts relaxed float32 (an NPU/DSP)."""
    from mock_nnapi.device_profiles import load_profile

    found = []
    for profile in profiles:
        devices = load_profile(profile)["devices"]
        if any(
            d["type"] not in ("CPU", "GPU") and d.get("support", {}).get("relaxed_float32")
            for d in devices
        ):
            found.append(profile)
    return found


def profile_options(profile: str, relaxed: bool) -> PartitionOptions:
    """The partition options ``tvm-nnapi estimate --profile P [--relax-fp16]`` uses."""
    return partition_options(profile, relax_fp16=relaxed)


def _devices_text(subgraphs: Sequence[dict[str, Any]]) -> str:
    counts = Counter("+".join(s["devices"]) or "-" for s in subgraphs)
    return ", ".join(f"{n}x {devices}" for devices, n in counts.most_common())


def _cv_record(network: str, precision: str, est: Estimate) -> dict[str, Any]:
    subgraphs = [
        {"name": s.name, "calls": s.calls, "devices": s.devices,
         "nnapi_operations": sum(s.nnapi_operations.values()), "flops": s.flops}
        for s in est.subgraphs
    ]  # fmt: skip
    offloaded = sum(s.flops * s.calls for s in est.subgraphs)
    host = sum(r.flops for r in est.host_rows)
    return {
        "network": network,
        "precision": precision,
        "profile": est.profile,
        "subgraphs": subgraphs,
        "devices": _devices_text(subgraphs),
        "offloaded_flop_share": offloaded / (offloaded + host) if offloaded + host else 0.0,
        "modelled_nnapi_program_ms": est.modelled_nnapi_program_us / 1e3,
        "modelled_cpu_backend_ms": est.modelled_host_program_us / 1e3,
        "modelled_speedup": est.modelled_speedup,
    }


def _against_float_cpu_backend(row: dict[str, Any], records: Sequence[dict[str, Any]]) -> None:
    """Judge an int8 row against the float32 network on TVM's CPU backend, as every other row
    (the QDQ program on the host, float operators between quantize/dequantize pairs, is kept
    as ``modelled_qdq_host_ms``)."""
    (float32,) = [
        r
        for r in records
        if r["network"] == row["network"]
        and r["profile"] == row["profile"]
        and r["precision"] == "float32"
    ]
    row["modelled_qdq_host_ms"] = row["modelled_cpu_backend_ms"]
    row["modelled_cpu_backend_ms"] = float32["modelled_cpu_backend_ms"]
    row["modelled_speedup"] = row["modelled_cpu_backend_ms"] / row["modelled_nnapi_program_ms"]


def quant8_subgraphs(prepared: PreparedEstimate) -> int:
    """How many NNAPI subgraphs of a partitioned program have a quant8 operand."""
    return sum(
        any(o["type"].startswith("TENSOR_QUANT8") for o in graph["operands"])
        for graph in prepared.graph_documents().values()
    )


def int8_rows(
    name: str, qdq: Any, profiles: Sequence[str], say: Say = print
) -> tuple[list[dict[str, Any]], str]:
    """The int8 records of a QDQ module on each profile, as built and with relaxed float16
    (``int8+relaxed-fp16``), or none with the reason when no NNAPI subgraph of it has a quant8
    operand (nothing else stands in for them)."""
    records = []
    for relaxed in (False, True):
        precision = "int8+relaxed-fp16" if relaxed else "int8"
        for profile in profiles:
            prepared = PreparedEstimate(qdq, {}, "main", profile_options(profile, relaxed))
            if quant8_subgraphs(prepared) == 0:
                refused = sum(
                    r.operator in ("relax.quantize", "relax.dequantize") for r in prepared.refusals
                )
                return [], (
                    "no int8 rows: no NNAPI subgraph of the onnxruntime QDQ model has a quant8 "
                    f"operand ({refused} relax.quantize/dequantize operators stayed on the host)"
                )
            records.append(_cv_record(name, precision, prepared.run(profile)))
            say(f"[cv] {name} {precision} on {profile}: {records[-1]['devices']}")
    return records, (
        "int8 rows from the onnxruntime QDQ model (int8+relaxed-fp16: the same model with "
        "--relax-fp16, for the operators it keeps in float)"
    )


def _cv_networks(
    include_torchvision: bool, say: Say, wanted: Sequence[str] | None = None
) -> list[tuple[str, Any, Any, tuple | None]]:
    """(name, float Relax module, torch module or None, input shape) of each CV network (of
    those in ``wanted``, when given: the others are not imported)."""
    from ..tools.sources import load_model_source

    networks: list[tuple[str, Any, Any, tuple | None]] = []
    for name in BUILTIN_CV:
        if wanted is not None and name not in wanted:
            continue
        source = load_model_source(name)
        networks.append((name, source.module, None, None))
    if include_torchvision:
        from ..models.torchvision_models import TORCHVISION_NETWORKS, torchvision_model

        for name in TORCHVISION_NETWORKS:
            if wanted is not None and f"torchvision:{name}" not in wanted:
                continue
            say(f"[cv] importing torchvision {name}")
            model = torchvision_model(name)
            networks.append(
                (f"torchvision:{name}", model.module, model.torch_module, model.input_shape)
            )
    return networks


def run_cv(
    profiles: Sequence[str] = PHONE_PROFILES,
    include_torchvision: bool | None = None,
    networks: Sequence[str] | None = None,
    say: Say = print,
) -> dict[str, Any]:
    """CV records for every network, profile and precision, and the int8 status."""
    import importlib.util

    have_torch = all(importlib.util.find_spec(m) for m in ("torch", "torchvision"))
    have_ort = importlib.util.find_spec("onnxruntime") is not None
    if include_torchvision is None:
        include_torchvision = have_torch
    records: list[dict[str, Any]] = []
    int8_status: dict[str, str] = {}
    for name, module, torch_module, _ in _cv_networks(include_torchvision, say, networks):
        for profile in profiles:
            for precision in ("float32", "relaxed-fp16"):
                options = profile_options(profile, precision == "relaxed-fp16")
                est = PreparedEstimate(module, {}, "main", options).run(profile)
                records.append(_cv_record(name, precision, est))
                say(f"[cv] {name} {precision} on {profile}: {records[-1]['devices']}")
        if torch_module is None:
            int8_status[name] = (
                "no int8 rows: a built-in Relax model has no ONNX form to quantize with onnxruntime"
            )
            continue
        if not have_ort:
            int8_status[name] = "no int8 rows: onnxruntime is not installed"
            continue
        from ..models.quantized_torchvision import quantized_torchvision_model

        say(f"[cv] quantizing {name} with onnxruntime's quantize_static")
        qdq = quantized_torchvision_model(name.removeprefix("torchvision:")).module
        rows, int8_status[name] = int8_rows(name, qdq, profiles, say)
        for row in rows:
            _against_float_cpu_backend(row, records)
        records += rows
        say(f"[cv] {name}: {int8_status[name]}")
    return {
        "profiles": list(profiles),
        "records": records,
        "int8_status": int8_status,
        "torchvision": bool(include_torchvision),
    }


def run_llm(
    models: Sequence[str] = MODELS,
    profiles: Sequence[str] = PHONE_PROFILES,
    lengths: Sequence[int] = PROMPT_LENGTHS,
    weights: Sequence[str] = ("input", "resident"),
    say: Say = print,
) -> dict[str, Any]:
    """Prefill records for every model, variant, profile, prompt length and weights option."""
    relaxed = relaxed_profiles(profiles)
    variants = {
        "float32": (None, None, list(profiles)),
        "relaxed-fp16": (PartitionOptions(relax_fp32_to_fp16=True), None, relaxed),
        "w8a8": (PartitionOptions(relax_fp32_to_fp16=True), w8a8_graph, list(profiles)),
    }
    records = []
    start = time.perf_counter()
    for model in models:
        for variant, (options, transform, on) in variants.items():
            estimator = LlmEstimator(model, options=options, graph_transform=transform)
            for length in lengths:
                for profile in on:
                    for option in weights:
                        est = estimator.estimate("prefill", length, profile, weights=option)
                        devices = sorted({d for s in est.subgraphs for d in s.devices})
                        records.append(
                            {
                                "model": model,
                                "variant": variant,
                                "profile": profile,
                                "length": length,
                                "weights": option,
                                "devices": devices,
                                "modelled_nnapi_program_ms": est.modelled_nnapi_program_us / 1e3,
                                "modelled_cpu_backend_ms": est.modelled_host_program_us / 1e3,
                                "modelled_speedup": est.modelled_speedup,
                            }
                        )
                say(
                    f"[llm] {model} {variant} prefill {length}: "
                    f"({time.perf_counter() - start:.0f} s)"
                )
    return {
        "models": list(models),
        "profiles": list(profiles),
        "relaxed_profiles": relaxed,
        "lengths": list(lengths),
        "weights": list(weights),
        "records": records,
    }


def run_accuracy(say: Say = print) -> list[dict[str, Any]]:
    """The measured W8A8 accuracy check on tiny-llama: per-channel and per-tensor weights."""
    from ..llm import w8a8_accuracy as w8a8

    reports = []
    for scheme in w8a8.WEIGHT_SCHEMES:
        report = w8a8.accuracy_check(weight_scheme=scheme)
        say(f"[accuracy] {report.format()}")
        reports.append(report.to_dict())
    in_sample = w8a8.accuracy_check(in_sample=True, check_reference=False)
    say(f"[accuracy] {in_sample.format()}")
    reports.append(in_sample.to_dict())
    return reports


# ---- tables --------------------------------------------------------------------------------------


def cv_tables(cv: dict[str, Any]) -> str:
    lines = []
    networks = list(dict.fromkeys(r["network"] for r in cv["records"]))
    for network in networks:
        lines += [
            f"#### {network}",
            "",
            "| profile | precision | devices (subgraphs) | FLOPs on NNAPI | NNAPI ms | "
            "CPU backend ms | speedup |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in cv["records"]:
            if r["network"] != network:
                continue
            lines.append(
                f"| {r['profile']} | {r['precision']} | {r['devices']} | "
                f"{r['offloaded_flop_share']:.1%} | {r['modelled_nnapi_program_ms']:.4g} | "
                f"{r['modelled_cpu_backend_ms']:.4g} | **{r['modelled_speedup']:.3g}x** |"
            )
        status = cv["int8_status"].get(network)
        lines += ["", f"int8: {status}." if status else "", ""]
    return "\n".join(lines)


def _llm_select(llm: dict[str, Any], **where: Any) -> list[dict[str, Any]]:
    return [r for r in llm["records"] if all(r[k] == v for k, v in where.items())]


def llm_tables(llm: dict[str, Any]) -> str:
    low, high = THESIS_BAND
    lines = []
    for weights in llm["weights"]:
        lines += [
            f"#### LLM prefill speedup over TVM's CPU backend (host model `profile-cpu`, "
            f"weights `{weights}`; modelled)",
            "",
            "| profile | variant | devices | "
            + " | ".join(f"{n} tokens" for n in llm["lengths"])
            + f" | in {low}x-{high}x |",
            "|---|---|---|" + "---|" * len(llm["lengths"]) + "---|",
        ]
        for profile in llm["profiles"]:
            for variant in LLM_VARIANTS:
                rows = _llm_select(llm, profile=profile, variant=variant, weights=weights)
                if not rows:
                    continue
                cells = []
                for n in llm["lengths"]:
                    at = [r["modelled_speedup"] for r in rows if r["length"] == n]
                    cells.append(f"{min(at):.1f}x-{max(at):.1f}x" if at else "-")
                inside = sum(low <= r["modelled_speedup"] <= high for r in rows)
                devices = sorted({d for r in rows for d in r["devices"]})
                lines.append(
                    f"| {profile} | {variant} | {', '.join(devices)} | "
                    + " | ".join(cells)
                    + f" | {inside}/{len(rows)} |"
                )
        lines += ["", f"(ranges over {', '.join(llm['models'])}.)", ""]
    return "\n".join(lines)


def accuracy_table(reports: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| weights | calibration | max abs logit error | mean abs error | relative to max logit "
        "| top-1 agreement | inputs clipped |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in reports:
        calibration = (
            f"{r['calibration_prompts']} other random prompts"
            if r["calibration_prompts"]
            else "the evaluation prompts (diagnostic)"
        )
        lines.append(
            f"| {r['weights']} | {calibration} | {r['max_abs_logit_error']:.3f} | "
            f"{r['mean_abs_logit_error']:.4f} | {r['relative_error']:.1%} | "
            f"{r['top1_agreement']:.1%} | {r['clipped_fraction']:.3%} |"
        )
    first = reports[0]
    lines += [
        "",
        f"({first['evaluation_prompts']} evaluation prompts of {first['prompt_length']} random "
        f"tokens, every position: {first['positions']} logit vectors of {first['model']}, random "
        f"weights seed {first['seed']}; the numpy float32 model matches TVM's host build within "
        f"{first['reference_max_abs_difference']:.1e}.)",
    ]
    return "\n".join(lines)


# ---- plots ---------------------------------------------------------------------------------------


def plot_cv(cv: dict[str, Any], path: str) -> None:
    """Modelled latency per network: CPU backend and each precision, one panel per profile."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profiles = cv["profiles"]
    networks = list(dict.fromkeys(r["network"] for r in cv["records"]))
    series = ["CPU backend", *[p for p in PRECISIONS if any(
        r["precision"] == p for r in cv["records"])]]  # fmt: skip
    fig, axes = plt.subplots(1, len(profiles), figsize=(5 * len(profiles), 4.2), sharey=True)
    axes = np.atleast_1d(axes)
    width = 0.8 / len(series)
    for ax, profile in zip(axes, profiles, strict=True):
        for k, label in enumerate(series):
            values = []
            for network in networks:
                rows = [r for r in cv["records"] if r["network"] == network
                        and r["profile"] == profile]  # fmt: skip
                if label == "CPU backend":
                    picked = [r["modelled_cpu_backend_ms"] for r in rows
                              if r["precision"] == "float32"]  # fmt: skip
                else:
                    picked = [r["modelled_nnapi_program_ms"] for r in rows
                              if r["precision"] == label]  # fmt: skip
                values.append(picked[0] if picked else np.nan)
            x = np.arange(len(networks)) + (k - (len(series) - 1) / 2) * width
            ax.bar(x, values, width, label=label)
        ax.set_yscale("log")
        ax.set_title(profile)
        ax.set_xticks(np.arange(len(networks)))
        ax.set_xticklabels([n.replace("torchvision:", "tv:") for n in networks], rotation=30,
                           ha="right", fontsize=8)  # fmt: skip
    axes[0].set_ylabel("MODELLED latency, ms (log)")
    axes[0].legend(fontsize=8)
    fig.suptitle("CV networks per precision (all times MODELLED, not measured)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_llm(llm: dict[str, Any], path: str, weights: str = "input") -> None:
    """Modelled prefill speedup vs prompt length per variant, one panel per profile, the
    thesis band shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profiles = llm["profiles"]
    fig, axes = plt.subplots(1, len(profiles), figsize=(5 * len(profiles), 4), sharey=True)
    axes = np.atleast_1d(axes)
    colours = {"float32": "tab:blue", "relaxed-fp16": "tab:orange", "w8a8": "tab:green"}
    for ax, profile in zip(axes, profiles, strict=True):
        ax.axhspan(*THESIS_BAND, color="0.9", label="thesis band")
        for variant in LLM_VARIANTS:
            for i, model in enumerate(llm["models"]):
                rows = _llm_select(llm, profile=profile, variant=variant, model=model,
                                   weights=weights)  # fmt: skip
                if not rows:
                    continue
                ax.plot([r["length"] for r in rows], [r["modelled_speedup"] for r in rows],
                        color=colours[variant], marker="o", markersize=3, linewidth=1,
                        label=variant if i == 0 else None)  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(profile)
        ax.set_xlabel("prompt tokens")
    axes[0].set_ylabel("MODELLED prefill speedup over the CPU backend")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"LLM prefill by precision, weights {weights} (MODELLED)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
