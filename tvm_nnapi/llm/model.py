# SPDX-License-Identifier: Apache-2.0
"""A Llama-family decoder written with ``tvm.relax.frontend.nn``, shaped like MLC-LLM's models.

Entry functions (as in MLC-LLM's ``llama_model.py``):

- ``embed(input_ids: int32[seq_len]) -> [seq_len, hidden]``
- ``prefill(input_embed: [1, seq_len, hidden], kv_cache) -> (logits f32[1, 1, vocab], kv_cache)``
  with a symbolic ``seq_len``; logits of the last position only
- ``decode(input_embed: [1, 1, hidden], kv_cache) -> (logits f32[1, 1, vocab], kv_cache)``
- ``create_paged_kv_cache(max_batch_size, max_total_seq_len, prefill_chunk_size, page_size,
  support_sliding_window) -> kv_cache``: TVM's paged KV cache with its TIR kernels (the CPU
  ones for an ``llvm`` target)

Weights are float (``q0f32``, ``q0f16``) or group-quantized as MLC-LLM does (``q4f16_1``,
``q4f32_1``; :mod:`tvm_nnapi.llm.quantization`): every linear layer and the embedding then hold
``q_weight``/``q_scale`` and dequantize them in TVM code on the host at every call, so that a
projection reaches NNAPI as a FULLY_CONNECTED whose float weight is an input.

Attention (rotary embedding of q and k, the cache append, and the attention itself) runs inside
the KV cache builtin ``vm.builtin.attention_kv_cache_attention_with_fused_qkv``; everything else
(projections, RMSNorm, SwiGLU MLP, residual adds, LM head) is plain Relax, which the NNAPI
partitioning can offload. Projections are fused as in MLC-LLM: ``qkv_proj`` (q, k, v stacked)
and ``gate_up_proj`` (gate, up stacked); :mod:`tvm_nnapi.llm.weights` maps Hugging Face names
onto them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import tvm
from tvm import relax, te, tirx
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import Tensor, op
from tvm.relax.frontend.nn.llm.kv_cache import PagedKVCache, RopeMode, TIRPagedKVCache

from .config import LlamaConfig
from .quantization import Quantization, get_quantization

if TYPE_CHECKING:
    from .int8 import Calibration

DTYPES = ("float32", "float16")
ENTRY_FUNCTIONS = ("embed", "prefill", "decode", "create_paged_kv_cache")


def _dequantize(q_weight: Tensor, q_scale: Tensor, q: Quantization, in_features: int) -> Tensor:
    """The float matrix ``[rows, in_features]`` that group-quantized ``(q_weight, q_scale)``
    stand for, computed by a TVM kernel on the host."""
    per, bits, group = q.elements_per_storage, q.bits, q.group_size

    def compute(weight: te.Tensor, scale: te.Tensor) -> te.Tensor:
        mask = tirx.const((1 << bits) - 1, q.storage_dtype)
        zero = tirx.const(q.max_int, q.model_dtype)

        def value(i: Any, j: Any) -> Any:
            shift = ((j % per) * bits).astype(q.storage_dtype)
            stored = (weight[i, j // per] >> shift) & mask
            return (stored.astype(q.model_dtype) - zero) * scale[i, j // group]

        return te.compute((weight.shape[0], in_features), value, name="dequantize")

    return op.tensor_expr_op(compute, "dequantize", [q_weight, q_scale])


class GroupQuantLinear(nn.Module):
    """``nn.Linear`` with group-quantized weights (MLC-LLM's ``q_weight``/``q_scale`` layout:
    ``[out, in]`` quantized along ``in``)."""

    def __init__(self, in_features: int, out_features: int, q: Quantization, bias: bool) -> None:
        self.in_features, self.out_features, self.q = in_features, out_features, q
        self.q_weight = nn.Parameter(
            (out_features, q.storage_columns(in_features)), q.storage_dtype
        )
        self.q_scale = nn.Parameter((out_features, q.groups(in_features)), q.model_dtype)
        self.bias = nn.Parameter((out_features,), q.model_dtype) if bias else None

    @staticmethod
    def from_linear(linear: nn.Linear, q: Quantization) -> GroupQuantLinear:
        return GroupQuantLinear(
            int(linear.in_features), int(linear.out_features), q, linear.bias is not None
        )

    def to(self, dtype: str | None = None) -> None:
        """Dtypes are fixed by the quantization: nothing to convert."""

    def forward(self, x: Tensor) -> Tensor:
        weight = _dequantize(self.q_weight, self.q_scale, self.q, self.in_features)
        y = op.matmul(x, op.permute_dims(weight))
        return y + self.bias if self.bias is not None else y


class GroupQuantEmbedding(nn.Module):
    """An embedding table ``[vocab, hidden]`` group-quantized along ``hidden``."""

    def __init__(self, vocab_size: int, hidden_size: int, q: Quantization) -> None:
        self.hidden_size, self.q = hidden_size, q
        self.q_weight = nn.Parameter((vocab_size, q.storage_columns(hidden_size)), q.storage_dtype)
        self.q_scale = nn.Parameter((vocab_size, q.groups(hidden_size)), q.model_dtype)

    def to(self, dtype: str | None = None) -> None:
        """Dtypes are fixed by the quantization: nothing to convert."""

    def rows(self, input_ids: Tensor) -> Tensor:
        """The dequantized rows of ``input_ids`` (only those rows are dequantized)."""
        bb = relax.BlockBuilder.current()
        taken = [
            Tensor(_expr=bb.emit(relax.op.take(p._expr, input_ids._expr, axis=0, mode="clip")))
            for p in (self.q_weight, self.q_scale)
        ]
        return _dequantize(taken[0], taken[1], self.q, self.hidden_size)

    def table(self) -> Tensor:
        """The whole dequantized table (the LM head of a model with tied embeddings)."""
        return _dequantize(self.q_weight, self.q_scale, self.q, self.hidden_size)


def _quantize_modules(module: nn.Module, q: Quantization) -> None:
    """Replace, in place, every ``nn.Linear`` under ``module`` by a :class:`GroupQuantLinear`
    and every ``nn.Embedding`` by a :class:`GroupQuantEmbedding` (parameter order kept)."""
    children = module.__dict__
    for name, child in list(children.items()):
        if isinstance(child, nn.Linear):
            children[name] = GroupQuantLinear.from_linear(child, q)
        elif isinstance(child, nn.Embedding):
            vocab, hidden = (int(d) for d in child.weight.shape)
            children[name] = GroupQuantEmbedding(vocab, hidden, q)
        elif isinstance(child, nn.ModuleList):
            for item in child:
                _quantize_modules(item, q)
        elif isinstance(child, nn.Module):
            _quantize_modules(child, q)


class LlamaMLP(nn.Module):
    """SwiGLU: ``down(silu(gate(x)) * up(x))`` with gate and up in one projection."""

    def __init__(self, config: LlamaConfig) -> None:
        self.intermediate_size = config.intermediate_size
        self.gate_up_proj = nn.Linear(config.hidden_size, 2 * config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        gate, up = op.split(self.gate_up_proj(x), 2, axis=-1)
        return self.down_proj(op.silu(gate) * up)


class LlamaAttention(nn.Module):
    """Grouped-query attention through the paged KV cache (which applies the rotary
    embedding)."""

    def __init__(self, config: LlamaConfig) -> None:
        self.head_dim = config.head_dim
        self.num_q_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.qkv_proj = nn.Linear(
            config.hidden_size, config.q_size + 2 * config.kv_size, bias=config.qkv_bias
        )
        self.o_proj = nn.Linear(config.q_size, config.hidden_size, bias=False)

    def forward(self, x: Tensor, kv_cache: PagedKVCache, layer_id: int) -> Tensor:
        d, h_q, h_kv = self.head_dim, self.num_q_heads, self.num_kv_heads
        b, s, _ = x.shape
        qkv = op.reshape(self.qkv_proj(x), (b, s, h_q + 2 * h_kv, d))
        out = kv_cache.attention_with_fused_qkv(layer_id, qkv, h_q, sm_scale=d**-0.5)
        return self.o_proj(op.reshape(out, (b, s, h_q * d)))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        eps = config.rms_norm_eps
        self.self_attn = LlamaAttention(config)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = nn.RMSNorm(config.hidden_size, -1, eps, bias=False)
        self.post_attention_layernorm = nn.RMSNorm(config.hidden_size, -1, eps, bias=False)

    def forward(self, x: Tensor, kv_cache: PagedKVCache, layer_id: int) -> Tensor:
        x = self.self_attn(self.input_layernorm(x), kv_cache, layer_id) + x
        return self.mlp(self.post_attention_layernorm(x)) + x


class LlamaModel(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            [LlamaDecoderLayer(config) for _ in range(config.num_hidden_layers)]
        )
        self.norm = nn.RMSNorm(config.hidden_size, -1, config.rms_norm_eps, bias=False)

    def forward(self, x: Tensor, kv_cache: PagedKVCache) -> Tensor:
        for layer_id, layer in enumerate(self.layers):
            x = layer(x, kv_cache, layer_id)
        return self.norm(x)


def _last_position(x: Tensor) -> Tensor:
    """``x[:, -1:, :]`` as a Relax strided_slice (offloadable, unlike a TE index op)."""
    seq_len = x.shape[1]
    sliced = relax.op.strided_slice(
        x._expr, axes=[1], begin=[seq_len - 1], end=[seq_len], assume_inbound=True
    )
    return Tensor(_expr=relax.BlockBuilder.current().emit(sliced, "last_position"))


class LlamaForCausalLM(nn.Module):
    """Decoder with an LM head; entry functions as in MLC-LLM (see the module docstring)."""

    def __init__(
        self,
        config: LlamaConfig,
        dtype: str = "float32",
        quantization: str | Quantization | None = None,
    ) -> None:
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
        self.config = config
        self.model = LlamaModel(config)
        if not config.tie_word_embeddings:
            self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.quantization = get_quantization(quantization) if quantization else None
        if self.quantization is not None:
            dtype = self.quantization.model_dtype
        self.dtype = dtype
        self.target = tvm.target.Target("llvm")
        # The calibration build's projections record their ranges here (int8.RangeLinear).
        self._ranges: list[Tensor] | None = None

    def get_logits(self, hidden: Tensor) -> Tensor:
        if self.config.tie_word_embeddings:
            embedding = self.model.embed_tokens
            table = (
                embedding.table()
                if isinstance(embedding, GroupQuantEmbedding)
                else embedding.weight
            )
            logits = op.matmul(hidden, op.permute_dims(table))
        else:
            logits = self.lm_head(hidden)
        return logits.astype("float32") if logits.dtype != "float32" else logits

    def embed(self, input_ids: Tensor) -> Tensor:
        # nn.Embedding's take uses TVM's "fast" mode, which reads out of bounds on a bad id (and
        # makes every build warn "Fast mode segfaults ..."). "clip" cannot; LlamaEngine.embed
        # refuses ids outside the vocabulary before they get here.
        if isinstance(self.model.embed_tokens, GroupQuantEmbedding):
            return self.model.embed_tokens.rows(input_ids)
        taken = relax.op.take(
            self.model.embed_tokens.weight._expr, input_ids._expr, axis=0, mode="clip"
        )
        return Tensor(_expr=relax.BlockBuilder.current().emit(taken, "embed"))

    def prefill(self, input_embed: Tensor, kv_cache: PagedKVCache) -> tuple[Tensor, PagedKVCache]:
        if self._ranges is not None:
            self._ranges.clear()
        hidden = self.model(input_embed, kv_cache)
        logits = self.get_logits(_last_position(hidden))
        if self._ranges is not None:
            # The calibration build: every position's projections (the LM head's of the last)
            # record their ranges, returned after the logits.
            flat = [op.reshape(logits, (self.config.vocab_size,)), *self._ranges]
            logits = op.reshape(op.concat(flat, dim=0), (1, 1, -1))
        return logits, kv_cache

    def decode(self, input_embed: Tensor, kv_cache: PagedKVCache) -> tuple[Tensor, PagedKVCache]:
        hidden = self.model(input_embed, kv_cache)
        return self.get_logits(hidden), kv_cache

    def create_paged_kv_cache(
        self,
        max_batch_size: tirx.Var,
        max_total_seq_len: tirx.Var,
        prefill_chunk_size: tirx.Var,
        page_size: tirx.Var,
        support_sliding_window: tirx.Var,
    ) -> PagedKVCache:
        c = self.config
        return TIRPagedKVCache(
            attn_kind="mha",
            max_batch_size=max_batch_size,
            max_total_seq_len=max_total_seq_len,
            prefill_chunk_size=prefill_chunk_size,
            page_size=page_size,
            support_sliding_window=support_sliding_window,
            layer_partition=relax.ShapeExpr([0, c.num_hidden_layers]),
            num_hidden_layers=c.num_hidden_layers,
            num_attention_heads=c.num_attention_heads,
            num_key_value_heads=c.num_key_value_heads,
            qk_head_dim=c.head_dim,
            v_head_dim=c.head_dim,
            mla_original_qk_head_dim=0,
            mla_original_v_head_dim=0,
            rope_mode=RopeMode.NORMAL,
            rope_scale=1,
            rope_theta=c.rope_theta,
            rope_scaling={},
            rope_ext_factors=relax.prim_value(0),
            rotary_dim=c.head_dim,
            enable_disaggregation=False,
            dtype=self.dtype,
            target=self.target,
        )

    def get_default_spec(self) -> nn.spec.ModuleSpec:
        hidden, dtype = self.config.hidden_size, self.dtype
        packed = {"param_mode": "packed", "effect_mode": "none"}
        spec: dict[str, Any] = {
            "embed": {"input_ids": nn.spec.Tensor(["seq_len"], "int32"), "$": packed},
            "prefill": {
                "input_embed": nn.spec.Tensor([1, "seq_len", hidden], dtype),
                "kv_cache": nn.spec.Object(object_type=PagedKVCache),
                "$": packed,
            },
            "decode": {
                "input_embed": nn.spec.Tensor([1, 1, hidden], dtype),
                "kv_cache": nn.spec.Object(object_type=PagedKVCache),
                "$": packed,
            },
            "create_paged_kv_cache": {
                "max_batch_size": int,
                "max_total_seq_len": int,
                "prefill_chunk_size": int,
                "page_size": int,
                "support_sliding_window": int,
                "$": {"param_mode": "none", "effect_mode": "none"},
            },
        }
        return nn.spec.ModuleSpec.from_raw(spec, self)


def export_model(
    config: LlamaConfig,
    dtype: str = "float32",
    quantization: str | Quantization | None = None,
    int8: Calibration | None = None,
    calibrate_ranges: bool = False,
) -> tuple[tvm.IRModule, list[tuple[str, nn.Parameter]], LlamaForCausalLM]:
    """Export the decoder to a Relax IRModule, with float weights in ``dtype`` or in the weight
    format ``quantization`` (whose float type then replaces ``dtype``).

    With ``int8`` (a :class:`~tvm_nnapi.llm.int8.Calibration`), the projections that
    :func:`~tvm_nnapi.llm.int8.plan_projections` puts on the int8 path are W8A8 QDQ projections
    (:class:`~tvm_nnapi.llm.int8.Int8Linear`: ``...q8_weight``, ``...q8_scale``) with the
    calibration's activation parameters; the other weights stay float. ``calibrate_ranges``
    exports the calibration build instead: float projections whose input and output ranges
    prefill returns after the logits. Both need float weights (no ``quantization``).

    Returns ``(module, named_parameters, model)``: the module's ``embed``, ``prefill`` and
    ``decode`` take the parameters packed in one tuple as their last argument, in the order of
    ``named_parameters`` (MLC-LLM's names: ``...q_weight``, ``...q_scale`` when quantized).
    """
    from . import int8 as int8_path

    model = LlamaForCausalLM(config, dtype, quantization)
    model.to(model.dtype)
    if (int8 is not None or calibrate_ranges) and model.quantization is not None:
        if model.quantization.quantized:
            raise ValueError("the int8 path takes float weights (dequantize them first)")
    if calibrate_ranges:
        model._ranges = []
        plan = int8_path.plan_projections(config)
        int8_path.replace_projections(model, config, model.dtype, None, plan, model._ranges)
    elif int8 is not None:
        plan = int8_path.plan_projections(config)
        int8_path.replace_projections(model, config, model.dtype, int8, plan)
    if model.quantization is not None and model.quantization.quantized:
        _quantize_modules(model, model.quantization)
    mod, named_params = model.export_tvm(spec=model.get_default_spec())
    return mod, named_params, model
