# SPDX-License-Identifier: Apache-2.0
"""Where the code under test runs: one test suite, several targets (issue: "one suite on every
target"). The oracle is always TVM's llvm build run locally; a target runs the NNAPI build.

    pytest --target mock        in this process, on the mock NNAPI (default; what CI runs)
    pytest --target rpc         through a TVM RPC server on loopback started by the session,
                                with the runtime and the mock preloaded in the server
    pytest --target device      a phone: through a TVM RPC tracker (TVM_TRACKER_HOST,
                                TVM_TRACKER_PORT, RPC_DEVICE_KEY) or adb (TVM_NNAPI_ADB_SERIALS);
                                cross-compiled with the NDK (TVM_NDK_CC, or ANDROID_NDK_HOME);
                                one phone per pytest-xdist worker (tvm_nnapi.testing.android)

The target can also be chosen with the environment variable TVM_NNAPI_TEST_TARGET. Besides
running relax executables (``run``), every target runs single NNAPI graphs (``run_graph``,
the runtime's ``tvm_nnapi.testing.run_graph``) for the operation tests. See docs/targets.md.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm
from tvm import relax

from tvm_nnapi.testing import android

TARGETS = ("mock", "rpc", "device")
ROOT = Path(__file__).resolve().parent.parent


def _record_nnapi(ran: bool, evidence: str) -> None:
    """Tells the differential report whether NNAPI ran (tests/difftest_plugin.py)."""
    import difftest_plugin

    recorder = difftest_plugin.current()
    if recorder is not None:
        recorder.nnapi(ran, evidence)


def _stats_evidence(name: str, stats: dict[str, Any]) -> tuple[bool, str]:
    calls = int(stats.get("nnapi_calls", 0))
    host = int(stats.get("host_calls", 0))
    modules = int(stats.get("nnapi_modules", 0))
    return calls > 0, (
        f"{name}: {calls} NNAPI subgraph calls, {host} on the host fallback "
        f"({modules} NNAPI modules; runtime statistics)"
    )


class Target:
    """Runs NNAPI builds and reads the target's NNAPI counters (mock only: -1 elsewhere)."""

    name = "abstract"
    compile_target = "llvm"

    def run(self, executable: relax.VMExecutable, function: str, inputs: Sequence[np.ndarray]):
        raise NotImplementedError

    def run_graph(
        self,
        graph_json: str,
        constants: bytes,
        inputs: Sequence[np.ndarray],
        outputs: Sequence[tuple[tuple[int, ...], np.dtype]],
    ) -> tuple[list[np.ndarray], dict[str, Any]]:
        """Runs one graph JSON on the target's NNAPI; returns (outputs, run_graph's report)."""
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
        from tvm_nnapi import runtime

        vm = relax.VirtualMachine(executable, tvm.cpu())
        result = vm[function](*[tvm.runtime.tensor(a) for a in inputs]).numpy()
        stats = runtime.stats(vm)
        totals = {
            key: sum(s.get(key, 0) for s in stats.values()) for key in ("nnapi_calls", "host_calls")
        }
        _record_nnapi(*_stats_evidence(self.name, {**totals, "nnapi_modules": len(stats)}))
        return result

    def run_graph(self, graph_json, constants, inputs, outputs):
        from tvm_nnapi.runtime._library import runtime_function

        arguments = [tvm.runtime.tensor(np.ascontiguousarray(a)) for a in inputs]
        results = [
            tvm.runtime.empty(shape, str(np.dtype(dtype)), tvm.cpu()) for shape, dtype in outputs
        ]
        run = runtime_function("tvm_nnapi.testing.run_graph")
        info = json.loads(str(run(graph_json, bytes(constants), *arguments, *results)))
        return [r.numpy() for r in results], info

    def operation_count(self, operation: str) -> int:
        import mock_nnapi

        return mock_nnapi.operation_count(operation)

    def counter(self, name: str) -> int:
        import mock_nnapi

        return mock_nnapi.counter(name)


class RemoteTarget(Target):
    """Runs through a TVM RPC session: export, upload, load, run remotely, fetch the result.
    One session serves one call at a time (tests that use threads are serialised)."""

    def __init__(self, session, export_options: dict | None = None) -> None:
        self.session = session
        self.export_options = export_options or {}
        self.workdir = Path(tempfile.mkdtemp(prefix="tvm-nnapi-remote-"))
        self._count = 0
        self._lock = threading.RLock()

    def load_runtime(self, library: Path) -> None:
        """Uploads the runtime library built for the target and loads it in the server (it
        registers the "nnapi" module kind and the tvm_nnapi.testing functions there)."""
        self.session.upload(str(library))
        self.session.load_module(library.name)

    def run(self, executable, function, inputs):
        with self._lock:
            self._count += 1
            path = self.workdir / f"module{self._count}.so"
            executable.export_library(str(path), **self.export_options)
            self.session.upload(str(path))
            library = self.session.load_module(path.name)
            device = self.session.cpu()
            vm = relax.VirtualMachine(library, device)
            arguments = [tvm.runtime.tensor(a, device) for a in inputs]
            result = vm[function](*arguments).numpy()
            nnapi_stats = self.session.get_function("tvm_nnapi.testing.nnapi_stats")
            stats = json.loads(str(nnapi_stats(vm.module)))  # the VM's copies of the modules
            _record_nnapi(*_stats_evidence(self.name, stats))
            return result

    def run_graph(self, graph_json, constants, inputs, outputs):
        with self._lock:
            device = self.session.cpu()
            arguments = [tvm.runtime.tensor(np.ascontiguousarray(a), device) for a in inputs]
            results = [
                tvm.runtime.empty(shape, str(np.dtype(dtype)), device) for shape, dtype in outputs
            ]
            run = self.session.get_function("tvm_nnapi.testing.run_graph")
            info = json.loads(str(run(graph_json, bytearray(constants), *arguments, *results)))
            return [r.numpy() for r in results], info

    def operation_count(self, operation: str) -> int:
        with self._lock:
            function = self.session.get_function("tvm_nnapi.runtime.mock_operation_count")
            return int(function(operation))

    def counter(self, name: str) -> int:
        with self._lock:
            return int(self.session.get_function("tvm_nnapi.runtime.mock_counter")(name))

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


class LoopbackRpcTarget(RemoteTarget):
    name = "rpc"

    def __init__(self) -> None:
        from tvm import rpc

        from tvm_nnapi.runtime._library import load_runtime_library

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


def android_fcompile(compiler: str):
    """``export_library``'s fcompile linking with the NDK's clang++ (``compiler``)."""

    def fcompile(output, objects, options=None):
        from tvm.support import cc

        return cc.create_shared(output, objects, options, cc=compiler)

    fcompile.output_format = "so"  # type: ignore[attr-defined]
    return fcompile


class DeviceTarget(RemoteTarget):
    """A phone (tvm_nnapi.testing.android): this worker's device from a TVM RPC tracker or adb,
    modules cross-compiled with the NDK, the runtime library built for Android loaded into the
    phone's RPC server. Skips with what is missing when the setup is incomplete."""

    name = "device"

    def __init__(self, env: dict[str, str] | None = None, connect=None, adb=None) -> None:
        env = dict(os.environ if env is None else env)
        try:
            self._open(env, connect, adb)
        except android.TargetUnavailableError as missing:
            pytest.skip(f"device target: {missing}")

    def _open(self, env: dict[str, str], connect, adb) -> None:
        index, _ = android.worker_slot(env)
        self.device = android.choose_device(env, index)
        self.adb_server = None
        abi = env.get("TVM_NNAPI_ANDROID_ABI", "")
        if isinstance(self.device, android.AdbDevice):
            if adb is None:
                try:
                    import adbutils
                except ImportError:
                    raise android.TargetUnavailableError(
                        "the adb path needs the adbutils package: pip install 'tvm-nnapi[device]'"
                    ) from None
                adb = adbutils.adb
            try:
                handle = adb.device(serial=self.device.serial)
                abi = abi or str(handle.getprop("ro.product.cpu.abi")).strip()
            except Exception as error:
                raise android.TargetUnavailableError(
                    f"adb cannot reach {self.device.serial} ({error}); check `adb devices` "
                    "(the phone connected, USB debugging authorised)"
                ) from None
        abi = android.check_abi(abi or android.DEFAULT_ABI)
        # TVM_NNAPI_DEVICE_COMPILE_TARGET overrides the Android triple, e.g. "llvm" for a
        # loopback tracker and server on this host (tests/targets_tests/test_device_loopback.py).
        self.compile_target = env.get("TVM_NNAPI_DEVICE_COMPILE_TARGET") or android.compile_target(
            abi
        )
        compiler = android.ndk_compiler(abi, env)
        runtime = android.android_runtime_library(abi, env, ROOT)
        if connect is None:
            from tvm import rpc

            connect = rpc
        if isinstance(self.device, android.TrackerDevice):
            where = f"{self.device.host}:{self.device.port}"
            try:
                tracker = connect.connect_tracker(self.device.host, self.device.port)
            except Exception as error:
                raise android.TargetUnavailableError(
                    f"cannot connect to the TVM RPC tracker at {where} ({error}); start one "
                    "there (python -m tvm.exec.rpc_tracker) or fix TVM_TRACKER_HOST/PORT"
                ) from None
            session = tracker.request(self.device.key, priority=1, session_timeout=1800)
        else:
            local_port = android.free_local_port()
            self.adb_server = android.AdbRpcServer(
                handle,
                android.android_build_dir(abi, env, ROOT),
                self.device.device_port,
                local_port,
            )
            self.adb_server.start()
            try:
                session = android.wait_until(
                    lambda: connect.connect("127.0.0.1", local_port),
                    what=f"the TVM RPC server on {self.device.describe()}",
                    timeout=float(env.get("TVM_NNAPI_DEVICE_CONNECT_TIMEOUT", "60")),
                    interval=1,
                )
            except TimeoutError as error:
                self.adb_server.stop()
                raise android.TargetUnavailableError(
                    f"{error}; the server's log is on the phone: adb -s {self.device.serial} "
                    f"shell cat {self.adb_server.directory}/rpc-{self.device.device_port}.log"
                ) from None
        super().__init__(session, {"fcompile": android_fcompile(compiler)})
        self.load_runtime(runtime)

    def close(self) -> None:
        super().close()
        adb_server = getattr(self, "adb_server", None)
        if adb_server is not None:
            adb_server.stop()


def make_target(name: str) -> Target:
    if name == "mock":
        return MockTarget()
    if name == "rpc":
        return LoopbackRpcTarget()
    if name == "device":
        return DeviceTarget()
    raise pytest.UsageError(f"unknown --target {name!r}; choose from {', '.join(TARGETS)}")
