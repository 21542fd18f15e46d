# SPDX-License-Identifier: Apache-2.0
"""The thesis experiments in simulation: modelled prefill and decode latency of the LLM
configurations on the phone profiles, TVM's CPU backend vs the NNAPI-offloaded build.

Every number is **modelled** (:mod:`tvm_nnapi.tools.estimate`, docs/cost-model.md); nothing here is
measured. Full-size models are estimated from their shapes: weights are never allocated.

    from tvm_nnapi.experiments import llm as experiments
    results = experiments.run_experiments(["tinyllama-1.1b"], ["snapdragon-8-gen-2"])
    print(experiments.format_tables(results))
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..compiler.patterns import PartitionOptions
from ..llm.config import LlamaConfig, get_config
from ..llm.dispatch import ATTENTION_BUILTIN
from ..llm.model import export_model
from ..llm.quantization import get_quantization
from ..tools.estimate import (
    Estimate,
    ExternWork,
    GraphTransform,
    PreparedEstimate,
    all_host_us,
)
from ..tools.llm_work import attention_work
from .memory import UNFIT_MARK, annotate, memory_table

MODELS = ("llama-2-7b", "mistral-7b", "qwen2-7b", "tinyllama-1.1b")
PHONE_PROFILES = (
    "dimensity-9000",
    "tensor-g2",
    "snapdragon-8-gen-2",
    "snapdragon-8-gen-3",
    "snapdragon-8-elite",
)
PROMPT_LENGTHS = (32, 64, 128, 256, 512, 1024)
#: Tokens already in the KV cache when a decode step is costed.
DECODE_CONTEXT = 256
HOST_MODELS = ("profile-cpu", "tvm-dlight", "tvm-default")
#: The published band of the thesis: prefill speedup over TVM's CPU backend.
THESIS_BAND = (3.5, 12.4)


class LlmEstimator:
    """Estimates of one configuration's ``prefill`` and ``decode`` (exported once).
    ``graph_transform``: a what-if rewrite of the NNAPI subgraphs before they are costed
    (e.g. :func:`tvm_nnapi.tools.w8a8_what_if.w8a8_graph`). ``quantization``: an MLC weight
    format (:mod:`tvm_nnapi.llm.quantization`), whose float type replaces ``dtype``."""

    def __init__(
        self,
        config: LlamaConfig | str,
        dtype: str = "float32",
        options: PartitionOptions | None = None,
        graph_transform: GraphTransform | None = None,
        quantization: str | None = None,
    ) -> None:
        self.config = get_config(config) if isinstance(config, str) else config
        self.quantization = get_quantization(quantization) if quantization else None
        self.dtype = self.quantization.model_dtype if self.quantization else dtype
        self.options = options
        self.graph_transform = graph_transform
        self.module, _, _ = export_model(self.config, self.dtype, self.quantization)
        self._prepared: dict[tuple[str, int], PreparedEstimate] = {}
        #: The float model of the quantized values (the resident build), made when first asked.
        self._resident: LlmEstimator | None = None

    def prepared(self, phase: str, length: int) -> PreparedEstimate:
        """``phase`` ``prefill`` (``length`` = prompt tokens) or ``decode`` (``length`` = tokens
        already in the KV cache)."""
        key = (phase, length)
        if key not in self._prepared:
            shapes, extern_work = self._phase(phase, length)
            self._prepared[key] = PreparedEstimate(
                self.module,
                shapes,
                phase,
                self.options,
                extern_work=extern_work,
                graph_transform=self.graph_transform,
            )
        return self._prepared[key]

    def _phase(self, phase: str, length: int) -> tuple[dict[str, int], dict[str, ExternWork]]:
        """The symbolic dimensions and the host attention's work of ``phase`` at ``length``."""
        if phase == "prefill":
            shapes, work = {"seq_len": length}, attention_work(self.config, self.dtype, length, 0)
        elif phase == "decode":
            shapes, work = {}, attention_work(self.config, self.dtype, 1, length)
        else:
            raise ValueError(f"phase must be 'prefill' or 'decode', got {phase!r}")
        return shapes, {ATTENTION_BUILTIN: work}

    def estimate(
        self,
        phase: str,
        length: int,
        profile: str,
        host_model: str = "profile-cpu",
        weights: str = "input",
    ) -> Estimate:
        """``weights="resident"`` of a group-quantized format is the build that dequantizes
        once, at load: its NNAPI program is the float model's with resident weights, its
        all-host program still TVM's CPU code of the quantized model (dequantization fused)."""
        if weights == "resident" and self.quantization and self.quantization.quantized:
            if self._resident is None:
                self._resident = LlmEstimator(self.config, self.dtype, self.options)
            resident = self._resident.estimate(phase, length, profile, host_model, weights)
            shapes, extern_work = self._phase(phase, length)
            resident.all_host_us = all_host_us(
                self.module, profile, shapes, phase, host_model, extern_work
            )
            return resident
        return self.prepared(phase, length).run(profile, host_model, weights)


def _record(model: str, phase: str, length: int, est: Estimate) -> dict[str, Any]:
    breakdown = est.modelled_breakdown_us()
    return {
        "model": model,
        "phase": phase,
        "length": length,
        "profile": est.profile,
        "host_model": est.host_model["name"],
        "weights": est.weights,
        "modelled_nnapi_program_us": est.modelled_nnapi_program_us,
        "modelled_host_program_us": est.modelled_host_program_us,
        "modelled_speedup": est.modelled_speedup,
        **breakdown,
    }


def run_experiments(
    models: Sequence[str] = MODELS,
    profiles: Sequence[str] = PHONE_PROFILES,
    prompt_lengths: Sequence[int] = PROMPT_LENGTHS,
    decode_context: int = DECODE_CONTEXT,
    host_models: Sequence[str] = HOST_MODELS,
    weights: Sequence[str] = ("input", "resident"),
    dtype: str = "float32",
    progress: Callable[[str], None] | None = print,
    quantization: str | None = None,
) -> dict[str, Any]:
    """Every combination, as a JSON-able dictionary: ``records`` (one per model, phase, length,
    profile, host model and weights option) and ``details`` (the full estimate of each model's
    prefill at 128 tokens and its decode, on every profile, with the primary options).
    ``quantization``: the models' MLC weight format (its float type replaces ``dtype``)."""
    say = progress or (lambda _message: None)
    records: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    total = len(models) * (len(prompt_lengths) + 1) * len(profiles)
    done = 0
    start = time.perf_counter()
    for name in models:
        say(f"[{name}] exporting the model (shapes only, no weights)")
        estimator = LlmEstimator(name, dtype, quantization=quantization)
        jobs = [("prefill", n) for n in prompt_lengths] + [("decode", decode_context)]
        for phase, length in jobs:
            for profile in profiles:
                for host in host_models:
                    for option in weights:
                        est = estimator.estimate(phase, length, profile, host, option)
                        records.append(_record(name, phase, length, est))
                        primary = host == host_models[0] and option == weights[0]
                        if primary and (phase == "decode" or length == 128):
                            details.append({"model": name, **est.to_dict()})
                done += 1
                say(
                    f"[{done}/{total}] {name} {phase} {length} on {profile}: modelled speedup "
                    f"{records[-len(host_models) * len(weights)]['modelled_speedup']:.2f}x "
                    f"({time.perf_counter() - start:.0f} s)"
                )
    return {
        "modelled": True,
        "dtype": estimator.dtype if models else dtype,
        "quantization": quantization,
        "models": list(models),
        "profiles": list(profiles),
        "prompt_lengths": list(prompt_lengths),
        "decode_context": decode_context,
        "host_models": list(host_models),
        "weights": list(weights),
        "records": records,
        "details": details,
    }


# ---- tables --------------------------------------------------------------------------------------


def _select(results: dict[str, Any], **where: Any) -> list[dict[str, Any]]:
    return [r for r in results["records"] if all(r[k] == v for k, v in where.items())]


def speedup_table(results: dict[str, Any], profile: str, host_model: str, weights: str) -> str:
    """Markdown: modelled prefill latency (NNAPI / host, ms) and speedup per model and prompt
    length, plus decode per token."""
    lengths = results["prompt_lengths"]
    header = "| model | " + " | ".join(f"prefill {n}" for n in lengths) + " | decode/token |"
    lines = [header, "|---" * (len(lengths) + 2) + "|"]
    for model in results["models"]:
        cells = []
        for phase, n in [("prefill", n) for n in lengths] + [("decode", results["decode_context"])]:
            found = _select(
                results,
                model=model,
                phase=phase,
                length=n,
                profile=profile,
                host_model=host_model,
                weights=weights,
            )
            if not found:
                cells.append("-")
                continue
            r = found[0]
            cells.append(
                f"{r['modelled_nnapi_program_us'] / 1e3:,.0f} / "
                f"{r['modelled_host_program_us'] / 1e3:,.0f} ms = "
                f"**{r['modelled_speedup']:.1f}x**"
                + (UNFIT_MARK if r.get("fits_memory") is False else "")
            )
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    if any(r.get("fits_memory") is False for r in _select(results, profile=profile)):
        lines.append(
            f"\n{UNFIT_MARK} does not fit the phone's memory: the modelled peak memory of the "
            "NNAPI-offloaded or the all-host program exceeds the profile's app budget (the "
            "latency is modelled all the same; see the memory table)."
        )
    return "\n".join(lines)


def band_summary(results: dict[str, Any], host_model: str, weights: str) -> str:
    """Markdown: per profile, the range of modelled prefill speedups over all models and prompt
    lengths, how many fall in the thesis's band, and the decode speedups."""
    low, high = THESIS_BAND
    lines = [
        "| profile | prefill speedup range | in 3.5x-12.4x | decode speedup range "
        "| prefill and decode rows that fit in memory |",
        "|---|---|---|---|---|",
    ]
    for profile in results["profiles"]:
        prefill = [
            r["modelled_speedup"]
            for r in _select(
                results, phase="prefill", profile=profile, host_model=host_model, weights=weights
            )
        ]
        decode = [
            r["modelled_speedup"]
            for r in _select(
                results, phase="decode", profile=profile, host_model=host_model, weights=weights
            )
        ]
        if not prefill:
            continue
        inside = sum(low <= s <= high for s in prefill)
        rows = _select(results, profile=profile, host_model=host_model, weights=weights)
        fits = [r.get("fits_memory") for r in rows]
        fitting = "-" if None in fits else f"{sum(bool(f) for f in fits)}/{len(fits)}"
        lines.append(
            f"| {profile} | {min(prefill):.2f}x - {max(prefill):.2f}x | {inside}/{len(prefill)} "
            f"| {min(decode):.2f}x - {max(decode):.2f}x | {fitting} |"
        )
    return "\n".join(lines)


def _breakdown_records(
    results: dict[str, Any], model: str, profile: str
) -> list[tuple[str, int, dict[str, Any]]]:
    """(phase, length, record) per prompt length and for decode, under the primary host model
    and weight placement: the rows of the breakdown table and plot."""
    host, weights = results["host_models"][0], results["weights"][0]
    jobs = [("prefill", n) for n in results["prompt_lengths"]]
    jobs.append(("decode", results["decode_context"]))
    rows = []
    for phase, n in jobs:
        found = _select(
            results,
            model=model,
            phase=phase,
            length=n,
            profile=profile,
            host_model=host,
            weights=weights,
        )
        if found:
            rows.append((phase, n, found[0]))
    return rows


def breakdown_table(results: dict[str, Any], model: str, profile: str) -> str:
    """Markdown: where the NNAPI-offloaded program's modelled time goes, per prompt length and
    for decode (primary host model; weights as built)."""
    lines = [
        "| phase | tokens | input set-up (weights) | compute | transfers | driver | host ops "
        "| NNAPI total | all-host | speedup | compilation (one-off) |",
        "|---" * 11 + "|",
    ]
    for phase, n, r in _breakdown_records(results, model, profile):
        tokens = n if phase == "prefill" else f"1 (after {n})"

        def ms(key: str, row: dict[str, Any] = r) -> str:
            return f"{row[key] / 1e3:,.1f}"

        lines.append(
            f"| {phase} | {tokens} | {ms('modelled_input_setup_us')} "
            f"({ms('modelled_weight_setup_us')}) | {ms('modelled_compute_us')} "
            f"| {ms('modelled_transfer_us')} | {ms('modelled_driver_overhead_us')} "
            f"| {ms('modelled_host_operators_us')} | {ms('modelled_nnapi_program_us')} "
            f"| {ms('modelled_host_program_us')} | {r['modelled_speedup']:.2f}x "
            f"| {ms('modelled_compilation_us')} |"
        )
    return "\n".join(lines)


def format_tables(results: dict[str, Any]) -> str:
    """Every table of docs/experiments.md, as Markdown (each record marked with whether its
    programs fit the phone's memory, :func:`tvm_nnapi.experiments.memory.annotate`)."""
    annotate(results)
    parts = [
        f"#### Peak memory per program (modelled, {max(results['prompt_lengths'])}-token "
        'prompt)\n\nThe modelled peak memory of each program ("Phone memory" above) '
        "against the app budget of each phone profile.\n\n" + memory_table(results)
    ]
    for host in results["host_models"]:
        for weights in results["weights"]:
            parts.append(
                f"#### Band check: host model `{host}`, weights `{weights}`\n\n"
                + band_summary(results, host, weights)
            )
    host = results["host_models"][0]
    for profile in results["profiles"]:
        for weights in results["weights"]:
            parts.append(
                f"#### {profile}: host model `{host}`, weights `{weights}`\n\n"
                "Modelled NNAPI-offloaded / all-host latency and speedup (the other host "
                "models: the band checks above and experiments.json).\n\n"
                + speedup_table(results, profile, host, weights)
            )
    for model in results["models"]:
        for profile in results["profiles"]:
            parts.append(
                f"#### Breakdown: {model} on {profile} (host model "
                f"`{results['host_models'][0]}`, weights `{results['weights'][0]}`; ms, "
                "modelled)\n\n" + breakdown_table(results, model, profile)
            )
    return "\n\n".join(parts)


def plot_speedups(
    results: dict[str, Any], path: str, host_model: str, weights: str, title: str = ""
) -> None:
    """PNG: modelled prefill speedup vs prompt length, one panel per profile, one line per
    model, the thesis band shaded, decode speedups as markers at the right. Needs matplotlib
    (the ``experiments`` extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profiles = results["profiles"]
    columns = min(len(profiles), 3)
    rows = math.ceil(len(profiles) / columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(3.6 * columns, 3.0 * rows), squeeze=False, sharey=True
    )
    lengths = results["prompt_lengths"]
    for index, profile in enumerate(profiles):
        axis = axes[index // columns][index % columns]
        axis.axhspan(*THESIS_BAND, color="0.9", label="thesis band")
        axis.axhline(1.0, color="0.5", linewidth=0.8)
        for model in results["models"]:
            points = [
                _select(
                    results,
                    model=model,
                    phase="prefill",
                    length=n,
                    profile=profile,
                    host_model=host_model,
                    weights=weights,
                )
                for n in lengths
            ]
            values = [p[0]["modelled_speedup"] if p else float("nan") for p in points]
            (line,) = axis.plot(lengths, values, marker="o", markersize=3, label=model)
            decode = _select(
                results,
                model=model,
                phase="decode",
                profile=profile,
                host_model=host_model,
                weights=weights,
            )
            if decode:
                axis.plot(
                    [lengths[-1] * 1.6],
                    [decode[0]["modelled_speedup"]],
                    marker="x",
                    color=line.get_color(),
                )
        axis.set_xscale("log", base=2)
        axis.set_title(profile, fontsize=9)
        axis.set_xlabel("prompt tokens (x: decode)", fontsize=8)
        axis.tick_params(labelsize=7)
        if index % columns == 0:
            axis.set_ylabel("modelled speedup over CPU", fontsize=8)
    for extra in range(len(profiles), rows * columns):
        axes[extra // columns][extra % columns].axis("off")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=7, frameon=False)
    figure.suptitle(
        title or f"MODELLED prefill speedup (host {host_model}, weights {weights})", fontsize=9
    )
    figure.tight_layout(rect=(0, 0.07, 1, 0.95))
    figure.savefig(path, dpi=80)
    plt.close(figure)


def plot_breakdown(results: dict[str, Any], path: str, model: str, profile: str) -> None:
    """PNG: stacked modelled time per token of the NNAPI-offloaded program by category, per
    prompt length and for decode (primary host model, weights as built)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [
        ("modelled_weight_setup_us", "weight set-up"),
        ("modelled_compute_us", "compute"),
        ("modelled_transfer_us", "transfers + activation set-up"),
        ("modelled_driver_overhead_us", "driver/runtime"),
        ("modelled_host_operators_us", "host operators"),
    ]
    labels, rows = [], []
    for phase, n, r in _breakdown_records(results, model, profile):
        tokens = n if phase == "prefill" else 1
        values = {k: r[k] / tokens / 1e3 for k, _ in keys}
        values["modelled_transfer_us"] += (
            (r["modelled_input_setup_us"] - r["modelled_weight_setup_us"]) / tokens / 1e3
        )
        rows.append(values)
        labels.append(str(n) if phase == "prefill" else "decode")
    figure, axis = plt.subplots(figsize=(6, 3.2))
    bottom = [0.0] * len(rows)
    for key, label in keys:
        heights = [row[key] for row in rows]
        axis.bar(labels, heights, bottom=bottom, label=label)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    axis.set_ylabel("modelled ms per token", fontsize=8)
    axis.set_xlabel("prefill prompt tokens / one decode step", fontsize=8)
    axis.set_title(f"MODELLED NNAPI time per token: {model} on {profile}", fontsize=9)
    axis.tick_params(labelsize=7)
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)
