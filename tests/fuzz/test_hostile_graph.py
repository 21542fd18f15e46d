# SPDX-License-Identifier: Apache-2.0
"""Hostile graph JSON and hostile exported-module bytes given to the runtime's loader.

Hypothesis mutates a valid subgraph (symbolic shapes, a constant, inline values, a RESHAPE
whose target is an expression): fields deleted or replaced by arbitrary JSON (huge and negative
integers, expressions that overflow or divide INT64_MIN by -1, wrong types), ids that dangle,
cycles, truncated and byte-flipped text, deep nesting; and the module bytes: truncated,
byte-flipped, length fields and version words replaced. Every input must either load (and then
run or fail with a message naming the subgraph) or be refused with a clear error that says what
is wrong; nothing may crash or hang.

Budget: ``FUZZ_EXAMPLES`` x 4 examples per strategy (default 200 in CI, derandomised);
``HYPOTHESIS_PROFILE=campaign`` for long runs (docs/reliability.md).
"""

from __future__ import annotations

import copy
import json
import os
import struct

import numpy as np
import pytest
import tvm
import tvm_ffi
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tvm_nnapi.compiler.graph_json import GraphBuilder
from tvm_nnapi.runtime._library import runtime_function

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "50"))
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
FUZZ = settings(
    max_examples=2000 if PROFILE == "campaign" else EXAMPLES * 4,
    deadline=None,
    derandomize=PROFILE != "campaign",
    suppress_health_check=list(HealthCheck),
)

#: Every error the loader may raise starts with one of these (they name the graph's problem).
CLEAR_PREFIXES = (
    "malformed NNAPI graph JSON: ",
    "corrupt NNAPI module: ",
    "NNAPI module ",
    "NNAPI subgraph ",
)


def base_graph() -> tuple[dict, bytes]:
    """x[n, 4] + c[4] -> RESHAPE to [n * 2, 2] -> output; n is symbolic."""
    builder = GraphBuilder("subgraph0")
    x = builder.add_input("float32", ["n", 4])
    c = builder.add_constant(np.arange(4, dtype=np.float32))
    act = builder.add_scalar("INT32", 0)
    summed = builder.add_tensor("float32", ["n", 4])
    builder.add_operation("ADD", [x, c, act], [summed], "relax.add")
    target = builder.add_int_vector(["n * 2", 2])
    out = builder.add_tensor("float32", ["n * 2", 2])
    builder.add_operation("RESHAPE", [summed, target], [out], "relax.reshape")
    builder.outputs.append(out)
    return builder.to_dict(), bytes(builder.constants)


GRAPH, CONSTANTS = base_graph()
create = runtime_function("tvm_nnapi.runtime.create")
to_bytes = runtime_function("tvm_nnapi.runtime.module_to_bytes")
load_from_bytes = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.nnapi")
MODULE_BYTES = bytes(to_bytes(create("subgraph0", json.dumps(GRAPH), CONSTANTS)))


def assert_clear(error: BaseException) -> None:
    message = str(error).strip().splitlines()[-1] if str(error).strip() else ""
    # tvm-ffi prefixes the kind ("ValueError: ..."); the text after it must name the problem.
    text = message.split(": ", 1)[1] if message.split(": ", 1)[0].endswith("Error") else message
    assert text.startswith(CLEAR_PREFIXES), f"unclear error: {str(error)[-500:]}"


def try_module(text: str, constants: bytes = CONSTANTS) -> str:
    """Create a module from `text`; if it loads, run it for n = 1 and n = 3. Returns what
    happened ("refused", "ran", "run refused")."""
    try:
        module = create("subgraph0", text, constants)
    except (ValueError, TypeError, RuntimeError) as error:
        assert_clear(error)
        return "refused"
    return run_module(module)


def run_module(module) -> str:
    outcome = "ran"
    for n in (1, 3):
        try:
            x = tvm.runtime.tensor(np.ones((n, 4), np.float32))
            out = tvm.runtime.tensor(np.zeros((n * 2, 2), np.float32))
            module[str(module["get_symbol"]())](x, out)
        except (ValueError, TypeError, RuntimeError) as error:
            assert_clear(error)
            outcome = "run refused"
    return outcome


# ---- structural mutations ----------------------------------------------------------------------

HOSTILE_INTEGERS = st.sampled_from(
    [-1, 0, 1, 2, 3, 4, 5, 6, 7, 2**31 - 1, 2**31, 2**32, 2**40, 2**62, 2**63 - 1, -(2**63)]
)
HOSTILE_EXPRESSIONS = st.sampled_from(
    [
        "n * n * n * n * n * n * n * n",
        "n * 9223372036854775807",
        "(0 - 9223372036854775807 - 1) // (0 - 1)",
        "(0 - 9223372036854775807 - 1) % (0 - 1)",
        "9223372036854775807 + 1",
        "n // 0",
        "n % (n - n)",
        "max(n, 4294967297)",
        "min(n, 0 - 5)",
        "99999999999999999999999",
        "n +",
        "((((((((((((((((((((n))))))))))))))))))))",
        "(" * 100 + "n" + ")" * 100,
        "n" + " + 0" * 100_000,  # found crashing (stack overflow); now refused
        "max(n, " * 40 + "n" + ")" * 40,
        "m",
        "",
        "n * 2",
    ]
)
OPERATION_NAMES = [
    "CONV_2D",
    "GROUPED_CONV_2D",
    "DEPTHWISE_CONV_2D",
    "TRANSPOSE_CONV_2D",
    "FULLY_CONNECTED",
    "BATCH_MATMUL",
    "SOFTMAX",
    "RESHAPE",
    "CONCATENATION",
    "MEAN",
    "TILE",
    "FILL",
    "IF",
    "WHILE",
]
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | HOSTILE_INTEGERS
    | st.floats(allow_nan=False, allow_infinity=False)
    | HOSTILE_EXPRESSIONS
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=6,
)


def paths(node, prefix=()):
    """Every (path) into a JSON tree."""
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from paths(value, (*prefix, index))


ALL_PATHS = [p for p in paths(GRAPH) if p]


@st.composite
def mutated_graph(draw):
    graph = copy.deepcopy(GRAPH)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(ALL_PATHS))
        parent = graph
        try:
            for key in path[:-1]:
                parent = parent[key]
            current = parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
        if not isinstance(parent, (dict, list)):
            continue  # an earlier mutation replaced a container by a scalar or a string
        kind = draw(
            st.sampled_from(["delete", "replace", "integer", "expression", "duplicate", "op"])
        )
        if kind == "delete":
            del parent[path[-1]]
        elif kind == "replace":
            parent[path[-1]] = draw(JSON_VALUES)
        elif kind == "integer":
            parent[path[-1]] = draw(HOSTILE_INTEGERS)
        elif kind == "expression":
            parent[path[-1]] = draw(HOSTILE_EXPRESSIONS)
        elif kind == "op":  # another operation over the same operands (wrong input counts)
            operations = graph.get("operations")
            if not isinstance(operations, list) or not operations:
                continue  # an earlier mutation removed them
            operation = operations[draw(st.integers(0, len(operations) - 1))]
            if not isinstance(operation, dict):
                continue
            operation["op"] = draw(st.sampled_from(OPERATION_NAMES))
            if draw(st.booleans()) and isinstance(operation.get("inputs"), list):
                operation["inputs"] = operation["inputs"][: draw(st.integers(0, 2))]
        elif isinstance(current, list) and current:
            current.append(copy.deepcopy(current[draw(st.integers(0, len(current) - 1))]))
    return graph


@FUZZ
@given(mutated_graph())
def test_mutated_graph_is_refused_clearly_or_runs(graph):
    try_module(json.dumps(graph))


@FUZZ
@given(st.data())
def test_truncated_and_flipped_text_is_refused_clearly(data):
    text = json.dumps(GRAPH)
    kind = data.draw(st.sampled_from(["truncate", "flip", "insert"]))
    position = data.draw(st.integers(0, len(text) - 1))
    if kind == "truncate":
        text = text[:position]
    elif kind == "flip":
        text = text[:position] + data.draw(st.characters(max_codepoint=0x7F)) + text[position + 1 :]
    else:
        text = text[:position] + data.draw(st.text(max_size=4)) + text[position:]
    try_module(text)


@pytest.mark.parametrize("depth", [33, 1000, 200_000])
def test_deeply_nested_json_is_refused_before_parsing(depth):
    assert try_module("[" * depth + "]" * depth) == "refused"
    nested = dict(GRAPH)
    nested["extra"] = json.loads("[" * 30 + "]" * 30)  # deep but legal: ignored
    assert try_module(json.dumps(nested)) == "ran"


def test_overflowing_shape_expressions_are_refused_at_run_time():
    """Found by the fuzzer: INT64_MIN // -1 in a shape expression killed the process (SIGFPE);
    n * huge wrapped around. Both are now errors naming the expression."""
    for expression in (
        "(0 - 9223372036854775807 - 1) // (0 - 1)",
        "n * 9223372036854775807",
        "9223372036854775807 + n",
    ):
        graph = copy.deepcopy(GRAPH)
        graph["operands"][4]["value"][0] = expression
        assert try_module(json.dumps(graph)) == "run refused", expression


@pytest.mark.parametrize(
    "operation", ["CONV_2D", "FULLY_CONNECTED", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV_2D"]
)
def test_operation_with_too_few_inputs_is_refused_not_a_crash(operation):
    """Found by the fuzzer: the runtime's cost estimate (made before NNAPI validates the model)
    read a CONV_2D's filter shape from inputs[1] of a one-input operation: a segfault."""
    graph = copy.deepcopy(GRAPH)
    graph["operations"][0]["op"] = operation
    graph["operations"][0]["inputs"] = [0]
    assert try_module(json.dumps(graph)) == "run refused"


def test_very_long_shape_expression_is_refused_not_a_stack_overflow():
    """A chain of 100000 additions used to parse into a 100000-deep tree whose evaluation
    overflowed the stack (SIGSEGV); expressions are now limited to 256 operators."""
    graph = copy.deepcopy(GRAPH)
    graph["operands"][4]["value"][0] = "n" + " + 0" * 100_000
    with pytest.raises(Exception, match="more than 256 operators"):
        create("subgraph0", json.dumps(graph), CONSTANTS)


def test_dimension_above_uint32_is_refused_not_truncated():
    """A symbolic dimension that evaluates above 2^32 - 1 used to be cast to uint32 (2^32 + 8
    became 8, a silently wrong model); now it is an error naming the operand."""
    graph = copy.deepcopy(GRAPH)
    graph["operands"][3]["shape"][0] = "n * 4294967296"
    module = create("subgraph0", json.dumps(graph), CONSTANTS)
    x = tvm.runtime.tensor(np.ones((1, 4), np.float32))
    out = tvm.runtime.tensor(np.zeros((2, 2), np.float32))
    with pytest.raises(Exception, match="operand 3 would need more than 4 GiB"):
        module["subgraph0"](x, out)


def test_constant_whose_element_count_overflows_is_refused():
    graph = copy.deepcopy(GRAPH)
    graph["operands"][1]["shape"] = [2**40, 2**40, 4]
    assert try_module(json.dumps(graph)) == "refused"


def test_huge_version_is_not_truncated_to_a_valid_one():
    graph = copy.deepcopy(GRAPH)
    graph["version"] = 2**32 + 1  # used to pass as version 1 after a cast to int
    with pytest.raises(Exception, match="graph version 4294967297"):
        create("subgraph0", json.dumps(graph), CONSTANTS)


# ---- module bytes --------------------------------------------------------------------------

HEADER = 8 + 4  # magic, version


@FUZZ
@given(st.data())
def test_hostile_module_bytes_are_refused_clearly(data):
    blob = bytearray(MODULE_BYTES)
    kind = data.draw(st.sampled_from(["truncate", "flip", "length", "version", "append"]))
    if kind == "truncate":
        blob = blob[: data.draw(st.integers(0, len(blob) - 1))]
    elif kind == "flip":
        for _ in range(data.draw(st.integers(1, 4))):
            position = data.draw(st.integers(0, len(blob) - 1))
            blob[position] ^= 1 << data.draw(st.integers(0, 7))
    elif kind == "length":
        # The three length fields: symbol at 12, graph JSON after it, constants after that.
        symbol_length = struct.unpack_from("<Q", blob, HEADER)[0]
        graph_at = HEADER + 8 + symbol_length
        graph_length = struct.unpack_from("<Q", blob, graph_at)[0]
        at = data.draw(st.sampled_from([HEADER, graph_at, graph_at + 8 + graph_length]))
        value = data.draw(st.sampled_from([0, 1, 2**31, 2**32, 2**63, 2**64 - 1, len(blob)]))
        struct.pack_into("<Q", blob, at, value)
    elif kind == "version":
        struct.pack_into("<I", blob, 8, data.draw(st.sampled_from([0, 2, 2**31, 2**32 - 1])))
    else:
        blob += data.draw(st.binary(min_size=1, max_size=16))
    try:
        module = load_from_bytes(bytes(blob))
    except (ValueError, TypeError, RuntimeError) as error:
        assert_clear(error)
        return
    run_module(module)
