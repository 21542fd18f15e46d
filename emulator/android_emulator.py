# SPDX-License-Identifier: Apache-2.0
"""Run the test suite on an Android emulator (x86_64 system image, API 30+).

    python emulator/android_emulator.py [--backend docker|sdk|auto] [--api 30] [-- PYTEST ARGS]

Steps: start an emulator, either in a container through the Docker SDK (image built from
docker/emulator.Dockerfile; needs /dev/kvm) or from a local Android SDK (its ``emulator``
binary and an AVD created with ``avdmanager``); connect adb to it; wait until Android has
booted (``getprop sys.boot_completed`` is 1, retried with a timeout); then run pytest with
``--target device`` through adb (tests/targets.py pushes TVM's RPC server built for x86_64
Android to the emulator, starts it and forwards its port), and stop the emulator.

``tox -e emulator`` runs this. Without a Docker engine or an Android SDK it stops with a message
saying which one to provide. docs/targets.md lists what was exercised without an emulator.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_IMAGE = "tvm-nnapi-emulator:latest"
#: Ports inside the emulator container (docker/emulator-entrypoint.sh): adb of the emulator is
#: re-exposed on 5555 of the container's network interface.
CONTAINER_ADB_PORT = 5555


class EmulatorUnavailableError(RuntimeError):
    """No way to start an emulator here; the message says what to provide."""


@dataclass
class EmulatorConfig:
    """What emulator to start and how long to wait for it."""

    api_level: int = 30
    abi: str = "x86_64"
    system_image_tag: str = "google_apis"
    avd_name: str = "tvm_nnapi_api30"
    console_port: int = 5554
    boot_timeout_s: float = 600.0
    poll_interval_s: float = 5.0
    memory_mb: int = 4096
    image: str = DEFAULT_IMAGE
    extra_emulator_args: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.api_level < 30:
            raise ValueError(
                f"API level {self.api_level}: the emulator target needs API 30 or newer"
            )
        if self.abi != "x86_64":
            raise ValueError(f"ABI {self.abi}: the emulator target uses x86_64 system images")
        if self.console_port % 2 or not 5554 <= self.console_port <= 5682:
            raise ValueError(
                f"console port {self.console_port}: the emulator needs an even port in 5554..5682"
            )

    @property
    def adb_port(self) -> int:
        return self.console_port + 1

    @property
    def system_image(self) -> str:
        """The sdkmanager package of the system image."""
        return f"system-images;android-{self.api_level};{self.system_image_tag};{self.abi}"


# ---- command lines ------------------------------------------------------------------------------


def sdk_tool(sdk_root: Path, *candidates: str) -> Path:
    """The first existing tool among ``candidates`` (paths relative to the SDK root)."""
    for candidate in candidates:
        path = sdk_root / candidate
        if path.exists():
            return path
    raise EmulatorUnavailableError(
        f"{sdk_root} has none of {', '.join(candidates)}: install them with the SDK's "
        "command-line tools (sdkmanager 'emulator' 'platform-tools' 'cmdline-tools;latest')"
    )


def sdkmanager_packages(config: EmulatorConfig) -> list[str]:
    return [
        "platform-tools",
        "emulator",
        f"platforms;android-{config.api_level}",
        config.system_image,
    ]


def avd_create_command(avdmanager: str, config: EmulatorConfig) -> list[str]:
    return [
        avdmanager, "create", "avd", "--force", "--name", config.avd_name,
        "--package", config.system_image, "--device", "pixel_5",
    ]  # fmt: skip


def emulator_command(emulator: str, config: EmulatorConfig) -> list[str]:
    """A headless emulator without snapshots (every run boots clean)."""
    return [
        emulator, "-avd", config.avd_name, "-port", str(config.console_port),
        "-no-window", "-no-audio", "-no-boot-anim", "-no-snapshot", "-wipe-data",
        "-gpu", "swiftshader_indirect", "-memory", str(config.memory_mb),
        "-accel", "on", *config.extra_emulator_args,
    ]  # fmt: skip


def docker_run_options(config: EmulatorConfig, host_adb_port: int) -> dict[str, Any]:
    """Keyword arguments of docker-py's ``containers.run`` for the emulator image."""
    return {
        "image": config.image,
        "detach": True,
        "remove": True,
        "devices": ["/dev/kvm:/dev/kvm:rwm"],
        "ports": {f"{CONTAINER_ADB_PORT}/tcp": ("127.0.0.1", host_adb_port)},
        "environment": {
            "EMULATOR_API_LEVEL": str(config.api_level),
            "EMULATOR_AVD": config.avd_name,
            "EMULATOR_MEMORY_MB": str(config.memory_mb),
        },
        "name": f"tvm-nnapi-emulator-{host_adb_port}",
    }


def pytest_command(python: str, pytest_args: Sequence[str]) -> list[str]:
    return [python, "-m", "pytest", "--target", "device", *pytest_args]


def pytest_environment(base: Mapping[str, str], serial: str) -> dict[str, str]:
    """The environment of the pytest run against the emulator (adb path, x86_64 build)."""
    env = dict(base)
    for name in ("TVM_TRACKER_HOST", "TVM_TRACKER_PORT", "RPC_DEVICE_KEY"):
        env.pop(name, None)  # the emulator is reached by adb, not through a tracker
    env["TVM_NNAPI_ADB_SERIALS"] = serial
    env["TVM_NNAPI_ANDROID_ABI"] = "x86_64"
    env.setdefault("TVM_NNAPI_ANDROID_API", "30")
    return env


# ---- waiting for boot ---------------------------------------------------------------------------


def wait_for_boot(
    getprop: Callable[[str], str],
    *,
    timeout: float,
    interval: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    progress: Callable[[str], None] | None = None,
) -> float:
    """Polls ``getprop("sys.boot_completed")`` until it is "1"; returns the seconds waited.

    adb errors (device offline, not yet listed, connection reset) are retried until
    ``timeout``; then TimeoutError says what the last poll returned.
    """
    start = clock()
    deadline = start + timeout
    last = "no answer yet"
    while True:
        try:
            value = str(getprop("sys.boot_completed")).strip()
            if value == "1":
                return clock() - start
            last = f"sys.boot_completed={value!r}"
        except Exception as error:  # adb not connected yet, device offline
            last = f"{type(error).__name__}: {error}"
        now = clock()
        if now >= deadline:
            raise TimeoutError(
                f"the emulator did not finish booting within {timeout:g} s (last poll: {last}); "
                "check that KVM is available (/dev/kvm) and raise --boot-timeout on slow hosts"
            )
        if progress is not None:
            progress(f"booting ({now - start:.0f} s, {last})")
        sleep(min(interval, deadline - now))


def connect_adb(adb: Any, address: str, *, timeout: float, interval: float,
                clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep) -> None:  # fmt: skip
    """``adb connect address`` until the device is listed (the container's adb port comes up
    some seconds after the container starts)."""
    deadline = clock() + timeout
    last = ""
    while True:
        try:
            output = str(adb.connect(address, timeout=min(10.0, timeout)))
            if "connected" in output and "cannot" not in output and "failed" not in output:
                return
            last = output.strip()
        except Exception as error:
            last = f"{type(error).__name__}: {error}"
        if clock() >= deadline:
            raise TimeoutError(f"adb connect {address} failed for {timeout:g} s (last: {last})")
        sleep(interval)


# ---- backends -----------------------------------------------------------------------------------


class DockerEmulator:
    """An emulator in a container from docker/emulator.Dockerfile, via the Docker SDK."""

    def __init__(self, config: EmulatorConfig, client: Any = None, host_adb_port: int = 15555):
        self.config = config
        self.client = client
        self.host_adb_port = host_adb_port
        self.container = None

    @staticmethod
    def available(docker_module: Any = None) -> Any:
        """A Docker client, or EmulatorUnavailableError saying what is missing."""
        if docker_module is None:
            try:
                import docker as docker_module
            except ImportError:
                raise EmulatorUnavailableError(
                    "the Docker backend needs the docker package: pip install 'tvm-nnapi[device]'"
                ) from None
        try:
            client = docker_module.from_env()
            client.ping()
        except Exception as error:
            raise EmulatorUnavailableError(
                f"no Docker engine reachable ({error}); start one or set DOCKER_HOST"
            ) from None
        return client

    @property
    def serial(self) -> str:
        return f"127.0.0.1:{self.host_adb_port}"

    def start(self, progress: Callable[[str], None] = print) -> None:
        if not os.path.exists("/dev/kvm"):
            raise EmulatorUnavailableError(
                "/dev/kvm is missing: the x86_64 emulator needs KVM (a Linux host with "
                "virtualisation enabled, and access to /dev/kvm for this user)"
            )
        try:
            self.client.images.get(self.config.image)
        except Exception:
            raise EmulatorUnavailableError(
                f"Docker image {self.config.image} not found: build it with "
                f"`docker build -f docker/emulator.Dockerfile -t {self.config.image} .`"
            ) from None
        progress(f"starting container from {self.config.image}")
        self.container = self.client.containers.run(
            **docker_run_options(self.config, self.host_adb_port)
        )

    def stop(self) -> None:
        if self.container is not None:
            self.container.stop(timeout=20)
            self.container = None


class SdkEmulator:
    """An emulator from a local Android SDK (ANDROID_SDK_ROOT or ANDROID_HOME)."""

    def __init__(self, config: EmulatorConfig, sdk_root: Path,
                 popen: Callable[..., Any] = subprocess.Popen,
                 run: Callable[..., Any] = subprocess.run) -> None:  # fmt: skip
        self.config = config
        self.sdk_root = Path(sdk_root)
        self.popen = popen
        self.run = run
        self.process = None

    @staticmethod
    def sdk_root_from(env: Mapping[str, str]) -> Path:
        root = env.get("ANDROID_SDK_ROOT") or env.get("ANDROID_HOME")
        if not root:
            raise EmulatorUnavailableError(
                "no Android SDK: set ANDROID_SDK_ROOT (or ANDROID_HOME) to an SDK with the "
                "emulator, platform-tools and an x86_64 system image of API 30+"
            )
        return Path(root)

    @property
    def serial(self) -> str:
        return f"emulator-{self.config.console_port}"

    def start(self, progress: Callable[[str], None] = print) -> None:
        emulator = sdk_tool(self.sdk_root, "emulator/emulator")
        avdmanager = sdk_tool(
            self.sdk_root, "cmdline-tools/latest/bin/avdmanager", "tools/bin/avdmanager"
        )
        if not (self.sdk_root / "system-images" / f"android-{self.config.api_level}").exists():
            raise EmulatorUnavailableError(
                f"{self.sdk_root} has no API {self.config.api_level} system image: "
                f"sdkmanager '{self.config.system_image}'"
            )
        progress(f"creating AVD {self.config.avd_name}")
        self.run(avd_create_command(str(avdmanager), self.config), input=b"no\n", check=True)
        progress("starting the emulator")
        self.process = self.popen(
            emulator_command(str(emulator), self.config),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self.process = None


def choose_backend(name: str, config: EmulatorConfig, env: Mapping[str, str],
                   docker_module: Any = None) -> DockerEmulator | SdkEmulator:  # fmt: skip
    """``docker``, ``sdk`` or ``auto`` (Docker when an engine answers, else the SDK)."""
    if name not in ("docker", "sdk", "auto"):
        raise ValueError(f"unknown backend {name!r}: docker, sdk or auto")
    reasons = []
    if name in ("docker", "auto"):
        try:
            return DockerEmulator(config, DockerEmulator.available(docker_module))
        except EmulatorUnavailableError as error:
            if name == "docker":
                raise
            reasons.append(f"Docker: {error}")
    try:
        return SdkEmulator(config, SdkEmulator.sdk_root_from(env))
    except EmulatorUnavailableError as error:
        if name == "sdk":
            raise
        reasons.append(f"SDK: {error}")
    raise EmulatorUnavailableError("cannot start an emulator. " + " | ".join(reasons))


def run_suite(backend: DockerEmulator | SdkEmulator, pytest_args: Sequence[str], *,
              adb: Any = None, run: Callable[..., Any] = subprocess.run,
              progress: Callable[[str], None] = print) -> int:  # fmt: skip
    """Start the emulator, wait for boot, run pytest against it, stop it; pytest's exit code."""
    if adb is None:
        try:
            from adbutils import adb
        except ImportError:
            raise EmulatorUnavailableError(
                "the emulator harness needs adbutils: pip install 'tvm-nnapi[device]'"
            ) from None
    config = backend.config
    backend.start(progress)
    try:
        if isinstance(backend, DockerEmulator):
            connect_adb(adb, backend.serial, timeout=120, interval=config.poll_interval_s)
        device = adb.device(serial=backend.serial)
        waited = wait_for_boot(
            device.getprop,
            timeout=config.boot_timeout_s,
            interval=config.poll_interval_s,
            progress=progress,
        )
        progress(f"{backend.serial} booted in {waited:.0f} s; running the suite")
        command = pytest_command(sys.executable, pytest_args)
        return int(
            run(command, env=pytest_environment(os.environ, backend.serial), cwd=ROOT).returncode
        )
    finally:
        progress("stopping the emulator")
        backend.stop()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python emulator/android_emulator.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--backend",
        choices=["auto", "docker", "sdk"],
        default="auto",
        help="start the emulator in Docker or from a local SDK (default: auto)",
    )
    parser.add_argument("--api", type=int, default=30, help="Android API level (30 or newer)")
    parser.add_argument("--image", default=DEFAULT_IMAGE, help="Docker image of the emulator")
    parser.add_argument(
        "--boot-timeout",
        type=float,
        default=600.0,
        help="seconds to wait for sys.boot_completed (default 600)",
    )
    parser.add_argument(
        "pytest_args",
        nargs="*",
        default=[
            "tests/backend/test_ops.py",
            "tests/backend/test_models_on_target.py",
            "tests/mock_ops",
        ],
        help="arguments for pytest after -- (default: tests/backend/test_ops.py "
        "tests/backend/test_models_on_target.py tests/mock_ops)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    config = EmulatorConfig(
        api_level=args.api,
        avd_name=f"tvm_nnapi_api{args.api}",
        image=args.image,
        boot_timeout_s=args.boot_timeout,
    )
    try:
        backend = choose_backend(args.backend, config, os.environ)
        return run_suite(backend, args.pytest_args)
    except (EmulatorUnavailableError, TimeoutError) as error:
        print(f"emulator: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
