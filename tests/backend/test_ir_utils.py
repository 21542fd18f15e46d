# SPDX-License-Identifier: Apache-2.0
"""tvm_nnapi.compiler.ir_utils: the bindings and operator calls the partitioner, the offload
summary and the estimate walk."""

from __future__ import annotations

from tvm import relax
from tvm.script import relax as R

from tvm_nnapi.compiler.ir_utils import bindings, located_operator_calls, operator_calls


@R.function
def _with_local_function(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
    @R.function
    def twice(a: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        b = R.add(a, a)
        return b

    y = twice(x)
    z = twice(y)
    w = R.multiply(z, z)
    return w


def test_bindings_are_every_binding_in_order():
    names = [b.var.name for b in bindings(_with_local_function)]
    assert names == ["twice", "y", "z", "w"]


def test_a_local_function_counts_once_per_call_with_its_own_owner():
    located = located_operator_calls(_with_local_function)
    assert [str(call.op.name) for call, _ in located] == [
        "relax.add",
        "relax.add",
        "relax.multiply",
    ]
    local = bindings(_with_local_function)[0].value
    assert [owner.same_as(local) for _, owner in located] == [True, True, False]
    assert located[2][1].same_as(_with_local_function)
    calls = operator_calls(_with_local_function)
    assert all(a.same_as(b) for a, (b, _) in zip(calls, located, strict=True))


def test_a_function_without_bindings_gives_the_calls_of_its_body():
    x = relax.Var("x", relax.TensorType((2,), "float32"))
    body = relax.SeqExpr([], relax.op.negative(x))
    func = relax.Function([x], body, relax.TensorType((2,), "float32"))
    assert bindings(func) == []
    assert [str(call.op.name) for call in operator_calls(func)] == ["relax.negative"]
