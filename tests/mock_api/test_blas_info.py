# SPDX-License-Identifier: Apache-2.0
"""MockNnapi_getBlasInfo: the OpenBLAS kernel set the mock's GEMMs run on, and who chose it."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

PROBE = "import json, mock_nnapi.control as c; print(json.dumps(c.blas_info()))"


def _probe(**environment: str | None) -> dict:
    env = dict(os.environ)
    for name, value in environment.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    result = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout)


def test_blas_info_names_the_kernel_set_and_thread_count():
    from mock_nnapi import control

    info = control.blas_info()
    assert info["config"].startswith("OpenBLAS ")
    # The kernel set in use is the one the configuration string names.
    assert info["core"] and info["core"] in info["config"]
    assert info["threads"] >= 1


def test_blas_info_reports_openblas_own_detection_without_openblas_coretype():
    info = _probe(OPENBLAS_CORETYPE=None)
    assert info["core_source"] == "OpenBLAS's own detection"
    assert info["core"] in info["config"]


@pytest.mark.skipif(platform.machine() != "x86_64", reason="Haswell is an x86-64 kernel set")
def test_blas_info_reports_a_user_openblas_coretype():
    info = _probe(OPENBLAS_CORETYPE="Haswell", OPENBLAS_NUM_THREADS="1")
    assert info["core"] == "Haswell"
    assert info["core_source"] == "OPENBLAS_CORETYPE=Haswell (environment)"
    assert info["threads"] == 1
