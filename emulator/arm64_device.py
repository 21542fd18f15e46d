# SPDX-License-Identifier: Apache-2.0
"""An emulated ARM64 Linux device for the ``device`` test target (``tox -e arm64``).

    python emulator/arm64_device.py [all|prepare|c-programs|test|mock-tests|sizes] [options]
                                    [-- PYTEST ARGS]

PYTEST ARGS default to the device-target suite (tests/backend/test_ops.py,
tests/backend/test_models_on_target.py, tests/mock_ops) for
``test``, and to the mock's tests for ``mock-tests``.

What it does (docs/targets.md, "The arm64 target"):

1. **prepare**: installs the host tools if they are missing (Debian packages qemu-user-static,
   binfmt-support, debootstrap, g++-aarch64-linux-gnu; as root with apt-get), mounts
   ``binfmt_misc`` and enables the qemu-aarch64 interpreter, so aarch64 programs run
   transparently; debootstraps an arm64 Debian bookworm userland with its Python 3.11; installs
   the aarch64 wheels the device side needs (apache-tvm, apache-tvm-ffi, numpy, scipy-openblas32
   at the host's versions; psutil, cloudpickle; scipy and jsonschema for the mock's tests;
   downloaded and unpacked on the host by pip with the wheel tags of the device); and
   cross-compiles the mock ``libneuralnetworks.so``, the runtime library and
   ``runtime_leak_check`` for aarch64 with ``scripts/cross_build.sh`` and
   ``cmake/toolchains/aarch64-linux-gnu.cmake`` (the path the Android build shares), and the C
   programs of ``tests/c``. Everything is cached (``--cache``, default
   ``~/.cache/tvm-nnapi/arm64``) and reused when unchanged.
2. **c-programs**: runs ``tests/c``'s ``run_add``, ``api_tour`` and ``runtime_leak_check`` on the
   device and checks their output.
3. **test**: starts a TVM RPC tracker on this host and one TVM RPC server per worker inside the
   userland (chroot, loopback network), runs pytest with ``--target device`` against them
   (modules cross-compiled for ``llvm -mtriple=aarch64-linux-gnu``, linked with the cross
   compiler, uploaded and run on the aarch64 mock; the runtime library uploaded and loaded as on
   a phone), then checks the differential report: every operation output must match the x86
   mock's within the operation tests' tolerance, and ``tvm-nnapi compare-reports`` against the
   mock's report (run here, or ``--baseline``) must find no regression.
4. **mock-tests**: the mock's own tests (tests/mock_api, tests/mock_ops, tests/mock_profiles; no
   TVM, like ``tox -e sanitize``) run natively on the device with pytest from this source
   tree mounted there, against the aarch64 mock; their report is compared with the x86 mock's.

The device runs programs through qemu user-mode emulation as CPU ``--cpu`` (default
``cortex-a76``, a phone core; qemu's default ``max`` CPU advertises SME, and OpenBLAS's SME
kernels return wrong GEMM results under this qemu). Needs root (debootstrap, chroot, mounts).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SUITE = "bookworm"
#: Debian packages of the userland beyond minbase (Python 3.11 is bookworm's python3).
ROOTFS_PACKAGES = ("python3",)
#: Debian packages this host needs, by the command that shows they are installed.
HOST_PACKAGES = {
    "debootstrap": "debootstrap",
    "qemu-aarch64-static": "qemu-user-static",
    "update-binfmts": "binfmt-support",
    "aarch64-linux-gnu-g++": "g++-aarch64-linux-gnu",
    "unshare": "util-linux",
}
CROSS_PREFIX = "aarch64-linux-gnu-"
TRIPLE = "aarch64-linux-gnu"
#: Where the device's files (wheels unpacked, cross-built libraries, programs) appear inside the
#: userland: a bind mount of <cache>/device.
DEVICE_DIR = "/opt/tvm-nnapi"
DEVICE_SITE = f"{DEVICE_DIR}/site-packages"
DEVICE_LIB = f"{DEVICE_DIR}/lib"
DEVICE_BIN = f"{DEVICE_DIR}/bin"
#: Wheel tags of the device (bookworm has glibc 2.36).
PLATFORMS = tuple(
    f"{tag}_aarch64"
    for tag in (
        "manylinux_2_36",
        "manylinux_2_28",
        "manylinux_2_27",
        "manylinux_2_24",
        "manylinux_2_17",
        "manylinux2014",
    )
)
#: Distributions pinned to the host's version (the device runs the same TVM, tvm-ffi, numpy and
#: OpenBLAS as the host it is compared with); the others only need to exist.
PINNED = ("apache-tvm", "apache-tvm-ffi", "numpy", "scipy-openblas32")
UNPINNED = ("psutil", "cloudpickle")
#: What the mock's own test suite needs on the device: calibration's solver (scipy) and the
#: profile schema (jsonschema), then the test runner (pure Python wheels).
MOCK_TEST_DEPENDENCIES = ("scipy", "jsonschema")
#: What the mock's own test suite needs on the device (pure Python wheels).
TEST_TOOLS = ("pytest", "pytest-xdist", "hypothesis")
#: The mock's own tests, run natively on the device (no TVM: like tox -e sanitize).
MOCK_TESTS = ("tests/mock_api", "tests/mock_ops", "tests/mock_profiles")
#: Where this source tree appears inside the userland for them.
DEVICE_SOURCE = "/opt/tvm-nnapi-src"
#: The device-target suite: operators, whole models and the runtime's features, NNAPI operations.
DEFAULT_TESTS = (
    "tests/backend/test_ops.py",
    "tests/backend/test_models_on_target.py",
    "tests/mock_ops",
)
DEFAULT_CPU = "cortex-a76"
RPC_KEY = "arm64"


class DeviceUnavailableError(RuntimeError):
    """The emulated device cannot be prepared here; the message says what to do."""


class CheckFailedError(RuntimeError):
    """A check on the device failed; the message says which and how."""


def log(message: str) -> None:
    print(f"arm64: {message}", flush=True)


# ---- layout ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """The cache: the Debian userland, the wheels, the cross build and the device's files."""

    cache: Path

    @property
    def rootfs(self) -> Path:
        return self.cache / "rootfs"

    @property
    def wheels(self) -> Path:
        return self.cache / "wheels"

    @property
    def build(self) -> Path:
        return self.cache / "build"

    @property
    def device(self) -> Path:
        return self.cache / "device"

    @property
    def site(self) -> Path:
        return self.device / "site-packages"

    @property
    def lib(self) -> Path:
        return self.device / "lib"

    @property
    def bin(self) -> Path:
        return self.device / "bin"

    @property
    def runtime_library(self) -> Path:
        """The runtime library the tests upload (the same file as the device's lib/ copy)."""
        return self.lib / "libtvm_nnapi_runtime.so"


def default_cache(env: Mapping[str, str]) -> Path:
    explicit = env.get("TVM_NNAPI_ARM64_CACHE")
    if explicit:
        return Path(explicit)
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache")
    return Path(base) / "tvm-nnapi" / "arm64"


def rootfs_stamp(mirror: str) -> str:
    """What a cached userland was made from; a different one is rebuilt."""
    return (
        f"debootstrap --arch=arm64 --variant=minbase {SUITE} {mirror} +{','.join(ROOTFS_PACKAGES)}"
    )


# ---- commands on the device ------------------------------------------------------------------


def device_env(cpu: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a program on the device (nothing inherited from this host)."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "QEMU_CPU": cpu,
        "PYTHONPATH": DEVICE_SITE,
        "PYTHONDONTWRITEBYTECODE": "1",
        "LD_LIBRARY_PATH": ":".join(
            [DEVICE_LIB, f"{DEVICE_SITE}/tvm_ffi/lib", f"{DEVICE_SITE}/scipy_openblas32/lib"]
        ),
        "TVM_NNAPI_LIBRARY": f"{DEVICE_LIB}/libneuralnetworks.so",
    }
    env.update(extra or {})
    return env


def device_command(
    layout: Layout,
    argv: Sequence[str],
    unshare: str = "unshare",
    chroot: str = "chroot",
    source: Path | None = None,
) -> list[str]:
    """Runs ``argv`` inside the userland: a private mount namespace (the mounts disappear with
    the process) with /proc, /dev and the device's files mounted (and with ``source``, this
    source tree at DEVICE_SOURCE), then chroot."""
    root = shlex.quote(str(layout.rootfs))
    mounts = [
        f"mount -t proc proc {root}/proc",
        f"mount --rbind /dev {root}/dev",
        f"mkdir -p {root}{DEVICE_DIR}",
        f"mount --bind {shlex.quote(str(layout.device))} {root}{DEVICE_DIR}",
    ]
    if source is not None:
        mounts += [
            f"mkdir -p {root}{DEVICE_SOURCE}",
            f"mount --bind {shlex.quote(str(source))} {root}{DEVICE_SOURCE}",
        ]
    script = " && ".join(mounts) + f" && exec {shlex.quote(chroot)} {root} {shlex.join(argv)}"
    return [unshare, "--mount", "--propagation", "private", "/bin/sh", "-c", script]


def run_on_device(
    layout: Layout,
    argv: Sequence[str],
    cpu: str,
    extra_env: Mapping[str, str] | None = None,
    source: Path | None = None,
    capture: bool = True,
    timeout: float = 600,
) -> subprocess.CompletedProcess:
    return subprocess.run(
        device_command(layout, argv, host_tool("unshare"), host_tool("chroot"), source),
        env=device_env(cpu, extra_env),
        capture_output=capture,
        text=True,
        timeout=timeout,
    )


# ---- host tools ------------------------------------------------------------------------------


def host_tool(name: str) -> str:
    for directory in ("/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        candidate = Path(directory) / name
        if candidate.is_file():
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise DeviceUnavailableError(f"{name} not found on this host")
    return found


def find_command(name: str) -> str | None:
    """``name`` on PATH or in the sbin directories (root's tools when PATH lacks them)."""
    found = shutil.which(name)
    if found is None:
        found = next(
            (str(Path(d) / name) for d in ("/usr/sbin", "/sbin") if (Path(d) / name).is_file()),
            None,
        )
    return found


def missing_host_packages(find: Callable[[str], str | None] = find_command) -> list[str]:
    """Debian packages to install for the commands that are missing."""
    missing = []
    for command, package in HOST_PACKAGES.items():
        if find(command) is None and package not in missing:
            missing.append(package)
    return missing


def install_host_packages(packages: Sequence[str]) -> None:
    if not packages:
        return
    command = ["apt-get", "install", "-y", "--no-install-recommends", *packages]
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise DeviceUnavailableError(
            f"missing host packages {', '.join(packages)}: install them (as root: "
            f"{shlex.join(command)})"
        )
    log(f"installing {', '.join(packages)} with apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run([*command, "-qq"], check=True, env=env, stdout=subprocess.DEVNULL)


@dataclass(frozen=True)
class BinfmtEntry:
    enabled: bool
    interpreter: str
    flags: str


def parse_binfmt(text: str) -> BinfmtEntry:
    """A /proc/sys/fs/binfmt_misc entry (``enabled``, ``interpreter ...``, ``flags: ...``)."""
    lines = [line.strip() for line in text.splitlines()]
    interpreter = next(
        (line.split(None, 1)[1] for line in lines if line.startswith("interpreter ")), ""
    )
    flags = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("flags:")), "")
    return BinfmtEntry("enabled" in lines, interpreter, flags)


BINFMT = Path("/proc/sys/fs/binfmt_misc")


def ensure_binfmt() -> BinfmtEntry:
    """Mounts binfmt_misc if needed and enables qemu-aarch64 (binfmt-support's registration)."""
    if not (BINFMT / "register").exists():
        subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)], check=True)
    entry = BINFMT / "qemu-aarch64"
    if not entry.exists() or not parse_binfmt(entry.read_text()).enabled:
        subprocess.run([host_tool("update-binfmts"), "--enable", "qemu-aarch64"], check=True)
    if not entry.exists():
        raise DeviceUnavailableError(
            f"{entry} is not registered after update-binfmts --enable qemu-aarch64: "
            "reinstall qemu-user-static and binfmt-support"
        )
    parsed = parse_binfmt(entry.read_text())
    if not parsed.enabled:
        raise DeviceUnavailableError(f"{entry} stays disabled: echo 1 > {entry} as root")
    return parsed


def check_host(env: Mapping[str, str]) -> None:
    if os.geteuid() != 0:
        raise DeviceUnavailableError(
            "the emulated ARM64 device needs root (debootstrap, chroot, mounts in a private "
            "namespace, binfmt_misc): run as root, e.g. in CI or a privileged container"
        )
    if sys.platform != "linux":
        raise DeviceUnavailableError("the emulated ARM64 device needs a Linux host")
    install_host_packages(missing_host_packages())


# ---- the userland ----------------------------------------------------------------------------


def ensure_rootfs(layout: Layout, mirror: str, binfmt: BinfmtEntry) -> None:
    """Debootstraps the arm64 userland unless the cached one was made the same way."""
    stamp_file = layout.rootfs / ".tvm-nnapi-rootfs"
    wanted = rootfs_stamp(mirror)
    if stamp_file.is_file() and stamp_file.read_text().strip() == wanted:
        log(f"userland: cached in {layout.rootfs}")
    else:
        staging = layout.cache / "rootfs.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        log(f"userland: debootstrap {SUITE} arm64 from {mirror} into {layout.rootfs}")
        started = time.monotonic()
        subprocess.run(
            [
                host_tool("debootstrap"),
                "--arch=arm64",
                "--variant=minbase",
                f"--include={','.join(ROOTFS_PACKAGES)}",
                SUITE,
                str(staging),
                mirror,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        (staging / ".tvm-nnapi-rootfs").write_text(wanted + "\n")
        shutil.rmtree(layout.rootfs, ignore_errors=True)
        staging.rename(layout.rootfs)
        log(f"userland: ready in {time.monotonic() - started:.0f} s")
    if "F" not in binfmt.flags:
        # Without the F flag the kernel opens the interpreter inside the chroot.
        target = layout.rootfs / binfmt.interpreter.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(binfmt.interpreter, target)


def host_version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise DeviceUnavailableError(
            f"{distribution} is not installed in this Python ({sys.executable}): the device "
            "gets the host's version; pip install 'tvm-nnapi[test]' first"
        ) from None


def device_requirements(version: Callable[[str], str] = host_version) -> list[str]:
    return (
        [f"{name}=={version(name)}" for name in PINNED]
        + list(UNPINNED)
        + list(MOCK_TEST_DEPENDENCIES)
        + list(TEST_TOOLS)
    )


def pip_platform_options() -> list[str]:
    options = []
    for platform in PLATFORMS:
        options += ["--platform", platform]
    return [*options, "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311"]


def ensure_wheels(layout: Layout) -> None:
    """Downloads the device's wheels and unpacks them into the device's site-packages (pip on
    this host, with the device's wheel tags: nothing runs under emulation)."""
    requirements = device_requirements()
    stamp_file = layout.site / ".tvm-nnapi-requirements"
    wanted = "\n".join(requirements)
    if stamp_file.is_file() and stamp_file.read_text().strip() == wanted:
        log(f"wheels: cached in {layout.site}")
        return
    log(f"wheels: {' '.join(requirements)} for aarch64")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    platform = pip_platform_options()
    download = [*pip, "download", "--quiet", "--only-binary=:all:", *platform]
    subprocess.run([*download, "-d", str(layout.wheels), *requirements], check=True)
    shutil.rmtree(layout.site, ignore_errors=True)
    install = [*pip, "install", "--quiet", "--no-index", "--find-links", str(layout.wheels)]
    install += ["--only-binary=:all:", *platform, "--target", str(layout.site), "--no-compile"]
    subprocess.run([*install, *requirements], check=True)
    stamp_file.write_text(wanted + "\n")


def cross_build_command(layout: Layout) -> list[str]:
    return [
        "bash",
        str(ROOT / "scripts" / "cross_build.sh"),
        "--toolchain",
        str(ROOT / "cmake" / "toolchains" / f"{TRIPLE}.cmake"),
        "--build-dir",
        str(layout.build),
        "--tvm-ffi-root",
        str(layout.site / "tvm_ffi"),
        "--openblas",
        str(layout.site / "scipy_openblas32"),
        "--tests",
    ]


def c_program_command(layout: Layout, program: str) -> list[str]:
    """tests/c/<program>.c linked with -lneuralnetworks against the aarch64 mock (the flags of
    tests/mock_api/test_c_program.py)."""
    return [
        f"{CROSS_PREFIX}gcc",
        "-std=c99",
        "-Wall",
        "-Wextra",
        "-Werror",
        f"-I{ROOT / 'mock_nnapi' / 'include'}",
        str(ROOT / "tests" / "c" / f"{program}.c"),
        f"-L{layout.lib}",
        "-lneuralnetworks",
        f"-Wl,-rpath-link,{layout.site / 'scipy_openblas32' / 'lib'}",
        f"-Wl,-rpath,{DEVICE_LIB}",
        "-o",
        str(layout.bin / program),
    ]


def start_cross_build(layout: Layout) -> tuple[subprocess.Popen, Path]:
    layout.build.mkdir(parents=True, exist_ok=True)
    output = layout.build / "cross_build.log"
    log(f"cross build: scripts/cross_build.sh for {TRIPLE} (log: {output})")
    with output.open("w") as stream:
        process = subprocess.Popen(
            cross_build_command(layout),
            stdout=stream,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHON=sys.executable),
            cwd=ROOT,
        )
    return process, output


def replace_file(source: Path, destination: Path) -> None:
    """Copies by renaming a temporary copy: a process still mapping the old file keeps it."""
    temporary = destination.with_name(destination.name + ".tmp")
    shutil.copy2(source, temporary)
    os.replace(temporary, destination)


def finish_cross_build(layout: Layout, process: subprocess.Popen, output: Path) -> None:
    if process.wait() != 0:
        tail = "\n".join(output.read_text().splitlines()[-30:])
        raise CheckFailedError(f"the cross build failed (exit {process.returncode}):\n{tail}")
    layout.lib.mkdir(parents=True, exist_ok=True)
    layout.bin.mkdir(parents=True, exist_ok=True)
    install = layout.build / "install"
    for name in ("libtvm_nnapi_runtime.so", "libneuralnetworks.so"):
        replace_file(install / "lib" / name, layout.lib / name)
    replace_file(install / "bin" / "runtime_leak_check", layout.bin / "runtime_leak_check")
    for program in ("run_add", "api_tour"):
        built = subprocess.run(c_program_command(layout, program), capture_output=True, text=True)
        if built.returncode != 0:
            raise CheckFailedError(
                f"tests/c/{program}.c does not build for aarch64:\n{built.stderr}"
            )
    log("cross build: done")


def prepare(layout: Layout, mirror: str, env: Mapping[str, str]) -> None:
    check_host(env)
    binfmt = ensure_binfmt()
    layout.cache.mkdir(parents=True, exist_ok=True)
    ensure_wheels(layout)
    # The cross build runs on this host while debootstrap's second stage runs under emulation.
    process, output = start_cross_build(layout)
    try:
        ensure_rootfs(layout, mirror, binfmt)
    except BaseException:
        process.terminate()
        process.wait()
        raise
    finish_cross_build(layout, process, output)
    check_python(layout, DEFAULT_CPU)


def check_python(layout: Layout, cpu: str) -> None:
    ran = run_on_device(
        layout,
        ["python3", "-c", "import platform, tvm; print(platform.machine(), tvm.__version__)"],
        cpu,
        {"TVM_USE_RUNTIME_LIB": "1"},
    )
    if ran.returncode != 0 or not ran.stdout.startswith("aarch64 "):
        raise CheckFailedError(
            f"python3 on the device does not import tvm (exit {ran.returncode}): "
            f"{ran.stdout}{ran.stderr}"
        )
    log(f"device: python3 runs as {ran.stdout.strip()} (qemu CPU {cpu})")


# ---- C programs ------------------------------------------------------------------------------


def check_c_programs(layout: Layout, cpu: str) -> None:
    """tests/c on the device: the same expectations as tests/mock_api/test_c_program.py and
    scripts/run_sanitized.sh's runtime_leak_check."""
    ran = run_on_device(layout, [f"{DEVICE_BIN}/run_add"], cpu)
    if ran.returncode != 0 or ran.stdout.split() != ["11", "22", "33", "44"]:
        raise CheckFailedError(f"run_add on the device: exit {ran.returncode}, {ran.stdout!r}")
    cache = "/tmp/tvm-nnapi-api-tour-cache"
    ran = run_on_device(
        layout,
        [
            "/bin/sh",
            "-c",
            f"rm -rf {cache} && mkdir {cache} && {DEVICE_BIN}/api_tour {cache} && ls {cache}",
        ],
        cpu,
    )
    lines = ran.stdout.split()
    if ran.returncode != 0 or not lines or lines[0] != "ok" or len(lines) != 2:
        raise CheckFailedError(
            f"api_tour on the device: exit {ran.returncode}, output {ran.stdout!r} (expected ok "
            f"and one compilation cache file), {ran.stderr}"
        )
    ran = run_on_device(layout, [f"{DEVICE_BIN}/runtime_leak_check"], cpu)
    if ran.returncode != 0 or "all checks passed" not in ran.stdout:
        raise CheckFailedError(
            f"runtime_leak_check on the device: exit {ran.returncode}: {ran.stdout}{ran.stderr}"
        )
    log("C programs: run_add, api_tour and runtime_leak_check pass on the device")


# ---- the mock's own tests on the device ---------------------------------------------------------


def mock_tests_command(workers: int, tests: Sequence[str]) -> list[str]:
    """pytest of the mock's tests on the device, from the source tree mounted there."""
    command = ["python3", "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    if workers > 1:
        command += ["-n", str(workers)]
    pytest = shlex.join([*command, *tests])
    return ["/bin/sh", "-c", f"cd {DEVICE_SOURCE} && exec {pytest}"]


def run_mock_tests(
    layout: Layout,
    workers: int,
    cpu: str,
    tests: Sequence[str],
    report: Path,
    baseline: Path | None,
) -> None:
    """The mock's C API, operation and profile tests natively on the device, against the aarch64
    mock (the Python side loads it through TVM_NNAPI_LIBRARY); their report is compared with
    the x86 mock's."""
    reports = layout.device / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    device_report = f"{DEVICE_DIR}/reports/{report.name}"
    env = {
        "PYTHONPATH": f"{DEVICE_SITE}:{DEVICE_SOURCE}/mock_nnapi/python",
        "TVM_NNAPI_DIFFTEST_REPORT": device_report,
        # The calibration tests import tvm_nnapi from the source tree: its runtime library is
        # the cross build's, not a packaged one.
        "TVM_NNAPI_RUNTIME_LIBRARY": f"{DEVICE_LIB}/libtvm_nnapi_runtime.so",
    }
    started = time.monotonic()
    ran = run_on_device(
        layout, mock_tests_command(workers, tests), cpu, env, ROOT, capture=False, timeout=3600
    )
    log(f"mock tests on the device: exit {ran.returncode} in {time.monotonic() - started:.0f} s")
    if ran.returncode != 0:
        raise CheckFailedError(f"the mock's tests fail on the device (exit {ran.returncode})")
    report.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(reports / report.name, report)
    if baseline is not None:
        compared = subprocess.run(compare_reports_command(baseline, report, True), cwd=ROOT)
        if compared.returncode != 0:
            raise CheckFailedError(
                f"compare-reports found differences between {baseline} and {report}"
            )


# ---- RPC servers and the test run ------------------------------------------------------------


class DeviceServers:
    """A TVM RPC tracker on this host and ``count`` TVM RPC servers on the device registered
    under RPC_KEY (plain servers, runtime-only TVM, the mock selected by TVM_NNAPI_LIBRARY: the
    target uploads and loads the runtime library itself, as on a phone)."""

    def __init__(self, layout: Layout, count: int, cpu: str, log_dir: Path) -> None:
        from tvm.rpc.tracker import Tracker

        self.tracker = Tracker(host="127.0.0.1", port=9190, port_end=9290, silent=True)
        self.processes: list[subprocess.Popen] = []
        log_dir.mkdir(parents=True, exist_ok=True)
        for index in range(count):
            argv = [
                "python3",
                "-m",
                "tvm.exec.rpc_server",
                "--host=127.0.0.1",
                f"--port={9600 + 20 * index}",
                f"--port-end={9620 + 20 * index}",
                f"--tracker=127.0.0.1:{self.tracker.port}",
                f"--key={RPC_KEY}",
            ]
            with (log_dir / f"arm64-rpc-server-{index}.log").open("w") as stream:
                self.processes.append(
                    subprocess.Popen(
                        device_command(layout, argv, host_tool("unshare"), host_tool("chroot")),
                        env=device_env(cpu, {"TVM_USE_RUNTIME_LIB": "1"}),
                        stdout=stream,
                        stderr=subprocess.STDOUT,
                    )
                )
        self.count = count
        self.log_dir = log_dir

    def wait_until_registered(self, timeout: float = 300.0) -> None:
        from tvm import rpc

        deadline = time.monotonic() + timeout
        free = 0
        while time.monotonic() < deadline:
            for process in self.processes:
                if process.poll() is not None:
                    raise CheckFailedError(
                        f"an RPC server on the device exited ({process.returncode}); see "
                        f"{self.log_dir}/arm64-rpc-server-*.log"
                    )
            try:
                summary = rpc.connect_tracker("127.0.0.1", self.tracker.port).summary()
                free = int(summary["queue_info"].get(RPC_KEY, {}).get("free", 0))
            except Exception:  # the tracker is starting
                free = 0
            if free >= self.count:
                return
            time.sleep(2)
        raise CheckFailedError(
            f"{free} of {self.count} RPC servers registered with the tracker after {timeout:g} s; "
            f"see {self.log_dir}/arm64-rpc-server-*.log"
        )

    def stop(self) -> None:
        import psutil

        for process in self.processes:
            # TVM's server runs in a child (tvm.exec.popen_worker): stop the whole tree by pid.
            try:
                tree = psutil.Process(process.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                tree = []
            for child in [*tree, psutil.Process(process.pid)] if process.poll() is None else tree:
                try:
                    child.terminate()
                except psutil.NoSuchProcess:
                    pass
            psutil.wait_procs(tree, timeout=10)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        self.tracker.terminate()


def device_test_env(layout: Layout, tracker_port: int, report: Path) -> dict[str, str]:
    """The variables that point the ``device`` target (tests/targets.py) at the emulated
    device."""
    from tvm_nnapi.testing.android import llvm_target

    return {
        "TVM_TRACKER_HOST": "127.0.0.1",
        "TVM_TRACKER_PORT": str(tracker_port),
        "RPC_DEVICE_KEY": RPC_KEY,
        "TVM_NNAPI_DEVICE_COMPILE_TARGET": llvm_target(TRIPLE),
        "TVM_NDK_CC": f"{CROSS_PREFIX}g++",
        "TVM_NNAPI_ANDROID_RUNTIME": str(layout.runtime_library),
        "TVM_NNAPI_DIFFTEST_REPORT": str(report),
    }


def pytest_command(workers: int, target: str, tests: Sequence[str]) -> list[str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--target", target]
    if workers > 1:
        command += ["-n", str(workers)]
    return command + list(tests)


@dataclass
class MockAgreement:
    """How the device's operation outputs compare with the x86 mock's (the report's
    comparisons against the "local mock NNAPI")."""

    compared: int = 0
    identical: int = 0
    within: list[tuple[str, str, float]] | None = None
    beyond: list[tuple[str, str, float, int]] | None = None

    def describe(self) -> str:
        within = self.within or []
        largest = max((error for _, _, error in within), default=0.0)
        return (
            f"{self.compared} operation outputs compared with the x86 mock: {self.identical} "
            f"bit-identical, {len(within)} within the operation tests' tolerance (largest "
            f"absolute difference {largest:.3g}), {len(self.beyond or [])} beyond it"
        )


def mock_agreement(report: Mapping[str, Any]) -> MockAgreement:
    result = MockAgreement(within=[], beyond=[])
    for test in report.get("tests", []):
        for comparison in test.get("comparisons") or []:
            if comparison.get("reference") != "local mock NNAPI":
                continue
            result.compared += 1
            error = comparison.get("max_abs_error")
            error = float("inf") if error == "inf" else float(error or 0.0)
            label = comparison.get("label", "output")
            if not comparison.get("within_tolerance", False):
                result.beyond.append(
                    (test["nodeid"], label, error, int(comparison.get("mismatched", 0)))
                )
            elif error == 0.0:
                result.identical += 1
            else:
                result.within.append((test["nodeid"], label, error))
    return result


def compare_reports_command(baseline: Path, report: Path, common_only: bool) -> list[str]:
    executable = Path(sys.executable).with_name("tvm-nnapi")
    command = [str(executable) if executable.exists() else "tvm-nnapi", "compare-reports"]
    command += ["--common-only"] if common_only else ["--fail-on-missing"]
    return [*command, str(baseline), str(report)]


def run_tests(
    layout: Layout,
    workers: int,
    cpu: str,
    tests: Sequence[str],
    report: Path,
    baseline: Path | None,
) -> None:
    report.parent.mkdir(parents=True, exist_ok=True)
    if baseline is None:
        baseline = report.with_name(report.stem + "-mock.json")
        log(f"baseline: the same tests on the in-process mock -> {baseline}")
        env = dict(os.environ, TVM_NNAPI_DIFFTEST_REPORT=str(baseline))
        subprocess.run(pytest_command(workers, "mock", tests), cwd=ROOT, env=env, check=False)
        common_only = False
    else:
        common_only = True
    servers = DeviceServers(layout, workers, cpu, report.parent)
    try:
        servers.wait_until_registered()
        log(f"{workers} RPC server(s) on the device registered with the tracker")
        env = dict(os.environ, **device_test_env(layout, servers.tracker.port, report))
        started = time.monotonic()
        ran = subprocess.run(pytest_command(workers, "device", tests), cwd=ROOT, env=env)
        log(f"device tests: exit {ran.returncode} in {time.monotonic() - started:.0f} s")
    finally:
        servers.stop()
    if ran.returncode != 0:
        raise CheckFailedError(f"pytest --target device failed (exit {ran.returncode})")
    agreement = mock_agreement(json.loads(report.read_text()))
    log(agreement.describe())
    for nodeid, label, error in agreement.within or []:
        print(f"    within tolerance: {nodeid} {label}: {error:.3g}")
    if agreement.beyond:
        lines = [f"{n} {label}: {e:.3g} ({m} elements)" for n, label, e, m in agreement.beyond]
        raise CheckFailedError(
            "device outputs differ from the x86 mock beyond the tolerance:\n  " + "\n  ".join(lines)
        )
    compared = subprocess.run(compare_reports_command(baseline, report, common_only), cwd=ROOT)
    if compared.returncode != 0:
        raise CheckFailedError(f"compare-reports found differences between {baseline} and {report}")


# ---- sizes -----------------------------------------------------------------------------------


def directory_size(path: Path) -> int:
    total = 0
    for base, _, files in os.walk(path):
        for name in files:
            file = Path(base) / name
            if not file.is_symlink():
                total += file.stat().st_size
    return total


def describe_sizes(
    layout: Layout, parts: Iterable[str] = ("rootfs", "wheels", "build", "device")
) -> str:
    rows = []
    for part in parts:
        path = getattr(layout, part)
        size = directory_size(path) if path.exists() else 0
        rows.append(f"{part} {size / 2**20:.0f} MiB")
    return f"cache {layout.cache}: " + ", ".join(rows)


# ---- command line ----------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arm64_device.py",
        description="An emulated ARM64 Linux device (qemu user mode, Debian arm64 userland) "
        "for the device test target; docs/targets.md",
    )
    parser.add_argument(
        "step",
        nargs="?",
        default="all",
        choices=("all", "ci", "rootfs", "prepare", "c-programs", "test", "mock-tests", "sizes"),
        help="all (default): prepare, c-programs, test, mock-tests; ci: the same without "
        "mock-tests; rootfs: only the host tools and the userland (needs no Python packages, "
        "so CI starts it in the background early)",
    )
    parser.add_argument("--cache", type=Path, help="cache directory (TVM_NNAPI_ARM64_CACHE)")
    parser.add_argument(
        "--mirror",
        default=os.environ.get("TVM_NNAPI_DEBIAN_MIRROR", "http://deb.debian.org/debian"),
        help="Debian mirror for debootstrap (TVM_NNAPI_DEBIAN_MIRROR)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=int(os.environ.get("TVM_NNAPI_DEVICE_WORKERS", "2")),
        help="pytest-xdist workers, one RPC server on the device each (TVM_NNAPI_DEVICE_WORKERS)",
    )
    parser.add_argument(
        "--cpu",
        default=os.environ.get("TVM_NNAPI_ARM64_CPU", DEFAULT_CPU),
        help="the qemu CPU model of the device (QEMU_CPU; TVM_NNAPI_ARM64_CPU)",
    )
    parser.add_argument(
        "--report",
        type=Path,
        default=ROOT / "build" / "difftest" / "report-arm64.json",
        help="the device run's differential report",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="compare with this mock report (--common-only) instead of running the same tests "
        "on the mock first",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--") if "--" in argv else len(argv)
    args = build_parser().parse_args(argv[:split])
    args.pytest_args = argv[split + 1 :]  # after --: the tests to run (pytest arguments)
    layout = Layout((args.cache or default_cache(os.environ)).resolve())
    tests = args.pytest_args or list(DEFAULT_TESTS)
    if args.workers < 1:
        print("arm64: --workers must be at least 1", file=sys.stderr)
        return 2
    if args.baseline is not None and not args.baseline.is_file():
        print(
            f"arm64: --baseline {args.baseline} does not exist (run tox -e mock)", file=sys.stderr
        )
        return 2
    started = time.monotonic()
    try:
        if args.step == "sizes":
            print(describe_sizes(layout))
            return 0
        if args.step == "rootfs":
            check_host(os.environ)
            binfmt = ensure_binfmt()
            layout.cache.mkdir(parents=True, exist_ok=True)
            ensure_rootfs(layout, args.mirror, binfmt)
            log(f"rootfs: passed in {time.monotonic() - started:.0f} s")
            return 0
        if args.step in ("all", "ci", "prepare"):
            prepare(layout, args.mirror, os.environ)
            log(f"prepared in {time.monotonic() - started:.0f} s; {describe_sizes(layout)}")
        elif not (layout.runtime_library.is_file() and layout.rootfs.is_dir()):
            raise DeviceUnavailableError(
                f"the device is not prepared in {layout.cache}: run `python "
                "emulator/arm64_device.py prepare` first"
            )
        else:
            check_host(os.environ)
            ensure_binfmt()
        if args.step in ("all", "ci", "c-programs"):
            check_c_programs(layout, args.cpu)
        report = args.report.resolve()
        if args.step in ("all", "ci", "test"):
            run_tests(layout, args.workers, args.cpu, tests, report, args.baseline)
        if args.step in ("all", "mock-tests"):
            native = report.with_name(report.stem + "-native.json")
            own_baseline = report.with_name(report.stem + "-mock.json")
            baseline = args.baseline or (own_baseline if own_baseline.is_file() else None)
            chosen = (
                args.pytest_args if args.step == "mock-tests" and args.pytest_args else MOCK_TESTS
            )
            run_mock_tests(layout, args.workers, args.cpu, chosen, native, baseline)
    except DeviceUnavailableError as error:
        print(f"arm64: {error}", file=sys.stderr)
        return 2
    except (CheckFailedError, subprocess.CalledProcessError) as error:
        print(f"arm64: FAILED: {error}", file=sys.stderr)
        return 1
    log(f"{args.step}: passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
