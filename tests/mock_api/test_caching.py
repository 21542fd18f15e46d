# SPDX-License-Identifier: Apache-2.0
"""Compilation caching: hits and misses, the file's safety properties, and every kind of bad
file (which must never be trusted)."""

from __future__ import annotations

import ctypes
import hashlib
import os
import stat
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from mock_nnapi.constants import PreferenceCode

from mock_nnapi import control

from .nn import NO_ERROR, devices, lib

TOKEN = bytes(range(32))
OTHER_TOKEN = bytes(range(1, 33))


def compile_model(arena, cache_dir, token=TOKEN, model=None, preference=None, on_devices=None):
    model = model or arena.binary_model()
    compilation = arena.compilation(model, on_devices, finish=False)
    if preference is not None:
        assert lib.ANeuralNetworksCompilation_setPreference(compilation, preference) == NO_ERROR
    token_array = (ctypes.c_uint8 * 32)(*token)
    code = lib.ANeuralNetworksCompilation_setCaching(
        compilation, os.fsencode(cache_dir), token_array
    )
    assert code == NO_ERROR
    assert lib.ANeuralNetworksCompilation_finish(compilation) == NO_ERROR
    return compilation


def outcome(arena, cache_dir, **kwargs) -> str:
    """Compiles and says whether the cache was hit, missed, or not used."""
    before = control.compilation_cache_counters()
    compile_model(arena, cache_dir, **kwargs)
    after = control.compilation_cache_counters()
    delta = (after["hits"] - before["hits"], after["misses"] - before["misses"])
    return {(1, 0): "hit", (0, 1): "miss", (0, 0): "skipped"}[delta]


def cache_file(cache_dir, token=TOKEN):
    return control.compilation_cache_file(cache_dir, token)


def test_miss_then_hit(arena, tmp_path):
    assert outcome(arena, tmp_path) == "miss"
    path = cache_file(tmp_path)
    assert path.is_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == [path.name]  # no temporary file left behind
    assert outcome(arena, tmp_path) == "hit"
    assert outcome(arena, tmp_path) == "hit"
    # A cache hit compiles to the same, working plan.
    compilation = compile_model(arena, tmp_path)
    execution, out = arena.add_execution(compilation=compilation)
    assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR
    np.testing.assert_array_equal(out, [4, 6])


def test_permissions_ignore_the_umask(arena, tmp_path):
    previous = os.umask(0)
    try:
        assert outcome(arena, tmp_path) == "miss"
    finally:
        os.umask(previous)
    assert stat.S_IMODE(cache_file(tmp_path).stat().st_mode) == 0o600


def test_tokens_are_independent(arena, tmp_path):
    assert outcome(arena, tmp_path) == "miss"
    assert outcome(arena, tmp_path, token=OTHER_TOKEN) == "miss"
    assert outcome(arena, tmp_path) == "hit"
    assert outcome(arena, tmp_path, token=OTHER_TOKEN) == "hit"


@pytest.mark.parametrize(
    "change",
    ["constant", "operation", "shape", "relaxed", "preference", "devices", "activation input"],
)
def test_fingerprint_covers(arena, tmp_path, change):
    def variant(changed: bool) -> dict:
        kwargs: dict = {}
        if change == "constant":
            kwargs["model"] = arena.binary_model(activation_input=False, activation=int(changed))
        elif change == "operation":
            kwargs["model"] = arena.binary_model(operation=18 if changed else 0)
        elif change == "shape":
            kwargs["model"] = arena.binary_model(shape=(3,) if changed else (2,))
        elif change == "relaxed":
            model = arena.binary_model(finish=False)
            assert lib.ANeuralNetworksModel_relaxComputationFloat32toFloat16(model, changed) == 0
            assert lib.ANeuralNetworksModel_finish(model) == NO_ERROR
            kwargs["model"] = model
        elif change == "preference":
            kwargs["preference"] = (
                PreferenceCode.LOW_POWER if changed else PreferenceCode.FAST_SINGLE_ANSWER
            )
        elif change == "devices":
            kwargs["on_devices"] = devices()[:1] if changed else None
        else:
            kwargs["model"] = arena.binary_model(activation_input=changed)
        return kwargs

    assert outcome(arena, tmp_path, **variant(False)) == "miss"
    assert outcome(arena, tmp_path, **variant(False)) == "hit"
    # Same token, another compilation: never trusted, and the file now holds the new one.
    assert outcome(arena, tmp_path, **variant(True)) == "miss"
    assert outcome(arena, tmp_path, **variant(True)) == "hit"
    assert outcome(arena, tmp_path, **variant(False)) == "miss"


def test_missing_directory_skips_caching(arena, tmp_path):
    missing = tmp_path / "does-not-exist"
    assert outcome(arena, missing) == "skipped"
    assert not missing.exists()  # Android requires the directory: it is not created
    not_a_directory = tmp_path / "file"
    not_a_directory.write_bytes(b"")
    assert outcome(arena, not_a_directory) == "skipped"


def test_trailing_slash_and_relative_paths(arena, tmp_path, monkeypatch):
    assert outcome(arena, f"{tmp_path}/") == "miss"
    assert outcome(arena, tmp_path) == "hit"
    monkeypatch.chdir(tmp_path)
    assert outcome(arena, ".") == "hit"


def rewrite(path, mutate):
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(mutate(data)))


def with_checksum(body: bytes) -> bytes:
    return body + hashlib.sha256(body).digest()


def test_file_format(arena, tmp_path):
    compile_model(arena, tmp_path)
    data = cache_file(tmp_path).read_bytes()
    magic, version = struct.unpack_from("<8sI", data, 0)
    assert (magic, version) == (b"MNNAPIC\0", 1)
    assert data[12:44] == TOKEN
    (operations,) = struct.unpack_from("<I", data, 76)
    assert operations == 1
    assert len(data) == 80 + 4 * operations + 32
    assert hashlib.sha256(data[:-32]).digest() == data[-32:]


def corruptions():
    def flip(offset):
        def mutate(data):
            data[offset] ^= 0x40
            return data

        return mutate

    def resealed(offset, value: bytes):
        # Changes a field and recomputes the checksum: the field itself must be checked.
        def mutate(data):
            body = data[:-32]
            body[offset : offset + len(value)] = value
            return with_checksum(bytes(body))

        return mutate

    return {
        "truncated": lambda data: data[:50],
        "empty": lambda data: b"",
        "extended": lambda data: data + b"\0",
        "body byte": flip(60),
        "checksum byte": flip(-1),
        "magic": resealed(0, b"XNNAPIC\0"),
        "version": resealed(8, struct.pack("<I", 2)),
        "token": resealed(12, OTHER_TOKEN),
        "fingerprint": resealed(44, bytes(32)),
        "operation count": resealed(76, struct.pack("<I", 2)),
        "device index": resealed(80, struct.pack("<i", 7)),
    }


@pytest.mark.parametrize("kind", list(corruptions()))
def test_corrupt_files_are_never_trusted(arena, tmp_path, kind):
    assert outcome(arena, tmp_path) == "miss"
    path = cache_file(tmp_path)
    rewrite(path, corruptions()[kind])
    assert outcome(arena, tmp_path) == "miss"
    # The bad file was replaced by a good one.
    assert outcome(arena, tmp_path) == "hit"


def test_foreign_token_file(arena, tmp_path):
    # A valid file for another token, copied under this token's name.
    assert outcome(arena, tmp_path, token=OTHER_TOKEN) == "miss"
    cache_file(tmp_path).write_bytes(cache_file(tmp_path, OTHER_TOKEN).read_bytes())
    os.chmod(cache_file(tmp_path), 0o600)
    assert outcome(arena, tmp_path) == "miss"


def test_symlink_is_never_followed(arena, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    cache = tmp_path / "cache"
    elsewhere.mkdir()
    cache.mkdir()
    # A perfectly valid cache file, reachable only through a planted symbolic link.
    assert outcome(arena, elsewhere) == "miss"
    target = cache_file(elsewhere)
    original = target.read_bytes()
    cache_file(cache).symlink_to(target)
    assert outcome(arena, cache) == "miss"
    # The link was replaced by a regular file; its target was neither read nor written.
    assert cache_file(cache).is_file() and not cache_file(cache).is_symlink()
    assert target.read_bytes() == original
    assert outcome(arena, cache) == "hit"


def test_dangling_symlink_is_replaced(arena, tmp_path):
    target = tmp_path / "victim"
    cache_file(tmp_path).symlink_to(target)
    assert outcome(arena, tmp_path) == "miss"
    assert not target.exists()
    assert not cache_file(tmp_path).is_symlink()


def test_planted_directory_and_fifo(arena, tmp_path):
    cache_file(tmp_path).mkdir()
    assert outcome(arena, tmp_path) == "miss"  # cannot be replaced; not trusted either
    assert cache_file(tmp_path).is_dir()
    fifo_dir = tmp_path / "fifo"
    fifo_dir.mkdir()
    os.mkfifo(cache_file(fifo_dir))
    assert outcome(arena, fifo_dir) == "miss"  # opened without blocking, then replaced
    assert cache_file(fifo_dir).is_file()


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_file_of_another_user_is_not_trusted(arena, tmp_path):
    assert outcome(arena, tmp_path) == "miss"
    os.chown(cache_file(tmp_path), 12345, -1)
    assert outcome(arena, tmp_path) == "miss"
    assert cache_file(tmp_path).stat().st_uid == os.geteuid()


SUBPROCESS_SCRIPT = textwrap.dedent(
    """
    import ctypes, os, sys
    from mock_nnapi import Compilation, FuseCode, Model, OperandCode, OperationCode, control
    model = Model()
    a = model.add_tensor(OperandCode.TENSOR_FLOAT32, [2])
    b = model.add_tensor(OperandCode.TENSOR_FLOAT32, [2])
    act = model.add_operand(OperandCode.INT32)
    out = model.add_tensor(OperandCode.TENSOR_FLOAT32, [2])
    model.add_operation(OperationCode.ADD, [a, b, act], [out])
    model.identify_inputs_and_outputs([a, b, act], [out])
    model.finish()
    Compilation(model).set_caching(sys.argv[1], bytes(range(32))).finish()
    print(control.compilation_cache_counters()["hits"])
    """
)


def run_subprocess(cache_dir) -> int:
    result = subprocess.run(
        [sys.executable, "-c", SUBPROCESS_SCRIPT, str(cache_dir)],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ.copy(),
    )
    return int(result.stdout.strip())


def test_cache_shared_with_another_process(arena, tmp_path):
    # The subprocess builds the same model as arena.binary_model() with the same token.
    assert run_subprocess(tmp_path) == 0  # a miss there: it writes the file
    assert outcome(arena, tmp_path) == "hit"
    assert run_subprocess(tmp_path) == 1  # and a hit for a later process


def test_a_discarded_entry_is_counted_with_its_reason(arena, tmp_path):
    assert outcome(arena, tmp_path) == "miss"
    path = cache_file(tmp_path)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    before = control.compilation_cache_counters()["discarded"]
    assert outcome(arena, tmp_path) == "miss"
    assert control.compilation_cache_counters()["discarded"] == before + 1
    assert outcome(arena, tmp_path) == "hit"  # rewritten
    assert control.compilation_cache_counters()["discarded"] == before + 1


def test_a_process_says_once_on_stderr_that_an_entry_was_discarded(tmp_path):
    """Two compilations meet a truncated file: one line on stderr names the file and why."""
    assert run_subprocess(tmp_path) == 0
    path = cache_file(tmp_path, bytes(range(32)))
    script = SUBPROCESS_SCRIPT.replace(
        "Compilation(model).set_caching(sys.argv[1], bytes(range(32))).finish()",
        "import pathlib\n"
        "path = pathlib.Path(sys.argv[2])\n"
        "for _ in range(2):\n"
        "    path.write_bytes(path.read_bytes()[:-3])\n"
        "    Compilation(model).set_caching(sys.argv[1], bytes(range(32))).finish()",
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), str(path)],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k != "MOCK_NNAPI_LOG"},
    )
    lines = [line for line in result.stderr.splitlines() if "compilation cache" in line]
    assert len(lines) == 1, result.stderr
    assert f"discarded {tmp_path}/{path.name}" in lines[0]
    assert "were expected (truncated or extended)" in lines[0] and "rewriting it" in lines[0]
