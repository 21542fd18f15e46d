# SPDX-License-Identifier: Apache-2.0
"""PT2E-quantized PyTorch programs: converters of the ``quantized_decomposed`` operators for
TVM's torch.export frontend.

A program quantized with PT2E (torchao's ``prepare_pt2e`` / ``convert_pt2e``, where PyTorch 2.14
moved it) and exported again holds ``quantized_decomposed.quantize_per_tensor``,
``dequantize_per_tensor`` and ``dequantize_per_channel`` calls, for which TVM 0.27's
``from_exported_program`` has no converter ("Unsupported function types"). :func:`convert_map`
turns them into ``relax.quantize`` / ``relax.dequantize``, the QDQ form the NNAPI lowerings take
(docs/quantization.md). A quantize whose ``[quant_min, quant_max]`` is narrower than its dtype
is followed by a clip to that range (it stays on the host).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import tvm
from tvm import relax

_DTYPES = {"torch.int8": "int8", "torch.uint8": "uint8", "torch.int16": "int16"}
_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}


def _dtype(value: Any) -> str:
    name = str(value)
    if name not in _DTYPES:
        raise ValueError(f"PT2E quantization to {name} is not supported")
    return _DTYPES[name]


def _lifted_values(program: Any) -> dict[str, np.ndarray]:
    """The values of the program's lifted buffers, parameters and constants, by the name of the
    placeholder node that reads them."""
    signature = program.graph_signature
    tensors = {**program.state_dict, **program.constants}
    values = {}
    for mapping in (
        signature.inputs_to_buffers,
        signature.inputs_to_parameters,
        signature.inputs_to_lifted_tensor_constants,
    ):
        for node_name, tensor_name in mapping.items():
            if tensor_name in tensors:
                values[node_name] = tensors[tensor_name].detach().cpu().numpy()
    return values


def _args(node: Any, importer: Any) -> list[Any]:
    return [importer.env[a] if hasattr(a, "op") and a in importer.env else a for a in node.args]


def _quantize_per_tensor(node: Any, importer: Any) -> relax.Var:
    x, scale, zero_point, quant_min, quant_max, dtype = _args(node, importer)[:6]
    dtype = _dtype(dtype)
    q = importer.block_builder.emit(
        relax.op.quantize(
            x,
            relax.const(np.float32(scale)),
            relax.const(np.array(int(zero_point), dtype=dtype)),
            axis=-1,
            out_dtype=dtype,
        )
    )
    if (int(quant_min), int(quant_max)) != _RANGES[dtype]:
        low, high = int(quant_min), int(quant_max)
        q = importer.block_builder.emit(relax.op.clip(q, low, high))
    return q


def _dequantize_per_tensor(node: Any, importer: Any) -> relax.Var:
    x, scale, zero_point, _, _, dtype = _args(node, importer)[:6]
    dtype = _dtype(dtype)
    return importer.block_builder.emit(
        relax.op.dequantize(
            x,
            relax.const(np.float32(scale)),
            relax.const(np.array(int(zero_point), dtype=dtype)),
            axis=-1,
            out_dtype="float32",
        )
    )


def _dequantize_per_channel(values: dict[str, np.ndarray]):
    def convert(node: Any, importer: Any) -> relax.Var:
        x = _args(node, importer)[0]
        scales, zero_points, axis, _, _, dtype = node.args[1:7]
        dtype = _dtype(dtype)
        constants = []
        for arg, cast in ((scales, "float32"), (zero_points, dtype)):
            name = getattr(arg, "name", None)
            if name not in values:
                what = "scales" if cast == "float32" else "zero points"
                raise ValueError(
                    f"{node.name}: the per-channel {what} must be buffers or constants of "
                    "the program"
                )
            constants.append(relax.const(values[name].astype(cast)))
        dequantize = relax.op.dequantize(x, *constants, axis=int(axis), out_dtype="float32")
        return importer.block_builder.emit(dequantize)

    return convert


def convert_map(program: Any) -> dict[str, Callable[[Any, Any], relax.Var]]:
    """The ``custom_convert_map`` of ``tvm.relax.frontend.torch.from_exported_program`` for
    ``program`` (a ``torch.export.ExportedProgram``)."""
    return {
        "quantize_per_tensor.default": _quantize_per_tensor,
        "dequantize_per_tensor.default": _dequantize_per_tensor,
        "dequantize_per_channel.default": _dequantize_per_channel(_lifted_values(program)),
    }


def from_exported_program(program: Any) -> tvm.IRModule:
    """Import a (possibly PT2E-quantized) ``torch.export`` program, parameters as constants."""
    from tvm.relax.frontend.torch import from_exported_program as import_program

    return import_program(
        program,
        keep_params_as_input=False,
        unwrap_unit_return_tuple=True,
        custom_convert_map=convert_map(program),
    )
