# SPDX-License-Identifier: Apache-2.0
"""Device selection, NDK settings and the adb RPC server of tvm_nnapi.testing.android, driven
with fake environments, adb devices and clocks (no phone or NDK on CI machines)."""

from __future__ import annotations

import json

import pytest
import tvm

from tvm_nnapi.testing import android
from tvm_nnapi.testing.android import AdbDevice, TargetUnavailableError, TrackerDevice

TRACKER = {"TVM_TRACKER_HOST": "10.0.0.5", "TVM_TRACKER_PORT": "9190", "RPC_DEVICE_KEY": "pixel7"}


def test_worker_slot_from_xdist_variables():
    assert android.worker_slot({}) == (0, 1)
    env = {"PYTEST_XDIST_WORKER": "gw3", "PYTEST_XDIST_WORKER_COUNT": "4"}
    assert android.worker_slot(env) == (3, 4)
    assert android.worker_slot({"PYTEST_XDIST_WORKER": "master"}) == (0, 1)


def test_tracker_keys_are_assigned_round_robin_to_workers():
    env = dict(TRACKER, RPC_DEVICE_KEY="pixel7, s23,tensor")
    keys = [android.choose_device(env, worker).key for worker in range(5)]
    assert keys == ["pixel7", "s23", "tensor", "pixel7", "s23"]
    assert android.choose_device(TRACKER, 0) == TrackerDevice("10.0.0.5", 9190, "pixel7")


def test_incomplete_tracker_configuration_names_the_missing_variables():
    env = {"TVM_TRACKER_HOST": "h", "RPC_DEVICE_KEY": "k"}
    with pytest.raises(TargetUnavailableError, match="TVM_TRACKER_PORT missing"):
        android.choose_device(env)
    with pytest.raises(TargetUnavailableError, match="'x' is not a port number"):
        android.choose_device(dict(TRACKER, TVM_TRACKER_PORT="x"))


def test_adb_serials_give_each_worker_a_phone_and_its_own_server_port():
    env = {"TVM_NNAPI_ADB_SERIALS": "A1,B2"}
    assert [android.choose_device(env, w) for w in range(3)] == [
        AdbDevice("A1", 9090),
        AdbDevice("B2", 9091),
        AdbDevice("A1", 9092),  # a third worker shares A1 with its own server
    ]
    assert android.choose_device({"ANDROID_SERIAL": "Z"}, 0) == AdbDevice("Z", 9090)
    env["TVM_NNAPI_DEVICE_RPC_PORT"] = "7000"
    assert android.choose_device(env, 1) == AdbDevice("B2", 7001)


def test_no_device_configured_says_how_to_provide_one():
    with pytest.raises(TargetUnavailableError) as error:
        android.choose_device({})
    for name in ("TVM_TRACKER_HOST", "RPC_DEVICE_KEY", "TVM_NNAPI_ADB_SERIALS"):
        assert name in str(error.value)


def test_compile_target_and_ndk_compiler():
    # TVM 0.27 parses only the JSON form of a target ("llvm -mtriple=..." is refused).
    for abi, triple in (("arm64-v8a", "aarch64-linux-android"), ("x86_64", "x86_64-linux-android")):
        target = android.compile_target(abi)
        assert json.loads(target) == {"kind": "llvm", "mtriple": triple}
        assert tvm.target.Target(target).attrs["mtriple"] == triple
    with pytest.raises(TargetUnavailableError, match="'mips' is not supported"):
        android.compile_target("mips")
    assert android.ndk_compiler("arm64-v8a", {"TVM_NDK_CC": "clang++"}) == "clang++"
    env = {"ANDROID_NDK_HOME": "/ndk", "TVM_NNAPI_ANDROID_API": "30"}
    compiler = android.ndk_compiler("x86_64", env, exists=lambda path: True)
    assert compiler.startswith("/ndk/toolchains/llvm/prebuilt/")
    assert compiler.endswith("/bin/x86_64-linux-android30-clang++")
    with pytest.raises(TargetUnavailableError, match="set ANDROID_NDK_HOME"):
        android.ndk_compiler("arm64-v8a", {})
    with pytest.raises(TargetUnavailableError, match="is not an NDK with API 30"):
        android.ndk_compiler("arm64-v8a", env, exists=lambda path: False)
    with pytest.raises(TargetUnavailableError, match="TVM_NDK_CC=/no/such/clang"):
        android.ndk_compiler("arm64-v8a", {"TVM_NDK_CC": "/no/such/clang"})


def test_runtime_library_location_and_message(tmp_path):
    with pytest.raises(TargetUnavailableError, match=r"scripts/build_android.sh arm64-v8a"):
        android.android_runtime_library("arm64-v8a", {}, tmp_path)
    built = tmp_path / "build/android/arm64-v8a/install/lib/libtvm_nnapi_runtime.so"
    built.parent.mkdir(parents=True)
    built.write_bytes(b"\x7fELF")
    assert android.android_runtime_library("arm64-v8a", {}, tmp_path) == built


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_wait_until_retries_errors_and_none_then_returns():
    clock = FakeClock()
    answers = iter([ConnectionRefusedError("refused"), None, "session"])

    def attempt():
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    value = android.wait_until(
        attempt, what="server", timeout=10, interval=2, clock=clock, sleep=clock.sleep
    )
    assert value == "session" and clock.sleeps == [2, 2]


def test_wait_until_times_out_with_the_last_error():
    clock = FakeClock()

    def attempt():
        raise ConnectionRefusedError("connection refused")

    with pytest.raises(TimeoutError, match=r"not ready after 5 s \(4 tries; last: Connection"):
        android.wait_until(
            attempt, what="server", timeout=5, interval=2, clock=clock, sleep=clock.sleep
        )
    assert clock.sleeps == [2, 2, 1]  # the last sleep is cut to the deadline


class FakeSync:
    def __init__(self, log):
        self.log = log

    def push(self, source, destination):
        self.log.append(("push", source, destination))


class FakeAdbDevice:
    def __init__(self):
        self.log = []
        self.sync = FakeSync(self.log)

    def shell(self, command):
        self.log.append(("shell", command))
        return ""

    def forward(self, local, remote):
        self.log.append(("forward", local, remote))

    def forward_remove(self, local):
        self.log.append(("forward_remove", local))


def make_build(tmp_path):
    (tmp_path / "bin").mkdir(parents=True)
    (tmp_path / "lib").mkdir()
    (tmp_path / "bin/tvm_rpc").write_text("")
    for name in ("libtvm_ffi.so", "libtvm_runtime.so", "libc++_shared.so"):
        (tmp_path / "lib" / name).write_text("")
    return tmp_path


def test_adb_rpc_server_pushes_starts_forwards_and_stops(tmp_path):
    device = FakeAdbDevice()
    server = android.AdbRpcServer(device, make_build(tmp_path), device_port=9091, local_port=40000)
    server.start()
    pushed = [entry[2] for entry in device.log if entry[0] == "push"]
    assert pushed == [
        "/data/local/tmp/tvm_nnapi/tvm_rpc",
        "/data/local/tmp/tvm_nnapi/libc++_shared.so",
        "/data/local/tmp/tvm_nnapi/libtvm_ffi.so",
        "/data/local/tmp/tvm_nnapi/libtvm_runtime.so",
    ]
    shells = [entry[1] for entry in device.log if entry[0] == "shell"]
    start = shells[-1]
    assert "LD_LIBRARY_PATH=/data/local/tmp/tvm_nnapi nohup ./tvm_rpc server" in start
    assert "--host=127.0.0.1 --port=9091 --port-end=9092" in start
    assert "echo $! > /data/local/tmp/tvm_nnapi/rpc-9091.pid" in start
    assert "kill $(cat /data/local/tmp/tvm_nnapi/rpc-9091.pid)" in shells[-2]  # stale server
    assert ("forward", "tcp:40000", "tcp:9091") in device.log
    server.stop()
    assert device.log[-2][1] == server.stop_command()
    assert device.log[-1] == ("forward_remove", "tcp:40000")
    server.stop()  # idempotent
    assert device.log[-1] == ("forward_remove", "tcp:40000")


def test_adb_rpc_server_without_an_android_build_says_how_to_make_one(tmp_path):
    server = android.AdbRpcServer(FakeAdbDevice(), tmp_path, 9090, 40000)
    with pytest.raises(TargetUnavailableError, match=r"scripts/build_android\.sh ABI --tvm-source"):
        server.start()


def test_free_local_port_is_bindable():
    import socket

    port = android.free_local_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
