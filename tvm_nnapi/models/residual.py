# SPDX-License-Identifier: Apache-2.0
"""A tiny residual network of elementwise layers with one host-only operator.

It mixes operators NNAPI gets with one it has no operation for (``cumsum``), so it shows two
NNAPI subgraphs, a host operator between them and the refusal reason.
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax


def residual_model(features: int = 16, seed: int = 0) -> tuple[tvm.IRModule, dict[str, object]]:
    """Returns ``(module, info)``; the entry function is ``main(x: [batch, features])``."""
    rng = np.random.default_rng(seed)
    scale = rng.uniform(0.5, 1.5, features).astype(np.float32)
    shift = rng.uniform(-0.5, 0.5, features).astype(np.float32)
    gain = rng.uniform(0.1, 0.3, features).astype(np.float32)
    batch = tvm.tirx.Var("batch", "int64")
    builder = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([batch, features], "float32"))
    with builder.function("main", [x]):
        with builder.dataflow():
            h = builder.emit(relax.op.multiply(x, relax.const(scale)))
            h = builder.emit(relax.op.add(h, relax.const(shift)))
            e = builder.emit(relax.op.cumsum(h, axis=1))
            g = builder.emit(relax.op.multiply(e, relax.const(gain)))
            out = builder.emit_output(relax.op.subtract(g, x))
        builder.emit_func_output(out)
    info: dict[str, object] = {
        "entry": "main",
        "input_shape": ("batch", features),
        "dtype": "float32",
    }
    return builder.get(), info
