# SPDX-License-Identifier: Apache-2.0
"""mock_nnapi.device_profiles, the Python reader of profile files, against the mock's own reader:
the same files by name and path, the same refusals, and the facts the Python side derives."""

from __future__ import annotations

import pytest

from mock_nnapi import NnapiError, OperationCode, control, device_profiles

from .helpers import device_entry, profile_with

BUILT_IN = [
    "dimensity-9000",
    "reference",
    "snapdragon-8-elite",
    "snapdragon-8-gen-2",
    "snapdragon-8-gen-3",
    "tensor-g2",
]


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_built_in_profile_reads_as_the_mock_reads_it(name):
    control.set_profile(name)
    assert device_profiles.load_profile(name) == control.profile()


def test_the_names_found_are_the_mocks(tmp_path, write_profile, monkeypatch):
    assert device_profiles.available_profiles() == control.available_profiles()
    write_profile(profile_with([device_entry("cpu", "CPU")], name="extra-phone"))
    monkeypatch.setenv(device_profiles.PROFILE_DIR_ENV, str(tmp_path))
    assert "extra-phone" in device_profiles.available_profiles()
    assert device_profiles.available_profiles() == control.available_profiles()


def test_the_profile_directory_comes_before_the_built_in_copy(tmp_path, write_profile, monkeypatch):
    # A "reference" of one's own in $MOCK_NNAPI_PROFILE_DIR wins over the built-in one.
    write_profile(profile_with([device_entry("own-cpu", "CPU")], name="reference"))
    monkeypatch.setenv(device_profiles.PROFILE_DIR_ENV, str(tmp_path))
    assert device_profiles.profile_path("reference") == tmp_path / "reference.json"
    control.set_profile("reference")
    assert device_profiles.load_profile("reference") == control.profile()
    assert [d["name"] for d in control.profile()["devices"]] == ["own-cpu"]


def test_a_path_is_read_whatever_the_name_inside(write_profile):
    path = write_profile(profile_with([device_entry("cpu", "CPU")], name="inside"), "outside")
    control.set_profile(str(path))
    assert device_profiles.load_profile(path) == control.profile()
    assert device_profiles.load_profile(str(path))["name"] == "inside"


def test_a_file_found_by_name_must_have_that_name(tmp_path, write_profile, monkeypatch):
    write_profile(profile_with([device_entry("cpu", "CPU")], name="inside"), "outside")
    monkeypatch.setenv(device_profiles.PROFILE_DIR_ENV, str(tmp_path))
    with pytest.raises(NnapiError, match="differs from the file name"):
        control.set_profile("outside")
    with pytest.raises(ValueError, match="name: 'inside' differs from the file name 'outside'"):
        device_profiles.load_profile("outside")


def test_unknown_names_and_missing_files_are_refused_like_the_mock_does(tmp_path):
    with pytest.raises(NnapiError, match="no device profile named"):
        control.set_profile("no-such-phone")
    with pytest.raises(device_profiles.ProfileNotFoundError) as error:
        device_profiles.load_profile("no-such-phone")
    assert "no device profile named 'no-such-phone' (available: " in str(error.value)
    assert "reference" in str(error.value)
    missing = tmp_path / "missing.json"
    with pytest.raises(NnapiError, match="no such profile file"):
        control.set_profile(str(missing))
    with pytest.raises(FileNotFoundError, match=f"{missing}: no such profile file"):
        device_profiles.load_profile(missing)


def test_supported_operations_follow_the_mocks_reading_of_support():
    every = set(OperationCode.__members__)
    dsp = device_entry("dsp", "ACCELERATOR")
    dsp["support"].update(operations=["ADD", "MUL", "CONV_2D"], exclude_operations=["MUL"])
    gpu = device_entry("gpu", "GPU")
    gpu["support"]["exclude_operations"] = ["SOFTMAX", "CONV_2D"]
    assert device_profiles.device_operations(dsp) == {"ADD", "CONV_2D"}
    assert device_profiles.device_operations(gpu) == every - {"SOFTMAX", "CONV_2D"}
    # One device's exclusions do not remove what another device supports.
    assert device_profiles.supported_operations(profile_with([dsp, gpu])) == every - {"SOFTMAX"}
    assert device_profiles.supported_operations(profile_with([dsp])) == {"ADD", "CONV_2D"}
    cpu = device_entry("cpu", "CPU")
    assert device_profiles.supported_operations(profile_with([dsp, gpu, cpu])) is None


def test_the_host_cpu_and_the_runtime_feature_level():
    first = device_entry("first-cpu", "CPU", runtime_cpu=False)
    marked = device_entry("runtime-cpu", "CPU")
    gpu = device_entry("gpu", "GPU")
    assert device_profiles.host_cpu_device(profile_with([first, marked]))["name"] == "runtime-cpu"
    assert device_profiles.host_cpu_device(profile_with([gpu, first]))["name"] == "first-cpu"
    with pytest.raises(ValueError, match="no CPU device to model the host"):
        device_profiles.host_cpu_device(profile_with([gpu]))
    data = profile_with([marked])
    assert device_profiles.runtime_feature_level(data) == 8
    data["runtime"]["feature_level"] = 1000006
    assert device_profiles.runtime_feature_level(data) == 1000006
    del data["runtime"]
    assert device_profiles.runtime_feature_level(data) == 8
