# SPDX-License-Identifier: Apache-2.0
"""Static checks of files that cannot be exercised here (no Docker engine, no Android NDK):
the Dockerfiles' instructions and the files they copy, the entrypoint's shell syntax, and the
Android build script's argument handling and commands (in --dry-run)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTRUCTIONS = {
    "FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME",
    "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL",
}  # fmt: skip


def instructions(path: Path) -> list[tuple[str, str]]:
    """(keyword, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    result, pending = [], ""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        pending += " " + stripped.rstrip("\\")
        if stripped.endswith("\\"):
            continue
        keyword, _, arguments = pending.strip().partition(" ")
        assert keyword in INSTRUCTIONS, f"{path.name}:{number}: unknown instruction {keyword}"
        result.append((keyword, arguments.strip()))
        pending = ""
    assert not pending, f"{path.name}: the last instruction ends with a continuation"
    return result


@pytest.mark.parametrize("name", ["ci.Dockerfile", "emulator.Dockerfile"])
def test_dockerfile_instructions_and_copied_files(name):
    parsed = instructions(ROOT / "docker" / name)
    keywords = [keyword for keyword, _ in parsed]
    assert keywords[0] in ("FROM", "ARG")
    for keyword, arguments in parsed:
        if keyword == "COPY":
            sources = arguments.split()[:-1]
            for source in sources:
                if source != ".":
                    assert (ROOT / source).exists(), f"{name}: COPY {source}: no such file"
    entry = [a for k, a in parsed if k in ("CMD", "ENTRYPOINT")]
    assert entry, f"{name} has no CMD or ENTRYPOINT"


def test_ci_image_runs_the_ci_test_command():
    parsed = dict(instructions(ROOT / "docker" / "ci.Dockerfile"))
    assert parsed["CMD"] == '["tox", "-e", "mock"]'


def test_emulator_image_installs_an_api_30_x86_64_system_image():
    text = (ROOT / "docker" / "emulator.Dockerfile").read_text()
    assert "ARG API_LEVEL=30" in text
    assert re.search(r"system-images;android-\$\{API_LEVEL\};\$\{SYSTEM_IMAGE\};x86_64", text)
    assert "/dev/kvm" in text


def test_entrypoint_is_valid_bash_and_executable():
    script = ROOT / "docker" / "emulator-entrypoint.sh"
    assert os.access(script, os.X_OK)
    subprocess.run(["bash", "-n", str(script)], check=True)


BUILD = ROOT / "scripts" / "build_android.sh"


def run_build(*arguments: str, env: dict[str, str] | None = None):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ANDROID_NDK")}
    environment.update(env or {})
    return subprocess.run(
        ["bash", str(BUILD), *arguments], capture_output=True, text=True, env=environment
    )


def fake_ndk(tmp_path: Path) -> Path:
    toolchain = tmp_path / "ndk" / "build" / "cmake" / "android.toolchain.cmake"
    toolchain.parent.mkdir(parents=True)
    toolchain.write_text("")
    return tmp_path / "ndk"


def test_build_android_needs_the_ndk_and_says_how_to_get_it():
    result = run_build("arm64-v8a")
    assert result.returncode == 2
    assert (
        "ANDROID_NDK_HOME is not set" in result.stderr
        and "export ANDROID_NDK_HOME" in result.stderr
    )


def test_build_android_rejects_bad_arguments(tmp_path):
    env = {"ANDROID_NDK_HOME": str(fake_ndk(tmp_path))}
    assert "give the ABI" in run_build(env=env).stderr
    assert "'armeabi-v7a' is not supported" in run_build("armeabi-v7a", env=env).stderr
    assert "API level 27 or newer" in run_build("x86_64", "--api", "21", env=env).stderr
    assert "unknown option --fast" in run_build("x86_64", "--fast", env=env).stderr
    not_ndk = run_build("x86_64", env={"ANDROID_NDK_HOME": str(tmp_path)})
    assert "is not an Android NDK" in not_ndk.stderr
    assert run_build("--help").stdout.startswith("Builds the tvm_nnapi runtime library for Android")


@pytest.mark.parametrize(("abi", "triple"), [("arm64-v8a", "aarch64"), ("x86_64", "x86_64")])
def test_build_android_dry_run_commands(tmp_path, abi, triple):
    ndk = fake_ndk(tmp_path)
    tvm = tmp_path / "tvm"
    tvm.mkdir()
    (tvm / "CMakeLists.txt").write_text("")
    result = run_build(
        abi, "--api", "30", "--build-dir", str(tmp_path / "out"), "--tvm-source", str(tvm),
        "--dry-run", env={"ANDROID_NDK_HOME": str(ndk)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    commands = [line[2:] for line in result.stdout.splitlines() if line.startswith("+ ")]
    toolchain = f"-DCMAKE_TOOLCHAIN_FILE={ndk}/build/cmake/android.toolchain.cmake"
    configures = [c for c in commands if c.startswith("cmake -S")]
    assert len(configures) == 3  # tvm-ffi, the runtime, TVM
    for command in configures:
        assert toolchain in command and f"-DANDROID_ABI={abi}" in command
        assert "-DANDROID_PLATFORM=android-30" in command
    assert "--no-binary apache-tvm-ffi" in commands[1]
    assert f"-DTVM_NNAPI_TVM_FFI_ROOT={tmp_path}/out/install" in configures[1]
    assert "-DTVM_NNAPI_BUILD_MOCK=OFF" in configures[1]
    assert "-DUSE_CPP_RPC=ON" in configures[2]
    assert any(c.endswith(f"{tmp_path}/out/install/bin/") for c in commands)  # tvm_rpc
    assert any(f"/{triple}-linux-android/libc++_shared.so" in c for c in commands)
