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
the runtime's ``tvm_nnapi.testing.run_graph``) for the operation tests. The targets themselves
are the command line's (:mod:`tvm_nnapi.targets`); here they also record in the differential
report whether NNAPI ran, and a device target that cannot be reached skips. See
docs/targets.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tvm_nnapi import targets
from tvm_nnapi.testing import android

TARGETS = targets.TARGETS
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


class _Recording:
    """Tells the differential report whether NNAPI ran in each run (the runtime's statistics),
    for programs run through ``call`` and through ``load``."""

    name: str

    def load(self, executable):
        program = super().load(executable)

        def call(function, inputs):
            run = program(function, inputs)
            _record_nnapi(*_stats_evidence(self.name, run.stats))
            return run

        return call

    def vm_stats(self, vm):
        stats = super().vm_stats(vm)
        _record_nnapi(*_stats_evidence(self.name, stats))
        return stats


class MockTarget(_Recording, targets.MockTarget):
    pass


class LoopbackRpcTarget(_Recording, targets.RpcTarget):
    def __init__(self) -> None:
        super().__init__(env={})  # always a loopback server of the session's own


class DeviceTarget(_Recording, targets.DeviceTarget):
    """The device target; skips with what is missing when the setup is incomplete."""

    def __init__(self, env: dict[str, str] | None = None, connect=None, adb=None) -> None:
        try:
            super().__init__(env, connect, adb, root=ROOT)
        except android.TargetUnavailableError as missing:
            pytest.skip(f"device target: {missing}")


Target = targets.Target
android_fcompile = targets.android_fcompile


def make_target(name: str) -> Target:
    if name == "mock":
        return MockTarget()
    if name == "rpc":
        return LoopbackRpcTarget()
    if name == "device":
        return DeviceTarget()
    raise pytest.UsageError(f"unknown --target {name!r}; choose from {', '.join(TARGETS)}")
