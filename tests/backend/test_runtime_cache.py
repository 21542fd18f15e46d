# SPDX-License-Identifier: Apache-2.0
"""Dynamic-shape compilation cache of the runtime module: LRU bounds, precompilation,
statistics, options and NNAPI compilation caching."""

from __future__ import annotations

import os
import pathlib
import re
import stat
import subprocess
import sys

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.script import relax as R

import mock_nnapi
import tvm_nnapi
from tvm_nnapi import runtime


@tvm.script.ir_module
class Dynamic:
    @R.function
    def main(x: R.Tensor(("seq_len", 16), "float32"), w: R.Tensor((16, 16), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.add(y, x)
            R.output(z)
        return z


@pytest.fixture
def options():
    """Restore the process-wide runtime options after the test."""
    saved = runtime.options_in_effect()
    yield runtime
    runtime.configure(**saved)


def _run(vm: relax.VirtualMachine, rows: int) -> np.ndarray:
    x = np.full((rows, 16), 0.5, np.float32)
    w = np.eye(16, dtype=np.float32)
    out = vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(w)).numpy()
    np.testing.assert_array_equal(out, x + x)
    return out


def test_lru_bound_on_entries_evicts_and_frees(options):
    options.configure(cache_max_entries=2)
    executable = tvm_nnapi.build(Dynamic)
    vm = relax.VirtualMachine(executable, tvm.cpu())
    live_before = mock_nnapi.counter("live_compilations")
    for rows in (1, 7, 64, 1):
        _run(vm, rows)
    (stats,) = runtime.stats(executable).values()
    assert stats["compilations"] == 4  # 1 was evicted by 64, then compiled again
    assert stats["evictions"] == 2
    assert stats["cached_signatures"] == 2
    assert mock_nnapi.counter("live_compilations") - live_before == 2


def test_lru_bound_on_bytes_keeps_the_latest_entry(options):
    options.configure(cache_max_bytes=1)
    executable = tvm_nnapi.build(Dynamic)
    vm = relax.VirtualMachine(executable, tvm.cpu())
    for rows in (3, 5):
        _run(vm, rows)
    (stats,) = runtime.stats(executable).values()
    assert stats["cached_signatures"] == 1
    assert stats["evictions"] == 1


def test_precompile_for_expected_lengths_then_only_cache_hits():
    executable = tvm_nnapi.build(Dynamic)
    assert runtime.precompile(executable, seq_len=[7, 64, 300]) == 3
    vm = relax.VirtualMachine(executable, tvm.cpu())
    before = mock_nnapi.counter("compilations_finished")
    for rows in (7, 64, 300, 7):
        _run(vm, rows)
    assert mock_nnapi.counter("compilations_finished") == before
    (stats,) = runtime.stats(executable).values()
    assert stats["cache_hits"] == 4 and stats["calls"] == 4 and stats["compilations"] == 3
    assert stats["compile_time_ns"] > 0


def test_precompile_names_a_missing_symbol():
    executable = tvm_nnapi.build(Dynamic)
    (module,) = runtime.nnapi_modules(executable)
    with pytest.raises(Exception, match="symbol 'seq_len'"):
        module["precompile"]({"other": 3})


def test_bursts_are_used_and_can_be_turned_off(options):
    executable = tvm_nnapi.build(Dynamic)
    vm = relax.VirtualMachine(executable, tvm.cpu())
    _run(vm, 4)
    _run(vm, 4)
    (stats,) = runtime.stats(executable).values()
    assert stats["burst_computes_cached"] == 2
    options.configure(use_burst=False)
    executable = tvm_nnapi.build(Dynamic)
    _run(relax.VirtualMachine(executable, tvm.cpu()), 4)
    (stats,) = runtime.stats(executable).values()
    assert stats["burst_computes_cached"] == 0


def test_bad_options_are_rejected_with_their_name(options):
    with pytest.raises(ValueError, match="unknown NNAPI runtime option"):
        options.configure(cache_entries=3)
    with pytest.raises(Exception, match="cache_max_entries"):
        options.configure(cache_max_entries=0)
    with pytest.raises(Exception, match="preference"):
        options.configure(preference="fastest")


def test_a_bad_name_sets_no_option(options):
    before = runtime.options_in_effect()
    with pytest.raises(ValueError, match="'cache_entries'; options: cache_max_entries, "):
        options.configure(cache_max_entries=3, cache_entries=3)
    assert runtime.options_in_effect() == before


def test_docs_table_lists_the_runtime_options_and_their_variables():
    """docs/runtime.md's options table has one row per option the runtime library defines, with
    the environment variable the library reads for it."""
    text = (pathlib.Path(__file__).parents[2] / "docs" / "runtime.md").read_text()
    rows = re.findall(r"^\| `(\w+)`[^|]*\| `(TVM_NNAPI_\w+)` \|", text, flags=re.M)
    names = runtime.option_names()
    assert [name for name, _ in rows] == list(names)
    assert all(variable == "TVM_NNAPI_" + name.upper() for name, variable in rows)
    assert set(runtime.options_in_effect()) == set(names)


def test_options_come_from_the_environment_at_start_up(tmp_path):
    """Each option's TVM_NNAPI_<NAME> variable is read when the runtime library loads."""
    script = (
        "import tvm_nnapi.runtime as rt; o = rt.options_in_effect(); "
        "print(o['cache_max_entries'], o['preference'], o['exclude_cpu'])"
    )
    env = dict(os.environ)
    env.update(
        TVM_NNAPI_CACHE_MAX_ENTRIES="5", TVM_NNAPI_PREFERENCE="low_power", TVM_NNAPI_EXCLUDE_CPU="1"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["5", "low_power", "1"]


def test_cache_directory_is_created_owner_only(options, tmp_path):
    directory = tmp_path / "nested" / "nnapi-cache"
    options.configure(cache_dir=str(directory))
    _run(relax.VirtualMachine(tvm_nnapi.build(Dynamic), tvm.cpu()), 2)
    assert directory.is_dir()
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700


def test_cache_directory_symlink_is_refused(options, tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    options.configure(cache_dir=str(link))
    vm = relax.VirtualMachine(tvm_nnapi.build(Dynamic), tvm.cpu())
    with pytest.raises(Exception, match="symbolic links are refused"):
        _run(vm, 2)


def test_dynamic_subgraph_over_seq_lens_compiles_once_per_signature():
    executable = tvm_nnapi.build(Dynamic)
    vm = relax.VirtualMachine(executable, tvm.cpu())
    lengths = [1, 7, 64, 128, 300, 7, 1, 300]
    for rows in lengths:
        _run(vm, rows)
    (stats,) = runtime.stats(executable).values()
    assert stats["compilations"] == len(set(lengths))
    assert stats["cache_hits"] == len(lengths) - len(set(lengths))


def test_a_fresh_process_reuses_the_disk_cache(options, tmp_path):
    import json
    import subprocess
    import sys
    import textwrap

    library = tmp_path / "dynamic.so"
    tvm_nnapi.build(Dynamic).export_library(str(library))
    script = textwrap.dedent(
        f"""
        import json
        import numpy as np
        import tvm
        from tvm import relax
        import tvm_nnapi, mock_nnapi
        from tvm_nnapi import runtime
        runtime.configure(cache_dir={str(tmp_path / "cache")!r})
        vm = relax.VirtualMachine(tvm.runtime.load_module({str(library)!r}), tvm.cpu())
        x = np.ones((5, 16), "float32")
        vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(np.eye(16, dtype="float32")))
        print(json.dumps(mock_nnapi.control.compilation_cache_counters()))
        """
    )
    runs = []
    for _ in range(2):
        completed = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=False
        )
        assert completed.returncode == 0, completed.stderr
        runs.append(json.loads(completed.stdout.strip().splitlines()[-1]))
    assert runs[0]["hits"] == 0 and runs[0]["misses"] == 1
    assert runs[1]["hits"] == 1 and runs[1]["misses"] == 0
