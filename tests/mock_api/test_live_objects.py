# SPDX-License-Identifier: Apache-2.0
"""The mock's live-object counters (mock_nnapi.control.live_objects, MockNnapi_getCounter
"live_*"): one count per kind of NNAPI object handed out and not yet freed."""

from __future__ import annotations

import ctypes

from mock_nnapi.control import live_objects

from .nn import NO_ERROR, lib


def test_each_kind_is_counted_until_freed(arena):
    before = live_objects()
    execution, _ = arena.add_execution()  # model, compilation, execution
    compilation = arena.compilation(arena.binary_model())
    arena.burst(compilation)
    code, _ = arena.start(execution)
    assert code == NO_ERROR
    desc = ctypes.c_void_p()
    assert lib.ANeuralNetworksMemoryDesc_create(ctypes.byref(desc)) == NO_ERROR
    arena.own("ANeuralNetworksMemoryDesc_free", desc)
    now = live_objects()
    grown = {kind: now[kind] - before[kind] for kind in now}
    assert grown == {
        "models": 2,
        "compilations": 2,
        "executions": 1,
        "events": 1,
        "memories": 0,
        "memory_descs": 1,
        "bursts": 1,
        "total": 8,
    }
    arena.close()
    assert live_objects() == before
