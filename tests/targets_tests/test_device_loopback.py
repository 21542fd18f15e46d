# SPDX-License-Identifier: Apache-2.0
"""The `device` target's tracker path for real, on loopback: a TVM RPC tracker and a plain TVM
RPC server registered under a key (no runtime preloaded, like TVM's RPC server on a phone), and
this host standing in for the phone (TVM_NNAPI_DEVICE_COMPILE_TARGET=llvm, the host compiler
instead of the NDK's). The target requests the key from the tracker, uploads the runtime
library and loads it in the server, then runs graphs and Relax executables there."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from mock_nnapi._library import find_packaged_file
from mock_ops.op_tester import OpTester
from targets import DeviceTarget

from mock_nnapi import OperandCode, OperationCode
from tvm_nnapi.runtime._library import configure_nnapi_library

pytest.importorskip(
    "tornado", reason="TVM's RPC tracker needs tornado: pip install 'tvm-nnapi[test]'"
)


@pytest.fixture(scope="module")
def loopback_phone():
    from tvm import rpc
    from tvm.rpc.tracker import Tracker

    configure_nnapi_library()  # the server process inherits the mock NNAPI selection
    tracker = Tracker(host="127.0.0.1", port=9400, port_end=9500, silent=True)
    server = rpc.Server(
        host="127.0.0.1",
        port=9500,
        port_end=9600,
        key="loopback-phone",
        tracker_addr=("127.0.0.1", tracker.port),
        silent=True,
    )
    compiler = shutil.which("g++") or shutil.which("c++")
    env = dict(
        os.environ,
        TVM_TRACKER_HOST="127.0.0.1",
        TVM_TRACKER_PORT=str(tracker.port),
        RPC_DEVICE_KEY="loopback-phone",
        TVM_NNAPI_DEVICE_COMPILE_TARGET="llvm",
        TVM_NDK_CC=compiler,
        TVM_NNAPI_ANDROID_RUNTIME=str(
            find_packaged_file("tvm_nnapi", "lib/libtvm_nnapi_runtime.so")
        ),
    )
    target = DeviceTarget(env)
    yield target
    target.close()
    server.terminate()
    tracker.terminate()


def test_operation_runs_on_the_device_through_the_tracker(loopback_phone):
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    tester = (
        OpTester(OperationCode.MUL)
        .input(x)
        .constant(np.float32([1, -1, 2, 0.5]))
        .scalar(OperandCode.INT32, 0)
        .output(OperandCode.TENSOR_FLOAT32, (3, 4))
    )
    before = loopback_phone.operation_count("MUL")
    (result,), info = loopback_phone.run_graph(*tester.graph(), [x], [((3, 4), np.float32)])
    np.testing.assert_array_equal(result, x * np.float32([1, -1, 2, 0.5]))
    assert loopback_phone.operation_count("MUL") == before + 1  # ran in the server process
    assert info["output_shapes"] == [[3, 4]]


def test_relax_executable_is_exported_uploaded_and_run_on_nnapi(loopback_phone):
    from tvm import relax

    import tvm_nnapi

    builder = relax.BlockBuilder()
    a = relax.Var("a", relax.TensorType([2, 3], "float32"))
    with builder.function("main", [a]):
        with builder.dataflow():
            out = builder.emit_output(relax.op.nn.relu(relax.op.add(a, a)))
        builder.emit_func_output(out)
    executable = tvm_nnapi.build(builder.get(), target=loopback_phone.compile_target)
    x = np.float32([[-1, 0, 1], [2, -3, 4]])
    before = loopback_phone.counter("executions_completed")
    result = loopback_phone.run(executable, "main", [x])
    np.testing.assert_array_equal(result, np.maximum(x + x, 0))
    assert loopback_phone.counter("executions_completed") > before
