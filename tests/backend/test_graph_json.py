# SPDX-License-Identifier: Apache-2.0
"""The runtime validates graph JSON and module bytes at load and names what is wrong."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import tvm
import tvm_ffi

import tvm_nnapi  # noqa: F401  (loads the runtime library)
from tvm_nnapi.compiler.graph_json import GraphBuilder
from tvm_nnapi.runtime._library import runtime_function


def valid_graph() -> tuple[dict, bytes]:
    builder = GraphBuilder("subgraph0")
    x = builder.add_input("float32", ["n", 4])
    y = builder.add_constant(np.arange(4, dtype=np.float32))
    act = builder.add_scalar("INT32", 0)
    out = builder.add_tensor("float32", ["n", 4])
    builder.add_operation("ADD", [x, y, act], [out], "relax.add")
    builder.outputs.append(out)
    return builder.to_dict(), bytes(builder.constants)


def create(graph: dict, constants: bytes = b"", symbol: str = "subgraph0"):
    return runtime_function("tvm_nnapi.runtime.create")(symbol, json.dumps(graph), constants)


def test_valid_graph_creates_a_module_that_runs():
    graph, constants = valid_graph()
    module = create(graph, constants)
    x = np.ones((3, 4), np.float32)
    out = np.empty((3, 4), np.float32)
    module[graph["symbol"]](tvm.runtime.tensor(x), out := tvm.runtime.tensor(out))
    np.testing.assert_array_equal(out.numpy(), x + np.arange(4, dtype=np.float32))


def mutate(path: list, value) -> dict:
    graph, _ = valid_graph()
    target = graph
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return graph


CASES = [
    ("not json", "{", "document"),
    ("wrong format", mutate(["format"], "onnx"), "format"),
    ("future version", mutate(["version"], 99), "version 99"),
    ("missing operations", mutate(["operations"], KeyError), 'missing field "operations"'),
    ("unknown op", mutate(["operations", 0, "op"], "FROBNICATE"), "operation 0"),
    ("dangling operand id", mutate(["operations", 0, "inputs", 0], 42), "operand id 42"),
    ("unknown type", mutate(["operands", 0, "type"], "TENSOR_FLOAT128"), "operand 0"),
    ("unknown symbol", mutate(["operands", 0, "shape", 0], "m"), "unknown symbol 'm'"),
    ("bad expression", mutate(["operands", 3, "shape", 0], "n +* 2"), "operand 3"),
    ("constant outside blob", mutate(["operands", 1, "constant", "offset"], 4096), "operand 1"),
    ("never written", mutate(["operations", 0, "outputs", 0], 0), "operation 0"),
    ("symbol not bindable", mutate(["symbols"], ["n", "k"]), "symbol 'k'"),
    ("huge dimension", mutate(["operands", 0, "shape", 1], 2**50), "operand 0"),
]


@pytest.mark.parametrize("name,graph,needle", CASES, ids=[c[0] for c in CASES])
def test_malformed_graph_is_rejected_with_a_message_naming_the_problem(name, graph, needle):
    _, constants = valid_graph()
    text = graph if isinstance(graph, str) else json.dumps(graph)
    with pytest.raises(Exception) as error:
        runtime_function("tvm_nnapi.runtime.create")("subgraph0", text, constants)
    assert needle in str(error.value), str(error.value)


def test_cycle_is_rejected():
    graph, constants = valid_graph()
    cyclic = copy.deepcopy(graph)
    # out = ADD(x, out2); out2 = ADD(out, y): a cycle between two operations.
    cyclic["operands"].append({"type": "TENSOR_FLOAT32", "shape": ["n", 4]})
    cyclic["operations"][0]["inputs"] = [0, 4, 2]
    cyclic["operations"].append({"op": "ADD", "inputs": [3, 1, 2], "outputs": [4]})
    with pytest.raises(Exception, match="cycle"):
        create(cyclic, constants)


def test_input_shape_mismatch_names_the_input():
    graph, constants = valid_graph()
    module = create(graph, constants)
    x = tvm.runtime.tensor(np.ones((3, 5), np.float32))
    out = tvm.runtime.tensor(np.empty((3, 5), np.float32))
    with pytest.raises(Exception, match="input 0 has shape"):
        module["subgraph0"](x, out)


def test_module_bytes_round_trip_and_corruption():
    graph, constants = valid_graph()
    module = create(graph, constants)
    load = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.nnapi")
    blob = bytes(runtime_function("tvm_nnapi.runtime.module_to_bytes")(module))
    assert load(blob)["get_symbol"]() == "subgraph0"
    corrupt = [
        b"",
        blob[:8],
        b"NOTNNAPI" + blob[8:],
        blob[:8] + b"\x02" + blob[9:],  # format version 2
        blob[: len(blob) // 2],  # truncated inside the graph JSON
        blob + b"\0",  # trailing garbage
    ]
    for bad in corrupt:
        with pytest.raises(Exception, match="NNAPI module"):
            load(bad)
