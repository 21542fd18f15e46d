"""Where the code under test runs: one test suite, several targets (issue: "one suite on every
target"). The oracle is always TVM's llvm build run locally; a target runs the NNAPI build.

    pytest --target mock        in this process, on the mock NNAPI (default; what CI runs)
    pytest --target rpc         through a TVM RPC server on loopback started by the session,
                                with the runtime and the mock preloaded in the server
    pytest --target device      a phone behind a TVM RPC tracker: TVM_TRACKER_HOST,
                                TVM_TRACKER_PORT, RPC_DEVICE_KEY; cross-compiled with the NDK
                                (TVM_NDK_CC, or ANDROID_NDK_HOME)

The target can also be chosen with the environment variable TVM_NNAPI_TEST_TARGET.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import tvm
from tvm import relax

TARGETS = ("mock", "rpc", "device")


class Target:
    """Runs NNAPI builds and reads the target's NNAPI counters (mock only: -1 elsewhere)."""

    name = "abstract"
    compile_target = "llvm"

    def run(self, executable: relax.VMExecutable, function: str, inputs: Sequence[np.ndarray]):
        raise NotImplementedError

    def operation_count(self, operation: str) -> int:
        raise NotImplementedError

    def counter(self, name: str) -> int:
        raise NotImplementedError

    def close(self) -> None:
        pass


class MockTarget(Target):
    name = "mock"

    def run(self, executable, function, inputs):
        vm = relax.VirtualMachine(executable, tvm.cpu())
        return vm[function](*[tvm.runtime.tensor(a) for a in inputs]).numpy()

    def operation_count(self, operation: str) -> int:
        import mock_nnapi

        return mock_nnapi.operation_count(operation)

    def counter(self, name: str) -> int:
        import mock_nnapi

        return mock_nnapi.counter(name)


class RemoteTarget(Target):
    """Runs through a TVM RPC session: export, upload, load, run remotely, fetch the result."""

    def __init__(self, session, export_options: dict | None = None) -> None:
        self.session = session
        self.export_options = export_options or {}
        self.workdir = Path(tempfile.mkdtemp(prefix="tvm-nnapi-remote-"))
        self._count = 0

    def run(self, executable, function, inputs):
        self._count += 1
        path = self.workdir / f"module{self._count}.so"
        executable.export_library(str(path), **self.export_options)
        self.session.upload(str(path))
        library = self.session.load_module(path.name)
        device = self.session.cpu()
        vm = relax.VirtualMachine(library, device)
        arguments = [tvm.runtime.tensor(a, device) for a in inputs]
        return vm[function](*arguments).numpy()

    def operation_count(self, operation: str) -> int:
        return int(self.session.get_function("tvm_nnapi.runtime.mock_operation_count")(operation))

    def counter(self, name: str) -> int:
        return int(self.session.get_function("tvm_nnapi.runtime.mock_counter")(name))

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


class LoopbackRpcTarget(RemoteTarget):
    name = "rpc"

    def __init__(self) -> None:
        from tvm import rpc

        from tvm_nnapi._runtime import load_runtime_library

        # The server process loads the runtime library (and with it the mock NNAPI) at start;
        # the callback is passed by reference, so it must be importable there.
        self.server = rpc.Server(
            host="127.0.0.1",
            port=9190,
            port_end=9390,
            server_init_callback=load_runtime_library,
            silent=True,
        )
        super().__init__(rpc.connect("127.0.0.1", self.server.port))

    def close(self) -> None:
        super().close()
        self.server.terminate()


class DeviceTarget(RemoteTarget):
    """A phone through a TVM RPC tracker (the variable names of TVM's own NNAPI tests)."""

    name = "device"
    compile_target = "llvm -mtriple=aarch64-linux-android"

    def __init__(self) -> None:
        from tvm import rpc
        from tvm.contrib import ndk

        host = os.environ.get("TVM_TRACKER_HOST")
        port = os.environ.get("TVM_TRACKER_PORT")
        key = os.environ.get("RPC_DEVICE_KEY")
        if not (host and port and key):
            pytest.skip(
                "the device target needs a TVM RPC tracker with a phone registered: set "
                "TVM_TRACKER_HOST, TVM_TRACKER_PORT and RPC_DEVICE_KEY (see emulator/README.md)"
            )
        if not os.environ.get("TVM_NDK_CC"):
            ndk_home = os.environ.get("ANDROID_NDK_HOME")
            if not ndk_home:
                pytest.skip(
                    "the device target cross-compiles with the Android NDK: set TVM_NDK_CC to "
                    "an aarch64 clang++ or ANDROID_NDK_HOME to the NDK"
                )
            compiler = Path(ndk_home) / "toolchains/llvm/prebuilt/linux-x86_64/bin"
            os.environ["TVM_NDK_CC"] = str(compiler / "aarch64-linux-android28-clang++")
        tracker = rpc.connect_tracker(host, int(port))
        super().__init__(
            tracker.request(key, priority=0, session_timeout=600), {"fcompile": ndk.create_shared}
        )


def make_target(name: str) -> Target:
    if name == "mock":
        return MockTarget()
    if name == "rpc":
        return LoopbackRpcTarget()
    if name == "device":
        return DeviceTarget()
    raise pytest.UsageError(f"unknown --target {name!r}; choose from {', '.join(TARGETS)}")
