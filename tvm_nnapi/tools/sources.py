# SPDX-License-Identifier: Apache-2.0
"""MODEL arguments of the ``tvm-nnapi`` commands: where a Relax module comes from.

:func:`load_model_source` accepts

- a built-in model by name: the CV networks of :mod:`tvm_nnapi.models` (``mobilenet_v2``,
  ``mobilenet_v2_small``, ``residual``), torchvision's networks (``torchvision:mobilenet_v2``,
  ``torchvision:mobilenet_v3_large``, ``torchvision:efficientnet_b0``; need torch), and the LLM
  configurations of :mod:`tvm_nnapi.llm` (``llm:tiny-llama``, ``llm:llama-2-7b``, ...,
  optionally ``llm:NAME:float16`` or an MLC weight format, ``llm:NAME:q4f16_1``) whose entry
  is ``prefill`` (default) or ``decode``;
- a Python file defining ``mod`` (an IRModule) or ``get_model()`` returning one;
- a TVMScript file (any other suffix, e.g. ``.tvmscript``);
- an ONNX file (``.onnx``, TVM's ONNX frontend);
- a ``torch.export`` program (``.pt2``, saved with ``torch.export.save``; TVM's PyTorch frontend
  ``from_exported_program``; needs torch).

A file is recognised by its content first (:func:`model_format`): a TFLite flatbuffer, a
``torch.save`` pickle, a TorchScript archive or unknown bytes are refused naming what they are
and the accepted formats, before any frontend sees them.

Symbolic dimensions (an LLM's ``seq_len``, a ``batch``) are bound from ``shapes``
(``--shapes seq_len=128,batch=1``): every Relax function that defines the symbol gets the
value. Errors are :class:`ModelLoadError` with a message naming the file, the node or the symbol
at fault.
"""

from __future__ import annotations

import difflib
import importlib.util
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tvm
from tvm import relax

from ..errors import ModelLoadError

CNN_MODELS = ("mobilenet_v2", "mobilenet_v2_small", "residual")
TORCHVISION_PREFIX = "torchvision:"
LLM_PREFIX = "llm:"
LLM_ENTRIES = ("prefill", "decode")
# Default symbol values of the built-in models (used when --shapes does not give them).
LLM_DEFAULT_SEQ_LEN = 32


@dataclass
class ModelSource:
    """A loaded MODEL argument.

    ``module`` has the symbolic dimensions given in ``shapes`` bound to their values (what
    ``explain`` and ``estimate`` look at); ``symbolic_module`` is the module as loaded (what a
    deployment builds, e.g. an LLM with a symbolic ``seq_len``).
    """

    spec: str  # the MODEL argument as given
    kind: str  # "builtin", "torchvision", "llm", "python", "tvmscript", "onnx", "torch.export"
    description: str
    module: tvm.IRModule
    symbolic_module: tvm.IRModule
    entry: str = "main"
    # Functions to partition (None: every function); an LLM partitions only its entry.
    partition_entries: list[str] | None = None
    shapes: dict[str, int] = field(default_factory=dict)
    # LLMs: the configuration, dtype and named parameters (in the order of the packed weights).
    llm_config: Any = None
    llm_dtype: str = "float32"
    llm_quantization: str = "q0f32"  # MLC weight format (tvm_nnapi.llm.quantization)
    llm_named_params: list[Any] = field(default_factory=list)
    # The model's own name of each binding of the entry function that the file names (an
    # ONNX node's name), by binding name; a binding not listed is named by its binding name.
    node_names: dict[str, str] = field(default_factory=dict)

    def unbound_symbols(self) -> list[str]:
        """Symbolic dimensions of the entry function that ``shapes`` does not bind."""
        return sorted(str(v) for v in relax.analysis.defined_symbolic_vars(self.module[self.entry]))

    def check_bound(self) -> None:
        """Raise :class:`ModelLoadError` naming the symbolic dimensions of the entry function
        that have no value (``run`` and ``estimate`` need static shapes)."""
        names = self.unbound_symbols()
        if names:
            values = ",".join(f"{name}=N" for name in names)
            what = "dimension" if len(names) == 1 else "dimensions"
            raise ModelLoadError(
                f"{self.spec}: the symbolic {what} {', '.join(names)} of {self.entry} "
                f"{'has' if len(names) == 1 else 'have'} no value; give it with --shapes {values}"
            )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "spec": self.spec,
            "kind": self.kind,
            "description": self.description,
            "entry": self.entry,
            "shapes": dict(self.shapes),
        }
        if self.llm_config is not None:
            data["llm_config"] = self.llm_config.name
            data["dtype"] = self.llm_dtype
            data["quantization"] = self.llm_quantization
        return data


def parse_shapes(text: str | None) -> dict[str, int]:
    """``"seq_len=128,batch=1"`` -> ``{"seq_len": 128, "batch": 1}``."""
    shapes: dict[str, int] = {}
    if not text:
        return shapes
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ModelLoadError(f"--shapes: {item!r} is not NAME=VALUE (e.g. seq_len=128)")
        try:
            number = int(value)
        except ValueError:
            raise ModelLoadError(f"--shapes: {name}={value!r} is not an integer") from None
        if number <= 0:
            raise ModelLoadError(f"--shapes: {name}={number} must be positive")
        shapes[name] = number
    return shapes


def builtin_model_names() -> list[str]:
    """Every built-in MODEL name (torchvision ones need torch)."""
    from ..llm import CONFIGS
    from ..models.torchvision_models import TORCHVISION_NETWORKS

    return [
        *CNN_MODELS,
        *(TORCHVISION_PREFIX + name for name in TORCHVISION_NETWORKS),
        *(LLM_PREFIX + name for name in sorted(CONFIGS)),
    ]


def load_model_source(
    spec: str,
    shapes: dict[str, int] | None = None,
    entry: str | None = None,
    batch: int = 1,
) -> ModelSource:
    """Load a MODEL argument (see the module docstring) and bind ``shapes``."""
    shapes = dict(shapes or {})
    if spec in CNN_MODELS:
        source = _builtin_cnn(spec, batch)
    elif spec.startswith(TORCHVISION_PREFIX):
        source = _torchvision(spec, batch)
    elif spec.startswith(LLM_PREFIX):
        source = _llm(spec, entry)
        shapes.setdefault("seq_len", LLM_DEFAULT_SEQ_LEN)
    else:
        source = _from_file(spec)
    if entry is not None and source.kind != "llm":
        if not any(g.name_hint == entry for g in source.module.get_global_vars()):
            functions = sorted(
                g.name_hint
                for g, f in source.module.functions.items()
                if isinstance(f, relax.Function)
            )
            raise ModelLoadError(f"{spec}: no function {entry!r} (functions: {functions})")
        source.entry = entry
    if source.kind == "builtin" and spec == "residual":
        shapes.setdefault("batch", batch)
    source.module = bind_shapes(source.symbolic_module, shapes, spec, source.entry)
    source.shapes = shapes
    _check_input_sizes(source)
    return source


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _check_input_sizes(source: ModelSource) -> None:
    """Refuse at once inputs that cannot exist: a negative or zero dimension, or (all sizes
    known) more bytes than this machine's memory, naming the input."""
    func = source.module[source.entry] if source.kind != "llm" else None
    if not isinstance(func, relax.Function):
        return
    total = 0
    for param in func.params:
        tensor = param.ty
        if not isinstance(tensor, relax.TensorType) or tensor.shape is None:
            continue
        dims = [d.value if isinstance(d, tvm.tirx.IntImm) else None for d in tensor.shape.values]
        for axis, size in enumerate(dims):
            if size is not None and size <= 0:
                raise ModelLoadError(
                    f"{source.spec}: input {param.name} has dimension {axis} of size {size}"
                )
        if all(size is not None for size in dims):
            total += math.prod(dims) * np.dtype(str(tensor.dtype)).itemsize  # type: ignore[arg-type]
    memory = _physical_memory()
    if memory is not None and total > memory:
        raise ModelLoadError(
            f"{source.spec}: its inputs need {_bytes_text(total)}, more than this machine's "
            f"{_bytes_text(memory)} of memory; give smaller sizes (--shapes, --batch)"
        )


def _bytes_text(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} PiB"


def bind_shapes(
    mod: tvm.IRModule, shapes: dict[str, int], spec: str = "model", entry: str = "main"
) -> tvm.IRModule:
    """Bind symbolic dimensions by name in every Relax function that defines them.

    A name no function defines is an error that lists the symbols the ``entry`` function has.
    """
    if not shapes:
        return mod
    used: set[str] = set()
    functions = {}
    for gvar, func in mod.functions.items():
        if isinstance(func, relax.Function):
            # Every variable of a name: a merged NNAPI subgraph holds one per composite it
            # inlined (MergeCompositeFunctions copies each with fresh variables).
            defined = relax.analysis.defined_symbolic_vars(func)
            binding = {v: shapes[str(v)] for v in defined if str(v) in shapes}
            if binding:
                func = func.bind_symbolic_vars(binding)
                used.update(str(v) for v in binding)
        functions[gvar] = func
    unknown = sorted(set(shapes) - used)
    if unknown:
        symbols = []
        if any(g.name_hint == entry for g in mod.get_global_vars()):
            symbols = sorted(str(v) for v in relax.analysis.defined_symbolic_vars(mod[entry]))
        raise ModelLoadError(
            f"{spec}: --shapes names {', '.join(unknown)}, which no function of the model "
            f"defines (symbolic dimensions of {entry}: {', '.join(symbols) or 'none'})"
        )
    return tvm.IRModule(functions, attrs=mod.attrs, global_infos=mod.global_infos)


# ---- built-in models -----------------------------------------------------------------------------


def _builtin_cnn(spec: str, batch: int) -> ModelSource:
    from ..models import mobilenet_v2, residual_model

    if spec == "mobilenet_v2":
        mod = mobilenet_v2(batch=batch)[0]
        text = f"MobileNetV2 (width 1.0, 224x224, batch {batch}, random weights)"
    elif spec == "mobilenet_v2_small":
        mod = mobilenet_v2(width=0.35, resolution=64, num_classes=10, batch=batch)[0]
        text = f"MobileNetV2-style CNN (width 0.35, 64x64, batch {batch}, random weights)"
    else:
        mod = residual_model()[0]
        text = (
            "residual elementwise network with a host-only cumsum (symbolic batch: --batch or "
            "--shapes batch=N, default 1)"
        )
    return ModelSource(spec, "builtin", text, mod, mod)


def _torchvision(spec: str, batch: int) -> ModelSource:
    from ..models.torchvision_models import TORCHVISION_NETWORKS, torchvision_model

    name = spec.removeprefix(TORCHVISION_PREFIX)
    if name not in TORCHVISION_NETWORKS:
        raise ModelLoadError(
            f"{spec}: unknown torchvision network; choose from {', '.join(TORCHVISION_NETWORKS)}"
        )
    try:
        model = torchvision_model(name, batch=batch)
    except ImportError as error:
        raise ModelLoadError(f"{spec}: {error}") from error
    text = f"torchvision {name} (224x224, batch {batch}, random weights, torch.export)"
    return ModelSource(spec, "torchvision", text, model.module, model.module)


def parse_llm_spec(spec: str) -> tuple[Any, str]:
    """``llm:NAME[:FORMAT]`` -> (the LlamaConfig, the model's float type)."""
    config, quantization = parse_llm_format(spec)
    return config, quantization.model_dtype


def parse_llm_format(spec: str) -> tuple[Any, Any]:
    """``llm:NAME[:FORMAT]`` -> (the LlamaConfig, its weight format): FORMAT is ``float32``
    (default) or ``float16``, or an MLC-LLM format (``q4f16_1``, ``q4f32_1``, ``q0f16``,
    ``q0f32``; :mod:`tvm_nnapi.llm.quantization`)."""
    from .. import llm
    from ..llm.quantization import QUANTIZATIONS

    formats = {"float32": "q0f32", "float16": "q0f16", **{name: name for name in QUANTIZATIONS}}
    parts = spec.removeprefix(LLM_PREFIX).split(":")
    name, weight_format = parts[0], parts[1] if len(parts) > 1 else "float32"
    if len(parts) > 2 or name not in llm.CONFIGS:
        close = difflib.get_close_matches(name, sorted(llm.CONFIGS), n=1)
        hint = f"did you mean llm:{close[0]}? " if close and len(parts) <= 2 else ""
        raise ModelLoadError(
            f"{spec}: unknown LLM configuration; {hint}use llm:NAME[:FORMAT] with NAME one of "
            f"{', '.join(sorted(llm.CONFIGS))}"
        )
    if weight_format not in formats:
        raise ModelLoadError(
            f"{spec}: weight format {weight_format!r} is not one of {', '.join(formats)}"
        )
    return llm.get_config(name), QUANTIZATIONS[formats[weight_format]]


def _llm(spec: str, entry: str | None) -> ModelSource:
    from .. import llm

    config, quantization = parse_llm_format(spec)
    dtype = quantization.model_dtype
    entry = entry or "prefill"
    if entry not in LLM_ENTRIES:
        raise ModelLoadError(f"{spec}: --entry must be one of {', '.join(LLM_ENTRIES)}")
    mod, named_params, _ = llm.export_model(config, dtype, quantization)
    params = config.parameter_count()
    count = f"{params / 1e9:.2f} B" if params >= 1e9 else f"{params / 1e6:.2f} M"
    text = (
        f"{config.name} ({config.num_hidden_layers} layers, hidden {config.hidden_size}, "
        f"{count} parameters, {quantization.name}), entry {entry}"
    )
    return ModelSource(
        spec,
        "llm",
        text,
        mod,
        mod,
        entry=entry,
        partition_entries=[entry],
        llm_config=config,
        llm_dtype=dtype,
        llm_quantization=quantization.name,
        llm_named_params=named_params,
    )


# ---- files ---------------------------------------------------------------------------------------


def _from_file(spec: str) -> ModelSource:
    path = Path(spec)
    if path.is_dir():
        raise ModelLoadError(f"{spec}: is a directory; give a model file")
    if not path.is_file():
        if path.suffix or "/" in spec or "\\" in spec:
            # It looks like a file name: say so first.
            raise ModelLoadError(f"{spec}: no such file")
        names = builtin_model_names()
        close = difflib.get_close_matches(spec, names, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ModelLoadError(
            f"{spec}: no such file and not a built-in model; {hint}built-ins: "
            f"{', '.join(CNN_MODELS)}, torchvision:NAME, llm:NAME (see `tvm-nnapi models`)"
        )
    kind = model_format(path)
    node_names: dict[str, str] = {}
    try:
        if kind == "onnx":
            mod, node_names = _load_onnx(path)
        elif kind == "torch.export":
            mod = _load_exported_program(path)
        elif kind == "python":
            mod = _load_python(path)
        else:
            mod = _load_tvmscript(path)
    except ModelLoadError:
        raise
    except Exception as error:  # frontends raise many types; name the file in every case
        raise ModelLoadError(f"{spec}: cannot load the model: {error}") from error
    if not any(isinstance(f, relax.Function) for f in mod.functions.values()):
        raise ModelLoadError(f"{spec}: the module has no Relax function")
    entry = "main" if any(g.name_hint == "main" for g in mod.get_global_vars()) else ""
    if not entry:
        entry = sorted(
            g.name_hint for g, f in mod.functions.items() if isinstance(f, relax.Function)
        )[0]
    source = ModelSource(spec, kind, f"{kind} file {path.name}", mod, mod, entry=entry)
    if entry == "main":
        source.node_names = node_names
    return source


#: What a model file may be, for the messages that refuse one.
ACCEPTED_FORMATS = (
    "accepted: ONNX (.onnx), a torch.export program (.pt2, torch.export.save), a Python file "
    "defining `mod` or `get_model()` (.py), TVMScript text"
)

# Formats recognised by their first bytes and refused with what to do instead.
_REFUSED_SIGNATURES = (
    (4, b"TFL3", "a TensorFlow Lite flatbuffer; convert the model to ONNX (e.g. tflite2onnx)"),
    (0, b"\x89HDF\r\n\x1a\n", "an HDF5 file (a Keras model?); convert it to ONNX (tf2onnx)"),
    (0, b"GGUF", "a GGUF file (llama.cpp weights); LLMs are built in: see `tvm-nnapi models`"),
)


def model_format(path: Path) -> str:
    """``"onnx"``, ``"torch.export"``, ``"python"`` or ``"tvmscript"``: what the file holds, by
    its content first and its suffix second. A file of another kind (a TFLite flatbuffer, a
    ``torch.save`` pickle, a TorchScript archive, unknown bytes, text that is no TVMScript)
    raises :class:`ModelLoadError` naming what it is and the accepted formats."""
    import zipfile

    with open(path, "rb") as file:
        head = file.read(4096)
    suffix = path.suffix.lower()
    for offset, signature, what in _REFUSED_SIGNATURES:
        if head[offset : offset + len(signature)] == signature:
            raise ModelLoadError(f"{path}: {what}; {ACCEPTED_FORMATS}")
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
        except zipfile.BadZipFile as error:
            raise ModelLoadError(f"{path}: a damaged ZIP archive ({error})") from error
        if any(n.endswith(("archive_format", "serialized_exported_program.json")) for n in names):
            return "torch.export"
        if any(n.endswith("constants.pkl") or "/code/" in n for n in names):
            raise ModelLoadError(
                f"{path}: a TorchScript archive (torch.jit.save), not a torch.export program; "
                f"save it with torch.export.save; {ACCEPTED_FORMATS}"
            )
        if any(n.endswith("data.pkl") for n in names):
            raise ModelLoadError(
                f"{path}: a torch.save pickle (weights or a pickled module), not a program; "
                f"export the model with torch.export.save; {ACCEPTED_FORMATS}"
            )
        raise ModelLoadError(f"{path}: a ZIP archive that holds no model; {ACCEPTED_FORMATS}")
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        raise ModelLoadError(
            f"{path}: a Python pickle (torch.save's legacy format?), not a program; export the "
            f"model with torch.export.save; {ACCEPTED_FORMATS}"
        )
    text: str | None
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as error:
        # Cut inside a multi-byte character at the end of the head: still text.
        text = head[: error.start].decode("utf-8") if error.start >= len(head) - 3 else None
    if text is None or "\x00" in text:
        if suffix == ".onnx" or head[:1] == b"\x08":  # ONNX: protobuf, ir_version first
            return "onnx"
        raise ModelLoadError(f"{path}: not a model format tvm-nnapi reads; {ACCEPTED_FORMATS}")
    if suffix == ".py":
        return "python"
    if suffix == ".onnx":
        raise ModelLoadError(f"{path}: a text file, not an ONNX model; {ACCEPTED_FORMATS}")
    if suffix in (".pt2", ".pt", ".ep"):
        raise ModelLoadError(f"{path}: a text file, not a torch.export program; {ACCEPTED_FORMATS}")
    if any(marker in text for marker in ("@I.ir_module", "@R.function", "@T.prim_func")):
        return "tvmscript"
    if "get_model" in text or "IRModule" in text or "import tvm" in text:
        return "python"
    raise ModelLoadError(
        f"{path}: text that is neither TVMScript (no @I.ir_module or @R.function) nor a Python "
        f"model file; {ACCEPTED_FORMATS}"
    )


def _load_onnx(path: Path) -> tuple[tvm.IRModule, dict[str, str]]:
    try:
        import onnx
    except ImportError as error:
        raise ModelLoadError(
            f"{path}: ONNX files need the onnx package (pip install onnx, or the `test` extra)"
        ) from error
    try:
        model = onnx.load(str(path))
    except Exception as error:
        raise ModelLoadError(f"{path}: not a readable ONNX model: {error}") from error
    if not model.graph.output:
        raise ModelLoadError(f"{path}: not an ONNX model with outputs (its graph has none)")
    initializers = {tensor.name for tensor in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        for axis, dim in enumerate(value.type.tensor_type.shape.dim):
            if dim.HasField("dim_value") and dim.dim_value <= 0:
                raise ModelLoadError(
                    f"{path}: input {value.name} has dimension {axis} of size {dim.dim_value}; "
                    "give it a positive size (or a name, dim_param, for a symbolic one)"
                )
    try:
        # By path: a model with external data is checked without loading it twice.
        onnx.checker.check_model(str(path))
    except onnx.checker.ValidationError as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        # The checker names an operator type, not the node: name the first node of that type.
        node = next(
            (n for n in model.graph.node if f" {n.op_type} " in f" {first} "),
            None,
        )
        where = f" (node {node.name or '(unnamed)'} ({node.op_type}))" if node else ""
        raise ModelLoadError(
            f"{path}: not a valid ONNX model (onnx.checker): {first}{where}"
        ) from None
    return onnx_to_relax_with_names(model, str(path))


def onnx_to_relax(model: Any, name: str = "model") -> tvm.IRModule:
    """Import an ONNX ``ModelProto`` with TVM's ONNX frontend, weights as constants (what
    ``.onnx`` files load as). A node the frontend has no converter for is a
    :class:`ModelLoadError` naming it (``name``: the file or model, for the message)."""
    return onnx_to_relax_with_names(model, name)[0]


def onnx_to_relax_with_names(
    model: Any, name: str = "model"
) -> tuple[tvm.IRModule, dict[str, str]]:
    """:func:`onnx_to_relax`, and the ONNX node each binding of ``main`` computes: {binding
    name: node name} (:attr:`ModelSource.node_names`).

    TVM's frontend keeps no node names, but its importer keeps the expression of every ONNX
    tensor: a binding whose value is the expression of a node's output is that node's, and so
    are the bindings only it uses that its converter emitted on the way (e.g. the reshape of a
    Conv's bias). An unnamed node is named after its operator type and first output."""
    from tvm.relax.frontend.onnx import from_onnx
    from tvm.relax.frontend.onnx.onnx_frontend import _get_convert_map

    # Name every node TVM's frontend cannot convert (its own message lists only the op types).
    known = set(_get_convert_map()) | {"If", "Constant"}
    missing = [node for node in model.graph.node if node.op_type not in known]
    if missing:
        names = ", ".join(f"{n.name or '(unnamed)'} ({n.op_type})" for n in missing[:10])
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        raise ModelLoadError(f"{name}: TVM's ONNX frontend has no converter for node {names}{more}")
    try:
        from tvm.relax.frontend.onnx.onnx_frontend import ONNXGraphImporter
    except ImportError:  # a frontend without that importer: the module, without names
        return from_onnx(model, keep_params_in_input=False), {}
    if model.ir_version < 3:  # as from_onnx refuses it
        raise ValueError(f"ONNX IR version {model.ir_version} is not supported (3 or later)")
    opset = next(
        (int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")),
        1,
    )
    importer = ONNXGraphImporter(None, "float32", keep_params_in_input=False, sanitize=True)
    mod = importer.from_onnx(model.graph, opset)
    tensors = getattr(importer, "_nodes", None)
    if not isinstance(tensors, dict):
        return mod, {}
    return mod, _onnx_binding_nodes(mod["main"], model.graph.node, tensors)


def _vars_read(expr: relax.Expr) -> list[relax.Var]:
    found: list[relax.Var] = []
    relax.analysis.post_order_visit(
        expr, lambda e: found.append(e) if isinstance(e, relax.Var) else None
    )
    return found


def _onnx_binding_nodes(func: relax.Function, nodes: Any, tensors: dict) -> dict[str, str]:
    """{binding name: ONNX node name} for :func:`onnx_to_relax_with_names`."""
    bindings = [
        b for block in func.body.blocks for b in block.bindings if isinstance(b, relax.VarBinding)
    ]
    by_value = {b.value: b for b in bindings}
    by_var = {b.var: b for b in bindings}
    owner: dict[relax.Var, str] = {}
    outputs: list[tuple[relax.VarBinding, str]] = []
    for node in nodes:
        label = node.name or f"{node.op_type}({node.output[0] if node.output else ''})"
        for tensor in node.output:
            expr = tensors.get(tensor)
            if not isinstance(expr, relax.Expr):
                continue
            binding = by_var.get(expr) if isinstance(expr, relax.Var) else by_value.get(expr)
            if binding is not None and binding.var not in owner:
                owner[binding.var] = label
                outputs.append((binding, label))
    # The bindings a node's converter emitted before its output: reached from that output
    # through bindings no node owns.
    for binding, label in outputs:
        pending = [binding]
        while pending:
            current = pending.pop()
            for var in _vars_read(current.value):
                inner = by_var.get(var)
                if inner is not None and var not in owner:
                    owner[var] = label
                    pending.append(inner)
    return {var.name: label for var, label in owner.items()}


def _load_exported_program(path: Path) -> tvm.IRModule:
    try:
        import torch
    except ImportError as error:
        raise ModelLoadError(
            f"{path}: torch.export programs need torch, an optional extra "
            f"(pip install 'tvm-nnapi[models]', or tox -e models): {error}"
        ) from error
    try:
        exported = torch.export.load(str(path))
    except Exception as error:
        raise ModelLoadError(
            f"{path}: not a torch.export program (save one with torch.export.save): {error}"
        ) from error
    return exported_program_to_relax(exported)


def exported_program_to_relax(exported: Any) -> tvm.IRModule:
    """Import a ``torch.export.ExportedProgram`` with TVM's PyTorch frontend
    (``from_exported_program``), weights as constants, inference batch norms folded into the
    convolutions before them (what ``.pt2`` files load as)."""
    from ..models.torchvision_models import fold_batch_norm_into_conv
    from .pt2e import from_exported_program

    # (with converters of the PT2E quantize / dequantize operators, tools/pt2e.py)
    mod = from_exported_program(exported)
    # Parameters become constants; fold inference batch norms as an inference pipeline would.
    return fold_batch_norm_into_conv(mod)


def _load_python(path: Path) -> tvm.IRModule:
    # A real, registered module: TVMScript looks its source up through sys.modules.
    name = f"tvm_nnapi_user_model_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelLoadError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    namespace = vars(module)
    if "get_model" in namespace:
        mod = namespace["get_model"]()
    elif "mod" in namespace:
        mod = namespace["mod"]
    else:
        raise ModelLoadError(f"{path}: defines neither `mod` nor `get_model()`")
    if not isinstance(mod, tvm.IRModule):
        raise ModelLoadError(f"{path}: the model is a {type(mod).__name__}, not an IRModule")
    return mod


def _load_tvmscript(path: Path) -> tvm.IRModule:
    mod = tvm.script.from_source(path.read_text())
    if not isinstance(mod, tvm.IRModule):
        raise ModelLoadError(f"{path}: the TVMScript defines a {type(mod).__name__}, not a module")
    return mod


__all__ = [
    "CNN_MODELS",
    "ModelLoadError",
    "ModelSource",
    "bind_shapes",
    "builtin_model_names",
    "exported_program_to_relax",
    "load_model_source",
    "model_format",
    "onnx_to_relax",
    "onnx_to_relax_with_names",
    "parse_llm_format",
    "parse_llm_spec",
    "parse_shapes",
]
