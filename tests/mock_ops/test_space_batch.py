# SPDX-License-Identifier: Apache-2.0
"""SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND against numpy references written from the NDK's
(TensorFlow's) definition: pad, reshape into blocks, move the block offsets into the batch.

Covered: every type (fp32, fp16, QUANT8_ASYMM, QUANT8_ASYMM_SIGNED), both layouts and the
absent layout input, square and non-square blocks, paddings (quantised padding is the zero
point), the round trip, block sizes and paddings given at execution, dynamic output shapes,
the BAD_DATA validation rules, OP_FAILED for bad arguments seen only at execution, and the
feature levels (2; 3 for fp16, the layout input and a quantised S2B zero point; 4 for signed).
"""

from __future__ import annotations

import numpy as np
import pytest

from mock_nnapi import Compilation, Model, NnapiError, OperandCode, OperationCode, ResultCode

from .helpers import expect_bad_data_at_add, expect_failed_when_prepared, expect_refused
from .op_tester import OpTester
from .test_conv_2d import required_feature_level

S2B = OperationCode.SPACE_TO_BATCH_ND
B2S = OperationCode.BATCH_TO_SPACE_ND

DTYPES = [
    (np.float32, 0.0, 0),
    (np.float16, 0.0, 0),
    (np.uint8, 0.5, 3),
    (np.int8, 0.25, -7),
]


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return rng.uniform(-4, 4, shape).astype(dtype)


def space_to_batch(x, block, paddings, fill):
    """NHWC reference: output[(i * bw + j) * n + b, h, w] = padded[b, h * bh + i, w * bw + j]."""
    bh, bw = block
    padded = np.pad(
        x, ((0, 0), tuple(paddings[0]), tuple(paddings[1]), (0, 0)), constant_values=fill
    )
    n, h, w, c = padded.shape
    y = padded.reshape(n, h // bh, bh, w // bw, bw, c).transpose(2, 4, 0, 1, 3, 5)
    return y.reshape(bh * bw * n, h // bh, w // bw, c)


def batch_to_space(x, block):
    bh, bw = block
    n, h, w, c = x.shape
    y = x.reshape(bh, bw, n // (bh * bw), h, w, c).transpose(2, 3, 0, 4, 1, 5)
    return y.reshape(n // (bh * bw), h * bh, w * bw, c)


def to_nchw(x):
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def make_tester(
    op,
    x,
    block,
    paddings=None,
    nchw=None,
    scale=0.0,
    zero_point=0,
    out_shape=None,
    arguments_as_inputs=False,
    out_scale=None,
    out_zero_point=None,
):
    """x is fed as given; out_shape is the declared output shape."""
    tester = OpTester(op).input(x, scale=scale, zero_point=zero_point)
    add = tester.input if arguments_as_inputs else tester.constant
    add(np.asarray(block, np.int32))
    if op == S2B:
        add(np.asarray(paddings, np.int32))
    if nchw is not None:
        tester.scalar(OperandCode.BOOL, nchw)
    return tester.output(
        OpTester.default_code(x),
        out_shape,
        scale if out_scale is None else out_scale,
        zero_point if out_zero_point is None else out_zero_point,
    )


def run(
    op,
    x,
    block,
    paddings=None,
    nchw=None,
    scale=0.0,
    zero_point=0,
    dynamic=False,
    arguments_as_inputs=False,
):
    """x is NHWC; fed as NCHW when nchw is True (None: no layout input)."""
    if op == S2B:
        fill = zero_point if np.issubdtype(x.dtype, np.integer) else 0
        expected = space_to_batch(x, block, paddings, fill)
    else:
        expected = batch_to_space(x, block)
    fed = to_nchw(x) if nchw else x
    out_shape = to_nchw(expected).shape if nchw else expected.shape
    tester = make_tester(
        op, fed, block, paddings, nchw, scale, zero_point, out_shape, arguments_as_inputs
    )
    result = tester.dynamic_outputs(dynamic).run()[0]
    if nchw:
        result = result.transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(result, expected)
    return result


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES)
@pytest.mark.parametrize("nchw", [None, False, True])
@pytest.mark.parametrize(
    ("block", "paddings"),
    [
        ((1, 1), ((0, 0), (0, 0))),
        ((2, 2), ((0, 0), (0, 0))),
        ((2, 3), ((1, 1), (2, 1))),
        ((3, 2), ((0, 2), (1, 0))),
    ],
    ids=["1x1", "2x2", "2x3_padded", "3x2_padded"],
)
def test_space_to_batch(dtype, scale, zero_point, nchw, block, paddings):
    h = 4 * block[0] - sum(paddings[0])
    w = 6 - sum(paddings[1])
    x = sample((2, h, w, 3), dtype)
    run(S2B, x, block, paddings, nchw, scale, zero_point, dynamic=block == (2, 3))


@pytest.mark.parametrize(("dtype", "scale", "zero_point"), DTYPES)
@pytest.mark.parametrize("nchw", [None, False, True])
@pytest.mark.parametrize("block", [(1, 1), (2, 2), (2, 3), (3, 1)])
def test_batch_to_space(dtype, scale, zero_point, nchw, block):
    x = sample((2 * block[0] * block[1], 2, 3, 3), dtype, seed=1)
    run(B2S, x, block, nchw=nchw, scale=scale, zero_point=zero_point, dynamic=block == (2, 2))


def test_space_to_batch_pads_with_the_zero_point():
    # Hand-checked: a 1x1x1x1 input of value 9, padded to 2x2 and split into four batches; the
    # three padding batches hold the zero point (logical zero), not the byte 0.
    x = np.full((1, 1, 1, 1), 9, np.uint8)
    result = run(S2B, x, (2, 2), ((1, 0), (0, 1)), scale=0.5, zero_point=128)
    assert result.reshape(-1).tolist() == [128, 128, 9, 128]


def test_tensorflow_documented_example():
    # TF's SpaceToBatchND example (3): input [1, 4, 4, 1] 1..16, block [2, 2], no padding.
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 4, 4, 1)
    result = run(S2B, x, (2, 2), ((0, 0), (0, 0)))
    assert result[:, :, :, 0].tolist() == [
        [[1, 3], [9, 11]],
        [[2, 4], [10, 12]],
        [[5, 7], [13, 15]],
        [[6, 8], [14, 16]],
    ]


@pytest.mark.parametrize("nchw", [False, True])
def test_round_trip_is_identity(nchw):
    x = sample((2, 4, 6, 3), np.float32, seed=2)
    batched = space_to_batch(x, (2, 3), ((0, 0), (0, 0)), 0)
    run(B2S, batched, (2, 3), nchw=nchw)
    np.testing.assert_array_equal(batch_to_space(batched, (2, 3)), x)


@pytest.mark.parametrize("op", [S2B, B2S])
def test_arguments_given_at_execution(op):
    # Block sizes and paddings as model inputs: validation cannot see them; prepare checks them.
    if op == S2B:
        run(
            op,
            sample((1, 3, 4, 2), np.float32),
            (2, 2),
            ((1, 0), (0, 0)),
            arguments_as_inputs=True,
            dynamic=True,
        )
    else:
        run(op, sample((4, 3, 4, 2), np.float32), (2, 2), arguments_as_inputs=True, dynamic=True)


# Cases refused by an argument's value: Android validates an operation's types and shapes at
# addOperation, its argument values when the operation is prepared (OP_FAILED at execution).
REFUSED_WHEN_PREPARED = {
    "29-shape6-block6-None-block",
    "29-shape8-block8-None-divisible",
    "33-shape0-block0-paddings0-block",
    "33-shape2-block2-paddings2-paddings",
    "33-shape4-block4-paddings4-divisible",
}


@pytest.mark.parametrize(
    ("op", "shape", "block", "paddings", "words"),
    [
        (S2B, (1, 4, 4, 1), (0, 2), ((0, 0), (0, 0)), "block"),
        (S2B, (1, 4, 4, 1), (2, 2, 2), ((0, 0), (0, 0)), "block sizes"),
        (S2B, (1, 4, 4, 1), (2, 2), ((-1, 1), (0, 0)), "paddings"),
        (S2B, (1, 4, 4, 1), (2, 2), ((0, 0, 0), (0, 0, 0)), "paddings"),
        (S2B, (1, 5, 4, 1), (2, 2), ((0, 0), (0, 0)), "divisible"),
        (S2B, (1, 4, 4), (2, 2), ((0, 0), (0, 0)), "rank"),
        (B2S, (4, 2, 2, 1), (0, 2), None, "block"),
        (B2S, (4, 2, 2, 1), (2,), None, "block sizes"),
        (B2S, (6, 2, 2, 1), (2, 2), None, "divisible"),
        (B2S, (4, 2, 2, 1, 1), (2, 2), None, "rank"),
    ],
)
def test_rejects_bad_arguments(op, shape, block, paddings, words, request):
    tester = make_tester(
        op, sample(shape, np.float32), block, paddings, out_shape=(0,) * len(shape)
    )
    assert words in expect_refused(
        tester, request.node.callspec.id in REFUSED_WHEN_PREPARED, at_add=True
    )


@pytest.mark.parametrize("op", [S2B, B2S])
def test_rejects_types_counts_and_requantisation(op):
    x = sample((4, 2, 2, 1), np.uint8)
    paddings = ((0, 0), (0, 0))
    out_shape = (16, 1, 1, 1) if op == S2B else (1, 4, 4, 1)
    # INT32 data is not an allowed type.
    expect_bad_data_at_add(
        make_tester(op, np.ones((4, 2, 2, 1), np.int32), (2, 2), paddings, out_shape=out_shape)
    )
    # The output keeps the input's quantisation.
    expect_bad_data_at_add(
        make_tester(
            op, x, (2, 2), paddings, scale=0.5, zero_point=1, out_shape=out_shape, out_zero_point=2
        )
    )
    # A wrong declared output shape.
    expect_failed_when_prepared(
        make_tester(op, x, (2, 2), paddings, scale=0.5, out_shape=(1, 1, 1, 1))
    )
    # A float block sizes tensor.
    tester = OpTester(op).input(x, scale=0.5).constant(np.array([2, 2], np.float32))
    if op == S2B:
        tester.constant(np.zeros((2, 2), np.int32))
    expect_bad_data_at_add(tester.output(OperandCode.TENSOR_QUANT8_ASYMM, out_shape, 0.5))
    # Too many inputs (a second layout flag).
    tester = make_tester(op, x, (2, 2), paddings, nchw=False, scale=0.5, out_shape=out_shape)
    tester.scalar(OperandCode.BOOL, False)
    assert "inputs" in expect_bad_data_at_add(tester)


@pytest.mark.parametrize(
    ("op", "shape", "block", "paddings"),
    [
        (S2B, (1, 4, 4, 1), (3, 2), ((0, 0), (0, 0))),  # height not divisible by 3
        (S2B, (1, 4, 4, 1), (2, 2), ((0, -2), (0, 0))),  # negative padding
        (B2S, (6, 2, 2, 1), (2, 2), None),  # batches not divisible by 4
        (B2S, (4, 2, 2, 1), (2, 0), None),
    ],
)
def test_bad_arguments_at_execution_fail(op, shape, block, paddings):
    tester = make_tester(
        op,
        sample(shape, np.float32),
        block,
        paddings,
        out_shape=(1, 1, 1, 1),
        arguments_as_inputs=True,
    ).dynamic_outputs()
    with pytest.raises(NnapiError) as error:
        tester.run()
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)


@pytest.mark.parametrize("op", [S2B, B2S])
def test_rejects_zero_sized_input(op):
    # A zero-sized tensor can only come from another operation: SLICE keeps no batch.
    model = Model()
    x = model.add_operand(OperandCode.TENSOR_FLOAT32, (4, 2, 2, 1))
    begin = model.add_constant(OperandCode.TENSOR_INT32, np.zeros(4, np.int32))
    size = model.add_constant(OperandCode.TENSOR_INT32, np.array([0, -1, -1, -1], np.int32))
    empty = model.add_operand(OperandCode.TENSOR_FLOAT32, (0, 2, 2, 1))
    model.add_operation(OperationCode.SLICE, [x, begin, size], [empty])
    inputs = [empty, model.add_constant(OperandCode.TENSOR_INT32, np.array([2, 2], np.int32))]
    if op == S2B:
        inputs.append(model.add_constant(OperandCode.TENSOR_INT32, np.zeros((2, 2), np.int32)))
    out = model.add_operand(OperandCode.TENSOR_FLOAT32, (0, 0, 0, 0))
    model.add_operation(op, inputs, [out])
    model.identify_inputs_and_outputs([x], [out])
    model.finish()
    compilation = Compilation(model).finish()
    with pytest.raises(NnapiError) as error:
        compilation.execute([sample((4, 2, 2, 1), np.float32)], [(1, 1, 1, 1)])
    assert error.value.code == ResultCode.OP_FAILED, str(error.value)
    assert "zero-sized" in str(error.value)


@pytest.mark.parametrize(
    ("op", "dtype", "zero_point", "nchw", "level"),
    [
        (S2B, np.float32, 0, None, 2),
        (S2B, np.uint8, 0, None, 2),
        (S2B, np.uint8, 3, None, 3),  # padding with a non-zero zero point
        (S2B, np.float16, 0, None, 3),
        (S2B, np.float32, 0, False, 3),
        (S2B, np.int8, 0, None, 4),
        (B2S, np.float32, 0, None, 2),
        (B2S, np.uint8, 3, None, 2),
        (B2S, np.float16, 0, None, 3),
        (B2S, np.float32, 0, True, 3),
        (B2S, np.int8, -1, None, 4),
    ],
)
def test_feature_levels(feature_level_devices, op, dtype, zero_point, nchw, level):
    scale = 0.5 if np.issubdtype(dtype, np.integer) else 0.0
    x = np.zeros((4, 2, 2, 1), dtype)
    out_shape = (16, 1, 1, 1) if op == S2B else (1, 4, 4, 1)
    if nchw:
        x = to_nchw(x)
        out_shape = (out_shape[0], 1, *out_shape[1:3])
    tester = make_tester(op, x, (2, 2), ((0, 0), (0, 0)), nchw, scale, zero_point, out_shape)
    assert required_feature_level(tester, feature_level_devices) == level
