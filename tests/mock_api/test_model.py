# SPDX-License-Identifier: Apache-2.0
"""ANeuralNetworksModel_*: Android's validation rules and result codes (TestValidation.cpp,
ModelBuilder.cpp), including the order in which the checks run."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from mock_nnapi.constants import OperandCode, OperationCode

from .nn import (
    BAD_DATA,
    BAD_STATE,
    F32,
    INT32,
    NO_ERROR,
    UNEXPECTED_NULL,
    last_error,
    lib,
    operand_type,
    ptr,
    raw_type,
    u32s,
)


def add_operand(model, code, dims=None, scale=0.0, zero_point=0):
    t = operand_type(code, dims, scale, zero_point)
    return lib.ANeuralNetworksModel_addOperand(model, ctypes.byref(t))


def test_create_and_free_null():
    assert lib.ANeuralNetworksModel_create(None) == UNEXPECTED_NULL
    lib.ANeuralNetworksModel_free(None)  # a no-op


@pytest.mark.parametrize(
    "code, dims, scale, zero_point, expected",
    [
        (OperandCode.FLOAT32, None, 0.0, 0, NO_ERROR),
        (F32, [2, 3], 0.0, 0, NO_ERROR),
        (F32, [0, 3], 0.0, 0, NO_ERROR),  # unknown dimension
        (F32, None, 0.0, 0, NO_ERROR),  # unknown rank
        (OperandCode.TENSOR_QUANT8_ASYMM, None, -1.0, 0, BAD_DATA),  # scale must be > 0
        (OperandCode.TENSOR_QUANT8_ASYMM, None, 1.0, -1, BAD_DATA),  # zeroPoint in [0, 255]
        (OperandCode.TENSOR_QUANT8_ASYMM, None, 1.0, 256, BAD_DATA),
        (OperandCode.TENSOR_QUANT8_ASYMM_SIGNED, [2], 0.5, -128, NO_ERROR),
        (OperandCode.TENSOR_QUANT8_ASYMM_SIGNED, [2], 0.5, 128, BAD_DATA),
        (OperandCode.TENSOR_QUANT8_SYMM, [2], 0.5, 1, BAD_DATA),
        (OperandCode.TENSOR_QUANT16_ASYMM, [2], 0.5, 65535, NO_ERROR),
        (OperandCode.TENSOR_INT32, [2], 0.25, 3, NO_ERROR),  # Android checks nothing here
        (F32, [2], 0.5, 0, BAD_DATA),  # float tensors carry no quantisation
        (INT32, [2], 0.0, 0, BAD_DATA),  # a scalar has no dimensions
        (INT32, None, 1.0, 0, BAD_DATA),
        (-1, None, 0.0, 0, BAD_DATA),  # unknown operand code
        (16, None, 0.0, 0, BAD_DATA),
        (OperandCode.MODEL, None, 0.0, 0, NO_ERROR),
        (10000, None, 0.0, 0, NO_ERROR),  # OEM_SCALAR
        (10001, [4], 0.0, 0, NO_ERROR),  # TENSOR_OEM_BYTE
        (F32, [65536, 65536], 0.0, 0, BAD_DATA),  # byte size exceeds 4 GiB
    ],
)
def test_add_operand(arena, code, dims, scale, zero_point, expected):
    model = arena.model()
    assert add_operand(model, code, dims, scale, zero_point) == expected


def test_add_operand_null_and_inconsistent_dimensions(arena):
    model = arena.model()
    t = operand_type(OperandCode.FLOAT32)
    assert lib.ANeuralNetworksModel_addOperand(None, ctypes.byref(t)) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksModel_addOperand(model, None) == UNEXPECTED_NULL
    # dimensionCount must be consistent with dimensions (kInvalidTensorType1/2).
    bad1 = raw_type(F32, 1, with_pointer=False)
    bad2 = raw_type(F32, 0, with_pointer=True)
    assert lib.ANeuralNetworksModel_addOperand(model, ctypes.byref(bad1)) == BAD_DATA
    assert lib.ANeuralNetworksModel_addOperand(model, ctypes.byref(bad2)) == BAD_DATA


@pytest.mark.parametrize("state", ["finished", "invalid"])
def test_mutations_after_finish_are_bad_state(arena, state):
    model = arena.binary_model(finish=False)
    if state == "finished":
        assert lib.ANeuralNetworksModel_finish(model) == NO_ERROR
    else:  # an operand nothing writes: finish fails and marks the model invalid
        assert add_operand(model, F32, [2]) == NO_ERROR
        assert lib.ANeuralNetworksModel_finish(model) == BAD_DATA
    t = operand_type(OperandCode.FLOAT32)
    value = np.zeros(2, np.float32)
    memory, _ = arena.fd_memory(64)
    params = arena.keep((ctypes.c_float * 2)(1.0, 2.0))
    quant = arena.keep(lib_channel_quant(0, params))
    value_model = arena.binary_model()
    assert lib.ANeuralNetworksModel_addOperand(model, ctypes.byref(t)) == BAD_STATE
    assert lib.ANeuralNetworksModel_setOperandValue(model, 0, ptr(value), 8) == BAD_STATE
    assert lib.ANeuralNetworksModel_setOperandValueFromMemory(model, 0, memory, 0, 8) == BAD_STATE
    assert lib.ANeuralNetworksModel_setOperandValueFromModel(model, 0, value_model) == BAD_STATE
    assert (
        lib.ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(model, 0, ctypes.byref(quant))
        == BAD_STATE
    )
    assert lib.ANeuralNetworksModel_addOperation(model, 0, 1, u32s([0]), 1, u32s([1])) == BAD_STATE
    assert (
        lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 1, u32s([0]), 1, u32s([3]))
        == BAD_STATE
    )
    assert lib.ANeuralNetworksModel_relaxComputationFloat32toFloat16(model, True) == BAD_STATE
    assert lib.ANeuralNetworksModel_relaxComputationFloat32toFloat16(model, False) == BAD_STATE
    assert lib.ANeuralNetworksModel_setOperandExtensionData(model, 0, None, 0) == BAD_STATE
    assert lib.ANeuralNetworksModel_finish(model) == BAD_STATE  # twice


def lib_channel_quant(channel_dim, scales):
    from mock_nnapi._library import SymmPerChannelQuantParams

    return SymmPerChannelQuantParams(channel_dim, len(scales), scales)


def test_finish_null_empty_and_invalid(arena):
    assert lib.ANeuralNetworksModel_finish(None) == UNEXPECTED_NULL
    empty = arena.model()
    assert lib.ANeuralNetworksModel_finish(empty) == BAD_DATA  # an empty model is invalid
    # The failed finish marked the model invalid: every later mutation or finish is BAD_STATE.
    assert add_operand(empty, F32, [2]) == BAD_STATE
    assert lib.ANeuralNetworksModel_finish(empty) == BAD_STATE
    compilation = ctypes.c_void_p()
    assert lib.ANeuralNetworksCompilation_create(empty, ctypes.byref(compilation)) == BAD_STATE


def test_set_operand_value(arena):
    model = arena.model()
    assert add_operand(model, OperandCode.FLOAT32) == NO_ERROR
    buffer = np.zeros(5, np.float32)
    assert lib.ANeuralNetworksModel_setOperandValue(None, 0, ptr(buffer), 20) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksModel_setOperandValue(model, 0, None, 20) == UNEXPECTED_NULL
    assert lib.ANeuralNetworksModel_setOperandValue(model, 0, ptr(buffer), 20) == BAD_DATA
    assert lib.ANeuralNetworksModel_setOperandValue(model, 0, ptr(buffer), 0) == BAD_DATA
    assert lib.ANeuralNetworksModel_setOperandValue(model, 0, ptr(buffer), 4) == NO_ERROR
    assert lib.ANeuralNetworksModel_setOperandValue(model, 1, ptr(buffer), 4) == BAD_DATA
    assert lib.ANeuralNetworksModel_setOperandValue(model, -1, ptr(buffer), 4) == BAD_DATA
    # (NULL, 0) marks an omitted optional operand.
    assert lib.ANeuralNetworksModel_setOperandValue(model, 0, None, 0) == NO_ERROR


def test_set_operand_value_needs_known_dimensions(arena):
    model = arena.model()
    assert add_operand(model, F32, [0, 2]) == NO_ERROR
    assert add_operand(model, F32) == NO_ERROR  # unknown rank
    buffer = np.zeros(4, np.float32)
    assert lib.ANeuralNetworksModel_setOperandValue(model, 0, ptr(buffer), 8) == BAD_DATA
    assert lib.ANeuralNetworksModel_setOperandValue(model, 1, ptr(buffer), 8) == BAD_DATA
    # Omitting works whatever the shape.
    assert lib.ANeuralNetworksModel_setOperandValue(model, 0, None, 0) == NO_ERROR


def test_oem_operands(arena):
    model = arena.model()
    buffer = np.zeros(20, np.uint8)
    assert add_operand(model, 10000) == NO_ERROR  # OEM_SCALAR takes any length
    assert lib.ANeuralNetworksModel_setOperandValue(model, 0, ptr(buffer), 20) == NO_ERROR
    assert add_operand(model, 10001, [4]) == NO_ERROR
    assert lib.ANeuralNetworksModel_setOperandValue(model, 1, ptr(buffer), 4) == NO_ERROR


def test_set_operand_value_from_memory(arena):
    model = arena.model()
    assert add_operand(model, F32, [1]) == NO_ERROR
    memory, _ = arena.fd_memory(20)
    set_from = lib.ANeuralNetworksModel_setOperandValueFromMemory
    assert set_from(None, 0, memory, 0, 4) == UNEXPECTED_NULL
    assert set_from(model, 0, None, 0, 4) == UNEXPECTED_NULL
    assert set_from(model, -1, memory, 0, 4) == BAD_DATA
    assert set_from(model, 0, memory, 0, 20) == BAD_DATA  # not the size of a float
    assert set_from(model, 1, memory, 0, 4) == BAD_DATA  # no such operand
    assert set_from(model, 0, memory, 21, 4) == BAD_DATA  # offset past the end
    assert set_from(model, 0, memory, 17, 4) == BAD_DATA  # region past the end
    assert set_from(model, 0, memory, 16, 4) == NO_ERROR


def test_set_operand_value_from_memory_needs_read_access(arena):
    model = arena.model()
    assert add_operand(model, F32, [1]) == NO_ERROR
    memory, _ = arena.fd_memory(4, protect=2)  # PROT_WRITE only
    assert lib.ANeuralNetworksModel_setOperandValueFromMemory(model, 0, memory, 0, 4) == BAD_DATA


def test_set_operand_value_from_model(arena):
    value_model = arena.binary_model(finish=False)
    model = arena.model()
    assert add_operand(model, OperandCode.MODEL) == NO_ERROR
    set_from = lib.ANeuralNetworksModel_setOperandValueFromModel
    assert set_from(model, 0, value_model) == BAD_STATE  # the value model is not finished
    assert lib.ANeuralNetworksModel_finish(value_model) == NO_ERROR
    assert set_from(None, 0, value_model) == UNEXPECTED_NULL
    assert set_from(model, 0, None) == UNEXPECTED_NULL
    assert set_from(model, -1, value_model) == BAD_DATA
    assert set_from(model, 1, value_model) == BAD_DATA
    assert set_from(model, 0, value_model) == NO_ERROR


def test_set_operand_value_from_invalid_model(arena):
    invalid = arena.model()
    assert lib.ANeuralNetworksModel_finish(invalid) == BAD_DATA
    model = arena.model()
    assert add_operand(model, OperandCode.MODEL) == NO_ERROR
    assert lib.ANeuralNetworksModel_setOperandValueFromModel(model, 0, invalid) == BAD_STATE


def test_model_reference_needs_model_type(arena):
    # Android checks the operand's type at finish, not at setOperandValueFromModel.
    value_model = arena.binary_model()
    model = arena.binary_model(finish=False)
    assert add_operand(model, OperandCode.FLOAT32) == NO_ERROR
    assert lib.ANeuralNetworksModel_setOperandValueFromModel(model, 4, value_model) == NO_ERROR
    assert lib.ANeuralNetworksModel_finish(model) == BAD_DATA


def test_set_operand_symm_per_channel_quant_params(arena):
    model = arena.model()
    per_channel = OperandCode.TENSOR_QUANT8_SYMM_PER_CHANNEL
    assert add_operand(model, per_channel, [2]) == NO_ERROR
    assert add_operand(model, F32, [2]) == NO_ERROR
    scales = arena.keep((ctypes.c_float * 2)(1.0, 2.0))
    good = arena.keep(lib_channel_quant(0, scales))
    set_params = lib.ANeuralNetworksModel_setOperandSymmPerChannelQuantParams
    assert set_params(None, 0, ctypes.byref(good)) == UNEXPECTED_NULL
    assert set_params(model, 0, None) == UNEXPECTED_NULL
    assert set_params(model, 2, ctypes.byref(good)) == BAD_DATA  # no such operand
    assert set_params(model, 1, ctypes.byref(good)) == BAD_DATA  # not a per-channel operand
    bad_dim = arena.keep(lib_channel_quant(1, scales))
    assert set_params(model, 0, ctypes.byref(bad_dim)) == BAD_DATA
    from mock_nnapi._library import SymmPerChannelQuantParams

    null_scales = arena.keep(SymmPerChannelQuantParams(0, 2, None))
    assert set_params(model, 0, ctypes.byref(null_scales)) == BAD_DATA  # NULL scales, count 2
    negative = arena.keep((ctypes.c_float * 2)(1.0, -2.0))
    assert set_params(model, 0, ctypes.byref(arena.keep(lib_channel_quant(0, negative)))) == (
        BAD_DATA
    )
    assert set_params(model, 0, ctypes.byref(good)) == NO_ERROR


def test_add_operation(arena):
    model = arena.model()
    for _ in range(2):
        assert add_operand(model, F32, [2]) == NO_ERROR
    add = lib.ANeuralNetworksModel_addOperation
    pool = OperationCode.AVERAGE_POOL_2D
    assert add(None, pool, 1, u32s([0]), 1, u32s([1])) == UNEXPECTED_NULL
    # A NULL list is UNEXPECTED_NULL even with a count of 0.
    assert add(model, pool, 0, None, 1, u32s([1])) == UNEXPECTED_NULL
    assert add(model, pool, 1, u32s([0]), 0, None) == UNEXPECTED_NULL
    assert add(model, -1, 1, u32s([0]), 1, u32s([1])) == BAD_DATA  # unknown operation code
    assert add(model, 106, 1, u32s([0]), 1, u32s([1])) == BAD_DATA
    assert add(model, OperationCode.ADD, 3, u32s([0, 1, 7]), 1, u32s([1])) == BAD_DATA
    assert add(model, OperationCode.ADD, 3, u32s([0, 1, 0]), 1, u32s([1])) == BAD_DATA  # types
    assert add(model, OperationCode.ADD, 2, u32s([0, 1]), 1, u32s([1])) == BAD_DATA  # count


def test_add_operation_rejects_incompatible_shapes(arena):
    model = arena.model()
    assert add_operand(model, F32, [2, 3]) == NO_ERROR
    assert add_operand(model, F32, [4]) == NO_ERROR
    assert add_operand(model, INT32) == NO_ERROR
    assert add_operand(model, F32, [2, 3]) == NO_ERROR
    code = lib.ANeuralNetworksModel_addOperation(model, 0, 3, u32s([0, 1, 2]), 1, u32s([3]))
    assert code == BAD_DATA


def identify_model(arena):
    """ValidationTestIdentify's model: ADD of operands 0, 1, 2 into 3, not yet identified."""
    model = arena.model()
    for code, dims in [(F32, [1]), (F32, [1]), (INT32, None), (F32, [1])]:
        assert add_operand(model, code, dims) == NO_ERROR
    assert lib.ANeuralNetworksModel_addOperation(model, 0, 3, u32s([0, 1, 2]), 1, u32s([3])) == 0
    return model


@pytest.mark.parametrize(
    "inputs, outputs, expected",
    [
        ([0, 1, 2], [3], NO_ERROR),
        ([0, 1, 2], [3, 0], BAD_DATA),  # an input is also an output
        ([0, 1, 2, 3], [3], BAD_DATA),  # an output is also an input
        ([0, 1, 2, 0], [3], BAD_DATA),  # duplicate inputs
        ([0, 1, 2], [3, 3], BAD_DATA),  # duplicate outputs
        ([0, 1, 2], [4], BAD_DATA),  # out of range
        ([0, 1, 9], [3], BAD_DATA),
    ],
)
def test_identify_inputs_and_outputs(arena, inputs, outputs, expected):
    model = identify_model(arena)
    code = lib.ANeuralNetworksModel_identifyInputsAndOutputs(
        model, len(inputs), u32s(inputs), len(outputs), u32s(outputs)
    )
    assert code == expected
    if expected == NO_ERROR:
        assert lib.ANeuralNetworksModel_finish(model) == NO_ERROR


def test_identify_null_lists(arena):
    model = identify_model(arena)
    identify = lib.ANeuralNetworksModel_identifyInputsAndOutputs
    assert identify(None, 1, u32s([0]), 1, u32s([3])) == UNEXPECTED_NULL
    assert identify(model, 0, None, 1, u32s([3])) == UNEXPECTED_NULL
    assert identify(model, 1, u32s([0]), 0, None) == UNEXPECTED_NULL


def test_identify_empty_list_is_bad_data(arena):
    # Android: a non-NULL list with a count of 0 fails (NN_VALIDATE_NULL_OR_SIZED), so a model
    # always has at least one input.
    model = identify_model(arena)
    identify = lib.ANeuralNetworksModel_identifyInputsAndOutputs
    assert identify(model, 0, u32s([]), 1, u32s([3])) == BAD_DATA
    assert identify(model, 3, u32s([0, 1, 2]), 0, u32s([])) == BAD_DATA


def test_identify_constant_is_bad_data(arena):
    model = identify_model(arena)
    value = arena.keep(np.zeros(1, np.float32))
    assert lib.ANeuralNetworksModel_setOperandValue(model, 1, ptr(value), 4) == NO_ERROR
    code = lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 2, u32s([0, 1]), 1, u32s([3]))
    assert code == BAD_DATA


def test_value_given_to_an_input_fails_at_finish(arena):
    # Android lets setOperandValue overwrite an identified input; finish() then rejects it.
    model = arena.binary_model(finish=False)
    value = arena.keep(np.zeros(2, np.float32))
    assert lib.ANeuralNetworksModel_setOperandValue(model, 0, ptr(value), 8) == NO_ERROR
    assert lib.ANeuralNetworksModel_finish(model) == BAD_DATA


@pytest.mark.parametrize("case", ["cycle", "unwritten", "written_twice", "writes_input"])
def test_finish_rejects_bad_graphs(arena, case):
    model = arena.model()
    for _ in range(5):
        assert add_operand(model, F32, [2]) == NO_ERROR
    assert add_operand(model, INT32) == NO_ERROR  # 5: activation
    act = arena.keep(np.zeros(1, np.int32))
    assert lib.ANeuralNetworksModel_setOperandValue(model, 5, ptr(act), 4) == NO_ERROR
    add = lib.ANeuralNetworksModel_addOperation
    if case == "cycle":  # 2 = 0 + 3, 3 = 2 + 1
        assert add(model, 0, 3, u32s([0, 3, 5]), 1, u32s([2])) == NO_ERROR
        assert add(model, 0, 3, u32s([2, 1, 5]), 1, u32s([3])) == NO_ERROR
        outputs = [3]
    elif case == "unwritten":  # reads operand 4, which nothing writes
        assert add(model, 0, 3, u32s([0, 4, 5]), 1, u32s([2])) == NO_ERROR
        outputs = [2]
    elif case == "written_twice":
        assert add(model, 0, 3, u32s([0, 1, 5]), 1, u32s([2])) == NO_ERROR
        assert add(model, 0, 3, u32s([0, 1, 5]), 1, u32s([2])) == NO_ERROR
        outputs = [2]
    else:  # writes the model input 0
        assert add(model, 0, 3, u32s([1, 1, 5]), 1, u32s([0])) == NO_ERROR
        outputs = [2]
        assert add(model, 0, 3, u32s([1, 1, 5]), 1, u32s([2])) == NO_ERROR
    inputs = [0, 1]
    assert (
        lib.ANeuralNetworksModel_identifyInputsAndOutputs(
            model, len(inputs), u32s(inputs), len(outputs), u32s(outputs)
        )
        == NO_ERROR
    )
    assert lib.ANeuralNetworksModel_finish(model) == BAD_DATA, case
    assert last_error()


def test_relax_computation(arena):
    assert lib.ANeuralNetworksModel_relaxComputationFloat32toFloat16(None, True) == UNEXPECTED_NULL
    model = arena.binary_model(finish=False)
    assert lib.ANeuralNetworksModel_relaxComputationFloat32toFloat16(model, True) == NO_ERROR
    assert lib.ANeuralNetworksModel_finish(model) == NO_ERROR


def compute_constant_add(arena, large: bool, mutate) -> np.ndarray:
    """out = in + constant, the constant being small (copied at setOperandValue) or large
    (referenced until finish); ``mutate(stage, constant)`` may change the caller's buffer."""
    n = 64 if large else 4  # 256 bytes > ANEURALNETWORKS_MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES
    model = arena.model()
    x = arena.add_operand(model, F32, [n])
    c = arena.add_operand(model, F32, [n])
    act = arena.add_operand(model, INT32)
    out = arena.add_operand(model, F32, [n])
    constant = np.ones(n, np.float32)
    assert lib.ANeuralNetworksModel_setOperandValue(model, c, ptr(constant), constant.nbytes) == 0
    assert arena.set_value(model, act, np.array(0, np.int32)) == NO_ERROR
    assert (
        lib.ANeuralNetworksModel_addOperation(model, 0, 3, u32s([x, c, act]), 1, u32s([out])) == 0
    )
    assert (
        lib.ANeuralNetworksModel_identifyInputsAndOutputs(model, 1, u32s([x]), 1, u32s([out])) == 0
    )
    mutate("before_finish", constant)
    assert lib.ANeuralNetworksModel_finish(model) == NO_ERROR
    mutate("after_finish", constant)
    compilation = arena.compilation(model)
    execution = arena.execution(compilation)
    data = arena.keep(np.zeros(n, np.float32))
    result = arena.keep(np.zeros(n, np.float32))
    assert lib.ANeuralNetworksExecution_setInput(execution, 0, None, ptr(data), data.nbytes) == 0
    assert (
        lib.ANeuralNetworksExecution_setOutput(execution, 0, None, ptr(result), result.nbytes) == 0
    )
    assert lib.ANeuralNetworksExecution_compute(execution) == NO_ERROR
    return result


def test_small_values_are_copied_immediately(arena):
    def mutate(stage, constant):
        constant[:] = 5.0  # both before and after finish: no effect

    np.testing.assert_array_equal(compute_constant_add(arena, False, mutate), np.ones(4))


def test_large_values_are_referenced_until_finish(arena):
    def mutate(stage, constant):
        constant[:] = 2.0 if stage == "before_finish" else 7.0

    # The change before finish is seen (the buffer was only referenced), the later one is not.
    np.testing.assert_array_equal(compute_constant_add(arena, True, mutate), np.full(64, 2.0))


def test_extension_functions(arena):
    model = arena.binary_model(finish=False)
    value = ctypes.c_int32()
    name = b"com.example.extension"
    get_operand = lib.ANeuralNetworksModel_getExtensionOperandType
    get_operation = lib.ANeuralNetworksModel_getExtensionOperationType
    assert get_operand(None, name, 0, ctypes.byref(value)) == UNEXPECTED_NULL
    assert get_operand(model, None, 0, ctypes.byref(value)) == UNEXPECTED_NULL
    assert get_operand(model, name, 0, None) == UNEXPECTED_NULL
    assert get_operand(model, name, 0, ctypes.byref(value)) == BAD_DATA  # unknown extension
    assert get_operation(model, name, 0, ctypes.byref(value)) == BAD_DATA
    assert get_operation(None, name, 0, ctypes.byref(value)) == UNEXPECTED_NULL
    data = arena.keep(np.zeros(1, np.int32))
    set_data = lib.ANeuralNetworksModel_setOperandExtensionData
    assert set_data(None, 0, ptr(data), 4) == UNEXPECTED_NULL
    assert set_data(model, 0, None, 4) == UNEXPECTED_NULL
    assert set_data(model, 9, ptr(data), 4) == BAD_DATA  # no such operand
    assert set_data(model, 0, ptr(data), 4) == BAD_DATA  # not an extension operand
