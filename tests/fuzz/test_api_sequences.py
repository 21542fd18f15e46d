# SPDX-License-Identifier: Apache-2.0
"""API-sequence fuzzing of the NNAPI C API (tests/fuzz/api_fuzzer.py) in child processes, so a
crash is caught and reported with the seed that reproduces it.

Budget: ``FUZZ_API_SEQUENCES`` programs (default 400) of ``FUZZ_API_CALLS`` actions (default
60) over ``FUZZ_API_SEED`` (default 0). Under ``tox -e sanitize`` the children inherit the
AddressSanitizer + UndefinedBehaviorSanitizer build, so memory errors abort them too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FUZZER = Path(__file__).with_name("api_fuzzer.py")
SEQUENCES = int(os.environ.get("FUZZ_API_SEQUENCES", "400"))
CALLS = int(os.environ.get("FUZZ_API_CALLS", "60"))
SEED = int(os.environ.get("FUZZ_API_SEED", "0"))
SHARDS = 4


@pytest.mark.parametrize("shard", range(SHARDS))
def test_random_call_sequences_never_crash_and_free_everything(shard, record_property):
    count = SEQUENCES // SHARDS
    first = SEED + shard * count
    completed = subprocess.run(
        [
            sys.executable,
            str(FUZZER),
            "--seed",
            str(first),
            "--sequences",
            str(count),
            "--calls",
            str(CALLS),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    lines = completed.stdout.strip().splitlines()
    if completed.returncode != 0:
        last_seed = next((line for line in reversed(lines) if line.startswith("sequence")), "?")
        pytest.fail(
            f"api_fuzzer exited with {completed.returncode} at {last_seed}; reproduce with "
            f"python {FUZZER} --seed <seed> --sequences 1 --calls {CALLS}\n"
            f"{completed.stderr[-4000:]}"
        )
    summary = json.loads(lines[-1].removeprefix("summary "))
    assert summary["sequences"] == count
    # The programs must reach real work, not only argument errors.
    assert summary["codes"].get("0", 0) > summary["calls"] // 10
    record_property("api_fuzz_calls", summary["calls"])
    print(f"api fuzz shard {shard}: {summary}")
