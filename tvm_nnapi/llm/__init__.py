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

from .._lazy import lazy_attributes

#: Public names and the module that defines each (imported on first use, so that importing
#: ``tvm_nnapi.llm.config`` needs no TVM).
_LAZY = {
    "CONFIGS": ".config",
    "LLAMA2_7B": ".config",
    "MISTRAL_7B": ".config",
    "QWEN1_5_7B": ".config",
    "QWEN2_7B": ".config",
    "TINY": ".config",
    "TINY_QWEN": ".config",
    "TINYLLAMA_1_1B": ".config",
    "LlamaConfig": ".config",
    "get_config": ".config",
    "NNAPIDispatch": ".dispatch",
    "OffloadReport": ".dispatch",
    "attention_flops": ".dispatch",
    "bind_weights": ".dispatch",
    "build_llm": ".dispatch",
    "offload_report": ".dispatch",
    "build_engine": ".engine",
    "GenerationResult": ".generate",
    "LlamaEngine": ".generate",
    "SamplingConfig": ".generate",
    "generate_text": ".generate",
    "load_tokenizer": ".generate",
    "sample_token": ".generate",
    "ENTRY_FUNCTIONS": ".model",
    "LlamaForCausalLM": ".model",
    "export_model": ".model",
    "SafetensorsCheckpoint": ".weights",
    "WeightError": ".weights",
    "hf_sources": ".weights",
    "load_safetensors": ".weights",
    "param_specs": ".weights",
    "random_weights": ".weights",
    "save_safetensors": ".weights",
    "to_hf_tensors": ".weights",
}


__getattr__ = lazy_attributes(globals(), _LAZY)


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
    "build_engine",
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
