# SPDX-License-Identifier: Apache-2.0
"""The emulator harness (emulator/android_emulator.py) against fakes: command lines, the Docker
options, boot waiting and its retries, backend choice and its messages, and the suite run."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

from .test_android import FakeClock

PATH = Path(__file__).resolve().parents[2] / "emulator" / "android_emulator.py"
spec = importlib.util.spec_from_file_location("android_emulator", PATH)
assert spec is not None and spec.loader is not None
harness = importlib.util.module_from_spec(spec)
sys.modules["android_emulator"] = harness
spec.loader.exec_module(harness)


def test_config_requires_api_30_x86_64_and_an_even_console_port():
    config = harness.EmulatorConfig()
    assert config.system_image == "system-images;android-30;google_apis;x86_64"
    assert config.adb_port == 5555
    with pytest.raises(ValueError, match="API 30 or newer"):
        harness.EmulatorConfig(api_level=29)
    with pytest.raises(ValueError, match="x86_64"):
        harness.EmulatorConfig(abi="arm64-v8a")
    with pytest.raises(ValueError, match="even port"):
        harness.EmulatorConfig(console_port=5555)


def test_command_lines():
    config = harness.EmulatorConfig(api_level=33, avd_name="avd33", console_port=5556)
    command = harness.emulator_command("/sdk/emulator/emulator", config)
    assert command[:5] == ["/sdk/emulator/emulator", "-avd", "avd33", "-port", "5556"]
    assert {"-no-window", "-no-audio", "-no-snapshot"} <= set(command)
    create = harness.avd_create_command("avdmanager", config)
    assert create[create.index("--package") + 1] == "system-images;android-33;google_apis;x86_64"
    assert "system-images;android-33;google_apis;x86_64" in harness.sdkmanager_packages(config)
    assert harness.pytest_command("py", ["tests/x.py", "-k", "add"]) == [
        "py", "-m", "pytest", "--target", "device", "tests/x.py", "-k", "add",
    ]  # fmt: skip


def test_docker_options_pass_kvm_and_publish_adb_on_loopback():
    options = harness.docker_run_options(harness.EmulatorConfig(), host_adb_port=16000)
    assert options["devices"] == ["/dev/kvm:/dev/kvm:rwm"]
    assert options["ports"] == {"5555/tcp": ("127.0.0.1", 16000)}
    assert options["environment"]["EMULATOR_AVD"] == "tvm_nnapi_api30"
    assert options["detach"] and options["remove"]


def test_pytest_environment_points_the_device_target_at_the_emulator():
    env = harness.pytest_environment({"TVM_TRACKER_HOST": "h", "PATH": "/bin"}, "emulator-5554")
    assert env["TVM_NNAPI_ADB_SERIALS"] == "emulator-5554"
    assert env["TVM_NNAPI_ANDROID_ABI"] == "x86_64"
    assert "TVM_TRACKER_HOST" not in env and env["PATH"] == "/bin"


def test_wait_for_boot_retries_adb_errors_until_boot_completed():
    clock = FakeClock()
    answers = iter([RuntimeError("device offline"), "", "0", "1\n"])

    def getprop(name):
        assert name == "sys.boot_completed"
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    progress = []
    waited = harness.wait_for_boot(
        getprop, timeout=60, interval=5, clock=clock, sleep=clock.sleep, progress=progress.append
    )
    assert waited == 15 and clock.sleeps == [5, 5, 5]
    assert "device offline" in progress[0] and "sys.boot_completed='0'" in progress[2]


def test_wait_for_boot_times_out_with_the_last_state_and_kvm_hint():
    clock = FakeClock()
    with pytest.raises(
        TimeoutError, match=r"within 12 s \(last poll: sys.boot_completed='0'\).*KVM"
    ):
        harness.wait_for_boot(
            lambda name: "0", timeout=12, interval=5, clock=clock, sleep=clock.sleep
        )
    assert clock.sleeps == [5, 5, 2]


def test_connect_adb_retries_until_connected():
    clock = FakeClock()
    outputs = iter(
        [
            ConnectionResetError("reset"),
            "failed to connect to 127.0.0.1:1",
            "connected to 127.0.0.1:1",
        ]
    )

    class Adb:
        def connect(self, address, timeout):
            output = next(outputs)
            if isinstance(output, Exception):
                raise output
            return output

    harness.connect_adb(
        Adb(), "127.0.0.1:1", timeout=30, interval=2, clock=clock, sleep=clock.sleep
    )
    assert clock.sleeps == [2, 2]
    with pytest.raises(TimeoutError, match=r"adb connect 127\.0\.0\.1:1 failed"):
        harness.connect_adb(
            types.SimpleNamespace(connect=lambda a, timeout: "failed"), "127.0.0.1:1",
            timeout=3, interval=2, clock=clock, sleep=clock.sleep,
        )  # fmt: skip


def fake_docker(engine_error=None):
    class Client:
        def ping(self):
            if engine_error:
                raise engine_error
            return True

    return types.SimpleNamespace(from_env=lambda: Client())


def test_choose_backend_prefers_docker_then_sdk_and_explains_failures(tmp_path):
    config = harness.EmulatorConfig()
    docker_backend = harness.choose_backend("auto", config, {}, docker_module=fake_docker())
    assert isinstance(docker_backend, harness.DockerEmulator)
    no_engine = fake_docker(ConnectionError("socket missing"))
    sdk = harness.choose_backend("auto", config, {"ANDROID_SDK_ROOT": str(tmp_path)}, no_engine)
    assert isinstance(sdk, harness.SdkEmulator) and sdk.serial == "emulator-5554"
    with pytest.raises(harness.EmulatorUnavailableError) as error:
        harness.choose_backend("auto", config, {}, docker_module=no_engine)
    message = str(error.value)
    assert "no Docker engine reachable (socket missing)" in message
    assert "set ANDROID_SDK_ROOT" in message
    with pytest.raises(harness.EmulatorUnavailableError, match="no Docker engine"):
        harness.choose_backend("docker", config, {"ANDROID_SDK_ROOT": "/sdk"}, no_engine)


def make_sdk(root: Path, api: int = 30) -> Path:
    for tool in ("emulator/emulator", "cmdline-tools/latest/bin/avdmanager"):
        (root / tool).parent.mkdir(parents=True, exist_ok=True)
        (root / tool).write_text("")
    (root / f"system-images/android-{api}").mkdir(parents=True)
    return root


def test_sdk_backend_creates_the_avd_and_starts_the_emulator(tmp_path):
    runs, processes = [], []

    class Process:
        def __init__(self, command, **kwargs):
            self.command = command
            self.terminated = False
            processes.append(self)

        def terminate(self):
            self.terminated = True

        def wait(self, timeout):
            return 0

    backend = harness.SdkEmulator(
        harness.EmulatorConfig(), make_sdk(tmp_path), popen=Process,
        run=lambda command, **kwargs: runs.append(command),
    )  # fmt: skip
    backend.start(progress=lambda message: None)
    assert runs[0][0].endswith("cmdline-tools/latest/bin/avdmanager")
    assert processes[0].command[0].endswith("emulator/emulator")
    backend.stop()
    assert processes[0].terminated


def test_sdk_backend_without_the_system_image_says_what_to_install(tmp_path):
    backend = harness.SdkEmulator(harness.EmulatorConfig(api_level=31), make_sdk(tmp_path))
    with pytest.raises(
        harness.EmulatorUnavailableError, match=r"sdkmanager 'system-images;android-31"
    ):
        backend.start(progress=lambda message: None)


def test_run_suite_waits_for_boot_runs_pytest_and_always_stops(tmp_path):
    events = []

    class Backend:
        config = harness.EmulatorConfig(poll_interval_s=0)
        serial = "emulator-5554"

        def start(self, progress):
            events.append("start")

        def stop(self):
            events.append("stop")

    boot = iter(["0", "1"])
    device = types.SimpleNamespace(getprop=lambda name: next(boot))
    adb = types.SimpleNamespace(device=lambda serial: device)

    def run(command, env, cwd):
        events.append(("pytest", command[-1], env["TVM_NNAPI_ADB_SERIALS"]))
        return types.SimpleNamespace(returncode=0)

    code = harness.run_suite(Backend(), ["tests/backend/test_ops.py"], adb=adb, run=run,
                             progress=lambda message: None)  # fmt: skip
    assert code == 0
    assert events == ["start", ("pytest", "tests/backend/test_ops.py", "emulator-5554"), "stop"]

    def failing_run(command, env, cwd):
        raise KeyboardInterrupt

    events.clear()
    boot = iter(["1"])
    with pytest.raises(KeyboardInterrupt):
        harness.run_suite(Backend(), [], adb=adb, run=failing_run, progress=lambda message: None)
    assert events[-1] == "stop"


def test_main_reports_a_missing_backend_and_exits_2(monkeypatch, capsys):
    monkeypatch.delenv("ANDROID_SDK_ROOT", raising=False)
    monkeypatch.delenv("ANDROID_HOME", raising=False)
    assert harness.main(["--backend", "sdk"]) == 2
    assert "emulator: no Android SDK: set ANDROID_SDK_ROOT" in capsys.readouterr().err
