# SPDX-License-Identifier: Apache-2.0
"""Which NNAPI operations the mock implements, asked through the C API, and the README's count
of them (so the number there cannot drift from the registered operations)."""

from __future__ import annotations

import re
from pathlib import Path

from mock_nnapi import Model, NnapiError, OperandCode, OperationCode

README = Path(__file__).resolve().parents[2] / "README.md"
NOT_IMPLEMENTED = "is not implemented by mock_nnapi"


def implemented(operation: OperationCode) -> bool:
    """addOperation of an unregistered operation fails with the mock's "not implemented"
    message before any operand is looked at; a registered one passes or fails its validation."""
    model = Model()
    x = model.add_operand(OperandCode.TENSOR_FLOAT32, [1])
    y = model.add_operand(OperandCode.TENSOR_FLOAT32, [1])
    try:
        model.add_operation(operation, [x], [y])
    except NnapiError as error:
        return NOT_IMPLEMENTED not in str(error)
    return True


def implemented_operations() -> list[str]:
    return [operation.name for operation in OperationCode if implemented(operation)]


def test_every_operation_is_implemented():
    operations = implemented_operations()
    # Every operation up to feature level 8 is registered, control flow and the recurrent and
    # detection families included.
    assert set(operations) == {operation.name for operation in OperationCode}


def test_the_readme_states_the_number_of_implemented_operations():
    text = README.read_text(encoding="utf-8")
    stated = re.findall(r"(\d+) of NNAPI's (\d+) operations with real numerics", text)
    assert stated == [(str(len(implemented_operations())), str(len(OperationCode)))]
