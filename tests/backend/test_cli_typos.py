# SPDX-License-Identifier: Apache-2.0
"""Misspelt commands, choices and profile names: refused with exit code 2 and the closest name,
whether the profile comes from --profile or from MOCK_NNAPI_PROFILE."""

from __future__ import annotations

from .cli_runner import run_cli


def test_a_misspelt_command_names_the_closest_one():
    completed = run_cli("explian", "residual")
    assert completed.returncode == 2
    assert "invalid choice: 'explian'" in completed.stderr
    assert "did you mean 'explain'?" in completed.stderr


def test_a_misspelt_choice_names_the_closest_one():
    completed = run_cli("estimate", "residual", "--partition", "costs")
    assert completed.returncode == 2
    assert "did you mean 'cost'?" in completed.stderr


def test_a_misspelt_profile_names_the_closest_one():
    completed = run_cli("explain", "residual", "--profile", "tensor-g3")
    assert completed.returncode == 2
    assert completed.stderr.startswith("error: --profile tensor-g3: no device profile named")
    assert completed.stderr.rstrip().endswith("did you mean tensor-g2?")


def test_a_bad_profile_in_the_environment_is_refused_like_the_option():
    completed = run_cli("explain", "residual", env={"MOCK_NNAPI_PROFILE": "pixel7"})
    assert completed.returncode == 2
    assert completed.stderr.startswith("error: MOCK_NNAPI_PROFILE=pixel7: no device profile")
    assert completed.stdout == ""


def test_a_good_profile_in_the_environment_is_used():
    completed = run_cli(
        "explain", "residual", "--json", env={"MOCK_NNAPI_PROFILE": "snapdragon-660"}
    )
    assert completed.returncode == 0, completed.stderr
    assert '"snapdragon-660"' in completed.stdout
