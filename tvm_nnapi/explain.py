"""What the backend does with a model, and why: the data behind ``tvm-nnapi explain``.

:func:`explain` partitions a module and returns, per NNAPI subgraph, the Relax operators it
contains and the NNAPI operations they lower to, and, for every operator left on the host, the
typed refusal reason; plus totals (operators and estimated FLOPs offloaded, subgraphs, values
crossing between host and NNAPI).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import tvm

from .build import offload_summary
from .codegen import lower_function
from .partition import CODEGEN_NAME, partition_with_report
from .patterns import PartitionOptions


@dataclass
class SubgraphReport:
    name: str
    relax_operators: dict[str, int]
    nnapi_operations: dict[str, int]
    inputs: int
    outputs: int
    symbols: list[str]


@dataclass
class Explanation:
    subgraphs: list[SubgraphReport] = field(default_factory=list)
    refusals: list[dict[str, str]] = field(default_factory=list)
    host_operators: dict[str, int] = field(default_factory=dict)
    offloaded_operators: int = 0
    total_operators: int = 0
    offloaded_flops: int = 0
    total_flops: int = 0
    boundary_transfers: int = 0

    @property
    def flop_share(self) -> float | None:
        return self.offloaded_flops / self.total_flops if self.total_flops else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["flop_share"] = self.flop_share
        return data


def explain(mod: tvm.IRModule, options: PartitionOptions | None = None) -> Explanation:
    """Partition ``mod`` and describe the result (nothing is built or run)."""
    report = partition_with_report(mod, options)
    summary = offload_summary(report.module)
    result = Explanation(
        refusals=[
            {"operator": r.operator, "binding": r.binding, "kind": r.kind.value, "reason": r.reason}
            for r in report.refusals
        ],
        host_operators=dict(summary.host),
        offloaded_operators=summary.offloaded_operators,
        total_operators=summary.offloaded_operators + summary.host_operators,
        offloaded_flops=summary.offloaded_flops,
        total_flops=summary.offloaded_flops + summary.host_flops,
    )
    for name in report.subgraphs:
        func = report.module[name]
        builder = lower_function(func)
        result.subgraphs.append(
            SubgraphReport(
                name=name,
                relax_operators=dict(summary.subgraphs[name]),
                nnapi_operations=dict(Counter(op.op for op in builder.operations)),
                inputs=len(builder.inputs),
                outputs=len(builder.outputs),
                symbols=list(builder.symbols),
            )
        )
        # Every subgraph input and output crosses between host and NNAPI memory.
        result.boundary_transfers += len(builder.inputs) + len(builder.outputs)
    return result


def subgraph_functions(mod: tvm.IRModule) -> list[str]:
    return sorted(
        g.name_hint
        for g, f in mod.functions.items()
        if (getattr(f, "attrs", None) or {}).get("Codegen") == CODEGEN_NAME
    )


# ---- loading models ---------------------------------------------------------------------------

BUILT_IN_MODELS = ("mobilenet_v2", "mobilenet_v2_small", "residual")


class ModelLoadError(ValueError):
    """A MODEL argument cannot be loaded; the message names the file or the model."""


def load_model(spec: str, batch: int = 1) -> tvm.IRModule:
    """A Relax module from a built-in name, a Python file, a TVMScript file or an ONNX file.

    Python files must define ``mod`` (an IRModule) or ``get_model()`` returning one.
    """
    from .models import mobilenet_v2, residual_model

    if spec == "mobilenet_v2":
        return mobilenet_v2(batch=batch)[0]
    if spec == "mobilenet_v2_small":
        return mobilenet_v2(width=0.35, resolution=64, num_classes=10, batch=batch)[0]
    if spec == "residual":
        return residual_model()[0]
    path = Path(spec)
    if not path.is_file():
        raise ModelLoadError(
            f"{spec}: not a file and not a built-in model ({', '.join(BUILT_IN_MODELS)})"
        )
    suffix = path.suffix.lower()
    try:
        if suffix == ".onnx":
            import onnx
            from tvm.relax.frontend.onnx import from_onnx

            return from_onnx(onnx.load(str(path)), keep_params_in_input=False)
        if suffix == ".py":
            import importlib.util
            import sys

            # A real, registered module: TVMScript looks its source up through sys.modules.
            name = f"tvm_nnapi_user_model_{abs(hash(str(path.resolve())))}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            namespace = vars(module)
            if "get_model" in namespace:
                mod = namespace["get_model"]()
            elif "mod" in namespace:
                mod = namespace["mod"]
            else:
                raise ModelLoadError(f"{spec}: defines neither `mod` nor `get_model()`")
            if not isinstance(mod, tvm.IRModule):
                raise ModelLoadError(f"{spec}: `mod` is a {type(mod).__name__}, not an IRModule")
            return mod
        return tvm.script.from_source(path.read_text())
    except ModelLoadError:
        raise
    except ImportError as error:
        raise ModelLoadError(f"{spec}: {error} (ONNX files need `pip install onnx`)") from error
    except Exception as error:  # frontends raise many types; name the file in every case
        raise ModelLoadError(f"{spec}: cannot load the model: {error}") from error


__all__ = ["BUILT_IN_MODELS", "Explanation", "ModelLoadError", "explain", "load_model"]
