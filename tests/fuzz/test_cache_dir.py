# SPDX-License-Identifier: Apache-2.0
"""The runtime's NNAPI compilation cache directory under attack: corrupted, truncated, foreign,
symlinked and special files where the cache file should be, and an unsafe directory.

Every run must give the right answer; a file that is not exactly what this compilation wrote is
never trusted (a cache miss, then the file is rewritten); a symbolic link planted under the
cache name is replaced, never written through; the directory itself is created owner-only and
refused when others can write to it or when it is a link.
"""

from __future__ import annotations

import json
import os
import re
import stat

import numpy as np
import pytest
import tvm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mock_nnapi
from tvm_nnapi import runtime
from tvm_nnapi.compiler.graph_json import GraphBuilder
from tvm_nnapi.runtime._library import runtime_function

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "50"))
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
CACHE_NAME = re.compile(r"^[0-9a-f]{64}\.mock_nnapi_cache$")
create = runtime_function("tvm_nnapi.runtime.create")


def graph(offset: float = 1.0) -> tuple[str, bytes]:
    builder = GraphBuilder("subgraph0")
    x = builder.add_input("float32", [2, 4])
    c = builder.add_constant(np.full(4, offset, np.float32))
    act = builder.add_scalar("INT32", 0)
    out = builder.add_tensor("float32", [2, 4])
    builder.add_operation("ADD", [x, c, act], [out], "relax.add")
    builder.outputs.append(out)
    return json.dumps(builder.to_dict()), bytes(builder.constants)


def run_fresh(offset: float = 1.0) -> dict[str, int]:
    """A new module (so no in-memory cache): compile with the directory, run, check the result.
    Returns the mock's cache hits and misses of this run."""
    text, constants = graph(offset)
    module = create("subgraph0", text, constants)
    before = mock_nnapi.control.compilation_cache_counters()
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    out = tvm.runtime.tensor(np.zeros((2, 4), np.float32))
    module["subgraph0"](tvm.runtime.tensor(x), out)
    np.testing.assert_array_equal(out.numpy(), x + offset)
    after = mock_nnapi.control.compilation_cache_counters()
    return {key: after[key] - before[key] for key in after}


@pytest.fixture
def cache_dir(tmp_path):
    saved = runtime.options_in_effect()
    directory = tmp_path / "nnapi-cache"
    runtime.configure(cache_dir=str(directory))
    yield directory
    runtime.configure(**saved)


def only_cache_file(directory) -> str:
    names = os.listdir(directory)
    assert len(names) == 1 and CACHE_NAME.match(names[0]), names
    return names[0]


def test_directory_is_created_owner_only_and_holds_only_token_named_files(cache_dir):
    assert run_fresh() == {"hits": 0, "misses": 1, "discarded": 0}
    assert stat.S_IMODE(os.lstat(cache_dir).st_mode) == 0o700
    first = only_cache_file(cache_dir)
    assert run_fresh() == {"hits": 1, "misses": 0, "discarded": 0}
    run_fresh(offset=2.0)  # other constants: another token, another file
    names = sorted(os.listdir(cache_dir))
    assert len(names) == 2 and all(CACHE_NAME.match(n) for n in names) and first in names


def test_group_or_world_writable_directory_is_refused(cache_dir):
    cache_dir.mkdir(mode=0o700)
    os.chmod(cache_dir, 0o777)
    with pytest.raises(Exception, match="others can write there"):
        run_fresh()
    os.chmod(cache_dir, 0o755)  # readable by others is allowed; cache files are 0600
    assert run_fresh()["misses"] == 1
    (name,) = os.listdir(cache_dir)
    assert stat.S_IMODE(os.lstat(cache_dir / name).st_mode) == 0o600


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_directory_owned_by_another_user_is_refused(cache_dir):
    cache_dir.mkdir(mode=0o700)
    os.chown(cache_dir, 65534, 65534)
    with pytest.raises(Exception, match="is owned by user 65534"):
        run_fresh()


def test_symlinked_directory_is_refused(tmp_path):
    saved = runtime.options_in_effect()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(elsewhere)
    runtime.configure(cache_dir=str(tmp_path / "link"))
    try:
        with pytest.raises(Exception, match="symbolic links are refused"):
            run_fresh()
        assert os.listdir(elsewhere) == []
    finally:
        runtime.configure(**saved)


def test_symlink_planted_under_the_cache_name_is_never_followed(cache_dir, tmp_path):
    run_fresh()
    name = only_cache_file(cache_dir)
    os.unlink(cache_dir / name)
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    os.symlink(victim, cache_dir / name)
    assert run_fresh() == {"hits": 0, "misses": 1, "discarded": 1}  # not read through the link
    assert victim.read_bytes() == b"precious"  # not written through it
    assert not os.path.islink(cache_dir / name)  # replaced by the real cache file
    assert run_fresh() == {"hits": 1, "misses": 0, "discarded": 0}


def test_symlink_to_a_valid_cache_file_is_not_trusted(cache_dir, tmp_path):
    run_fresh()
    name = only_cache_file(cache_dir)
    stash = tmp_path / "stash"
    os.rename(cache_dir / name, stash)
    os.symlink(stash, cache_dir / name)
    assert run_fresh() == {"hits": 0, "misses": 1, "discarded": 1}


@pytest.mark.parametrize("kind", ["fifo", "directory", "empty", "foreign"])
def test_special_or_foreign_file_under_the_cache_name(cache_dir, kind):
    run_fresh(offset=5.0)  # the foreign file: a valid cache file of another graph
    foreign = cache_dir / only_cache_file(cache_dir)
    run_fresh()
    names = [n for n in os.listdir(cache_dir) if cache_dir / n != foreign]
    target = cache_dir / names[0]
    os.unlink(target)
    if kind == "fifo":
        os.mkfifo(target, 0o600)  # opening it must not hang
    elif kind == "directory":
        target.mkdir()
    elif kind == "empty":
        target.write_bytes(b"")
    else:
        os.link(foreign, target)
    assert run_fresh() == {"hits": 0, "misses": 1, "discarded": 1}


@settings(
    max_examples=2000 if PROFILE == "campaign" else EXAMPLES,
    deadline=None,
    derandomize=PROFILE != "campaign",
    suppress_health_check=list(HealthCheck),
)
@given(st.data())
def test_corrupted_or_truncated_cache_file_is_recompiled(tmp_path_factory, data):
    directory = tmp_path_factory.mktemp("cache") / "nnapi"
    saved = runtime.options_in_effect()
    runtime.configure(cache_dir=str(directory))
    try:
        run_fresh()
        path = directory / only_cache_file(directory)
        original = path.read_bytes()
        kind = data.draw(st.sampled_from(["truncate", "flip", "extend", "replace"]))
        if kind == "truncate":
            mutated = original[: data.draw(st.integers(0, len(original) - 1))]
        elif kind == "flip":
            mutated = bytearray(original)
            for _ in range(data.draw(st.integers(1, 3))):
                mutated[data.draw(st.integers(0, len(mutated) - 1))] ^= 1 << data.draw(
                    st.integers(0, 7)
                )
            mutated = bytes(mutated)
        elif kind == "extend":
            mutated = original + data.draw(st.binary(min_size=1, max_size=64))
        else:
            mutated = data.draw(st.binary(max_size=2 * len(original)))
        path.write_bytes(mutated)
        same = mutated == original
        expected = {"hits": int(same), "misses": int(not same), "discarded": int(not same)}
        assert run_fresh() == expected
        assert path.read_bytes() == original  # rewritten by the miss
    finally:
        runtime.configure(**saved)


def test_a_file_where_the_directory_should_be_is_named(cache_dir):
    cache_dir.write_bytes(b"not a directory")
    with pytest.raises(Exception) as raised:
        run_fresh()
    assert str(cache_dir) in str(raised.value)
    assert cache_dir.read_bytes() == b"not a directory"  # left alone


def test_a_fifo_inside_the_directory_is_left_alone(cache_dir):
    assert run_fresh()["misses"] == 1
    os.mkfifo(cache_dir / "unrelated.fifo", 0o600)
    assert run_fresh() == {"hits": 1, "misses": 0, "discarded": 0}
    assert stat.S_ISFIFO(os.lstat(cache_dir / "unrelated.fifo").st_mode)


SHARED_ROUNDS = """
import json, sys
import numpy as np, tvm
sys.path.insert(0, sys.argv[2])
from fuzz.test_cache_dir import run_fresh
from tvm_nnapi import runtime
runtime.configure(cache_dir=sys.argv[1])
counts = {"hits": 0, "misses": 0, "discarded": 0}
for round in range(int(sys.argv[3])):
    for offset in (1.0, 2.0, 3.0):
        for key, value in run_fresh(offset).items():
            counts[key] += value
print(json.dumps(counts))
"""


def test_four_processes_share_one_directory_over_many_rounds(tmp_path):
    """Four processes compile the same three graphs eight times each with one cache
    directory: every result right (run_fresh checks it), every file whole, no stray file,
    and each process reads what another wrote."""
    import subprocess
    import sys

    directory = tmp_path / "shared"
    tests_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", SHARED_ROUNDS, str(directory), tests_dir, "8"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["hits"] + r["misses"] == 24 for r in results), results
    assert sum(r["hits"] for r in results) >= 4 * 21  # at most the first round of each misses
    assert sum(r["discarded"] for r in results) == 0  # renames are atomic: no torn file
    names = os.listdir(directory)
    assert len(names) == 3 and all(CACHE_NAME.match(n) for n in names), names
