# SPDX-License-Identifier: Apache-2.0
"""The `device` target (tests/targets.py) against a fake tracker, a fake adb and fake RPC
sessions: which phone it asks for, what it compiles with, what it uploads, and its skips."""

from __future__ import annotations

import json
from typing import Any

import pytest
from targets import DeviceTarget, android_fcompile

from .test_android import FakeAdbDevice, make_build


class FakeSession:
    def __init__(self) -> None:
        self.log: list[Any] = []

    def upload(self, path):
        self.log.append(("upload", path))

    def load_module(self, name):
        self.log.append(("load_module", name))


class FakeTracker:
    def __init__(self, session):
        self.session = session
        self.requests = []

    def request(self, key, priority=1, session_timeout=0):
        self.requests.append(key)
        return self.session


class FakeRpc:
    """Stands in for tvm.rpc: connect_tracker and connect."""

    def __init__(self, failures: int = 0) -> None:
        self.session = FakeSession()
        self.tracker = FakeTracker(self.session)
        self.tracker_address = None
        self.connects: list[Any] = []
        self.failures = failures

    def connect_tracker(self, host, port):
        self.tracker_address = (host, port)
        return self.tracker

    def connect(self, host, port):
        self.connects.append((host, port))
        if len(self.connects) <= self.failures:
            raise ConnectionRefusedError("the server is not up yet")
        return self.session


@pytest.fixture
def runtime(tmp_path):
    library = tmp_path / "libtvm_nnapi_runtime.so"
    library.write_bytes(b"\x7fELF")
    return library


def test_tracker_mode_requests_the_workers_key_and_loads_the_runtime(runtime):
    env = {
        "TVM_TRACKER_HOST": "tracker.local",
        "TVM_TRACKER_PORT": "9190",
        "RPC_DEVICE_KEY": "pixel7,s23",
        "PYTEST_XDIST_WORKER": "gw1",
        "TVM_NDK_CC": "aarch64-linux-android29-clang++",
        "TVM_NNAPI_ANDROID_RUNTIME": str(runtime),
    }
    rpc = FakeRpc()
    target = DeviceTarget(env, connect=rpc)
    assert rpc.tracker_address == ("tracker.local", 9190)
    assert rpc.tracker.requests == ["s23"]  # worker gw1 -> second key
    assert json.loads(target.compile_target) == {"kind": "llvm", "mtriple": "aarch64-linux-android"}
    assert rpc.session.log == [("upload", str(runtime)), ("load_module", runtime.name)]
    assert target.export_options["fcompile"].output_format == "so"
    target.close()


def test_adb_mode_detects_the_abi_starts_a_server_and_connects(runtime, tmp_path):
    build = make_build(tmp_path / "android")

    class FakeAdb:
        def __init__(self):
            self.device_handle = FakeAdbDevice()
            self.device_handle.getprop = lambda name: {"ro.product.cpu.abi": "x86_64\n"}[name]
            self.serials = []

        def device(self, serial):
            self.serials.append(serial)
            return self.device_handle

    env = {
        "TVM_NNAPI_ADB_SERIALS": "emulator-5554",
        "TVM_NDK_CC": "x86_64-linux-android30-clang++",
        "TVM_NNAPI_ANDROID_RUNTIME": str(runtime),
        "TVM_NNAPI_ANDROID_BUILD_DIR": str(build),
    }
    adb = FakeAdb()
    rpc = FakeRpc(failures=1)  # the server needs a moment: the target retries
    target = DeviceTarget(env, connect=rpc, adb=adb)
    assert adb.serials == ["emulator-5554"]
    assert json.loads(target.compile_target) == {"kind": "llvm", "mtriple": "x86_64-linux-android"}
    log = adb.device_handle.log
    forward = [entry for entry in log if entry[0] == "forward"]
    assert forward and forward[0][2] == "tcp:9090"
    local_port = int(forward[0][1].removeprefix("tcp:"))
    assert rpc.connects == [("127.0.0.1", local_port)] * 2
    target.close()
    assert log[-1] == ("forward_remove", f"tcp:{local_port}")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "set TVM_TRACKER_HOST, TVM_TRACKER_PORT and RPC_DEVICE_KEY"),
        (
            {"TVM_TRACKER_HOST": "h", "TVM_TRACKER_PORT": "1", "RPC_DEVICE_KEY": "k"},
            "set ANDROID_NDK_HOME",
        ),
        (
            {"TVM_TRACKER_HOST": "h", "TVM_TRACKER_PORT": "1", "RPC_DEVICE_KEY": "k",
             "TVM_NDK_CC": "clang++", "TVM_NNAPI_ANDROID_RUNTIME": "/nowhere/lib.so"},
            "scripts/build_android.sh arm64-v8a",
        ),
        (
            {"TVM_TRACKER_HOST": "h", "TVM_TRACKER_PORT": "1", "RPC_DEVICE_KEY": "k",
             "TVM_NNAPI_ANDROID_ABI": "armeabi"},
            "'armeabi' is not supported",
        ),
    ],
    ids=["no-device", "no-ndk", "no-android-build", "bad-abi"],
)  # fmt: skip
def test_incomplete_setups_skip_with_what_is_missing(env, message):
    with pytest.raises(pytest.skip.Exception, match=message) as skipped:
        DeviceTarget(env, connect=FakeRpc())
    assert str(skipped.value).startswith("device target: ")


def test_android_fcompile_links_with_the_given_compiler(tmp_path, monkeypatch):
    calls = []
    from tvm.support import cc

    monkeypatch.setattr(cc, "create_shared", lambda *args, **kwargs: calls.append((args, kwargs)))
    android_fcompile("/ndk/clang++")(str(tmp_path / "m.so"), ["a.o"], ["-shared"])
    assert calls == [((str(tmp_path / "m.so"), ["a.o"], ["-shared"]), {"cc": "/ndk/clang++"})]


def test_unreachable_tracker_and_adb_device_skip_with_what_to_check(runtime):
    class DownRpc(FakeRpc):
        def connect_tracker(self, host, port):
            raise ConnectionRefusedError("refused")

    env = {
        "TVM_TRACKER_HOST": "h",
        "TVM_TRACKER_PORT": "9190",
        "RPC_DEVICE_KEY": "k",
        "TVM_NDK_CC": "clang++",
        "TVM_NNAPI_ANDROID_RUNTIME": str(runtime),
    }
    with pytest.raises(pytest.skip.Exception, match=r"tracker at h:9190 \(refused\)"):
        DeviceTarget(env, connect=DownRpc())

    class NoDeviceAdb:
        def device(self, serial):
            raise RuntimeError(f"device '{serial}' not found")

    env = {"TVM_NNAPI_ADB_SERIALS": "R5CT", "TVM_NDK_CC": "clang++"}
    with pytest.raises(pytest.skip.Exception, match=r"adb cannot reach R5CT .*adb devices"):
        DeviceTarget(env, connect=FakeRpc(), adb=NoDeviceAdb())


def test_adb_server_that_never_answers_is_stopped_and_its_log_named(runtime, tmp_path):
    handle = FakeAdbDevice()
    handle.getprop = lambda name: "arm64-v8a"
    adb = type("Adb", (), {"device": lambda self, serial: handle})()
    env = {
        "TVM_NNAPI_ADB_SERIALS": "R5CT",
        "TVM_NDK_CC": "clang++",
        "TVM_NNAPI_ANDROID_RUNTIME": str(runtime),
        "TVM_NNAPI_ANDROID_BUILD_DIR": str(make_build(tmp_path / "android")),
        "TVM_NNAPI_DEVICE_CONNECT_TIMEOUT": "0",
    }
    with pytest.raises(
        pytest.skip.Exception, match=r"shell cat /data/local/tmp/tvm_nnapi/rpc-9090"
    ):
        DeviceTarget(env, connect=FakeRpc(failures=100), adb=adb)
    assert handle.log[-1][0] == "forward_remove"  # the server was stopped again
