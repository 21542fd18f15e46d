# SPDX-License-Identifier: Apache-2.0
"""LLM integration: an MLC-LLM-style Llama-family decoder with its prefill offloaded to NNAPI.

from tvm_nnapi import llm
mod, named_params, _ = llm.export_model(llm.TINY)            # embed/prefill/decode/KV cache
weights = llm.random_weights(llm.param_specs(named_params))   # or llm.load_safetensors(...)
executable = llm.build_llm(mod, entry_functions=["prefill"])  # prefill on NNAPI
# or with the weights bound as NNAPI constants of the prefill subgraphs:
# executable = llm.build_llm(mod, ["prefill"], resident_weights=weights)
engine = llm.LlamaEngine(executable, llm.TINY, weights)
print(engine.generate([1, 2, 3], max_new_tokens=8).tokens)
print(llm.offload_report(mod, llm.TINY, seq_len=128).format())  # what prefill offloads
"""

from __future__ import annotations

from .config import (
    CONFIGS,
    LLAMA2_7B,
    MISTRAL_7B,
    QWEN1_5_7B,
    QWEN2_7B,
    TINY,
    TINY_QWEN,
    TINYLLAMA_1_1B,
    LlamaConfig,
    get_config,
)
from .dispatch import (
    NNAPIDispatch,
    OffloadReport,
    attention_flops,
    bind_weights,
    build_llm,
    offload_report,
)
from .generate import (
    GenerationResult,
    LlamaEngine,
    SamplingConfig,
    generate_text,
    load_tokenizer,
    sample_token,
)
from .model import ENTRY_FUNCTIONS, LlamaForCausalLM, export_model
from .weights import (
    SafetensorsCheckpoint,
    WeightError,
    hf_sources,
    load_safetensors,
    param_specs,
    random_weights,
    save_safetensors,
    to_hf_tensors,
)

__all__ = [
    "CONFIGS",
    "ENTRY_FUNCTIONS",
    "LLAMA2_7B",
    "MISTRAL_7B",
    "QWEN1_5_7B",
    "QWEN2_7B",
    "TINY",
    "TINYLLAMA_1_1B",
    "TINY_QWEN",
    "GenerationResult",
    "LlamaConfig",
    "LlamaEngine",
    "LlamaForCausalLM",
    "NNAPIDispatch",
    "OffloadReport",
    "SafetensorsCheckpoint",
    "SamplingConfig",
    "WeightError",
    "attention_flops",
    "bind_weights",
    "build_llm",
    "export_model",
    "generate_text",
    "get_config",
    "hf_sources",
    "load_safetensors",
    "load_tokenizer",
    "offload_report",
    "param_specs",
    "random_weights",
    "sample_token",
    "save_safetensors",
    "to_hf_tensors",
]
