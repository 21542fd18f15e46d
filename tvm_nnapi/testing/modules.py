# SPDX-License-Identifier: Apache-2.0
"""Small Relax modules the tests and the benchmarks build alike."""

from __future__ import annotations

import tvm
from tvm import relax


def projection(rows: int, out_features: int, in_features: int) -> tvm.IRModule:
    """``main(x[rows, in], w[out, in]) = x @ w.T`` in float32: a linear layer's projection with
    its weight as PyTorch and the LLM exports hold it."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([rows, in_features], "float32"))
    w = relax.Var("w", relax.TensorType([out_features, in_features], "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.matmul(x, relax.op.permute_dims(w)))
        bb.emit_func_output(out)
    return bb.get()
