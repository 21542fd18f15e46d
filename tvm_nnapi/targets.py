# SPDX-License-Identifier: Apache-2.0
"""Where NNAPI runs: the same three targets for the commands (``--target``) and the test suite
(``pytest --target``), docs/targets.md.

- ``mock``: in this process, on the NNAPI library it loaded (the mock on a host).
- ``rpc``: a TVM RPC server: one named by ``TVM_NNAPI_RPC_SERVER=host:port`` (started with the
  runtime library loaded, ``python -m tvm.exec.rpc_server``), else one this process starts on
  loopback with the runtime and the mock preloaded.
- ``device``: a phone (or the emulated ARM64 device) through a TVM RPC tracker
  (``TVM_TRACKER_HOST``/``TVM_TRACKER_PORT``/``RPC_DEVICE_KEY``) or adb
  (``TVM_NNAPI_ADB_SERIALS``); modules cross-compiled with the NDK (``TVM_NDK_CC`` or
  ``ANDROID_NDK_HOME``) and the runtime library built for the device uploaded and loaded there
  (:mod:`tvm_nnapi.testing.android`).

A target builds for its ``compile_target``, runs a relax executable on its NNAPI (uploading it
when remote) and returns the outputs with the NNAPI runtime's statistics of that run; it lists
the NNAPI devices its library enumerates and asks NNAPI which operations of a graph each device
supports. Remote statistics and times are those of the target's runtime module, measured there.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tvm
from tvm import relax

from .errors import TargetUnavailableError
from .testing import android

__all__ = [
    "TARGETS",
    "DeviceTarget",
    "MockTarget",
    "RemoteTarget",
    "RpcTarget",
    "Target",
    "TargetRun",
    "TargetUnavailableError",
    "android_fcompile",
    "open_target",
]

TARGETS = ("mock", "rpc", "device")
#: A TVM RPC server to use as the ``rpc`` target (host:port) instead of a loopback one.
RPC_SERVER_ENV = "TVM_NNAPI_RPC_SERVER"


def flatten_outputs(value: Any) -> list[np.ndarray]:
    """A VM result (a tensor or nested tuples of tensors) as numpy arrays, in order."""
    if hasattr(value, "numpy"):
        return [value.numpy()]
    if isinstance(value, tvm.ffi.Array | tuple | list):
        return [array for item in value for array in flatten_outputs(item)]
    raise TypeError(f"unexpected VM result {type(value).__name__}")


class TargetRun:
    """One run on a target: its outputs, the NNAPI runtime's statistics summed over the program's
    NNAPI modules (calls, fallbacks, compilations, cache hits, and the times MEASURED where it
    ran: ``execute_time_ns``, and NNAPI's getDuration sums over ``timed_executions``), and the
    wall clock of the call as seen from here (an RPC round trip included when remote)."""

    def __init__(self, outputs: list[np.ndarray], stats: dict[str, Any], wall_s: float) -> None:
        self.outputs = outputs
        self.stats = stats
        self.wall_s = wall_s

    @property
    def nnapi_ran(self) -> bool:
        return int(self.stats.get("nnapi_calls", 0)) > 0


class Target:
    """The NNAPI library of one place (see the module docstring)."""

    name = "abstract"
    compile_target = "llvm"
    remote = False

    def load(self, executable: relax.VMExecutable) -> Callable[..., Any]:
        """The program on the target: a callable ``(function, inputs) -> TargetRun``."""
        raise NotImplementedError

    def virtual_machine(self, executable: relax.VMExecutable) -> relax.VirtualMachine:
        """The executable loaded where the target runs, as a Relax VM on the target's CPU, for
        callers that keep state there between calls (an LLM's KV cache): its arguments must be
        tensors on :meth:`cpu`, its results stay there until copied (``.numpy()``)."""
        raise NotImplementedError

    def cpu(self) -> Any:
        """The device (the target's CPU) that :meth:`virtual_machine`'s tensors live on."""
        raise NotImplementedError

    def vm_stats(self, vm: relax.VirtualMachine) -> dict[str, Any]:
        """The NNAPI runtime's statistics summed over the modules of a VM of this target
        (``tvm_nnapi.testing.nnapi_stats``), read where it runs."""
        return dict(json.loads(str(self.function("tvm_nnapi.testing.nnapi_stats")(vm.module))))

    def call(
        self, executable: relax.VMExecutable, function: str, inputs: Sequence[np.ndarray]
    ) -> TargetRun:
        """Loads ``executable`` and runs ``function`` once on ``inputs``."""
        return self.load(executable)(function, inputs)

    def run(self, executable: relax.VMExecutable, function: str, inputs: Sequence[np.ndarray]):
        """``function``'s single output as numpy (the operator tests' form)."""
        return self.call(executable, function, inputs).outputs[0]

    def run_graph(
        self,
        graph_json: str,
        constants: bytes,
        inputs: Sequence[np.ndarray],
        outputs: Sequence[tuple[tuple[int, ...], np.dtype]],
    ) -> tuple[list[np.ndarray], dict[str, Any]]:
        """Runs one graph JSON on the target's NNAPI; returns (outputs, run_graph's report)."""
        raise NotImplementedError

    def function(self, name: str) -> Callable[..., Any]:
        """A global function of the runtime library where the target runs."""
        raise NotImplementedError

    def nnapi_devices(self) -> dict[str, Any]:
        """The target's NNAPI library, runtime feature level and devices as NNAPI reports them
        (``tvm_nnapi.testing.nnapi_devices``)."""
        return dict(json.loads(str(self.function("tvm_nnapi.testing.nnapi_devices")())))

    def supported_operations(
        self, graph_json: str, constants: bytes, shapes: Sequence[Sequence[int]] = ()
    ) -> dict[str, Any]:
        """Which operations of a graph each device of the target supports
        (``tvm_nnapi.testing.supported_operations``)."""
        probe = self.function("tvm_nnapi.testing.supported_operations")
        text = probe(graph_json, bytearray(constants), json.dumps([list(s) for s in shapes]))
        return dict(json.loads(str(text)))

    def operation_count(self, operation: str) -> int:
        return int(self.function("tvm_nnapi.runtime.mock_operation_count")(operation))

    def counter(self, name: str) -> int:
        """A mock counter of the target's NNAPI (-1 when it is not the mock)."""
        return int(self.function("tvm_nnapi.runtime.mock_counter")(name))

    def configure(self, **options: Any) -> dict[str, str]:
        """Sets runtime options of the target's runtime library (those of
        :func:`tvm_nnapi.runtime.configure`) for compilations from now on; returns the options
        in effect there."""
        from .runtime import set_options

        set_options(self.function, options)
        return self.options()

    def options(self) -> dict[str, str]:
        """The runtime options in effect where the target runs."""
        from .runtime import option_names

        get = self.function("tvm_nnapi.runtime.get_option")
        return {name: str(get(name)) for name in option_names(self.function)}

    def info(self) -> dict[str, Any]:
        """The target's NNAPI library, its feature level, whether it is the mock and, for the
        mock, its profile (``tvm_nnapi.testing.nnapi_info``)."""
        return dict(json.loads(str(self.function("tvm_nnapi.testing.nnapi_info")())))

    def second_session(self) -> Target:
        """Another process on the same target (a new server session), e.g. to show that NNAPI's
        compilation cache carries over; NotImplementedError where the target cannot."""
        raise NotImplementedError(f"the {self.name} target opens no second session")

    def describe(self) -> str:
        return self.name

    def close(self) -> None:
        pass

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _stats_of(vm: relax.VirtualMachine) -> dict[str, Any]:
    from .runtime import stats

    per_module = stats(vm)
    totals: dict[str, Any] = {"nnapi_modules": len(per_module)}
    for module in per_module.values():
        for key, value in module.items():
            totals[key] = totals.get(key, 0) + value
    return totals


class MockTarget(Target):
    """This process's NNAPI library (the mock on a host)."""

    name = "mock"

    def load(self, executable):
        vm = relax.VirtualMachine(executable, tvm.cpu())

        def call(function: str, inputs: Sequence[np.ndarray]) -> TargetRun:
            arguments = [tvm.runtime.tensor(np.ascontiguousarray(a)) for a in inputs]
            start = time.perf_counter()
            result = vm[function](*arguments)
            wall = time.perf_counter() - start
            return TargetRun(flatten_outputs(result), _stats_of(vm), wall)

        return call

    def virtual_machine(self, executable):
        return relax.VirtualMachine(executable, tvm.cpu())

    def cpu(self):
        return tvm.cpu()

    def run_graph(self, graph_json, constants, inputs, outputs):
        arguments = [tvm.runtime.tensor(np.ascontiguousarray(a)) for a in inputs]
        results = [
            tvm.runtime.empty(shape, str(np.dtype(dtype)), tvm.cpu()) for shape, dtype in outputs
        ]
        run = self.function("tvm_nnapi.testing.run_graph")
        info = json.loads(str(run(graph_json, bytes(constants), *arguments, *results)))
        return [r.numpy() for r in results], info

    def function(self, name):
        from .runtime._library import runtime_function

        return runtime_function(name)

    def operation_count(self, operation: str) -> int:
        import mock_nnapi

        return mock_nnapi.operation_count(operation)

    def counter(self, name: str) -> int:
        import mock_nnapi

        return mock_nnapi.counter(name)


class RemoteTarget(Target):
    """Runs through a TVM RPC session: export, upload, load, run remotely, fetch the results.
    One session serves one call at a time (callers on several threads are serialised)."""

    remote = True

    def __init__(self, session: Any, export_options: dict[str, Any] | None = None) -> None:
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

    def virtual_machine(self, executable):
        with self._lock:
            self._count += 1
            path = self.workdir / f"module{self._count}.so"
            executable.export_library(str(path), **self.export_options)
            self.session.upload(str(path))
            library = self.session.load_module(path.name)
            return relax.VirtualMachine(library, self.session.cpu())

    def cpu(self):
        return self.session.cpu()

    def load(self, executable):
        vm = self.virtual_machine(executable)
        with self._lock:
            device = self.session.cpu()
            nnapi_stats = self.session.get_function("tvm_nnapi.testing.nnapi_stats")

        def call(function: str, inputs: Sequence[np.ndarray]) -> TargetRun:
            with self._lock:
                arguments = [tvm.runtime.tensor(np.ascontiguousarray(a), device) for a in inputs]
                start = time.perf_counter()
                result = vm[function](*arguments)
                outputs = flatten_outputs(result)
                wall = time.perf_counter() - start
                stats = json.loads(str(nnapi_stats(vm.module)))  # the VM's copies of the modules
                return TargetRun(outputs, stats, wall)

        return call

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

    def function(self, name):
        with self._lock:
            return self.session.get_function(name)

    def operation_count(self, operation: str) -> int:
        with self._lock:
            return super().operation_count(operation)

    def counter(self, name: str) -> int:
        with self._lock:
            return super().counter(name)

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


class RpcTarget(RemoteTarget):
    """A TVM RPC server: ``address`` (``host:port``; default ``$TVM_NNAPI_RPC_SERVER``) with the
    runtime library loaded in it, else one started here on loopback with the runtime and the
    mock preloaded (stopped by :meth:`close`), whose mock starts with device profile
    ``profile`` when given."""

    name = "rpc"

    def __init__(
        self,
        address: str | None = None,
        env: Mapping[str, str] | None = None,
        profile: str | None = None,
    ) -> None:
        from tvm import rpc

        from .runtime._library import load_runtime_library

        env = os.environ if env is None else env
        address = address or env.get(RPC_SERVER_ENV) or None
        self.server = None
        if address:
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit():
                raise TargetUnavailableError(
                    f"{RPC_SERVER_ENV}={address}: expected host:port of a TVM RPC server"
                )
            try:
                session = rpc.connect(host, int(port))
            except Exception as error:
                raise TargetUnavailableError(
                    f"cannot connect to the TVM RPC server at {address} ({error}); start one "
                    f"(python -m tvm.exec.rpc_server) or fix {RPC_SERVER_ENV}"
                ) from None
            self.address = address
        else:
            # The server process loads the runtime library (and with it the mock NNAPI) at
            # start; the callback is passed by reference, so it must be importable there. The
            # server inherits this process's environment when it starts (the profile).
            saved = os.environ.get("MOCK_NNAPI_PROFILE")
            if profile:
                os.environ["MOCK_NNAPI_PROFILE"] = str(profile)
            try:
                self.server = rpc.Server(
                    host="127.0.0.1",
                    port=9190,
                    port_end=9390,
                    server_init_callback=load_runtime_library,
                    silent=True,
                )
            finally:
                if saved is None:
                    os.environ.pop("MOCK_NNAPI_PROFILE", None)
                else:
                    os.environ["MOCK_NNAPI_PROFILE"] = saved
            self.address = f"127.0.0.1:{self.server.port} (started here, loopback)"
            # Stopped with this object, or at exit when an error skipped close().
            self._stop_server = weakref.finalize(self, self.server.terminate)
            session = rpc.connect("127.0.0.1", self.server.port)
        super().__init__(session)

    def describe(self) -> str:
        return f"rpc {self.address}"

    def second_session(self) -> Target:
        """Another server process of the same kind on this host (a loopback server with the
        mock); a named server serves one session at a time, so it has none."""
        if self.server is None:
            raise NotImplementedError(
                f"the TVM RPC server at {self.address} serves one session at a time"
            )
        return RpcTarget(env={})

    def close(self) -> None:
        super().close()
        if self.server is not None:
            self._stop_server()


def android_fcompile(compiler: str):
    """``export_library``'s fcompile linking with the NDK's clang++ (``compiler``)."""

    def fcompile(output, objects, options=None):
        from tvm.support import cc

        return cc.create_shared(output, objects, options, cc=compiler)

    fcompile.output_format = "so"  # type: ignore[attr-defined]
    return fcompile


class DeviceTarget(RemoteTarget):
    """A phone (:mod:`tvm_nnapi.testing.android`): this worker's device from a TVM RPC tracker or
    adb, modules cross-compiled with the NDK, the runtime library built for Android loaded into
    the phone's RPC server. Raises :class:`TargetUnavailableError` naming what is missing."""

    name = "device"

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        connect: Any = None,
        adb: Any = None,
        root: Path | None = None,
    ) -> None:
        env = dict(os.environ if env is None else env)
        root = root or Path(env.get("TVM_NNAPI_SOURCE_DIR", Path.cwd()))
        index, _ = android.worker_slot(env)
        self.device = android.choose_device(env, index)
        self.adb_server = None
        abi = env.get("TVM_NNAPI_ANDROID_ABI", "")
        handle = None
        if isinstance(self.device, android.AdbDevice):
            if adb is None:
                try:
                    import adbutils
                except ImportError:
                    raise TargetUnavailableError(
                        "the adb path needs the adbutils package: pip install 'tvm-nnapi[device]'"
                    ) from None
                adb = adbutils.adb
            try:
                handle = adb.device(serial=self.device.serial)
                abi = abi or str(handle.getprop("ro.product.cpu.abi")).strip()
            except Exception as error:
                raise TargetUnavailableError(
                    f"adb cannot reach {self.device.serial} ({error}); check `adb devices` "
                    "(the phone connected, USB debugging authorised)"
                ) from None
        abi = android.check_abi(abi or android.DEFAULT_ABI)
        # TVM_NNAPI_DEVICE_COMPILE_TARGET overrides the Android triple, e.g. "llvm" for a
        # loopback tracker and server on this host.
        self.compile_target = env.get("TVM_NNAPI_DEVICE_COMPILE_TARGET") or android.compile_target(
            abi
        )
        compiler = android.ndk_compiler(abi, env)
        runtime = android.android_runtime_library(abi, env, root)
        if connect is None:
            from tvm import rpc

            connect = rpc
        if isinstance(self.device, android.TrackerDevice):
            where = f"{self.device.host}:{self.device.port}"
            try:
                tracker = connect.connect_tracker(self.device.host, self.device.port)
            except Exception as error:
                raise TargetUnavailableError(
                    f"cannot connect to the TVM RPC tracker at {where} ({error}); start one "
                    "there (python -m tvm.exec.rpc_tracker) or fix TVM_TRACKER_HOST/PORT"
                ) from None
            session = tracker.request(self.device.key, priority=1, session_timeout=1800)
        else:
            local_port = android.free_local_port()
            self.adb_server = android.AdbRpcServer(
                handle,
                android.android_build_dir(abi, env, root),
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
                raise TargetUnavailableError(
                    f"{error}; the server's log is on the phone: adb -s {self.device.serial} "
                    f"shell cat {self.adb_server.directory}/rpc-{self.device.device_port}.log"
                ) from None
        super().__init__(session, {"fcompile": android_fcompile(compiler)})
        self.load_runtime(runtime)

    def describe(self) -> str:
        return f"device {self.device.describe()}"

    def close(self) -> None:
        super().close()
        adb_server = getattr(self, "adb_server", None)
        if adb_server is not None:
            adb_server.stop()


def open_target(name: str, env: Mapping[str, str] | None = None) -> Target:
    """The target named ``name`` (:data:`TARGETS`); :class:`TargetUnavailableError` naming the
    variables to set when it cannot be reached."""
    if name == "mock":
        return MockTarget()
    if name == "rpc":
        return RpcTarget(env=env)
    if name == "device":
        return DeviceTarget(env=env)
    raise ValueError(f"unknown target {name!r}; choose from {', '.join(TARGETS)}")
