# SPDX-License-Identifier: Apache-2.0
"""What the tvm-nnapi commands print, run as a user runs them (a fresh process): the estimate's
per-call breakdown and why NNAPI loses, the demo's refusals and profile, packed functions
named in refusals, and LLM builds without TVM's "Fast mode" warning."""

from __future__ import annotations

import json
import re
import subprocess

from .cli_runner import run_cli


def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, check=True)


def test_estimate_table_breaks_each_call_down_and_says_why_nnapi_loses():
    text = _cli("estimate", "residual", "--profile", "tensor-g2").stdout
    header = next(line for line in text.splitlines() if "subgraph" in line and "driver" in line)
    for column in ("compute", "set-up", "transfers", "driver", "NNAPI / call", "host / call"):
        assert column in header
    (why,) = [line for line in text.splitlines() if line.startswith("NNAPI is slower here")]
    assert "driver overhead is" in why and "(modelled)" in why


def test_why_line_is_absent_when_nnapi_wins():
    from tvm_nnapi.tools.estimate import why_nnapi_loses

    row = {"calls": 2, "modelled_nnapi_us": 10.0, "modelled_host_us": 50.0}
    winning = {
        "subgraphs": [row],
        "totals": {"modelled_nnapi_program_us": 20.0, "modelled_host_program_us": 100.0},
    }
    assert why_nnapi_loses(winning) is None
    losing = {
        "subgraphs": [{**row, "modelled_host_us": 1.0}],
        "totals": {
            "modelled_nnapi_program_us": 20.0,
            "modelled_host_program_us": 2.0,
            "modelled_transfer_us": 12.0,
            "modelled_driver_overhead_us": 4.0,
        },
    }
    reason = why_nnapi_loses(losing)
    assert reason is not None and "host<->device transfers is 12.0 µs of the 20.0 µs" in reason


def test_demo_shows_where_each_part_runs_the_refusal_and_measured_times():
    # The demo's whole flow as a user at an 80-column terminal sees it, on the model with an
    # operator NNAPI cannot take (the default model's llvm build alone takes longer than this).
    completed = run_cli("demo", "--model", "residual", columns=80, check=True)
    out = completed.stdout
    lines = out.splitlines()
    # What runs where, on which device of the profile; and the run's devices from the traces.
    assert "NNAPI subgraph main_nnapi_0" in out and "NNAPI: qti-gpu" in out
    assert "host" in out and "CPU: TVM llvm" in out
    assert "NNAPI devices that ran operations (mock traces): qti-gpu" in out
    assert "Run on the mock NNAPI (profile snapdragon-8-gen-2)" in out
    # The refusal with its reason; what the cost strategy decides, labelled modelled.
    assert "relax.cumsum(...): unsupported operator: no NNAPI pattern" in out
    assert "Modelled on snapdragon-8-gen-2 (cost model, not measured" in out
    assert "NNAPI is slower here (modelled)" in out
    assert "--partition all: 4 operators on NNAPI in 2 subgraphs" in out
    assert "--partition cost: 0 operators on NNAPI" in out
    assert "cost: kept on the host (modelled on snapdragon-8-gen-2)" in out
    assert "OK: results match the host llvm build" in out
    # Measured times in a unit that shows them; one spelling of microseconds.
    pattern = r"(NNAPI|llvm) call.*: [0-9.]+ [µm]?s$"
    measured = [line for line in lines if re.search(pattern, line)]
    assert len(measured) == 3, out
    assert "0.000 s" not in out and not re.search(r"\d us\b", out)
    # Nothing wider than the terminal, and no path to fold.
    assert max(len(line) for line in lines) <= 80
    assert "site-packages" not in out and "libneuralnetworks" not in out


def test_the_default_demo_model_and_profile_make_offload_pay():
    # The default demo (MobileNetV2 224x224 on snapdragon-8-gen-2), rendered as the demo renders
    # its estimate: a modelled speedup above 1 on the GPU of the profile.
    import argparse
    import io

    from rich.console import Console

    from tvm_nnapi.commands.demo import _modelled, _options, _print_modelled, register
    from tvm_nnapi.tools.sources import load_model_source

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["demo"])
    source = load_model_source(args.model, batch=args.batch)
    document = _modelled(args, source, _options(args, "all", {}))
    console = Console(file=io.StringIO(), width=80)
    _print_modelled(console, args.profile, document)
    text = console.file.getvalue()
    (line,) = [line for line in text.splitlines() if "modelled speedup of offloading" in line]
    assert float(re.search(r"(\d+\.\d+)x", line).group(1)) > 2 and "(NNAPI pays)" in line
    assert "modelled (NNAPI on qti-gpu)" in text and "NNAPI is slower" not in text


def test_packed_call_refusals_name_the_packed_function():
    data = json.loads(_cli("explain", "llm:tiny-llama", "--json").stdout)
    (refusal, *_) = data["explain"]["refusals"]
    assert refusal["operator"] == "relax.call_dps_packed"
    assert "vm.builtin.attention_kv_cache_attention_with_fused_qkv" in refusal["reason"]


def test_llm_build_does_not_print_the_fast_mode_warning():
    completed = _cli("run", "llm:tiny-llama", "--shapes", "seq_len=4", "--trace", "-")
    assert "Fast mode segfaults" not in completed.stderr
    assert "results match" in completed.stdout
