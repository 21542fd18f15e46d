# SPDX-License-Identifier: Apache-2.0
"""Model coverage: real architectures through real frontends, partitioned for NNAPI, run on the
mock NNAPI and compared with the host llvm build.

Models (random weights, nothing downloaded):

- ``torch:NAME`` / ``onnx:NAME``: torchvision's networks (``weights=None``), through
  ``torch.export`` and TVM's ``from_exported_program``, and through ``torch.onnx.export`` (torch's
  default exporter; the TorchScript exporter if that one fails) and TVM's ONNX frontend. Both
  imports use the loaders of ``tvm-nnapi explain``/``run`` for ``.pt2`` and ``.onnx`` files.
- ``hf:NAME``: Hugging Face transformers models built from small configurations, through
  ``torch.export`` with a symbolic sequence length where the model allows one.

Per model: whether it exports and imports (a failure there is the frontend's, reported as such
and not counted against the backend), Relax operators, share of estimated FLOPs offloaded
(:mod:`tvm_nnapi.compiler.flops`, as ``tvm-nnapi explain`` computes it), NNAPI subgraphs and
operations, values crossing the host/NNAPI boundary, the largest relative error against the host
llvm build on the mock (:func:`tvm_nnapi.tools.run.run_model`), and every refusal, aggregated over
the set by the FLOPs and operators it keeps on the host.

Each model runs in its own process (a crash or a time-out is that model's result); results go to
a JSON file after every model, so an interrupted run continues where it stopped (models already
in the file are skipped unless ``--fresh`` or ``--redo``). The Markdown report is written from
the JSON at the end (``--report-only`` rewrites it without running anything).

    python bench/model_coverage.py [--models resnet18,hf:bert] [--frontends torch,onnx,hf]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_JSON = ROOT / "docs" / "model-coverage.json"
DEFAULT_MARKDOWN = ROOT / "docs" / "model-coverage.md"
SCHEMA = 1
FRONTENDS = ("torch", "onnx", "hf")
# The bench's goals.
GOAL_CV_FLOP_SHARE = 0.90
GOAL_CV_REL_ERROR = 1e-4
GOAL_TRANSFORMER_FLOP_SHARE = 0.80
DEFAULT_TIMEOUT = 1800.0

Progress = Callable[[str], None]

# ---- the models -----------------------------------------------------------------------------

# torchvision networks and the input resolution the bench uses. Reduced resolutions keep the
# mock's reference kernels and the llvm build tractable on two cores; every stride of these
# networks still applies at 64x64 (the last feature map is 2x2). vit_b_16 needs 224 (its position
# embedding is sized for 14x14 patches); the segmentation network runs at 128 so that its atrous
# pyramid sees an 8x8 feature map.
TORCHVISION_RESOLUTION = {
    "resnet18": 64,
    "resnet50": 64,
    "mobilenet_v2": 64,
    "mobilenet_v3_large": 64,
    "efficientnet_b0": 64,
    "squeezenet1_1": 64,
    "shufflenet_v2_x1_0": 64,
    "mnasnet1_0": 64,
    "regnet_y_400mf": 64,
    "convnext_tiny": 64,
    "densenet121": 64,
    "googlenet": 64,
    "vit_b_16": 224,
    "deeplabv3_mobilenet_v3_large": 128,
}
# Not classification networks (the CV goals are for classification networks).
TORCHVISION_OTHER = {"deeplabv3_mobilenet_v3_large"}

# Hugging Face models: small configurations (random weights) and the sequence length the run
# binds; None: the input has no sequence dimension to keep symbolic.
HF_SEQ_LEN = 32
HF_MODELS = ("bert", "gpt2", "llama", "vit", "whisper_encoder")


@dataclass
class Case:
    """One model of the bench through one frontend."""

    key: str  # "torch:resnet18", "onnx:resnet18", "hf:bert"
    frontend: str  # "torch", "onnx" or "hf"
    name: str
    family: str  # "cv-classification", "cv-segmentation", "transformer"
    description: str
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def goals(self) -> list[str]:
        if self.family == "cv-classification":
            return ["imports", "no partition error", "flops>=90%", "rel error<=1e-4"]
        if self.family == "transformer":
            return ["imports", "no partition error", "flops>=80%"]
        return ["imports", "no partition error"]


def all_cases() -> list[Case]:
    cases = []
    for frontend in ("torch", "onnx"):
        via = "torch.export" if frontend == "torch" else "torch.onnx.export"
        for name, resolution in TORCHVISION_RESOLUTION.items():
            family = "cv-segmentation" if name in TORCHVISION_OTHER else "cv-classification"
            cases.append(
                Case(
                    f"{frontend}:{name}",
                    frontend,
                    name,
                    family,
                    f"torchvision {name}, 1x3x{resolution}x{resolution}, {via}",
                    {"resolution": resolution, "batch": 1},
                )
            )
    hf_text = {
        "bert": f"BertModel, 2 layers, hidden 64, input_ids 1 x seq_len (symbolic; run at "
        f"{HF_SEQ_LEN})",
        "gpt2": f"GPT2LMHeadModel, 2 layers, hidden 64, input_ids 1 x seq_len (symbolic; run "
        f"at {HF_SEQ_LEN})",
        "llama": f"LlamaForCausalLM, 2 layers, hidden 64, 4 heads / 2 KV heads, input_ids 1 x "
        f"seq_len (symbolic; run at {HF_SEQ_LEN})",
        "vit": "ViTModel, 2 layers, hidden 64, 1x3x32x32 (patch 8: 16 patches + CLS)",
        "whisper_encoder": "WhisperEncoder, 2 layers, d_model 64, 1x80x128 features (the encoder "
        "requires 2 x max_source_positions frames: static)",
    }
    for name in HF_MODELS:
        config: dict[str, Any] = (
            {"seq_len": HF_SEQ_LEN} if name in ("bert", "gpt2", "llama") else {}
        )
        config["attn_implementation"] = "eager"
        cases.append(Case(f"hf:{name}", "hf", name, "transformer", hf_text[name], config))
    return cases


def select_cases(models: str | None, frontends: str | None) -> list[Case]:
    """``models``: comma-separated names (``resnet18``: every frontend of it) or keys
    (``onnx:resnet18``); ``frontends``: comma-separated subset of :data:`FRONTENDS`."""
    cases = all_cases()
    if frontends:
        wanted = [f.strip() for f in frontends.split(",") if f.strip()]
        unknown = sorted(set(wanted) - set(FRONTENDS))
        if unknown:
            raise UsageError(
                f"--frontends: unknown {', '.join(unknown)}; choose from {', '.join(FRONTENDS)}"
            )
        cases = [c for c in cases if c.frontend in wanted]
    if models:
        names = [m.strip() for m in models.split(",") if m.strip()]
        known = {c.key for c in all_cases()} | {c.name for c in all_cases()}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise UsageError(f"--models: unknown {', '.join(unknown)}; `--list` shows the models")
        cases = [c for c in cases if c.key in names or c.name in names]
    return cases


class UsageError(Exception):
    """A command-line mistake: one line, exit 2."""


# ---- exporting and importing ----------------------------------------------------------------


class StageError(Exception):
    """A failure in one stage of a model (export, import, partition, run)."""

    def __init__(self, stage: str, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.stage = stage
        self.error = error
        # The measurements made before the stage failed (kept in the model's record).
        self.record: dict[str, Any] = {}


def _torchvision_module(name: str, resolution: int) -> tuple[Any, Any]:
    """torchvision's ``name`` with random weights and calibrated batch-norm statistics (see
    :mod:`tvm_nnapi.models.torchvision_models`), in eval mode, and an example input."""
    import torch
    import torchvision

    from tvm_nnapi.models.torchvision_models import _calibrate_batch_norm

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        kwargs: dict[str, Any] = {"weights": None}
        if name.startswith("deeplab"):
            kwargs["weights_backbone"] = None
        if name == "googlenet":
            kwargs["init_weights"] = True
        namespace = torchvision.models
        if name.startswith("deeplab"):
            namespace = torchvision.models.segmentation
        model = getattr(namespace, name)(**kwargs).eval()
        if name == "vit_b_16":
            # torchvision initialises ViT's classifier to zeros: every logit would be 0 and the
            # comparison with the host build would prove nothing.
            torch.nn.init.normal_(model.heads.head.weight, std=0.02)
        if name.startswith("deeplab"):
            model = _output_only(model)
        _calibrate_batch_norm(torch, model, (4, 3, resolution, resolution), batches=2)
        example = torch.randn(1, 3, resolution, resolution)
    return model, example


def _output_only(model: Any) -> Any:
    import torch

    class OutputOnly(torch.nn.Module):
        """A segmentation network's ``out`` tensor (torchvision returns a dict)."""

        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: Any) -> Any:
            return self.inner(x)["out"]

    return OutputOnly(model).eval()


def _hf_module(name: str, config: dict[str, Any]) -> tuple[Any, Any, dict[str, Any] | None]:
    """A small transformers model (random weights) returning one tensor, its example input and
    the ``dynamic_shapes`` for ``torch.export`` (None: static)."""
    import torch
    import transformers as tf

    attn = config.get("attn_implementation", "eager")
    seq_len = config.get("seq_len", HF_SEQ_LEN)
    small = {"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64}
    torch.manual_seed(0)
    if name == "bert":
        cfg = tf.BertConfig(
            vocab_size=1000, intermediate_size=128, max_position_embeddings=128, **small
        )
        inner, output = tf.BertModel(cfg, add_pooling_layer=False), "last_hidden_state"
    elif name == "gpt2":
        cfg = tf.GPT2Config(
            vocab_size=1000, n_positions=128, n_embd=64, n_layer=2, n_head=4, use_cache=False
        )
        inner, output = tf.GPT2LMHeadModel(cfg), "logits"
    elif name == "llama":
        cfg = tf.LlamaConfig(
            vocab_size=1000,
            intermediate_size=128,
            max_position_embeddings=128,
            num_key_value_heads=2,
            use_cache=False,
            **small,
        )
        inner, output = tf.LlamaForCausalLM(cfg), "logits"
    elif name == "vit":
        cfg = tf.ViTConfig(image_size=32, patch_size=8, intermediate_size=128, **small)
        inner, output = tf.ViTModel(cfg, add_pooling_layer=False), "last_hidden_state"
    elif name == "whisper_encoder":
        cfg = tf.WhisperConfig(
            d_model=64,
            encoder_layers=2,
            encoder_attention_heads=4,
            encoder_ffn_dim=128,
            decoder_layers=1,
            decoder_attention_heads=4,
            decoder_ffn_dim=128,
            num_mel_bins=80,
            max_source_positions=64,
        )
        inner, output = tf.WhisperModel(cfg).get_encoder(), "last_hidden_state"
    else:
        raise ValueError(f"unknown Hugging Face model {name!r}")
    cfg._attn_implementation = attn
    if hasattr(inner, "set_attn_implementation"):
        try:
            inner.set_attn_implementation(attn)
        except Exception:  # older models: the config attribute is what counts
            pass
    inner.eval()

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: Any) -> Any:
            keyword = "input_ids"
            if name == "vit":
                keyword = "pixel_values"
            elif name == "whisper_encoder":
                keyword = "input_features"
            return getattr(self.inner(**{keyword: x}), output)

    model = Wrapped().eval()
    if name == "vit":
        return model, torch.randn(1, 3, 32, 32), None
    if name == "whisper_encoder":
        return model, torch.randn(1, 80, 128), None
    example = torch.randint(0, 1000, (1, seq_len))
    dim = torch.export.Dim(
        "seq_len",
        min=2,
        max=cfg.max_position_embeddings if hasattr(cfg, "max_position_embeddings") else 128,
    )
    return model, example, {"x": {1: dim}}


def export_and_import(case: Case, say: Progress) -> tuple[Any, dict[str, Any]]:
    """Export the case's torch model and import it into Relax: (ModelSource, details).

    Raises :class:`StageError` ``"export"`` (torch could not export it) or ``"import"`` (TVM's
    frontend could not import it)."""
    import torch

    from tvm_nnapi.tools.sources import exported_program_to_relax, onnx_to_relax

    details: dict[str, Any] = {}
    dynamic = None
    try:
        if case.frontend == "hf":
            model, example, dynamic = _hf_module(case.name, case.config)
        else:
            model, example = _torchvision_module(case.name, case.config["resolution"])
    except Exception as error:
        raise StageError("build", error) from error
    start = time.perf_counter()
    if case.frontend == "onnx":
        say("torch.onnx.export...")
        proto, exporter = _onnx_export(model, example, dynamic, details)
        details["exporter"] = exporter
        details["export_seconds"] = time.perf_counter() - start
        say("TVM's ONNX frontend...")
        start = time.perf_counter()
        try:
            mod = onnx_to_relax(proto, case.key)
        except Exception as error:
            raise StageError("import", error) from error
        kind = "onnx"
    else:
        say("torch.export...")
        try:
            with torch.no_grad():
                exported = torch.export.export(model, (example,), dynamic_shapes=dynamic)
        except Exception as error:
            raise StageError("export", error) from error
        details["export_seconds"] = time.perf_counter() - start
        say("TVM's from_exported_program...")
        start = time.perf_counter()
        try:
            mod = exported_program_to_relax(exported)
        except Exception as error:
            raise StageError("import", error) from error
        kind = "torch.export"
    details["import_seconds"] = time.perf_counter() - start
    source = model_source(case.key, kind, case.description, mod, case.config.get("seq_len"))
    details["symbolic"] = dict(source.shapes)
    return source, details


def model_source(
    key: str, kind: str, description: str, mod: Any, symbol_value: int | None = None
) -> Any:
    """A ModelSource of an imported module: ``symbolic_module`` as imported, ``module`` with
    every symbolic dimension of ``main`` bound to ``symbol_value`` (default
    :data:`HF_SEQ_LEN`)."""
    from tvm import relax

    from tvm_nnapi.tools.sources import ModelSource, bind_shapes

    symbols = sorted(str(v) for v in relax.analysis.defined_symbolic_vars(mod["main"]))
    shapes = {symbol: symbol_value or HF_SEQ_LEN for symbol in symbols}
    bound = bind_shapes(mod, shapes, key)
    return ModelSource(key, kind, description, bound, mod, shapes=shapes)


def _onnx_export(
    model: Any, example: Any, dynamic: dict[str, Any] | None, details: dict[str, Any]
) -> tuple[Any, str]:
    """torch.onnx.export with torch's default exporter (torch.export based), else the
    TorchScript one (``dynamo=False``); the first exporter's error is kept in ``details``."""
    import io
    import warnings

    import onnx
    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = torch.onnx.export(
                model, (example,), dynamic_shapes=dynamic, dynamo=True, verbose=False
            )
        return program.model_proto, "torch.onnx.export (dynamo)"
    except Exception as error:
        details["dynamo_export_error"] = _one_line(f"{type(error).__name__}: {error}")
    buffer = io.BytesIO()
    axes = {"x": {1: "seq_len"}} if dynamic else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model, (example,), buffer, dynamo=False, input_names=["x"], dynamic_axes=axes
            )
    except Exception as error:
        raise StageError("export", error) from error
    return onnx.load_from_string(buffer.getvalue()), "torch.onnx.export (TorchScript)"


# ---- measuring ------------------------------------------------------------------------------


def _normalise_reason(reason: str) -> str:
    """A refusal reason without the names that differ between models (function, binding)."""
    reason = re.sub(r" \(in [A-Za-z_0-9]+\)$", "", reason)
    return re.sub(r"\blv\d+\b", "lv", reason)


def _imported_operators(mod: Any) -> int:
    """Relax operator calls of every function of the imported module (once per execution)."""
    from tvm import relax

    from tvm_nnapi.compiler.ir_utils import operator_calls

    return sum(
        len(operator_calls(func))
        for func in mod.functions.values()
        if isinstance(func, relax.Function)
    )


def measure(source: Any, run: bool = True, say: Progress | None = None) -> dict[str, Any]:
    """Partition ``source.symbolic_module`` (symbolic dimensions kept), describe it, and run it
    on the mock against the host llvm build of ``source.module`` (the bound shapes).

    Returns the per-model record (see the module docstring). Raises :class:`StageError`
    ``"partition"``, ``"codegen"`` (lowering a subgraph to NNAPI operations), ``"run"`` or
    ``"host build"`` (the run failed because TVM cannot build the imported module for llvm
    without NNAPI either: TVM's failure, not the backend's).
    """
    import tvm
    from tvm import relax

    import tvm_nnapi
    from tvm_nnapi.compiler.flops import call_flops
    from tvm_nnapi.compiler.ir_utils import bindings
    from tvm_nnapi.tools.explain import explain
    from tvm_nnapi.tools.run import run_model
    from tvm_nnapi.tools.sources import bind_shapes

    say = say or (lambda message: None)
    record: dict[str, Any] = {}
    start = time.perf_counter()
    say("partitioning for NNAPI...")
    try:
        report = tvm_nnapi.partition_with_report(source.symbolic_module)
        # FLOPs need static shapes: count them on the partitioned module with the symbols bound.
        concrete = bind_shapes(report.module, source.shapes, source.spec)
        summary = tvm_nnapi.offload_summary(concrete)
    except Exception as error:
        raise StageError("partition", error) from error
    try:  # lowers every subgraph to NNAPI operations, as the codegen does
        described = explain(source.symbolic_module, report=report)
    except Exception as error:
        raise StageError("codegen", error) from error
    record["partition_seconds"] = time.perf_counter() - start
    total = summary.offloaded_flops + summary.host_flops
    record.update(
        # Counted on the imported graph; the offload counts are of the prepared one (batch
        # norms folded, constants folded: tvm_nnapi/compiler/prepare.py).
        relax_operators=_imported_operators(source.symbolic_module),
        prepared_operators=summary.offloaded_operators + summary.host_operators,
        offloaded_operators=summary.offloaded_operators,
        host_operators=dict(sorted(summary.host.items())),
        total_flops=total,
        offloaded_flops=summary.offloaded_flops,
        flop_share=summary.offloaded_flops / total if total else None,
        subgraphs=len(described.subgraphs),
        nnapi_operations=sum(
            sum(s.nnapi_operations.values()) * s.calls for s in described.subgraphs
        ),
        nnapi_operation_kinds=dict(
            sorted(
                sum(
                    (
                        Counter({k: v * s.calls for k, v in s.nnapi_operations.items()})
                        for s in described.subgraphs
                    ),
                    Counter(),
                ).items()
            )
        ),
        boundary_values=described.boundary_transfers,
    )
    # Refusals of operators that really stay on the host (a pattern refused and another then
    # took an operator is no reason it stays), with the FLOPs they keep there.
    host_calls: dict[str, Any] = {}
    for func in concrete.functions.values():
        if isinstance(func, relax.Function) and not (func.attrs or {}).get("Codegen"):
            if "Composite" in (func.attrs or {}):
                continue
            for binding in bindings(func):
                value = binding.value
                if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op):
                    host_calls[binding.var.name] = value
    refusals: dict[tuple[str, str, str], dict[str, Any]] = {}
    for refusal in report.refusals:
        call = host_calls.get(refusal.binding)
        if call is None or str(call.op.name) != refusal.operator:
            continue
        key = (refusal.operator, refusal.kind.value, _normalise_reason(refusal.reason))
        entry = refusals.setdefault(
            key,
            {"operator": key[0], "kind": key[1], "reason": key[2], "count": 0, "flops": 0},
        )
        entry["count"] += 1
        entry["flops"] += call_flops(call)
    record["refusals"] = sorted(refusals.values(), key=lambda r: (-r["flops"], -r["count"]))
    if not run:
        return record
    start = time.perf_counter()
    try:
        result = run_model(source, progress=say, partitioned=report.module)
    except Exception as error:
        failure = StageError("run", error)
        try:  # is it the host reference that TVM cannot build (not the backend)?
            relax.build(source.module, target="llvm")
        except Exception as host_error:
            failure = StageError("host build", host_error)
        failure.record = record  # what the partition found stays in the model's record
        raise failure from error
    record["run_seconds"] = time.perf_counter() - start
    record.update(
        max_rel_error=_finite(result.max_rel_error),
        max_abs_error=_finite(result.max_abs_error),
        tolerance=max((o.tolerance for o in result.outputs), default=None),
        passed=result.passed,
        nnapi_ran=result.nnapi_ran,
        nnapi_executions=result.nnapi_executions,
        nnapi_operations_executed=result.nnapi_operations,
        profile=result.profile,
        outputs=[
            {"shape": o.shape, "dtype": o.dtype, "max_rel_error": _finite(o.max_rel_error)}
            for o in result.outputs
        ],
    )
    return record


def _finite(value: float) -> float | None:
    """JSON has no infinity: None for a non-finite error (a shape mismatch)."""
    return float(value) if math.isfinite(value) else None


def measure_case(case: Case, run: bool = True, say: Progress | None = None) -> dict[str, Any]:
    """Export, import and measure one case; every failure becomes the record's ``status``."""
    return measure_loaded(
        _case_header(case), lambda progress: export_and_import(case, progress), run, say
    )


def measure_loaded(
    header: dict[str, Any],
    load: Callable[[Progress], tuple[Any, dict[str, Any]]],
    run: bool = True,
    say: Progress | None = None,
) -> dict[str, Any]:
    """The record of one model: ``header`` (key, frontend, model, family, ...) plus the
    measurements of the ModelSource ``load`` returns (with details for the record); a
    :class:`StageError` becomes the ``status`` and ``error``. A model with symbolic dimensions
    whose partition or codegen fails is measured again with them bound (``static``), for
    information."""
    say = say or (lambda message: None)
    record = dict(header)
    start = time.perf_counter()
    source = None
    try:
        source, details = load(say)
        record.update(details)
        record["imported"] = True
        record.update(measure(source, run=run, say=say))
        record["status"] = "ok"
    except StageError as error:
        record.update(error.record)
        record["status"] = f"{error.stage} error"
        record["error"] = _one_line(str(error))
        record["imported"] = error.stage not in ("build", "export", "import")
        if error.stage in ("partition", "codegen") and source is not None and source.shapes:
            say("partition failed with symbolic dimensions; measuring the bound module...")
            static = dataclasses.replace(source, symbolic_module=source.module, shapes={})
            try:
                record["static"] = measure(static, run=run, say=say)
                record["static"]["status"] = "ok"
            except StageError as again:
                record["static"] = dict(again.record, status=f"{again.stage} error")
                record["static"]["error"] = str(again)
    record["seconds"] = time.perf_counter() - start
    return record


def measure_onnx(
    model: Any, key: str, family: str = "cv-classification", run: bool = True
) -> dict[str, Any]:
    """The record of an ONNX ``ModelProto`` imported with TVM's ONNX frontend (what the
    tests measure: models written with ``onnx.helper``)."""
    from tvm_nnapi.tools.sources import onnx_to_relax

    def load(say: Progress) -> tuple[Any, dict[str, Any]]:
        start = time.perf_counter()
        try:
            mod = onnx_to_relax(model, key)
        except Exception as error:
            raise StageError("import", error) from error
        source = model_source(key, "onnx", key, mod)
        return source, {
            "import_seconds": time.perf_counter() - start,
            "symbolic": dict(source.shapes),
        }

    header = {
        "key": key,
        "frontend": "onnx",
        "model": key,
        "family": family,
        "description": key,
        "config": {},
        "imported": False,
    }
    return measure_loaded(header, load, run)


def _case_header(case: Case) -> dict[str, Any]:
    return {
        "key": case.key,
        "frontend": case.frontend,
        "model": case.name,
        "family": case.family,
        "description": case.description,
        "config": case.config,
        "imported": False,
    }


def _one_line(text: str, limit: int = 600) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---- goals ----------------------------------------------------------------------------------


def missed_goals(record: dict[str, Any]) -> list[str]:
    """The bench's goals this record misses, each with the value that misses it."""
    family = record.get("family")
    status = record.get("status", "")
    missed = []
    if not record.get("imported"):
        missed.append(f"does not import ({status})")
        return missed
    if status == "host build error":
        missed.append(
            "host build error (TVM cannot build the imported module for llvm: not the backend's)"
        )
    elif status != "ok":
        missed.append(status)
    share = record.get("flop_share")
    if family == "cv-classification":
        if share is not None and share < GOAL_CV_FLOP_SHARE:
            missed.append(f"FLOPs on NNAPI {share:.1%} < 90%")
        error = record.get("max_rel_error")
        if "max_rel_error" in record and (error is None or error > GOAL_CV_REL_ERROR):
            shown = "a shape mismatch" if error is None else f"{error:.1e}"
            missed.append(f"relative error {shown} > 1e-4")
    elif family == "transformer":
        if share is not None and share < GOAL_TRANSFORMER_FLOP_SHARE:
            missed.append(f"FLOPs on NNAPI {share:.1%} < 80%")
    if status == "ok" and "passed" in record and not record["passed"]:
        missed.append("differential check failed (tolerance of run)")
    return missed


def _refusals(record: dict[str, Any]) -> list[dict[str, Any]]:
    """A record's refusals; those of its bound-shape measurement when the symbolic partition
    failed (the operators the backend leaves on the host are the same question)."""
    if "refusals" in record:
        return record["refusals"]
    return record.get("static", {}).get("refusals", [])


def aggregate_refusals(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Refusals over the set: per (operator, kind, reason) the operators and FLOPs kept on the
    host and the models, largest FLOPs first."""
    total: dict[tuple[str, str, str], dict[str, Any]] = {}
    for record in records:
        for refusal in _refusals(record):
            key = (refusal["operator"], refusal["kind"], refusal["reason"])
            entry = total.setdefault(
                key,
                {
                    "operator": key[0],
                    "kind": key[1],
                    "reason": key[2],
                    "count": 0,
                    "flops": 0,
                    "models": [],
                },
            )
            entry["count"] += refusal["count"]
            entry["flops"] += refusal["flops"]
            entry["models"].append(record["key"])
    return sorted(total.values(), key=lambda r: (-r["flops"], -r["count"], r["operator"]))


def aggregate_by_operator(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per Relax operator left on the host: operators, FLOPs, models (what a lowering gains)."""
    total: dict[str, dict[str, Any]] = {}
    for record in records:
        for refusal in _refusals(record):
            entry = total.setdefault(
                refusal["operator"],
                {"operator": refusal["operator"], "count": 0, "flops": 0, "models": set()},
            )
            entry["count"] += refusal["count"]
            entry["flops"] += refusal["flops"]
            entry["models"].add(record["key"])
    rows = [dict(e, models=sorted(e["models"])) for e in total.values()]
    return sorted(rows, key=lambda r: (-r["flops"], -r["count"], r["operator"]))


# ---- the report -----------------------------------------------------------------------------


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _flops(value: float) -> str:
    if value >= 1e9:
        return f"{value / 1e9:.2f} G"
    if value >= 1e6:
        return f"{value / 1e6:.1f} M"
    if value >= 1e3:
        return f"{value / 1e3:.1f} k"
    return f"{value:.0f}"


def _error(value: float | None) -> str:
    return "-" if value is None else f"{value:.1e}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _static_text(record: dict[str, Any]) -> str:
    """The bound-shape measurement of a model whose symbolic partition failed, in words."""
    static = record["static"]
    bound = ", ".join(f"{k}={v}" for k, v in record.get("symbolic", {}).items())
    parts = []
    if "flop_share" in static:
        parts.append(
            f"FLOPs on NNAPI {_share(static.get('flop_share'))}, {static.get('subgraphs')} "
            f"subgraphs, {static.get('boundary_values')} boundary values"
        )
    if "max_rel_error" in static:
        parts.append(f"rel error {_error(static.get('max_rel_error'))}")
    if static.get("status") != "ok":
        parts.append(f"{static.get('status')}: {_one_line(static.get('error', ''), 200)}")
    return f"{bound}): " + "; ".join(parts)


def render_markdown(document: dict[str, Any], command: str) -> str:
    """docs/model-coverage.md from the JSON document."""
    records = [document["models"][k] for k in document.get("order", sorted(document["models"]))]
    records = [r for r in records if r is not None]
    lines = [
        "# Model coverage",
        "",
        "Real architectures through TVM's frontends, partitioned for NNAPI, run on the mock NNAPI",
        "and compared with the host llvm build of the same Relax module. Random",
        "weights, nothing downloaded. Generated by `bench/model_coverage.py`; do not edit by hand.",
        "",
        "Regenerate (a full run takes "
        + (
            f"about {document['wall_seconds'] / 60:.0f} min"
            if document.get("wall_seconds")
            else "a while"
        )
        + " on two cores, measured on a machine shared with other jobs, so an upper bound; the"
        " JSON keeps finished models, so an interrupted run continues):",
        "",
        "```",
        command,
        "```",
        "",
        f"Measured with tvm-nnapi {document.get('version', '?')} (commit "
        f"{document.get('commit', '?')}), TVM {document.get('tvm', '?')}, torch "
        f"{document.get('torch', '?')}, transformers {document.get('transformers', '?')}; mock "
        f"profile `{document.get('profile', '?')}`.",
        "",
        "Columns: *Relax ops* counts the operators of the imported module (NNAPI subgraphs",
        "plus host); *FLOPs on NNAPI* is the share of estimated FLOPs (multiply-adds count two)",
        "in NNAPI subgraphs (`tvm_nnapi.compiler.flops`, as `tvm-nnapi explain` reports it);",
        "*boundary* is the values crossing between host and NNAPI per inference; *rel error* is",
        "max |NNAPI - llvm| / max |llvm| over the outputs, run on the mock. Inputs are reduced",
        "where the architecture allows (torchvision CNNs at 64x64, where every stride still",
        "applies; vit_b_16 at 224, which its position embedding needs; the segmentation network",
        "at 128). The transformers models keep a symbolic sequence length where torch.export",
        f"allows one (run at {HF_SEQ_LEN}); a model whose partition fails with it is measured",
        "again with it bound, for information (under Errors).",
        "Models that torch cannot export or TVM's frontend cannot import are reported as such and",
        "are not counted against the backend.",
        "",
    ]
    imported = [r for r in records if r.get("imported")]
    ok = [r for r in records if r.get("status") == "ok"]
    lines += [
        f"{len(records)} models: {len(imported)} import, {len(ok)} partition and run without an "
        f"error.",
        "",
        "| model | frontend | status | Relax ops | on host | FLOPs | FLOPs on NNAPI | subgraphs "
        "| NNAPI ops | boundary | rel error | goals missed |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in records:
        host = sum(r.get("host_operators", {}).values()) if "host_operators" in r else None
        missed = missed_goals(r)
        lines.append(
            "| "
            + " | ".join(
                [
                    r["model"],
                    r["frontend"],
                    r.get("status", "not run"),
                    str(r.get("relax_operators", "-")),
                    "-" if host is None else str(host),
                    _flops(r["total_flops"]) if "total_flops" in r else "-",
                    _share(r.get("flop_share")) if "total_flops" in r else "-",
                    str(r.get("subgraphs", "-")),
                    str(r.get("nnapi_operations", "-")),
                    str(r.get("boundary_values", "-")),
                    _error(r.get("max_rel_error")),
                    _cell("; ".join(missed)) if missed else "none",
                ]
            )
            + " |"
        )
    errors = [r for r in records if r.get("status") not in ("ok", None)]
    lines += ["", "## Errors", ""]
    if not errors:
        lines.append("None.")
    for r in errors:
        lines.append(f"- `{r['key']}` ({r['status']}): {_cell(r.get('error', ''))}")
        if r["status"] == "host build error":
            lines.append(
                '  TVM\'s own `relax.build(module, "llvm")` of the imported module fails: there is '
                "no host reference to compare with (not the backend's failure; the partition and "
                "FLOPs above are measured)."
            )
        static = r.get("static")
        if static:
            lines.append(f"  With its symbolic dimensions bound ({_static_text(r)}.")
    notes = [r for r in records if r.get("dynamo_export_error")]
    if notes:
        lines += [
            "",
            "torch's default ONNX exporter failed on these; the TorchScript exporter was used:",
            "",
        ]
        for r in notes:
            lines.append(f"- `{r['key']}`: {_cell(r['dynamo_export_error'])}")
    by_op = aggregate_by_operator(records)
    lines += [
        "",
        "## What stays on the host",
        "",
        "Per Relax operator over every model: the operators and estimated FLOPs it keeps on the",
        "host, largest first. A lowering (or a fix of a refusal) for the top rows gains the most.",
        "A model whose partition failed with symbolic dimensions counts with its bound-shape",
        "partition.",
        "",
        "| Relax operator | on host | FLOPs | models |",
        "| --- | ---: | ---: | --- |",
    ]
    for row in by_op:
        models = ", ".join(row["models"][:8]) + (" ..." if len(row["models"]) > 8 else "")
        lines.append(
            f"| `{row['operator']}` | {row['count']} | {_flops(row['flops'])} | {models} |"
        )
    if not by_op:
        lines.append("| (none) | | | |")
    lines += [
        "",
        "Every refusal reason (operator, kind, reason), aggregated over the set:",
        "",
        "| Relax operator | kind | reason | on host | FLOPs | models |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for row in aggregate_refusals(records):
        lines.append(
            f"| `{row['operator']}` | {row['kind']} | {_cell(row['reason'])} | {row['count']} "
            f"| {_flops(row['flops'])} | {len(set(row['models']))} |"
        )
    lines += [
        "",
        "## Goals",
        "",
        "- every torchvision classification network imports and has at least 90% of its FLOPs on",
        "  NNAPI with a largest relative error of at most 1e-4 against the host build (float32);",
        "- the transformer encoders and decoders at least 80% with symbolic sequence lengths;",
        "- no import or partition error anywhere (a model TVM's frontend cannot import is",
        "  reported as such, not counted against the backend).",
        "",
    ]
    missing = [(r, missed_goals(r)) for r in records]
    missing = [(r, m) for r, m in missing if m]
    if not missing:
        lines.append("Every model meets its goals.")
    else:
        lines.append("Models that miss a goal:")
        lines.append("")
        for r, m in missing:
            lines.append(f"- `{r['key']}`: {_cell('; '.join(m))}")
    lines.append("")
    return "\n".join(lines)


# ---- the driver -----------------------------------------------------------------------------


def load_document(path: Path) -> dict[str, Any]:
    if path.is_file():
        try:
            document = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise UsageError(
                f"{path}: not a JSON document ({error}); remove it or use --fresh"
            ) from None
        if document.get("schema") == SCHEMA:
            return document
    return {"schema": SCHEMA, "models": {}, "order": []}


def save_document(document: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n")
    temporary.replace(path)


def _environment() -> dict[str, Any]:
    import importlib.metadata as metadata

    info: dict[str, Any] = {}
    for package, name in (
        ("tvm-nnapi", "version"),
        ("apache-tvm", "tvm"),
        ("torch", "torch"),
        ("transformers", "transformers"),
    ):
        try:
            info[name] = metadata.version(package)
        except metadata.PackageNotFoundError:
            info[name] = None
    try:
        info["commit"] = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        info["commit"] = None
    return info


def run_in_subprocess(case: Case, timeout: float, run: bool) -> dict[str, Any]:
    """Measure ``case`` in a child process (a crash or a time-out is the model's result),
    echoing its progress lines."""
    with tempfile.TemporaryDirectory() as scratch:
        output = Path(scratch) / "record.json"
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            case.key,
            "--worker-output",
            str(output),
        ]
        if not run:
            command.append("--no-run")
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        tail: list[str] = []

        def pump() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                line = line.rstrip()
                tail.append(line)
                del tail[:-30]
                if line.startswith("  ["):
                    print(line, flush=True)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        start = time.perf_counter()
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            reader.join(5)
            record = _case_header(case)
            record.update(status="timeout", error=f"no result after {timeout:.0f} s")
            record["seconds"] = record["wall_seconds"] = time.perf_counter() - start
            return record
        reader.join(5)
        if code == 0 and output.is_file():
            record = json.loads(output.read_text())
            record["wall_seconds"] = time.perf_counter() - start  # with the process start-up
            return record
        record = _case_header(case)
        lines = [line for line in tail if line.strip() and not line.startswith("  [")]
        record.update(
            status="crashed",
            error=_one_line(f"the worker exited with {code}: " + " / ".join(lines[-6:])),
            seconds=time.perf_counter() - start,
        )
        record["wall_seconds"] = record["seconds"]
        return record


def _summary_line(record: dict[str, Any]) -> str:
    parts = [record.get("status", "?")]
    if "total_flops" in record:
        parts.append(f"FLOPs on NNAPI {_share(record.get('flop_share'))}")
        parts.append(f"{record.get('relax_operators')} Relax ops")
        parts.append(f"{record.get('subgraphs')} subgraphs")
    if "max_rel_error" in record:
        parts.append(f"rel error {_error(record.get('max_rel_error'))}")
    if record.get("error"):
        parts.append(_one_line(record["error"], 200))
    parts.append(f"{record.get('seconds', 0):.0f} s")
    return ", ".join(parts)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="model_coverage.py",
        description="Model coverage of the NNAPI backend: torchvision and Hugging Face models "
        "through torch.export and ONNX, partitioned, run on the mock NNAPI vs host llvm; writes "
        "docs/model-coverage.md and docs/model-coverage.json.",
    )
    parser.add_argument(
        "--models",
        help="comma-separated names or keys (resnet18, onnx:resnet18, "
        "hf:bert); default: all (--list shows them)",
    )
    parser.add_argument(
        "--frontends", help=f"comma-separated subset of {','.join(FRONTENDS)} (default: all)"
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=DEFAULT_JSON,
        help="results file, read to resume and written after every model "
        "(default: docs/model-coverage.json)",
    )
    parser.add_argument(
        "--markdown",
        type=Path,
        default=DEFAULT_MARKDOWN,
        help="report written from the JSON (default: docs/model-coverage.md)",
    )
    parser.add_argument(
        "--fresh", action="store_true", help="discard the results file's models first"
    )
    parser.add_argument(
        "--redo",
        action="store_true",
        help="measure the selected models again even if the file has them",
    )
    parser.add_argument(
        "--no-run",
        action="store_true",
        help="partition and describe only (no build, no run on the mock)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds per model (default {DEFAULT_TIMEOUT:.0f})",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="rewrite the Markdown report from the JSON; run nothing",
    )
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--worker-output", type=Path, help=argparse.SUPPRESS)
    return parser


def _regenerate_command(document: dict[str, Any]) -> str:
    """The command that measures the document's models afresh (all of them: no --models)."""
    command = "python bench/model_coverage.py --fresh"
    keys = [c.key for c in all_cases()]
    present = [k for k in keys if k in document["models"]]
    present += sorted(set(document["models"]) - set(keys))
    if present != keys:
        return command + f" --models {','.join(present)}"
    return command + "   # or: tox -e models -- --fresh"


def _worker(args: argparse.Namespace) -> int:
    import warnings

    warnings.filterwarnings("ignore")
    cases = {c.key: c for c in all_cases()}
    case = cases[args.worker]

    def say(message: str) -> None:
        print(f"  [{case.key}] {message}", flush=True)

    record = measure_case(case, run=not args.no_run, say=say)
    args.worker_output.write_text(json.dumps(record))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.worker:
            return _worker(args)
        if args.list:
            for case in all_cases():
                print(f"{case.key:40s} {case.description}")
            return 0
        cases = select_cases(args.models, args.frontends)
        document = load_document(args.json)
        if args.fresh:
            document["models"], document["order"] = {}, []
        if not args.report_only:
            document.update(_environment())
            _run_cases(args, cases, document)
        if args.report_only and not document["models"]:
            raise UsageError(f"{args.json}: no results to report; run the bench first")
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(render_markdown(document, _regenerate_command(document)))
        print(f"wrote {args.markdown} and {args.json}")
    except UsageError as error:
        print(f"model_coverage.py: {error}", file=sys.stderr)
        return 2
    return 0


def _run_cases(
    args: argparse.Namespace,
    cases: list[Case],
    document: dict[str, Any],
    measure_one: Callable[[Case, float, bool], dict[str, Any]] = run_in_subprocess,
) -> None:
    """Measure the cases the document does not have yet (all with ``--redo``), saving it after
    each one; ``measure_one(case, timeout, run)`` returns a record."""
    from mock_nnapi import control

    document["profile"] = control.profile_name()
    order = [c.key for c in all_cases()]
    start = time.perf_counter()
    todo = [c for c in cases if args.redo or c.key not in document["models"]]
    skipped = len(cases) - len(todo)
    if skipped:
        print(f"{skipped} of {len(cases)} models already in {args.json} (--redo measures again)")
    for index, case in enumerate(todo, 1):
        print(f"[{index}/{len(todo)}] {case.key}: {case.description}", flush=True)
        record = measure_one(case, args.timeout, not args.no_run)
        document["models"][case.key] = record
        document["order"] = [k for k in order if k in document["models"]]
        save_document(document, args.json)
        print(f"[{index}/{len(todo)}] {case.key}: {_summary_line(record)}", flush=True)
    if todo:
        print(f"measured {len(todo)} models in {time.perf_counter() - start:.0f} s")
    document["wall_seconds"] = sum(
        r.get("wall_seconds", r.get("seconds", 0.0)) for r in document["models"].values()
    )
    save_document(document, args.json)


if __name__ == "__main__":
    sys.exit(main())
