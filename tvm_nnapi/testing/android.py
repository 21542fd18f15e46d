# SPDX-License-Identifier: Apache-2.0
"""Phones and emulators as test targets: which device a test worker uses, how code is
cross-compiled for it, and how a TVM RPC server is brought up on it over adb.

Two ways to reach a phone (docs/targets.md):

- **TVM RPC tracker** (the variables of TVM's own NNAPI tests): ``TVM_TRACKER_HOST``,
  ``TVM_TRACKER_PORT``, ``RPC_DEVICE_KEY``. ``RPC_DEVICE_KEY`` may list several keys
  (``pixel7,s23``): pytest-xdist worker *i* requests key *i mod n*; phones registered under
  one key are handed out by the tracker, one session each, so a device farm is used in parallel.
- **adb**: ``TVM_NNAPI_ADB_SERIALS=serial[,serial...]`` (or ``ANDROID_SERIAL``). Worker *i*
  uses serial *i mod n*; the files of an Android build (``scripts/build_android.sh``: TVM's
  ``tvm_rpc`` and its libraries) are pushed to the phone, a server is started on device port
  ``TVM_NNAPI_DEVICE_RPC_PORT + i`` (default 9090 + i, so workers sharing a phone get their own
  server) and forwarded to a free local port.

Cross-compilation: ``llvm -mtriple=<triple>`` for the ABI (``TVM_NNAPI_ANDROID_ABI``,
arm64-v8a by default; adb mode reads ``ro.product.cpu.abi``), linked with the NDK's clang
(``TVM_NDK_CC``, else derived from ``ANDROID_NDK_HOME``/``ANDROID_NDK_ROOT`` and
``TVM_NNAPI_ANDROID_API``).

Everything that needs no phone (parsing, assignment, command lines, retry loops) takes its
environment, adb device, clock and sleep as parameters, so tests drive it with fakes.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..errors import TargetUnavailableError

#: Android ABI -> LLVM target triple (the NDK's clang prefixes use the same triples).
ABI_TRIPLES = {
    "arm64-v8a": "aarch64-linux-android",
    "x86_64": "x86_64-linux-android",
}
DEFAULT_ABI = "arm64-v8a"
#: NNAPI device enumeration (feature level 3) needs Android 10 (API 29).
DEFAULT_API_LEVEL = 29
DEFAULT_DEVICE_PORT = 9090
#: Where the adb path puts the TVM RPC server and its libraries on the phone.
DEVICE_DIRECTORY = "/data/local/tmp/tvm_nnapi"
#: The runtime library that a remote session loads (built by scripts/build_android.sh).
RUNTIME_LIBRARY = "libtvm_nnapi_runtime.so"

T = TypeVar("T")


# ---- which device a worker uses ---------------------------------------------------------------


def worker_slot(env: Mapping[str, str]) -> tuple[int, int]:
    """(index, count) of this pytest-xdist worker; (0, 1) without xdist."""
    worker = env.get("PYTEST_XDIST_WORKER", "")
    count = int(env.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if worker.startswith("gw") and worker[2:].isdigit():
        return int(worker[2:]), max(count, 1)
    return 0, 1


def split_list(value: str | None) -> list[str]:
    """Items of a comma- or whitespace-separated list, in order, without empties."""
    return [item for item in (value or "").replace(",", " ").split() if item]


@dataclass(frozen=True)
class TrackerDevice:
    """A phone requested from a TVM RPC tracker under ``key``."""

    host: str
    port: int
    key: str

    def describe(self) -> str:
        return f"tracker {self.host}:{self.port} key {self.key}"


@dataclass(frozen=True)
class AdbDevice:
    """A phone reached with adb; the worker's RPC server listens on ``device_port``."""

    serial: str
    device_port: int

    def describe(self) -> str:
        return f"adb {self.serial} port {self.device_port}"


NO_DEVICE_MESSAGE = (
    "no phone configured: use either a TVM RPC tracker with phones registered "
    "(set TVM_TRACKER_HOST, TVM_TRACKER_PORT and RPC_DEVICE_KEY=key[,key...]) or phones on adb "
    "(set TVM_NNAPI_ADB_SERIALS=serial[,serial...], see `adb devices`); docs/targets.md"
)


def choose_device(env: Mapping[str, str], worker_index: int = 0) -> TrackerDevice | AdbDevice:
    """The device of worker ``worker_index`` under the configuration in ``env``."""
    tracker_names = ("TVM_TRACKER_HOST", "TVM_TRACKER_PORT", "RPC_DEVICE_KEY")
    given = [name for name in tracker_names if env.get(name)]
    if given:
        missing = [name for name in tracker_names if not env.get(name)]
        if missing:
            raise TargetUnavailableError(
                f"{', '.join(given)} set but {', '.join(missing)} missing: the tracker path "
                "needs all of TVM_TRACKER_HOST, TVM_TRACKER_PORT and RPC_DEVICE_KEY"
            )
        try:
            port = int(env["TVM_TRACKER_PORT"])
        except ValueError:
            raise TargetUnavailableError(
                f"TVM_TRACKER_PORT={env['TVM_TRACKER_PORT']!r} is not a port number"
            ) from None
        keys = split_list(env["RPC_DEVICE_KEY"])
        return TrackerDevice(env["TVM_TRACKER_HOST"], port, keys[worker_index % len(keys)])
    serials = split_list(env.get("TVM_NNAPI_ADB_SERIALS") or env.get("ANDROID_SERIAL"))
    if serials:
        base = env.get("TVM_NNAPI_DEVICE_RPC_PORT", str(DEFAULT_DEVICE_PORT))
        if not base.isdigit():
            raise TargetUnavailableError(f"TVM_NNAPI_DEVICE_RPC_PORT={base!r} is not a port number")
        return AdbDevice(serials[worker_index % len(serials)], int(base) + worker_index)
    raise TargetUnavailableError(NO_DEVICE_MESSAGE)


# ---- cross-compilation ------------------------------------------------------------------------


def check_abi(abi: str) -> str:
    if abi not in ABI_TRIPLES:
        raise TargetUnavailableError(
            f"Android ABI {abi!r} is not supported; use one of {', '.join(ABI_TRIPLES)} "
            "(TVM_NNAPI_ANDROID_ABI)"
        )
    return abi


def llvm_target(triple: str) -> str:
    """The TVM target of host code for an LLVM ``triple``, in the JSON form TVM 0.27 parses
    (it rejects the command-line form ``llvm -mtriple=...``)."""
    return json.dumps({"kind": "llvm", "mtriple": triple})


def compile_target(abi: str) -> str:
    """The TVM target of host code for ``abi``."""
    return llvm_target(ABI_TRIPLES[check_abi(abi)])


def ndk_host_tag() -> str:
    system = platform.system().lower()
    return f"{'darwin' if system == 'darwin' else 'linux'}-x86_64"


def ndk_compiler(
    abi: str, env: Mapping[str, str], exists: Callable[[str], bool] = os.path.exists
) -> str:
    """The NDK clang++ that links modules for ``abi`` (what TVM's ``ndk.create_shared`` runs,
    through ``TVM_NDK_CC``)."""
    check_abi(abi)
    explicit = env.get("TVM_NDK_CC")
    if explicit:
        if os.sep in explicit and not exists(explicit):
            raise TargetUnavailableError(f"TVM_NDK_CC={explicit} does not exist")
        return explicit
    ndk = env.get("ANDROID_NDK_HOME") or env.get("ANDROID_NDK_ROOT")
    if not ndk:
        raise TargetUnavailableError(
            "cross-compiling for Android needs the NDK: set ANDROID_NDK_HOME to an Android NDK "
            "(r23 or newer) or TVM_NDK_CC to its <triple><api>-clang++"
        )
    api = env.get("TVM_NNAPI_ANDROID_API", str(DEFAULT_API_LEVEL))
    compiler = (
        Path(ndk)
        / "toolchains/llvm/prebuilt"
        / ndk_host_tag()
        / "bin"
        / f"{ABI_TRIPLES[abi]}{api}-clang++"
    )
    if not exists(str(compiler)):
        raise TargetUnavailableError(
            f"{compiler} does not exist: ANDROID_NDK_HOME={ndk} is not an NDK with API {api} "
            "compilers (set TVM_NNAPI_ANDROID_API or TVM_NDK_CC)"
        )
    return str(compiler)


def android_runtime_library(abi: str, env: Mapping[str, str], root: Path) -> Path:
    """The runtime library built for ``abi`` (``TVM_NNAPI_ANDROID_RUNTIME``, else the output of
    ``scripts/build_android.sh ABI`` under ``root``)."""
    explicit = env.get("TVM_NNAPI_ANDROID_RUNTIME")
    path = (
        Path(explicit) if explicit else android_build_dir(abi, env, root) / "lib" / RUNTIME_LIBRARY
    )
    if not path.is_file():
        raise TargetUnavailableError(
            f"{path} does not exist: build the runtime for Android with "
            f"`scripts/build_android.sh {abi}` or set TVM_NNAPI_ANDROID_RUNTIME to the library"
        )
    return path


def android_build_dir(abi: str, env: Mapping[str, str], root: Path) -> Path:
    """Install directory of ``scripts/build_android.sh ABI`` (``TVM_NNAPI_ANDROID_BUILD_DIR``)."""
    explicit = env.get("TVM_NNAPI_ANDROID_BUILD_DIR")
    return Path(explicit) if explicit else root / "build" / "android" / abi / "install"


# ---- retries ----------------------------------------------------------------------------------


def wait_until(
    attempt: Callable[[], T | None],
    *,
    what: str,
    timeout: float,
    interval: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    progress: Callable[[str], None] | None = None,
) -> T:
    """Calls ``attempt`` until it returns a value other than None, at most for ``timeout``
    seconds, ``interval`` apart. Exceptions count as "not yet" (their last message is in the
    TimeoutError). Returns the value."""
    deadline = clock() + timeout
    last = "no attempt made"
    tries = 0
    while True:
        tries += 1
        try:
            value = attempt()
            if value is not None:
                return value
            last = "not ready"
        except Exception as error:  # not ready yet: adb offline, connection refused, ...
            last = f"{type(error).__name__}: {error}"
        remaining = deadline - clock()
        if remaining <= 0:
            raise TimeoutError(
                f"{what}: not ready after {timeout:g} s ({tries} tries; last: {last})"
            )
        if progress is not None:
            progress(f"waiting for {what} ({last})")
        sleep(min(interval, remaining))


def free_local_port() -> int:
    """A TCP port free on the loopback interface now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ---- a TVM RPC server on a phone, over adb ----------------------------------------------------


class AdbRpcServer:
    """Pushes an Android build of TVM's RPC server to a phone, starts it on ``device_port`` and
    forwards ``local_port`` on this host to it (adb forward).

    ``device`` is an adbutils ``AdbDevice`` (or anything with ``shell``, ``sync.push`` and
    ``forward``); ``build_dir`` holds ``bin/tvm_rpc`` and ``lib/*.so`` (scripts/build_android.sh
    with ``--tvm-source``).
    """

    def __init__(
        self,
        device: Any,
        build_dir: Path,
        device_port: int,
        local_port: int,
        directory: str = DEVICE_DIRECTORY,
    ) -> None:
        self.device = device
        self.build_dir = Path(build_dir)
        self.device_port = device_port
        self.local_port = local_port
        self.directory = directory
        self.started = False

    def files(self) -> list[tuple[Path, str]]:
        """(local file, device path) pairs to push."""
        server = self.build_dir / "bin" / "tvm_rpc"
        if not server.is_file():
            raise TargetUnavailableError(
                f"{server} does not exist: the adb path needs TVM's RPC server built for Android; "
                "run scripts/build_android.sh ABI --tvm-source DIR (a TVM source tree) or set "
                "TVM_NNAPI_ANDROID_BUILD_DIR to a directory with bin/tvm_rpc and lib/*.so"
            )
        libraries = sorted((self.build_dir / "lib").glob("*.so"))
        pushed = [(server, f"{self.directory}/tvm_rpc")]
        pushed += [(library, f"{self.directory}/{library.name}") for library in libraries]
        return pushed

    @property
    def pid_file(self) -> str:
        return f"{self.directory}/rpc-{self.device_port}.pid"

    def server_command(self) -> str:
        """The shell command that starts the server in the background and records its pid."""
        d = shlex.quote(self.directory)
        work = shlex.quote(f"{self.directory}/work-{self.device_port}")
        log = shlex.quote(f"{self.directory}/rpc-{self.device_port}.log")
        return (
            f"mkdir -p {work} && cd {d} && LD_LIBRARY_PATH={d} nohup ./tvm_rpc server "
            f"--host=127.0.0.1 --port={self.device_port} --port-end={self.device_port + 1} "
            f"--work-dir={work} > {log} 2>&1 < /dev/null & echo $! > {shlex.quote(self.pid_file)}"
        )

    def stop_command(self) -> str:
        pid = shlex.quote(self.pid_file)
        return f"if [ -f {pid} ]; then kill $(cat {pid}) 2>/dev/null; rm -f {pid}; fi"

    def start(self, progress: Callable[[str], None] | None = None) -> None:
        files = self.files()
        self.device.shell(f"mkdir -p {shlex.quote(self.directory)}")
        for local, remote in files:
            if progress is not None:
                progress(f"adb push {local.name} -> {remote}")
            self.device.sync.push(str(local), remote)
        self.device.shell(f"chmod 755 {shlex.quote(self.directory)}/tvm_rpc")
        self.device.shell(self.stop_command())  # a server left by an interrupted run
        self.device.shell(self.server_command())
        self.device.forward(f"tcp:{self.local_port}", f"tcp:{self.device_port}")
        self.started = True

    def stop(self) -> None:
        if not self.started:
            return
        self.started = False
        self.device.shell(self.stop_command())
        remove = getattr(self.device, "forward_remove", None)
        if remove is not None:
            remove(f"tcp:{self.local_port}")


def adb_command(serial: str, *arguments: str, adb: str = "adb") -> list[str]:
    """An adb command line for one device (for logs and subprocess fallbacks)."""
    return [adb, "-s", serial, *arguments]


def describe_env(names: Sequence[str], env: Mapping[str, str]) -> str:
    """``NAME=value`` for the names set in ``env`` (for messages)."""
    return ", ".join(f"{name}={env[name]}" for name in names if env.get(name)) or "none set"
