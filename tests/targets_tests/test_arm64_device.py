# SPDX-License-Identifier: Apache-2.0
"""The emulated ARM64 device's harness (emulator/arm64_device.py) without emulating anything:
the commands it runs on the device, the environment they get, the host checks, the wheels it
asks for, the cross build's command lines (scripts/cross_build.sh --dry-run), and how it judges
the device's report against the x86 mock. `tox -e arm64` runs the harness for real."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PATH = ROOT / "emulator" / "arm64_device.py"
spec = importlib.util.spec_from_file_location("arm64_device", PATH)
assert spec is not None and spec.loader is not None
harness = importlib.util.module_from_spec(spec)
sys.modules["arm64_device"] = harness
spec.loader.exec_module(harness)


def test_device_command_mounts_privately_then_chroots(tmp_path):
    layout = harness.Layout(tmp_path / "my cache")
    command = harness.device_command(layout, ["python3", "-c", "print('hi there')"], "unshare")
    assert command[:5] == ["unshare", "--mount", "--propagation", "private", "/bin/sh"]
    script = command[-1]
    root = f"'{layout.rootfs}'"  # quoted: the cache path has a space
    assert f"mount -t proc proc {root}/proc" in script
    assert f"mount --rbind /dev {root}/dev" in script
    assert f"mount --bind '{layout.device}' {root}/opt/tvm-nnapi" in script
    assert script.endswith(f"exec chroot {root} python3 -c 'print('\"'\"'hi there'\"'\"')'")


def test_device_env_is_the_devices_own_with_the_cpu_model_and_the_mock():
    env = harness.device_env("cortex-a76", {"TVM_USE_RUNTIME_LIB": "1"})
    assert env["QEMU_CPU"] == "cortex-a76"
    assert env["TVM_NNAPI_LIBRARY"] == "/opt/tvm-nnapi/lib/libneuralnetworks.so"
    assert env["PYTHONPATH"] == "/opt/tvm-nnapi/site-packages"
    assert env["LD_LIBRARY_PATH"].split(":")[0] == "/opt/tvm-nnapi/lib"
    assert env["TVM_USE_RUNTIME_LIB"] == "1"
    # Nothing of this host leaks in (its pip configuration, its virtual environment).
    assert not any(name.startswith(("PIP_", "VIRTUAL_ENV")) for name in env)


def test_binfmt_entries_are_parsed():
    entry = harness.parse_binfmt(
        "enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: PF\noffset 0\n"
    )
    assert entry == harness.BinfmtEntry(True, "/usr/libexec/qemu-binfmt/aarch64-binfmt-P", "PF")
    assert not harness.parse_binfmt("disabled\ninterpreter /x\nflags: P\n").enabled


def test_missing_host_packages_are_named_by_debian_package():
    present = {"debootstrap", "unshare"}
    missing = harness.missing_host_packages(lambda name: name if name in present else None)
    assert set(missing) >= {"qemu-user-static", "binfmt-support", "g++-aarch64-linux-gnu"}
    assert "debootstrap" not in missing


@pytest.mark.parametrize("step", ["prepare", "rootfs", "ci"])
def test_without_root_the_harness_says_it_needs_root(step, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert harness.main([step, "--cache", str(tmp_path)]) == 2
    assert "needs root" in capsys.readouterr().err
    assert not (tmp_path / "rootfs").exists()


def test_an_unprepared_device_says_how_to_prepare_it(capsys, tmp_path):
    assert harness.main(["test", "--cache", str(tmp_path)]) == 2
    assert "emulator/arm64_device.py prepare" in capsys.readouterr().err


def test_the_device_gets_the_hosts_versions_of_the_pinned_wheels():
    requirements = harness.device_requirements(lambda name: "1.2.3")
    assert "apache-tvm==1.2.3" in requirements and "scipy-openblas32==1.2.3" in requirements
    assert "psutil" in requirements and "cloudpickle" in requirements
    options = harness.pip_platform_options()
    assert "manylinux_2_28_aarch64" in options and options[-2:] == ["--abi", "cp311"]


def test_cache_location():
    assert harness.default_cache({"TVM_NNAPI_ARM64_CACHE": "/c"}) == Path("/c")
    assert harness.default_cache({"HOME": "/home/u"}) == Path("/home/u/.cache/tvm-nnapi/arm64")
    assert harness.default_cache({"XDG_CACHE_HOME": "/x"}) == Path("/x/tvm-nnapi/arm64")


def test_cross_build_uses_the_aarch64_toolchain_the_wheels_tvm_ffi_and_openblas(tmp_path):
    layout = harness.Layout(tmp_path)
    command = harness.cross_build_command(layout)
    assert command[1].endswith("scripts/cross_build.sh")
    result = subprocess.run(
        [*command, "--dry-run"], capture_output=True, text=True, env=dict(os.environ)
    )
    assert result.returncode == 0, result.stderr
    commands = [line[2:] for line in result.stdout.splitlines() if line.startswith("+ ")]
    assert not any("pip download" in c for c in commands)  # tvm-ffi comes from the wheel
    (configure,) = [c for c in commands if c.startswith("cmake -S")]
    assert "cmake/toolchains/aarch64-linux-gnu.cmake" in configure
    assert f"-DTVM_NNAPI_TVM_FFI_ROOT={layout.site}/tvm_ffi" in configure
    assert f"-DTVM_NNAPI_OPENBLAS_DIR={layout.site}/scipy_openblas32" in configure
    assert "-DTVM_NNAPI_BUILD_MOCK=ON" in configure and "-DTVM_NNAPI_BUILD_TESTS=ON" in configure
    (build,) = [c for c in commands if c.startswith("cmake --build")]
    assert build.endswith("tvm_nnapi_runtime neuralnetworks runtime_leak_check")
    toolchain = (ROOT / "cmake" / "toolchains" / "aarch64-linux-gnu.cmake").read_text()
    assert "CMAKE_SYSTEM_PROCESSOR aarch64" in toolchain and "g++" in toolchain


def test_cross_build_rejects_bad_arguments(tmp_path):
    script = ROOT / "scripts" / "cross_build.sh"

    def run(*arguments):
        return subprocess.run(["bash", str(script), *arguments], capture_output=True, text=True)

    assert "give the CMake toolchain file" in run("--build-dir", str(tmp_path)).stderr
    assert "not found" in run("--toolchain", str(tmp_path / "no.cmake")).stderr
    toolchain = tmp_path / "t.cmake"
    toolchain.write_text("")
    no_blas = run("--toolchain", str(toolchain), "--build-dir", "b", "--openblas", str(tmp_path))
    assert no_blas.returncode == 2 and "no lib/libscipy_openblas.so" in no_blas.stderr
    assert run("--help").stdout.startswith("Cross-builds tvm-ffi")


def test_c_programs_link_the_aarch64_mock_with_the_device_rpath(tmp_path):
    command = harness.c_program_command(harness.Layout(tmp_path), "api_tour")
    assert command[0] == "aarch64-linux-gnu-gcc" and "-Werror" in command
    assert "-lneuralnetworks" in command and "-Wl,-rpath,/opt/tvm-nnapi/lib" in command


def report(*comparisons):
    return {"tests": [{"nodeid": f"t{i}", "comparisons": [c]} for i, c in enumerate(comparisons)]}


def comparison(error, within=True, reference="local mock NNAPI", mismatched=0):
    return {
        "label": "output 0",
        "reference": reference,
        "max_abs_error": error,
        "within_tolerance": within,
        "mismatched": mismatched,
    }


def test_agreement_with_the_mock_counts_identical_within_and_beyond():
    agreement = harness.mock_agreement(
        report(
            comparison(0.0),
            comparison(0),
            comparison(2.4e-7),
            comparison("inf", within=False, mismatched=3),
            comparison(5.0, reference="numpy reference"),  # not a comparison with the mock
        )
    )
    assert (agreement.compared, agreement.identical) == (4, 2)
    assert agreement.within == [("t2", "output 0", 2.4e-7)]
    assert agreement.beyond == [("t3", "output 0", float("inf"), 3)]
    text = agreement.describe()
    assert "4 operation outputs" in text and "2 bit-identical" in text and "1 beyond" in text


def test_pytest_and_compare_reports_commands(tmp_path):
    command = harness.pytest_command(2, "device", ["tests/mock_ops"])
    assert command[-5:] == ["--target", "device", "-n", "2", "tests/mock_ops"]
    assert "-n" not in harness.pytest_command(1, "device", ["x"])
    compare = harness.compare_reports_command(Path("a.json"), Path("b.json"), common_only=True)
    assert compare[1:] == ["compare-reports", "--common-only", "a.json", "b.json"]
    own = harness.compare_reports_command(Path("a.json"), Path("b.json"), common_only=False)
    assert "--fail-on-missing" in own


def test_device_test_env_points_the_device_target_at_the_emulated_device(tmp_path):
    layout = harness.Layout(tmp_path)
    env = harness.device_test_env(layout, 9191, tmp_path / "r.json")
    assert env["TVM_TRACKER_PORT"] == "9191" and env["RPC_DEVICE_KEY"] == "arm64"
    assert json.loads(env["TVM_NNAPI_DEVICE_COMPILE_TARGET"]) == {
        "kind": "llvm",
        "mtriple": "aarch64-linux-gnu",
    }
    assert env["TVM_NDK_CC"] == "aarch64-linux-gnu-g++"
    assert env["TVM_NNAPI_ANDROID_RUNTIME"] == str(layout.lib / "libtvm_nnapi_runtime.so")


def test_arguments_after_the_separator_are_the_tests(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr(harness, "check_host", lambda env: None)
    monkeypatch.setattr(harness, "ensure_binfmt", lambda: None)
    monkeypatch.setattr(harness, "check_c_programs", lambda *a: None)
    monkeypatch.setattr(harness, "run_tests", lambda *a: seen.setdefault("tests", a[3]))
    layout = harness.Layout(tmp_path)
    layout.lib.mkdir(parents=True)
    layout.runtime_library.write_bytes(b"")
    layout.rootfs.mkdir()
    assert harness.main(["--cache", str(tmp_path), "test", "--", "tests/x.py", "-k", "y"]) == 0
    assert seen["tests"] == ["tests/x.py", "-k", "y"]


@pytest.mark.parametrize("workers", ["0", "-1"])
def test_workers_must_be_positive(workers, capsys, tmp_path):
    assert harness.main(["--cache", str(tmp_path), "--workers", workers]) == 2
    assert "--workers" in capsys.readouterr().err
