# SPDX-License-Identifier: Apache-2.0
"""What the tvm-nnapi commands print, run as a user runs them (a fresh process): the estimate's
per-call breakdown and why NNAPI loses, the demo's refusals and profile, packed functions
named in refusals, and LLM builds without TVM's "Fast mode" warning."""

from __future__ import annotations

import json
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


def test_demo_shows_a_refusal_the_profile_it_runs_on_and_why():
    completed = _cli("demo")
    out = completed.stdout
    assert "kept on host" in out and "relax.cumsum" in out and "no NNAPI pattern" in out
    assert "Run on the mock NNAPI (profile reference)" in out
    assert "Modelled on the snapdragon-8-gen-2 profile" in out
    assert "NNAPI is slower here (modelled)" in out
    assert "OK: results match" in out


def test_packed_call_refusals_name_the_packed_function():
    data = json.loads(_cli("explain", "llm:tiny-llama", "--json").stdout)
    (refusal, *_) = data["explain"]["refusals"]
    assert refusal["operator"] == "relax.call_dps_packed"
    assert "vm.builtin.attention_kv_cache_attention_with_fused_qkv" in refusal["reason"]


def test_llm_build_does_not_print_the_fast_mode_warning():
    completed = _cli("run", "llm:tiny-llama", "--shapes", "seq_len=4", "--trace", "-")
    assert "Fast mode segfaults" not in completed.stderr
    assert "results match" in completed.stdout
