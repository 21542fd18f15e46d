# SPDX-License-Identifier: Apache-2.0
"""The host work of an LLM's parts the estimate cannot see into: the KV-cache attention, an
extern call that runs on the host in both builds (docs/cost-model.md)."""

from __future__ import annotations

from collections.abc import Callable

import tvm
from tvm import relax

from ..llm.config import LlamaConfig
from ..llm.dispatch import attention_flops
from .host_model import HostWork

__all__ = ["attention_work"]


def attention_work(
    config: LlamaConfig, dtype: str, seq_len: int, history: int
) -> Callable[[relax.Call], HostWork]:
    """Work of one layer's KV-cache attention call (rotary embedding, cache append, causal
    attention of ``seq_len`` new tokens after ``history`` cached ones), on the host in both
    builds: FLOPs from :func:`attention_flops`; bytes of q/k/v in, the output, the cache read
    (``history + seq_len`` positions of k and v) and the cache write."""
    element = tvm.runtime.DataType(dtype).bits // 8
    d = config.head_dim
    h_q, h_kv = config.num_attention_heads, config.num_key_value_heads
    bytes_ = element * (
        seq_len * (h_q + 2 * h_kv) * d  # fused qkv in
        + seq_len * h_q * d  # attention output
        + (history + seq_len) * 2 * h_kv * d  # k and v read from the cache
        + seq_len * 2 * h_kv * d  # k and v appended
    )
    work = HostWork(
        float(attention_flops(config, seq_len, history)),
        float(bytes_),
        "float16" if dtype == "float16" else "float32",
        "matmul",
    )
    return lambda _call: work
