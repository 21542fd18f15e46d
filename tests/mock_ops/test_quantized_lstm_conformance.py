# SPDX-License-Identifier: Apache-2.0
"""QUANTIZED_LSTM on Android's conformance examples (spec_V1_3 qlstm_projection, its CIFG form
qlstm_projection_2, and qlstm_noprojection), built the way Android's generated tests build them:

* every tensor operand is a model input, so the weights arrive at execution; an omitted optional
  operand is a model input declared with its dimensions (e.g. input_to_input_weights {4, 5}) and
  given no value (setInput with a null buffer and length 0), which reads as absent (CIFG, no
  peephole, no projection);
* the scalar arguments are constants; the cell state's scale 3.05176e-05 is 2^-15 as written
  with six digits (Android accepts a scale within 1e-3 of a power of two in log2);
* in the "all inputs as internal" variants the input and the previous output state are produced
  inside the model as ADD(new input, [0]);
* in the dynamic variants the outputs are declared with unknown dimensions.

The expected outputs are Android's, compared with Android's tolerances for these types (within 1
for TENSOR_QUANT8_ASYMM_SIGNED and TENSOR_QUANT16_SYMM). Also checked: what Android refuses stays
refused (a required input given no value, a cell-state scale that is not a power of two or is
above 2^-9).
"""

from __future__ import annotations

import numpy as np
import pytest
from mock_nnapi.api import NUMPY_DTYPES, call

import mock_nnapi
from mock_nnapi import (
    Compilation,
    Execution,
    Model,
    NnapiError,
    OperandCode,
    OperationCode,
    ResultCode,
)

S8 = OperandCode.TENSOR_QUANT8_ASYMM_SIGNED
Q8 = OperandCode.TENSOR_QUANT8_SYMM
Q16 = OperandCode.TENSOR_QUANT16_SYMM
I32 = OperandCode.TENSOR_INT32
WEIGHT_SCALE = 0.00784314
STATE_SCALE = 3.05176e-05
LAYER_NORM_SCALE = 3.05182e-05

INPUT = [90, 102, 13, 26, 38, 102, 13, 26, 51, 64]
INPUT_WEIGHTS = {
    "i": [64, 77, 89, -102, -115, 13, 25, 38, -51, 64, -102, 89, -77, 64, -51, -64, -51, -38, -25,
          -13],
    "f": [-77, -13, 38, 25, 115, -64, -25, -51, 38, -102, -51, 38, -64, -51, -77, 38, -51, -77,
          -64, -64],
    "c": [-51, -38, -25, -13, -64, 64, -25, -38, -25, -77, 77, -13, -51, -38, -89, 89, -115, -64,
          102, 77],
    "o": [-102, -51, -25, -115, -13, -89, 38, -38, -102, -25, 77, -25, 51, -89, -38, -64, 13, 64,
          -77, -51],
}  # fmt: skip
# [4, 3] recurrent weights (projection to 3 outputs); the no-projection example appends a fourth
# column's values per gate (its rows are [4, 4]).
RECURRENT_WEIGHTS_4X3 = {
    "i": [-25, -38, 51, 13, -64, 115, -25, -38, -89, 6, -25, -77],
    "f": [-64, -38, -64, -25, 77, 51, 115, 38, -13, 25, 64, 25],
    "c": [-38, 25, 13, -38, 102, -10, -25, 38, 102, -77, -13, 25],
    "o": [38, -13, 13, -25, -64, -89, -25, -77, -13, -51, -89, -25],
}
RECURRENT_WEIGHTS_4X4 = {
    "f": [-64, -38, -64, -25, 77, 51, 115, 38, -13, 25, 64, 25, 25, 38, -13, 51],
    "c": [-38, 25, 13, -38, 102, -10, -25, 38, 102, -77, -13, 25, 38, -13, 25, 64],
    "o": [38, -13, 13, -25, -64, -89, -25, -77, -13, -51, -89, -25, 13, 64, 25, -38],
}
BIASES = {
    "i": [644245, 3221226, 4724464, 8160438],
    "f": [2147484, -6442451, -4294968, 2147484],
    "c": [-1073742, 15461883, 5368709, 1717987],
    "o": [1073742, -214748, 4294968, 2147484],
}
LAYER_NORM_WEIGHTS = {
    "i": [3277, 6553, 9830, 16384],
    "f": [6553, 6553, 13107, 9830],
    "c": [22937, 6553, 9830, 26214],
    "o": [19660, 6553, 6553, 16384],
}
PROJECTION_WEIGHTS = [-25, 51, 3, -51, 25, 127, 77, 20, 18, 51, -102, 51]
# cell clip, projection clip, the four intermediate scales, hidden zero point, hidden scale
SCALARS = [
    (OperandCode.FLOAT32, 0.0),
    (OperandCode.FLOAT32, 0.0),
    (OperandCode.FLOAT32, 0.007059),
    (OperandCode.FLOAT32, 0.007812),
    (OperandCode.FLOAT32, 0.007059),
    (OperandCode.FLOAT32, 0.007812),
    (OperandCode.INT32, 0),
    (OperandCode.FLOAT32, 0.007),
]

#: example: (projection, CIFG, expected output (= output state), expected cell state)
EXAMPLES = {
    "qlstm_projection": (
        True,
        False,
        [127, 127, -108, -67, 127, 127],
        [-14650, 8939, 5771, 6715, -11843, 7847, 1508, 12939],
    ),
    "qlstm_projection_2": (
        True,
        True,
        [127, 127, 127, -128, 127, 127],
        [-11692, 9960, 5491, 8861, -9422, 7726, 2056, 13149],
    ),
    "qlstm_noprojection": (
        False,
        True,
        [-15, 21, 14, 20, -15, 15, 5, 27],
        [-11692, 9960, 5491, 8861, -9422, 7726, 2056, 13149],
    ),
}


def example_operands(name):
    """The 24 tensor inputs in operation order: (type, dimensions, scale, values or None)."""
    projection, cifg, _, _ = EXAMPLES[name]
    n_output = 3 if projection else 4
    recurrent = RECURRENT_WEIGHTS_4X3 if projection else RECURRENT_WEIGHTS_4X4

    def gate_value(table, gate):
        return None if cifg and gate == "i" else table.get(gate)

    operands = [(S8, (2, 5), 0.0078125, INPUT)]
    operands += [(Q8, (4, 5), WEIGHT_SCALE, gate_value(INPUT_WEIGHTS, g)) for g in "ifco"]
    operands += [(Q8, (4, n_output), WEIGHT_SCALE, gate_value(recurrent, g)) for g in "ifco"]
    operands += [(Q16, (4,), 1.0, None)] * 3  # no peephole
    operands += [(I32, (4,), 0.0, gate_value(BIASES, g)) for g in "ifco"]
    operands += [
        (Q8, (n_output, 4), 0.00392157, PROJECTION_WEIGHTS if projection else None),
        (I32, (n_output,), 0.0, [0] * n_output if projection else None),
        (S8, (2, n_output), STATE_SCALE, [0] * 2 * n_output),
        (Q16, (2, 4), STATE_SCALE, [0] * 8),
    ]
    operands += [(Q16, (4,), LAYER_NORM_SCALE, gate_value(LAYER_NORM_WEIGHTS, g)) for g in "ifco"]
    return operands


INPUT_INDEX, OUTPUT_STATE_INDEX, CELL_STATE_INDEX = 0, 18, 19


def build(name, internal=False, dynamic=False, cell_scale=STATE_SCALE, missing=None):
    """The example's model; returns (model, the value of each model input, None = no value).
    `missing` names an operand index whose value is withheld (given no value)."""
    operands = example_operands(name)
    projection, _, _, _ = EXAMPLES[name]
    n_output = 3 if projection else 4
    model = Model()
    indices, values = [], {}
    for i, (code, dims, scale, value) in enumerate(operands):
        scale = cell_scale if i == CELL_STATE_INDEX else scale
        indices.append(model.add_operand(code, dims, scale, 0))
        values[indices[-1]] = None if value is None or i == missing else value
    arguments = [model.add_scalar(code, value) for code, value in SCALARS]
    shape = (lambda dims: (0,) * len(dims)) if dynamic else (lambda dims: dims)
    outputs = [
        model.add_operand(S8, shape((2, n_output)), STATE_SCALE, 0),
        model.add_operand(Q16, shape((2, 4)), cell_scale, 0),
        model.add_operand(S8, shape((2, n_output)), STATE_SCALE, 0),
    ]
    model_inputs = list(indices)
    if internal:
        # The input and the previous output state come from ADD(new input, [0]) inside the model.
        for k in (INPUT_INDEX, OUTPUT_STATE_INDEX):
            code, dims, scale, value = operands[k]
            new = model.add_operand(code, dims, scale, 0)
            zero = model.add_constant(code, np.zeros(1, np.int8), scale, 0)
            fuse = model.add_scalar(OperandCode.INT32, 0)
            model.add_operation(OperationCode.ADD, [new, zero, fuse], [indices[k]])
            model_inputs.remove(indices[k])
            model_inputs.append(new)
            values[new] = values.pop(indices[k])
    model.add_operation(OperationCode.QUANTIZED_LSTM, indices + arguments, outputs)
    model.identify_inputs_and_outputs(model_inputs, outputs)
    model.finish()
    return model, [values[i] for i in model_inputs]


def run(model, feeds, shapes):
    """Runs with the given model input values (None: setInput with NULL and length 0) and output
    buffers of `shapes`; returns the outputs (output state, cell state, output) and the
    dimensions the mock reports for them."""
    execution = Execution(Compilation(model).finish())
    keep = []
    for position, (index, value) in enumerate(zip(model.inputs, feeds, strict=True)):
        if value is None:
            call("ANeuralNetworksExecution_setInput", execution.handle, position, None, None, 0)
            continue
        code, dims, _, _ = model.operand_types[index]
        array = np.ascontiguousarray(np.array(value, NUMPY_DTYPES[code]).reshape(dims))
        keep.append(array)
        call(
            "ANeuralNetworksExecution_setInput",
            execution.handle,
            position,
            None,
            array.ctypes.data,
            array.nbytes,
        )
    results = []
    for position, (index, shape) in enumerate(zip(model.outputs, shapes, strict=True)):
        array = np.zeros(shape, NUMPY_DTYPES[model.operand_types[index][0]])
        results.append(array)
        call(
            "ANeuralNetworksExecution_setOutput",
            execution.handle,
            position,
            None,
            array.ctypes.data,
            array.nbytes,
        )
    call("ANeuralNetworksExecution_compute", execution.handle)
    return results, [execution.output_dimensions(i) for i in range(3)]


def output_shapes(name):
    n_output = 3 if EXAMPLES[name][0] else 4
    return [(2, n_output), (2, 4), (2, n_output)]


def assert_within_one(actual, expected):
    """Android's criterion for quantised outputs: every value within 1."""
    expected = np.asarray(expected).reshape(actual.shape)
    error = np.abs(actual.astype(np.int64) - expected)
    assert error.max() <= 1, f"{actual.ravel().tolist()} vs {expected.ravel().tolist()}"


@pytest.mark.parametrize(
    ("internal", "dynamic"),
    [(False, False), (True, False), (False, True)],
    ids=["inputs", "all_inputs_as_internal", "dynamic_output_shape"],
)
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_android_example(name, internal, dynamic):
    _, _, expected_output, expected_cell = EXAMPLES[name]
    model, feeds = build(name, internal=internal, dynamic=dynamic)
    before = mock_nnapi.operation_count(OperationCode.QUANTIZED_LSTM)
    (output_state, cell, output), dims = run(model, feeds, output_shapes(name))
    assert mock_nnapi.operation_count(OperationCode.QUANTIZED_LSTM) == before + 1
    assert dims == output_shapes(name)
    assert_within_one(output, expected_output)
    assert_within_one(output_state, expected_output)
    assert_within_one(cell, expected_cell)


def expect_op_failed(model, feeds, shapes, text):
    with pytest.raises(NnapiError) as error:
        run(model, feeds, shapes)
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert error.value.function == "ANeuralNetworksExecution_compute", str(error.value)
    assert text in str(error.value), str(error.value)
    error.value.__traceback__ = None


@pytest.mark.parametrize(("index", "what"), [(2, "input-to-gate weights"), (13, "gate bias")])
def test_required_input_without_value_fails(index, what):
    # input_to_forget_weights and forget_gate_bias are required: given no value they fail the
    # execution, as Android's prepare does.
    model, feeds = build("qlstm_noprojection", missing=index)
    expect_op_failed(model, feeds, output_shapes("qlstm_noprojection"), what)


def test_half_of_cifg_inputs_without_value_fails():
    # Without input_to_input_weights but with recurrent_to_input_weights the CIFG choice is
    # inconsistent (Android's prepare refuses it).
    model, feeds = build("qlstm_projection", missing=1)
    expect_op_failed(model, feeds, output_shapes("qlstm_projection"), "CIFG")


@pytest.mark.parametrize(
    "cell_scale",
    [2.0**-15 * 1.01, 2.0**-8, 3.0e-5],
    ids=["off_power_of_two", "above_2^-9", "not_a_power_of_two"],
)
def test_cell_state_scale_refused(cell_scale):
    # Accepted: a scale whose log2 is within 1e-3 of an integer k <= -9 (3.05176e-05 is 2^-15
    # to 1e-6 in log2); refused: 1.01 * 2^-15 (log2 off by 0.014), 2^-8 and 3e-5.
    model, feeds = build("qlstm_projection", cell_scale=cell_scale)
    expect_op_failed(model, feeds, output_shapes("qlstm_projection"), "power of two")
