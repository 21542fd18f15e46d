# SPDX-License-Identifier: Apache-2.0
"""How the input resolution decides whether NNAPI wins, MODELLED (docs/experiments.md, "Input
size"). ``bench/input_size_experiments.py`` runs it and writes the docs section.

Each CV network is built at several square input resolutions and costed per phone profile and
precision by :class:`tvm_nnapi.tools.estimate.PreparedEstimate`, exactly as the precision
experiments cost it (:mod:`tvm_nnapi.experiments.precision`): *float32* and *relaxed-fp16* are
the float network partitioned with the profile's options (``--relax-fp16`` for the second),
*int8* the network's onnxruntime QDQ model partitioned through the normal pipeline. The host
baseline of every row is the float32 network all on the host, host model ``profile-cpu`` (the
``tvm-default`` preset is recorded beside it); the int8 rows keep the QDQ program's own host
time as ``modelled_qdq_host_ms``. Every time is **modelled**; nothing here is measured.

Why NNAPI loses on small inputs and wins on large ones is read from the estimate's breakdown of
the NNAPI-offloaded program: the driver overhead (per execution and per operation) and the
output copy do not depend on the resolution, the one-off compilation neither, while compute,
the input copy and the host's time grow with the pixel count. :func:`component_growth` reports
each part's growth across the sweep and :func:`crossover` where the NNAPI program starts to
beat the host.
"""

from __future__ import annotations

import importlib.util
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..tools.estimate import Estimate, PreparedEstimate
from .llm import PHONE_PROFILES
from .precision import profile_options, quant8_subgraphs

#: torchvision's networks of the sweep (random weights).
NETWORKS = ("mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0")
#: Square input resolutions (pixels per side).
RESOLUTIONS = (32, 64, 96, 128, 160, 224, 320, 384, 512)
PRECISIONS = ("float32", "relaxed-fp16", "int8")
#: The host preset every speedup is taken against, and the other one recorded.
HOST_PRESET = "profile-cpu"
OTHER_HOST_PRESET = "tvm-default"
#: A built-in network that needs neither torch nor onnxruntime (float rows only): MobileNetV2's
#: structure at width 0.35 with 10 classes.
BUILTIN_NETWORKS = ("mobilenet_v2_small",)
#: The breakdown parts of the NNAPI-offloaded program (keys of ``modelled_breakdown_ms``).
PARTS = ("driver_overhead", "input_setup", "compute", "transfer", "host_operators")
#: A part whose time changes by less than this factor across the sweep counts as fixed.
FIXED_TOLERANCE = 1.1

Say = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


# ---- models, with the exported forms cached per resolution ---------------------------------------


class ModelCache:
    """The Relax modules of a network at one resolution: float (torch.export, as
    :func:`tvm_nnapi.models.torchvision_models.torchvision_model` builds it) and QDQ
    (:func:`tvm_nnapi.models.quantized_torchvision.quantized_torchvision_model`).

    With a ``directory``, each exported model is kept there (the float ``ExportedProgram`` as
    ``<network>-<resolution>-seed<seed>.pt2`` with ``torch.export.save``, the QDQ model as
    ``<network>-<resolution>-seed<seed>-qdq.onnx``) and imported from there on the next run,
    which skips the batch-norm calibration, the export and onnxruntime's quantization. A file
    is trusted by its name: delete the directory after changing how the models are made."""

    def __init__(self, directory: Path | None = None, seed: int = 0, say: Say = _quiet) -> None:
        self.directory = directory
        self.seed = seed
        self.say = say
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)

    def _path(self, network: str, resolution: int, suffix: str) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / f"{network}-{resolution}-seed{self.seed}{suffix}"

    def float_module(self, network: str, resolution: int) -> Any:
        """The float32 Relax module of ``network`` on a ``1 x 3 x resolution x resolution``
        input (a built-in network of :data:`BUILTIN_NETWORKS` or one of torchvision's)."""
        if network in BUILTIN_NETWORKS:
            from ..models import mobilenet_v2

            return mobilenet_v2(width=0.35, resolution=resolution, num_classes=10)[0]
        from ..models.torchvision_models import export_torchvision, import_exported

        shape = (1, 3, resolution, resolution)
        path = self._path(network, resolution, ".pt2")
        if path is not None and path.exists():
            import torch

            self.say(f"[models] {network} {resolution}: importing the cached {path.name}")
            exported = torch.export.load(str(path))
        else:
            self.say(f"[models] {network} {resolution}: exporting with torch.export")
            exported, _ = export_torchvision(network, resolution, seed=self.seed)
            if path is not None:
                import torch

                torch.export.save(exported, str(path))
        return import_exported(network, exported, shape).module

    def qdq_module(self, network: str, resolution: int) -> Any:
        """The onnxruntime QDQ Relax module of a torchvision ``network``."""
        from ..models.quantized_torchvision import import_quantized, quantized_onnx

        shape = (1, 3, resolution, resolution)
        path = self._path(network, resolution, "-qdq.onnx")
        if path is not None and path.exists():
            import onnx

            self.say(f"[models] {network} {resolution}: importing the cached {path.name}")
            qdq = onnx.load(str(path))
        else:
            self.say(f"[models] {network} {resolution}: quantizing with onnxruntime")
            qdq = quantized_onnx(network, resolution, seed=self.seed)
            if path is not None:
                import onnx

                onnx.save(qdq, str(path))
        return import_quantized(network, qdq, shape).module


def int8_unavailable(network: str) -> str | None:
    """Why ``network`` has no int8 rows here, or None when it can have them."""
    if network in BUILTIN_NETWORKS:
        return "a built-in Relax model has no ONNX form to quantize with onnxruntime"
    missing = [m for m in ("torch", "onnx", "onnxruntime") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{', '.join(missing)} not installed"
    return None


# ---- records -------------------------------------------------------------------------------------


def _breakdown_ms(est: Estimate) -> dict[str, float]:
    b = est.modelled_breakdown_us()
    return {
        "driver_overhead": b["modelled_driver_overhead_us"] / 1e3,
        "input_setup": b["modelled_input_setup_us"] / 1e3,
        "compute": b["modelled_compute_us"] / 1e3,
        "transfer": b["modelled_transfer_us"] / 1e3,
        "host_operators": b["modelled_host_operators_us"] / 1e3,
    }


def _record(
    network: str,
    resolution: int,
    profile: str,
    precision: str,
    est: Estimate,
    host_ms: Mapping[str, float],
) -> dict[str, Any]:
    """One row: the NNAPI-offloaded program of ``est`` against the float32 all-host program
    (``host_ms`` by host preset), with the breakdown of the NNAPI side."""
    nnapi_ms = est.modelled_nnapi_program_us / 1e3
    offloaded = sum(s.flops * s.calls for s in est.subgraphs)
    on_host = sum(r.flops for r in est.host_rows)
    devices = sorted({d for s in est.subgraphs for d in s.devices})
    host = host_ms[HOST_PRESET]
    return {
        "network": network,
        "resolution": resolution,
        "profile": profile,
        "precision": precision,
        "devices": devices,
        "subgraphs": len(est.subgraphs),
        "nnapi_operations": sum(sum(s.nnapi_operations.values()) for s in est.subgraphs),
        "offloaded_flop_share": offloaded / (offloaded + on_host) if offloaded + on_host else 0.0,
        "flops": offloaded + on_host,
        "modelled_nnapi_ms": nnapi_ms,
        "modelled_host_ms": host,
        "modelled_host_ms_by_preset": dict(host_ms),
        "modelled_speedup": host / nnapi_ms if nnapi_ms else 0.0,
        "modelled_breakdown_ms": _breakdown_ms(est),
        "modelled_compilation_ms": est.modelled_compilation_us / 1e3,
    }


@dataclass
class _Prepared:
    """A partitioned module and the options it was partitioned with (several profiles often
    share options: one partition serves them all)."""

    options: Any
    prepared: PreparedEstimate


def _prepared_for(cache: list[_Prepared], module: Any, options: Any) -> PreparedEstimate:
    for entry in cache:
        if entry.options == options:
            return entry.prepared
    prepared = PreparedEstimate(module, {}, "main", options)
    cache.append(_Prepared(options, prepared))
    return prepared


def run_resolution(
    network: str,
    resolution: int,
    profiles: Sequence[str],
    precisions: Sequence[str],
    models: ModelCache,
    say: Say = _quiet,
) -> tuple[list[dict[str, Any]], str | None]:
    """The records of one network at one resolution, and why int8 rows are missing (None when
    they are not)."""
    records: list[dict[str, Any]] = []
    module = models.float_module(network, resolution)
    partitions: list[_Prepared] = []
    host: dict[str, dict[str, float]] = {}
    for precision in [p for p in precisions if p != "int8"] or ["float32"]:
        relaxed = precision == "relaxed-fp16"
        for profile in profiles:
            prepared = _prepared_for(partitions, module, profile_options(profile, relaxed))
            est = prepared.run(profile, HOST_PRESET)
            if profile not in host:
                other = prepared.run(profile, OTHER_HOST_PRESET)
                host[profile] = {
                    HOST_PRESET: est.modelled_host_program_us / 1e3,
                    OTHER_HOST_PRESET: other.modelled_host_program_us / 1e3,
                }
            if precision in precisions:
                records.append(_record(network, resolution, profile, precision, est, host[profile]))
                say(f"[input-size] {network} {resolution} {precision} on {profile}: "
                    f"{records[-1]['modelled_speedup']:.2f}x modelled")  # fmt: skip
    if "int8" not in precisions:
        return records, None
    reason = int8_unavailable(network)
    if reason is not None:
        return records, reason
    qdq = models.qdq_module(network, resolution)
    qdq_partitions: list[_Prepared] = []
    for profile in profiles:
        prepared = _prepared_for(qdq_partitions, qdq, profile_options(profile, False))
        if quant8_subgraphs(prepared) == 0:
            return records, "no NNAPI subgraph of the onnxruntime QDQ model has a quant8 operand"
        est = prepared.run(profile, HOST_PRESET)
        row = _record(network, resolution, profile, "int8", est, host[profile])
        row["modelled_qdq_host_ms"] = est.modelled_host_program_us / 1e3
        records.append(row)
        say(f"[input-size] {network} {resolution} int8 on {profile}: "
            f"{row['modelled_speedup']:.2f}x modelled")  # fmt: skip
    return records, None


def run(
    networks: Sequence[str] = NETWORKS,
    resolutions: Sequence[int] = RESOLUTIONS,
    profiles: Sequence[str] = PHONE_PROFILES,
    precisions: Sequence[str] = PRECISIONS,
    cache_dir: Path | None = None,
    say: Say = _quiet,
) -> dict[str, Any]:
    """Every record of the sweep, the int8 status per network, and the analysis
    (:func:`analyse`)."""
    unknown = [p for p in precisions if p not in PRECISIONS]
    if unknown:
        raise ValueError(f"unknown precision {unknown}; choose from {PRECISIONS}")
    models = ModelCache(cache_dir, say=say)
    records: list[dict[str, Any]] = []
    int8_status: dict[str, str] = {}
    start = time.perf_counter()
    for network in networks:
        for resolution in sorted(resolutions):
            rows, reason = run_resolution(network, resolution, profiles, precisions, models, say)
            records += rows
            if reason is not None:
                int8_status[network] = f"no int8 rows: {reason}"
            say(f"[input-size] {network} {resolution} done ({time.perf_counter() - start:.0f} s)")
    results = {
        "modelled": True,
        "networks": list(networks),
        "resolutions": sorted(resolutions),
        "profiles": list(profiles),
        "precisions": list(precisions),
        "host_preset": HOST_PRESET,
        "records": records,
        "int8_status": int8_status,
    }
    results["series"] = analyse(records)
    return results


# ---- analysis ------------------------------------------------------------------------------------


def crossover(points: Sequence[tuple[int, float, float]]) -> dict[str, Any]:
    """Where the NNAPI program starts to beat the host, from ``(resolution, nnapi_ms, host_ms)``
    points (any order; all times modelled).

    ``status``: ``always`` (NNAPI wins at every sampled resolution), ``never`` (at none),
    ``from`` (it loses below a resolution and wins from there on), ``mixed`` (it wins at some
    resolution and loses at a larger one). ``first_winning``: the smallest sampled resolution
    from which NNAPI wins at every larger one (None when it loses at the largest).
    ``resolution``: where ``host - nnapi`` crosses zero between the last losing sample and the
    next, interpolated linearly in the pixel count (both sides' work grows with it); None when
    there is no such pair.
    A tie counts as a loss. ``fit_resolution``: where the least-squares lines of both programs
    in the pixel count (:func:`linear_fit`) cross, when the NNAPI line starts higher and grows
    slower (None otherwise): an extrapolation, for a crossover outside the sampled range."""
    ordered = sorted(points)
    if not ordered:
        raise ValueError("crossover needs at least one point")
    wins = [host > nnapi for _, nnapi, host in ordered]
    result: dict[str, Any] = {
        "status": "",
        "first_winning": None,
        "resolution": None,
        "fit_resolution": None,
    }
    nnapi_fit = linear_fit([(r, n) for r, n, _ in ordered])
    host_fit = linear_fit([(r, h) for r, _, h in ordered])
    fixed = nnapi_fit["fixed_ms"] - host_fit["fixed_ms"]
    slope = host_fit["per_megapixel_ms"] - nnapi_fit["per_megapixel_ms"]
    if fixed > 1e-9 and slope > 0:  # ms: a fixed part above rounding noise
        result["fit_resolution"] = math.sqrt(fixed / slope * 1e6)
    if all(wins):
        result.update(status="always", first_winning=ordered[0][0])
    elif not any(wins):
        result["status"] = "never"
    else:
        last_loss = max(i for i, w in enumerate(wins) if not w)
        monotone = last_loss < wins.index(True)
        result["status"] = "from" if monotone else "mixed"
        if last_loss + 1 < len(ordered):
            (r0, n0, h0), (r1, n1, h1) = ordered[last_loss], ordered[last_loss + 1]
            d0, d1 = h0 - n0, h1 - n1  # d0 <= 0 < d1
            p0, p1 = r0 * r0, r1 * r1
            pixels = p0 + (p1 - p0) * (-d0) / (d1 - d0)
            result.update(first_winning=r1, resolution=math.sqrt(pixels))
    return result


def linear_fit(points: Sequence[tuple[int, float]]) -> dict[str, float]:
    """Least-squares ``time = fixed_ms + per_megapixel_ms x pixels / 1e6`` over ``(resolution,
    ms)`` points (square inputs): the part that does not grow with the input and the part that
    does. One point gives the line through the origin."""
    xs = [r * r / 1e6 for r, _ in points]
    ys = [ms for _, ms in points]
    if len(points) < 2:
        return {"fixed_ms": 0.0, "per_megapixel_ms": ys[0] / xs[0] if xs and xs[0] else 0.0}
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return {"fixed_ms": my - slope * mx, "per_megapixel_ms": slope}


def component_growth(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per breakdown part (:data:`PARTS`), plus the compilation and the host program, its
    modelled ms at the smallest and the largest resolution of ``rows`` (one series) and whether
    it is fixed (changes by less than :data:`FIXED_TOLERANCE` either way) or grows."""
    ordered = sorted(rows, key=lambda r: r["resolution"])
    first, last = ordered[0], ordered[-1]

    def entry(low: float, high: float) -> dict[str, Any]:
        ratio = high / low if low else (1.0 if not high else math.inf)
        fixed = 1 / FIXED_TOLERANCE < ratio < FIXED_TOLERANCE
        return {"low_ms": low, "high_ms": high, "ratio": ratio, "fixed": fixed}

    growth = {
        part: entry(first["modelled_breakdown_ms"][part], last["modelled_breakdown_ms"][part])
        for part in PARTS
    }
    growth["compilation"] = entry(first["modelled_compilation_ms"], last["modelled_compilation_ms"])
    growth["host"] = entry(first["modelled_host_ms"], last["modelled_host_ms"])
    return growth


def analyse(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One summary per (network, profile, precision) series: its crossover, the linear fits of
    both programs in the pixel count, the growth of each part, and how many inferences repay
    the one-off compilation at each resolution where NNAPI wins."""
    keys = list(dict.fromkeys((r["network"], r["profile"], r["precision"]) for r in records))
    series = []
    for network, profile, precision in keys:
        rows = sorted(
            (r for r in records
             if (r["network"], r["profile"], r["precision"]) == (network, profile, precision)),
            key=lambda r: r["resolution"],
        )  # fmt: skip
        points = [(r["resolution"], r["modelled_nnapi_ms"], r["modelled_host_ms"]) for r in rows]
        other = [
            (r["resolution"], r["modelled_nnapi_ms"],
             r["modelled_host_ms_by_preset"][OTHER_HOST_PRESET])
            for r in rows
        ]  # fmt: skip
        repay = {}
        for r in rows:
            saved = r["modelled_host_ms"] - r["modelled_nnapi_ms"]
            repay[str(r["resolution"])] = (
                math.ceil(r["modelled_compilation_ms"] / saved) if saved > 0 else None
            )
        series.append(
            {
                "network": network,
                "profile": profile,
                "precision": precision,
                "devices": sorted({d for r in rows for d in r["devices"]}),
                "crossover": crossover(points),
                "crossover_tvm_default": crossover(other),
                "nnapi_fit": linear_fit([(r, n) for r, n, _ in points]),
                "host_fit": linear_fit([(r, h) for r, _, h in points]),
                "growth": component_growth(rows),
                "inferences_to_repay_compilation": repay,
            }
        )
    return series


# ---- tables --------------------------------------------------------------------------------------


def crossover_text(c: Mapping[str, Any]) -> str:
    """A table cell for a :func:`crossover` result."""
    fit = f"; fit ~{c['fit_resolution']:.0f}" if c.get("fit_resolution") else ""
    if c["status"] == "always":
        return f"below {c['first_winning']} (wins at all sizes{fit})"
    if c["status"] == "never":
        return f"never in the sweep{fit}"
    if c["status"] == "mixed" and c["first_winning"] is None:
        return f"mixed (wins, then loses at the largest){fit}"
    if c["status"] == "mixed":
        return f"mixed; ~{c['resolution']:.0f} (wins from {c['first_winning']}{fit})"
    return f"**~{c['resolution']:.0f}** (wins from {c['first_winning']}{fit})"


def _select(results: Mapping[str, Any], **where: Any) -> list[dict[str, Any]]:
    return [r for r in results["records"] if all(r[k] == v for k, v in where.items())]


def speedup_table(results: Mapping[str, Any]) -> str:
    """Speedup by resolution for every series, with its crossover (modelled)."""
    resolutions = results["resolutions"]
    lines = [
        "| network | profile | precision | devices | "
        + " | ".join(f"{r}" for r in resolutions)
        + " | NNAPI starts to win at (px) |",
        "|---|---|---|---|" + "---|" * len(resolutions) + "---|",
    ]
    for s in results["series"]:
        rows = {
            r["resolution"]: r
            for r in _select(results, network=s["network"], profile=s["profile"],
                             precision=s["precision"])
        }  # fmt: skip
        cells = []
        for res in resolutions:
            row = rows.get(res)
            if row is None:
                cells.append("-")
                continue
            speedup = row["modelled_speedup"]
            cells.append(f"{speedup:.2f}x" if speedup < 1 else f"{speedup:.1f}x")
        lines.append(
            f"| {s['network']} | {s['profile']} | {s['precision']} | {', '.join(s['devices'])} | "
            + " | ".join(cells)
            + f" | {crossover_text(s['crossover'])} |"
        )
    return "\n".join(lines)


def breakdown_table(results: Mapping[str, Any]) -> str:
    """Per series: each part of the NNAPI program at the smallest and the largest resolution
    (fixed parts marked), the host program, the linear fits and the compilation (modelled)."""
    lo, hi = results["resolutions"][0], results["resolutions"][-1]
    lines = [
        f"| network | profile | precision | driver overhead | input set-up | compute | "
        f"transfers | host operators | NNAPI program | host program | NNAPI fit: fixed ms + "
        f"ms/Mpx | host fit | compilation ms (one-off) | inferences to repay it at {lo} / {hi} |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def span(g: Mapping[str, Any]) -> str:
        text = f"{g['low_ms']:.3g} → {g['high_ms']:.3g}"
        return f"{text} (fixed)" if g["fixed"] and g["low_ms"] else text

    for s in results["series"]:
        rows = sorted(
            _select(results, network=s["network"], profile=s["profile"], precision=s["precision"]),
            key=lambda r: r["resolution"],
        )
        g = s["growth"]
        nnapi = f"{rows[0]['modelled_nnapi_ms']:.3g} → {rows[-1]['modelled_nnapi_ms']:.3g}"
        nf, hf = s["nnapi_fit"], s["host_fit"]
        repay = s["inferences_to_repay_compilation"]
        lines.append(
            f"| {s['network']} | {s['profile']} | {s['precision']} | "
            + " | ".join(span(g[p]) for p in PARTS)
            + f" | {nnapi} | {span(g['host'])} | {nf['fixed_ms']:.2f} + "
            f"{nf['per_megapixel_ms']:.3g} | {hf['fixed_ms']:.2f} + "
            f"{hf['per_megapixel_ms']:.3g} | {g['compilation']['high_ms']:.0f} | "
            f"{repay.get(str(rows[0]['resolution'])) or '-'} / "
            f"{repay.get(str(rows[-1]['resolution'])) or '-'} |"
        )
    return "\n".join(lines)


# ---- plots ---------------------------------------------------------------------------------------


def plot(results: Mapping[str, Any], path: str) -> None:
    """Modelled speedup over the host against the resolution, one panel per profile, one line
    per network and precision; 1x marked. Needs matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profiles = results["profiles"]
    fig, axes = plt.subplots(1, len(profiles), figsize=(5 * len(profiles), 4.2), sharey=True,
                             squeeze=False)  # fmt: skip
    styles = {"float32": "-", "relaxed-fp16": "--", "int8": ":"}
    networks = results["networks"]
    colours = {n: f"C{i}" for i, n in enumerate(networks)}
    for ax, profile in zip(axes[0], profiles, strict=True):
        ax.axhline(1.0, color="0.5", linewidth=0.8)
        for s in results["series"]:
            if s["profile"] != profile:
                continue
            rows = sorted(_select(results, network=s["network"], precision=s["precision"],
                                  profile=profile), key=lambda r: r["resolution"])  # fmt: skip
            ax.plot([r["resolution"] for r in rows], [r["modelled_speedup"] for r in rows],
                    styles.get(s["precision"], "-"), color=colours.get(s["network"], "k"),
                    marker="o", markersize=3, linewidth=1,
                    label=f"{s['network']} {s['precision']}")  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(results["resolutions"])
        ax.set_xticklabels([str(r) for r in results["resolutions"]], fontsize=7)
        ax.minorticks_off()
        ax.set_title(profile)
        ax.set_xlabel("input resolution (px per side)")
    axes[0][0].set_ylabel(f"MODELLED speedup over the host ({HOST_PRESET})")
    axes[0][0].legend(fontsize=6)
    fig.suptitle("NNAPI vs the host by input size (all times MODELLED, not measured)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
