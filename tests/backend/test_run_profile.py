# SPDX-License-Identifier: Apache-2.0
"""``run_model(profile=...)`` switches the mock's process-wide device profile for the run only:
the profile active before comes back when the run returns or raises, also one loaded from a
.json path (which its name does not find again)."""

from __future__ import annotations

import json

import pytest

from tvm_nnapi.tools import run
from tvm_nnapi.tools.sources import load_model_source


@pytest.fixture(autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("switches mock_nnapi's device profile in process (mock target)")


@pytest.fixture
def control():
    from mock_nnapi import control

    before = control.profile_name()
    yield control
    control.set_profile(None if before == "reference" else before)


def test_run_uses_the_profile_and_restores_the_one_before(control):
    before = control.profile_name()
    result = run.run_model(load_model_source("residual"), profile="snapdragon-8-gen-2")
    assert result.profile == "snapdragon-8-gen-2" and result.passed
    assert {d for e in result.executions for d in e["devices"]} <= {
        "qti-dsp",
        "qti-gpu",
        "nnapi-reference",
    }
    assert control.profile_name() == before


def test_a_failing_run_restores_the_profile(control, monkeypatch):
    before = control.profile_name()
    seen = []

    def fail(*args, **kwargs):
        seen.append(control.profile_name())
        raise RuntimeError("the build failed")

    monkeypatch.setattr(run, "_run_module", fail)
    with pytest.raises(RuntimeError, match="the build failed"):
        run.run_model(load_model_source("residual"), profile="tensor-g2")
    assert seen == ["tensor-g2"] and control.profile_name() == before


def test_a_profile_loaded_from_a_file_is_restored(control, tmp_path):
    document = control.profile()  # the active one: reference unless a test changed it
    document["name"] = "a-phone-from-a-file"
    path = tmp_path / "phone.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    control.set_profile(path)
    with run.profile_scope("tensor-g2") as name:
        assert name == control.profile_name() == "tensor-g2"
    assert control.profile_name() == "a-phone-from-a-file"
    assert control.profile()["devices"] == document["devices"]


def test_no_profile_keeps_the_active_one(control):
    control.set_profile("dimensity-9000")
    with run.profile_scope(None) as name:
        assert name == "dimensity-9000"
    assert control.profile_name() == "dimensity-9000"
