# SPDX-License-Identifier: Apache-2.0
"""``tvm_nnapi.build`` keeps one copy of the NNAPI subgraphs' constants: in their own blobs,
not again in a constant-loader module of the executable (RunCodegen lists them for the VM
linker, which would keep them all), also after ``export_library``."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import relax

import tvm_nnapi
from tvm_nnapi.models.mobilenet import mobilenet_v2


@pytest.fixture(scope="module", autouse=True)
def mock_target_only(target):
    if target.name != "mock":
        pytest.skip("builds and runs in process on the mock target")


def _kinds(module) -> list[str]:
    return [module.kind] + [k for m in module.imports for k in _kinds(m)]


def test_weights_live_only_in_the_nnapi_modules(tmp_path):
    mod, _ = mobilenet_v2(width=0.35, resolution=32, num_classes=10)
    executable = tvm_nnapi.build(mod)
    assert "const_loader" not in _kinds(executable.mod)
    assert "nnapi" in _kinds(executable.mod)

    image = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype("float32")
    expected = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())["main"](
        tvm.runtime.tensor(image)
    )
    path = tmp_path / "mobilenet.so"
    executable.export_library(str(path))
    loaded = relax.VirtualMachine(tvm.runtime.load_module(str(path)), tvm.cpu())
    np.testing.assert_allclose(
        loaded["main"](tvm.runtime.tensor(image)).numpy(), expected.numpy(), rtol=1e-4, atol=1e-4
    )
