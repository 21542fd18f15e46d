# SPDX-License-Identifier: Apache-2.0
"""``tvm-nnapi llm generate`` and ``tvm-nnapi llm bench`` (docs/llm.md).

``generate`` builds a Llama-family model (prefill offloaded to NNAPI, or the pure host build),
loads safetensors weights or makes random ones, and streams generated text or token ids.
``bench`` measures the prefill and decode time of the NNAPI-offloaded build next to the host
build of a small configuration (and, with ``--resident-weights``, of the build with its weights
bound as NNAPI constants), and prints the MODELLED estimate of the same configuration on a
phone profile. Both run where ``--target`` says: this process (the mock NNAPI on a host), a TVM
RPC server, or a phone (the program built for it, its KV cache and weights there, the steps
driven from here).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

import numpy as np

from ..errors import UsageError
from .common import add_target_argument, open_command_target


def register(subparsers: Any) -> None:
    """Add ``llm`` (with ``generate`` and ``bench``) to the ``tvm-nnapi`` subcommands."""
    parser = subparsers.add_parser(
        "llm",
        help="LLMs: generate text or benchmark the NNAPI-offloaded build",
        description="Llama-family LLMs with their prefill offloaded to NNAPI (docs/llm.md).",
    )
    commands = parser.add_subparsers(dest="llm_command", required=True, metavar="COMMAND")

    generate = commands.add_parser(
        "generate",
        help="generate text (or token ids) with the NNAPI-offloaded or the host build",
        description=cmd_generate.__doc__,
    )
    _model_arguments(generate)
    prompt = generate.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--prompt", help="prompt text (needs --tokenizer)")
    prompt.add_argument("--tokens", help="prompt as comma-separated token ids, e.g. 1,15,27")
    generate.add_argument("--tokenizer", help="a tokenizer.json file (or a directory with one)")
    generate.add_argument(
        "--weights",
        help="an MLC weight directory (tensor-cache.json, as `llm convert-weight` writes), or "
        "a .safetensors file, several comma-separated, or a directory (Hugging Face names, "
        "quantized when --quantization says); default: random weights (--seed)",
    )
    generate.add_argument("--max-new-tokens", type=int, default=16, help="default %(default)s")
    generate.add_argument(
        "--temperature", type=float, default=0.0, help="0 (default) is greedy decoding"
    )
    generate.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling threshold")
    generate.add_argument("--seed", type=int, default=0, help="sampling and random-weight seed")
    generate.add_argument(
        "--stop",
        action="append",
        default=[],
        help="a stop token (id, or token string with --tokenizer); repeatable",
    )
    placement = generate.add_mutually_exclusive_group()
    placement.add_argument(
        "--nnapi",
        dest="nnapi",
        action="store_true",
        default=True,
        help="prefill on NNAPI (default)",
    )
    placement.add_argument(
        "--host", dest="nnapi", action="store_false", help="the pure host (llvm) build"
    )
    weight_paths = generate.add_mutually_exclusive_group()
    weight_paths.add_argument(
        "--resident-weights",
        action="store_true",
        help="bind the weights as NNAPI constants of the prefill subgraphs (given to NNAPI once, "
        "at compilation) instead of passing them at every call",
    )
    weight_paths.add_argument(
        "--int8-weights",
        action="store_true",
        help="the int8 weight path (W8A8): the weights' float values requantized to int8 per "
        "output channel, activations uint8 with static scales from a calibration run on the "
        "host float model, prefill's projections on NNAPI as quantized CONV_2D (with --host: "
        "the host build of the same int8 module); docs/llm.md",
    )
    generate.add_argument("--json", action="store_true", help="print the result as JSON")
    add_target_argument(generate)
    generate.set_defaults(handler=cmd_generate)

    bench = commands.add_parser(
        "bench",
        help="measured host time of the NNAPI-offloaded vs host build (mock), plus the modelled "
        "estimate on a phone profile",
        description=cmd_bench.__doc__,
    )
    _model_arguments(bench, default_model="tiny-llama")
    bench.add_argument("--prompt-length", type=int, default=32, help="default %(default)s")
    bench.add_argument(
        "--decode-tokens", type=int, default=8, help="decode steps timed (default %(default)s)"
    )
    bench.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="measured rounds; the builds take turns in each (median per build)",
    )
    bench.add_argument(
        "--profile",
        default="snapdragon-8-gen-2",
        help="device profile of the modelled estimate (default %(default)s)",
    )
    bench.add_argument(
        "--estimate-model",
        help="configuration to estimate (default: the benchmarked one); a full-size one such as "
        "llama-2-7b is estimated from its shapes, without weights",
    )
    bench.add_argument(
        "--resident-weights",
        action="store_true",
        help="also measure the NNAPI build with its weights bound as NNAPI constants "
        "(nnapi-resident) and model that option too",
    )
    bench.add_argument(
        "--int8-weights",
        action="store_true",
        help="also measure the build on the int8 weight path (nnapi-int8: int8 weights, static "
        "activation scales from a calibration run; docs/llm.md) and model it from its graphs",
    )
    bench.add_argument("--json", action="store_true", help="print the result as JSON")
    add_target_argument(bench)
    bench.set_defaults(handler=cmd_bench)

    convert = commands.add_parser(
        "convert-weight",
        help="write a model's weights as an MLC weight directory (tensor cache), quantized",
        description=cmd_convert_weight.__doc__,
    )
    _model_arguments(convert)
    convert.add_argument(
        "--weights",
        help="Hugging Face safetensors (a file, several comma-separated, or a directory) to "
        "convert; default: random weights (--seed)",
    )
    convert.add_argument("--seed", type=int, default=0, help="random-weight seed (default 0)")
    convert.add_argument(
        "--output", "-o", required=True, metavar="DIR", help="the MLC weight directory to write"
    )
    convert.set_defaults(handler=cmd_convert_weight)


def _model_arguments(parser: argparse.ArgumentParser, default_model: str = "tiny-llama") -> None:
    from ..llm.config import CONFIGS
    from ..llm.quantization import QUANTIZATIONS

    parser.add_argument(
        "--model",
        default=default_model,
        help=f"a configuration ({', '.join(sorted(CONFIGS))}; default %(default)s)",
    )
    parser.add_argument("--config", help="a Hugging Face config.json (overrides --model)")
    parser.add_argument(
        "--dtype",
        choices=("float32", "float16"),
        help="float type of an unquantized model (default float32; same as --quantization "
        "q0f32/q0f16)",
    )
    parser.add_argument(
        "--quantization",
        choices=sorted(QUANTIZATIONS),
        help="MLC-LLM weight format: q4f16_1/q4f32_1 (4-bit weights, one scale per 32, "
        "dequantized on the host at every call, or once at load with --resident-weights) or "
        "q0f16/q0f32 (unquantized); docs/llm.md",
    )
    parser.add_argument(
        "--relax-fp16",
        action="store_true",
        help="let NNAPI compute the float32 prefill in float16 "
        "(ANeuralNetworksModel_relaxComputationFloat32toFloat16; docs/runtime.md)",
    )


def _partition_options(args: argparse.Namespace):
    """PartitionOptions of the NNAPI build (None: the defaults)."""
    from ..compiler.patterns import PartitionOptions

    return PartitionOptions(relax_fp32_to_fp16=True) if args.relax_fp16 else None


def _weight_format(args: argparse.Namespace) -> None:
    """Resolve --dtype and --quantization into both: ``args.dtype`` the model's float type,
    ``args.quantization`` the MLC weight format's name."""
    from ..llm.quantization import get_quantization

    if args.quantization is None:
        args.dtype = args.dtype or "float32"
        args.quantization = "q0f16" if args.dtype == "float16" else "q0f32"
        return
    model_dtype = get_quantization(args.quantization).model_dtype
    if args.dtype is not None and args.dtype != model_dtype:
        raise UsageError(
            f"--dtype {args.dtype} contradicts --quantization {args.quantization} (whose float "
            f"type is {model_dtype}); give one of them"
        )
    args.dtype = model_dtype


def _config(args: argparse.Namespace):
    from ..llm.config import LlamaConfig, get_config

    _weight_format(args)

    try:
        if args.config:
            return LlamaConfig.from_hf_config(args.config)
        return get_config(args.model)
    except ValueError as error:
        option = f"--config {args.config}" if args.config else f"--model {args.model}"
        raise UsageError(f"{option}: {error}") from error


def _check_memory(config, quantization: str, copies: int = 1) -> None:
    """Refuse models whose weights (`copies` builds of them at once) cannot fit in this
    machine's memory (use the estimate)."""
    from ..llm.quantization import get_quantization

    q = get_quantization(quantization)
    label = q.name if q.quantized else q.model_dtype
    need = int(copies * config.parameter_count() * q.bytes_per_weight())
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return
    if need > 0.8 * physical:
        at_once = f" ({copies} builds at once)" if copies > 1 else ""
        raise UsageError(
            f"{config.name} needs {need / 2**30:.1f} GiB of {label} weights{at_once}, "
            f"more than "
            f"this machine's {physical / 2**30:.1f} GiB allows; use a smaller configuration, or "
            f"'tvm-nnapi llm bench --estimate-model {config.name}' for its modelled latency"
        )


def _build_engine(*args: Any, **kwargs: Any) -> Any:
    """:func:`tvm_nnapi.llm.build_engine` (imported when a command needs it: TVM)."""
    from ..llm import build_engine

    return build_engine(*args, **kwargs)


def _weight_path(resident: bool, int8: bool) -> str:
    """The engine's weight path (:data:`tvm_nnapi.llm.engine.WEIGHT_PATHS`) of the options."""
    return "int8" if int8 else "resident" if resident else "input"


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_generate(args: argparse.Namespace) -> int:
    """Generate with a Llama-family model: prefill on NNAPI or everything on TVM's host code,
    where --target says (this process with the mock NNAPI, a TVM RPC server, a phone). Text is
    streamed as it is generated."""
    from ..llm.generate import SamplingConfig, load_tokenizer

    config = _config(args)
    if args.prompt is not None and not args.tokenizer:
        raise UsageError("--prompt needs --tokenizer (or give --tokens)")
    if args.max_new_tokens < 1:
        raise UsageError("--max-new-tokens must be at least 1")
    try:
        sampling = SamplingConfig(args.temperature, args.top_p, args.seed)
    except ValueError as error:
        raise UsageError(f"{error}") from None
    tokenizer = load_tokenizer(args.tokenizer) if args.tokenizer else None
    stops: list[int | str] = []
    for stop in args.stop:
        stops.append(int(stop) if stop.lstrip("-").isdigit() or tokenizer is None else stop)
    if args.resident_weights and not args.nnapi:
        raise UsageError("--resident-weights needs the NNAPI build (not --host)")
    if args.relax_fp16 and not args.nnapi:
        raise UsageError("--relax-fp16 needs the NNAPI build (not --host)")
    _check_memory(config, args.quantization)
    where = "prefill on NNAPI" if args.nnapi else "host only"
    if args.resident_weights:
        where += ", weights resident"
    if args.int8_weights:
        where += ", int8 weight path (W8A8)"
    if args.relax_fp16:
        where += ", relaxed float16"
    target = None if args.target == "mock" else open_command_target(args)
    try:
        return _generate(args, config, sampling, tokenizer, stops, where, target)
    finally:
        if target is not None:
            target.close()


def _generate(args, config, sampling, tokenizer, stops, where: str, target: Any) -> int:
    from ..llm.generate import generate_text
    from ..llm.weights import WeightError

    place = "this host" if target is None else target.describe()
    _progress(f"building {config.name} ({args.quantization}, {where}) for {place}...")
    start = time.perf_counter()
    try:
        engine = _build_engine(
            config,
            args.dtype,
            args.nnapi,
            args.weights,
            args.seed,
            args.resident_weights,
            _partition_options(args),
            target=target,
            quantization=args.quantization,
            weight_path=_weight_path(args.resident_weights, args.int8_weights),
        )
    except WeightError as error:
        raise UsageError(f"{error}") from None
    _progress(f"built in {time.perf_counter() - start:.1f} s")
    from ..llm.int8 import format_projection_rows, projection_report

    weight_path = _weight_path(args.resident_weights, args.int8_weights)
    if args.nnapi and not args.json:
        for line in format_projection_rows(config, weight_path):
            _progress(line)
    start = time.perf_counter()
    text: str | None
    if tokenizer is not None and args.prompt is not None:
        stream = None if args.json else (lambda piece: print(piece, end="", flush=True))
        try:
            text, result = generate_text(
                engine, tokenizer, args.prompt, args.max_new_tokens, sampling, stops, stream
            )
        except ValueError as error:
            raise UsageError(f"{error}") from None
    else:
        try:
            prompt = [int(t) for t in args.tokens.split(",") if t.strip()]
        except ValueError:
            raise UsageError(f"--tokens must be comma-separated integers: {args.tokens}") from None
        stop_ids = []
        for stop in stops:
            if isinstance(stop, str):
                token = tokenizer.token_to_id(stop) if tokenizer else None
                if token is None:
                    raise UsageError(f"stop token {stop!r} is not in the vocabulary")
                stop = token
            stop_ids.append(int(stop))
        stream = None if args.json else (lambda token: print(token, end=" ", flush=True))
        try:
            result = engine.generate(prompt, args.max_new_tokens, sampling, stop_ids, stream)
        except ValueError as error:
            raise UsageError(f"{error}") from None
        text = tokenizer.decode(result.tokens) if tokenizer else None
    seconds = time.perf_counter() - start
    stats = engine.nnapi_stats()
    if args.json:
        print(
            json.dumps(
                {
                    "model": config.name,
                    "dtype": args.dtype,
                    "quantization": args.quantization,
                    "placement": "nnapi" if args.nnapi else "host",
                    "weights": weight_path,
                    "projections": projection_report(config, weight_path) if args.nnapi else [],
                    "relax_fp16": args.relax_fp16,
                    "target": "mock" if target is None else target.describe(),
                    "prompt_tokens": result.prompt_tokens,
                    "tokens": result.tokens,
                    "text": text,
                    "finish_reason": result.finish_reason,
                    "measured_seconds": seconds,
                    "target_stats": stats,
                }
            )
        )
    else:
        print()
        clock = "on this host" if target is None else "from this host, RPC round trips included"
        _progress(
            f"{len(result.tokens)} tokens in {seconds:.2f} s (measured {clock}), "
            f"finish: {result.finish_reason}; NNAPI ran {stats.get('nnapi_calls', 0)} subgraph "
            f"calls ({stats.get('execute_time_ns', 0) / 1e6:.1f} ms measured where it ran)"
        )
    return 0


def cmd_convert_weight(args: argparse.Namespace) -> int:
    """Write a Llama-family model's weights in an MLC-LLM weight format (--quantization) as
    MLC's weight directory: tensor-cache.json, params_shard_*.bin and mlc-chat-config.json, with
    MLC-LLM's parameter names. The source is Hugging Face safetensors (float; quantized here, one
    matrix at a time) or random weights. `llm generate --weights DIR` reads the directory."""
    from ..llm.engine import load_weights
    from ..llm.model import export_model
    from ..llm.tensor_cache import save_tensor_cache
    from ..llm.weights import WeightError

    config = _config(args)
    _check_memory(config, args.quantization)
    source = args.weights or f"random weights (seed {args.seed})"
    _progress(f"converting {config.name} from {source} to {args.quantization}...")
    _, named_params, _ = export_model(config, args.dtype, args.quantization)
    try:
        arrays = load_weights(config, args.quantization, named_params, args.weights, args.seed)
    except WeightError as error:
        raise UsageError(f"{error}") from None
    names = [name for name, _ in named_params]
    total = sum(int(np.asarray(a).nbytes) for a in arrays)
    try:
        cache = save_tensor_cache(
            args.output, list(zip(names, arrays, strict=True)), config, args.quantization
        )
    except OSError as error:
        raise UsageError(f"--output {args.output}: {error}") from None
    print(
        f"wrote {len(names)} parameters ({total / 2**20:.1f} MiB, {args.quantization}) to {cache}"
    )
    return 0


def _prefill(engine, prompt: list[int]) -> None:
    engine.reset()
    engine.prefill(prompt)


def cmd_bench(args: argparse.Namespace) -> int:
    """Benchmark a small configuration: prefill and decode time of the NNAPI-offloaded build
    and of the host build (TVM's CPU code), MEASURED side by side where --target says (on the
    mock target the NNAPI side is the mock's reference kernels, not a phone; on a phone both
    builds run there, TVM's CPU backend against NNAPI), then the MODELLED estimate on a phone
    profile (docs/experiments.md). With --resident-weights, the build with its weights bound as
    NNAPI constants is measured and modelled as well."""
    from ..experiments.llm import LlmEstimator

    config = _config(args)
    if args.prompt_length < 1 or args.decode_tokens < 1 or args.repeat < 1:
        raise UsageError("--prompt-length, --decode-tokens and --repeat must be >= 1")
    if args.prompt_length + args.decode_tokens > config.context_window_size:
        raise UsageError(
            f"{args.prompt_length} + {args.decode_tokens} tokens exceed the context "
            f"window of {config.name} ({config.context_window_size})"
        )
    builds = [("nnapi", True, "input"), ("host", False, "input")]
    if args.resident_weights:
        builds.insert(1, ("nnapi-resident", True, "resident"))
    if args.int8_weights:
        builds.insert(len(builds) - 1, ("nnapi-int8", True, "int8"))
    _check_memory(config, args.quantization, copies=len(builds))  # before the estimate's work
    from ..llm.config import get_config

    try:
        estimate_config = get_config(args.estimate_model) if args.estimate_model else config
    except ValueError as error:
        raise UsageError(f"--estimate-model {args.estimate_model}: {error}") from error
    # A modelled plan that does not fit the phone's memory is refused before any work.
    from ..tools.memory import bench_memory_report

    memory_args = (args.quantization, args.profile, args.prompt_length, args.decode_tokens)
    bench_memory_report(
        estimate_config, *memory_args, args.resident_weights, args.int8_weights
    ).refuse()
    # The target first (an unreachable one is a usage error, before any work); the loopback
    # server's mock models the same profile as the estimate.
    server_profile = args.profile if args.target == "rpc" else None
    if os.environ.get("TVM_NNAPI_RPC_SERVER"):
        server_profile = None
    target = None if args.target == "mock" else open_command_target(args, server_profile)
    try:
        # Modelled first: selecting a profile needs no NNAPI compilation alive in the process.
        _progress(f"modelled estimate of {estimate_config.name} on {args.profile}...")
        estimator = LlmEstimator(
            estimate_config, args.dtype, _partition_options(args), quantization=args.quantization
        )
        prefill_estimate = estimator.estimate("prefill", args.prompt_length, args.profile)
        decode_estimate = estimator.estimate("decode", args.prompt_length, args.profile)
        resident_estimates = {}
        if args.resident_weights:
            # A group-quantized format is dequantized once, at load: the estimator models the
            # float model of those values on NNAPI against the quantized model on the host.
            for phase in ("prefill", "decode"):
                resident_estimates[phase] = estimator.estimate(
                    phase, args.prompt_length, args.profile, weights="resident"
                )
        del estimator
        int8_estimates = {}
        if args.int8_weights:
            from ..tools.llm_int8 import Int8Estimator

            int8_estimator = Int8Estimator(estimate_config, args.dtype, _partition_options(args))
            for phase in ("prefill", "decode"):
                int8_estimates[phase] = int8_estimator.estimate(
                    phase, args.prompt_length, args.profile
                )
            del int8_estimator
        rng = np.random.default_rng(0)
        prompt = [int(t) for t in rng.integers(0, config.vocab_size, args.prompt_length)]
        measured, stats = _bench_builds(args, config, builds, prompt, target)
        where = "mock" if target is None else target.describe()
        measured_on = (
            "this host, NNAPI side on mock_nnapi (not a phone)"
            if target is None
            else f"{target.describe()}: wall clock at this host (RPC round trips included)"
        )
    finally:
        if target is not None:
            target.close()
    result = {
        "model": config.name,
        "dtype": args.dtype,
        "quantization": args.quantization,
        "relax_fp16": args.relax_fp16,
        "prompt_length": args.prompt_length,
        "target": where,
        "measured_on": measured_on,
        "measured": measured,
        "target_stats": stats,
        "measured_prefill_ratio_host_over_nnapi": measured["host"]["prefill_seconds"]
        / measured["nnapi"]["prefill_seconds"],
        "modelled": {
            "model": estimate_config.name,
            "profile": args.profile,
            "prefill": prefill_estimate.to_dict()["totals"],
            "decode": decode_estimate.to_dict()["totals"],
        },
    }
    estimates = {"prefill": prefill_estimate, "decode": decode_estimate}
    return _report_bench(args, config, result, estimates, resident_estimates, int8_estimates)


def _bench_builds(
    args: argparse.Namespace, config: Any, builds: list, prompt: list[int], target: Any
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, Any]]]:
    """Builds each of ``builds`` (label, nnapi, weight path) for ``target`` (None: this
    process), then times them taking turns; returns the medians and each build's NNAPI
    statistics."""
    engines = {}
    for label, nnapi, weight_path in builds:
        _progress(f"building {config.name} ({label})...")
        options = _partition_options(args) if nnapi else None
        engines[label] = _build_engine(
            config,
            args.dtype,
            nnapi,
            None,
            0,
            options=options,
            target=target,
            quantization=args.quantization,
            weight_path=weight_path,
        )
        _prefill(engines[label], prompt)  # warm-up: NNAPI compilation of this prompt length
    # The builds take turns, one prefill and one decode run each per round: a drift of the
    # machine's speed (other load) reaches every build alike.
    prefill_times: dict[str, list[float]] = {label: [] for label in engines}
    decode_times: dict[str, list[float]] = {label: [] for label in engines}
    for round_index in range(args.repeat):
        _progress(f"round {round_index + 1}/{args.repeat}: {', '.join(engines)}...")
        for label, engine in engines.items():
            start = time.perf_counter()
            _prefill(engine, prompt)
            prefill_times[label].append(time.perf_counter() - start)
            _prefill(engine, prompt)
            start = time.perf_counter()
            for step in range(args.decode_tokens):
                engine.decode(prompt[step % len(prompt)])
            decode_times[label].append((time.perf_counter() - start) / args.decode_tokens)
    measured = {
        label: {
            "prefill_seconds": statistics.median(prefill_times[label]),
            "decode_seconds_per_token": statistics.median(decode_times[label]),
        }
        for label in engines
    }
    return measured, {label: engine.nnapi_stats() for label, engine in engines.items()}


def _report_bench(
    args: argparse.Namespace,
    config: Any,
    result: dict[str, Any],
    estimates: dict[str, Any],
    resident_estimates: dict[str, Any],
    int8_estimates: dict[str, Any],
) -> int:
    """Prints (or, with --json, writes) the bench's result: measured, then modelled (latency
    and the peak memory of each plan)."""
    from ..llm.config import get_config
    from ..tools.memory import bench_memory_report

    measured = result["measured"]
    estimate_config = get_config(args.estimate_model) if args.estimate_model else config
    memory = bench_memory_report(
        estimate_config,
        args.quantization,
        args.profile,
        args.prompt_length,
        args.decode_tokens,
        args.resident_weights,
        args.int8_weights,
    )
    result["modelled"]["memory"] = memory.to_dict()
    if args.resident_weights:
        result["measured_prefill_ratio_nnapi_over_nnapi_resident"] = (
            measured["nnapi"]["prefill_seconds"] / measured["nnapi-resident"]["prefill_seconds"]
        )
        result["modelled_resident"] = {
            phase: est.to_dict()["totals"] for phase, est in resident_estimates.items()
        }
    from ..llm.int8 import projection_lines, projection_report

    paths = ["input", *(["resident"] if args.resident_weights else [])]
    paths += ["int8"] if args.int8_weights else []
    result["projections"] = {path: projection_report(estimate_config, path) for path in paths}
    if args.int8_weights:
        result["measured_prefill_ratio_nnapi_over_nnapi_int8"] = (
            measured["nnapi"]["prefill_seconds"] / measured["nnapi-int8"]["prefill_seconds"]
        )
        result["modelled_int8"] = {
            phase: est.to_dict()["totals"] for phase, est in int8_estimates.items()
        }
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    n = args.prompt_length
    relaxed = ", NNAPI relaxed float16" if args.relax_fp16 else ""
    print(
        f"{config.name} ({args.dtype}{relaxed}), prompt {n} tokens, "
        f"{args.decode_tokens} decode steps"
    )
    if args.target == "mock":
        print("MEASURED on this host (NNAPI side = mock_nnapi's reference kernels, not a phone;")
        print("  the NNAPI build runs decode on TVM's CPU code):")
    else:
        print(f"MEASURED on {result['measured_on']}")
        print("  (the NNAPI build runs decode on TVM's CPU code there):")
    for label in measured:
        m = measured[label]
        print(
            f"  {label:<14} prefill {m['prefill_seconds'] * 1e3:9.2f} ms   "
            f"decode {m['decode_seconds_per_token'] * 1e3:9.2f} ms/token"
        )
    print(f"  host / nnapi prefill: {result['measured_prefill_ratio_host_over_nnapi']:.2f}x")
    if args.resident_weights:
        ratio = result["measured_prefill_ratio_nnapi_over_nnapi_resident"]
        print(f"  nnapi / nnapi-resident prefill: {ratio:.2f}x")
    if args.int8_weights:
        ratio = result["measured_prefill_ratio_nnapi_over_nnapi_int8"]
        print(f"  nnapi / nnapi-int8 prefill: {ratio:.2f}x")
    print(f"MODELLED on {args.profile} ({result['modelled']['model']}; cost model, not measured):")
    print("  (decode offloaded too, to show what NNAPI would gain; the build keeps it on the host)")
    for label, est in estimates.items():
        print(
            f"  {label:<7} NNAPI-offloaded {est.modelled_nnapi_program_us / 1e3:10.2f} ms   "
            f"all-host {est.modelled_host_program_us / 1e3:10.2f} ms   "
            f"speedup {est.modelled_speedup:.2f}x"
        )
    for label, est in resident_estimates.items():
        print(
            f"  {label:<7} weights resident {est.modelled_nnapi_program_us / 1e3:9.2f} ms   "
            f"all-host {est.modelled_host_program_us / 1e3:10.2f} ms   "
            f"speedup {est.modelled_speedup:.2f}x"
        )
    for label, est in int8_estimates.items():
        print(
            f"  {label:<7} int8 weight path {est.modelled_nnapi_program_us / 1e3:9.2f} ms   "
            f"all-host int8 {est.modelled_host_program_us / 1e3:7.2f} ms   "
            f"speedup {est.modelled_speedup:.2f}x"
        )
    for line in memory.format_lines():
        print(line)
    for path, rows in result["projections"].items():
        for line in projection_lines(f"projections of prefill, weights {path}:", rows):
            print(line)
    return 0
