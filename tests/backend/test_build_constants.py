# SPDX-License-Identifier: Apache-2.0
"""``tvm_nnapi.build`` keeps one copy of the NNAPI subgraphs' constants: in their own blobs,
not again in a constant-loader module of the executable (RunCodegen lists them for the VM
linker, which would keep them all), also after ``export_library``. The codegen reads Relax
constants in place, writes only the constants the NNAPI model reads into the blob (a weight
transposed at compile time once, not also as it was), and the runtime module keeps the blob it
is given as a tensor without copying it."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import relax

import tvm_nnapi
from tvm_nnapi.compiler.codegen import lower_function
from tvm_nnapi.compiler.converters import constant_value
from tvm_nnapi.models.mobilenet import mobilenet_v2
from tvm_nnapi.runtime._library import runtime_function


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


def _matmul_module(weight: np.ndarray) -> tvm.IRModule:
    """``relu(x @ weight)`` with ``weight`` a constant (FULLY_CONNECTED takes it transposed)."""
    builder = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([1, weight.shape[0]], "float32"))
    with builder.function("main", [x]):
        with builder.dataflow():
            product = builder.emit(relax.op.matmul(x, relax.const(weight)))
            output = builder.emit_output(relax.op.nn.relu(product))
        builder.emit_func_output(output)
    return builder.get()


def test_the_blob_holds_each_weight_once_as_the_model_reads_it():
    weight = np.random.default_rng(0).standard_normal((64, 48)).astype("float32")
    partitioned = tvm_nnapi.partition(_matmul_module(weight))
    (name,) = tvm_nnapi.nnapi_subgraphs(partitioned)
    builder = lower_function(partitioned[name].with_attr("global_symbol", name))
    document = builder.to_dict()
    constants = [o for o in document["operands"] if "constant" in o]
    # The transposed weight and FULLY_CONNECTED's zero bias; not the weight as it was.
    assert sorted(o["constant"]["nbytes"] for o in constants) == [48 * 4, weight.nbytes]
    blob = builder.constant_blob()
    assert blob.nbytes < weight.nbytes + 48 * 4 + 128
    stored = next(o for o in constants if o["constant"]["nbytes"] == weight.nbytes)
    offset = stored["constant"]["offset"]
    np.testing.assert_array_equal(
        blob[offset : offset + weight.nbytes].view("float32").reshape(48, 64), weight.T
    )
    used = {i for op in document["operations"] for i in op["inputs"]}
    assert all(document["operands"].index(o) in used for o in constants)


def test_the_codegen_reads_constants_in_place_and_read_only():
    weight = np.arange(12, dtype="float32").reshape(3, 4)
    constant = relax.const(weight)
    value = constant_value(constant)
    assert np.shares_memory(value, np.from_dlpack(constant.value))
    assert not value.flags.writeable
    np.testing.assert_array_equal(value, weight)


def test_a_module_created_from_a_tensor_equals_one_created_from_bytes():
    weight = np.random.default_rng(1).standard_normal((16, 8)).astype("float32")
    partitioned = tvm_nnapi.partition(_matmul_module(weight))
    (name,) = tvm_nnapi.nnapi_subgraphs(partitioned)
    builder = lower_function(partitioned[name].with_attr("global_symbol", name))
    create = runtime_function("tvm_nnapi.runtime.create")
    to_bytes = runtime_function("tvm_nnapi.runtime.module_to_bytes")
    blob = builder.constant_blob()
    # As the codegen passes it: tvm_ffi's DLPack import, which takes any alignment.
    from_tensor = create(name, builder.to_json(), tvm_ffi.from_dlpack(blob))
    from_bytes = create(name, builder.to_json(), builder.constants)
    assert bytes(to_bytes(from_tensor)) == bytes(to_bytes(from_bytes))
    del blob  # the module keeps the tensor's memory alive
    x = np.random.default_rng(2).standard_normal((1, 16)).astype("float32")
    expected = np.maximum(x @ weight, 0)
    for module in (from_tensor, from_bytes):
        out = tvm.runtime.empty((1, 8), "float32")
        module[name](tvm.runtime.tensor(x), out)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_a_module_refuses_constants_that_are_neither_bytes_nor_a_tensor():
    weight = np.ones((4, 4), dtype="float32")
    partitioned = tvm_nnapi.partition(_matmul_module(weight))
    (name,) = tvm_nnapi.nnapi_subgraphs(partitioned)
    builder = lower_function(partitioned[name].with_attr("global_symbol", name))
    with pytest.raises(TypeError, match="bytes or a tensor"):
        runtime_function("tvm_nnapi.runtime.create")(name, builder.to_json(), 3)
