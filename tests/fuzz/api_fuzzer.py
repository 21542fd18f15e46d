# SPDX-License-Identifier: Apache-2.0
"""API-sequence fuzzer for the NNAPI C API (run in a child process by test_api_sequences.py).

Each sequence is a random program of NNAPI calls: objects are created, configured, used and
freed in random orders, with out-of-range indices, wrong sizes and types, NULL pointers, absurd
dimensions, unfinished or failed objects, and sometimes a well-formed model so that compilations
and executions get far. Every call must return an NNAPI result code (0..14); the process must
not crash (the parent reports a signal with the seed that reproduces it); after every sequence
all objects are freed and the mock's live-object counters must be back at zero.

What the programs never do, because no NNAPI implementation can detect it: pass a freed or
foreign handle, lie about an array's length, or free an object while a dependent object (a
compilation of a model, an execution of a compilation, a memory used by an execution) still
uses it. NNAPI's contract makes those the caller's bugs.

    python tests/fuzz/api_fuzzer.py --seed 7 --sequences 200 --calls 60   # reproduce one run
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import json
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "mock_nnapi" / "python"))

from mock_nnapi.constants import OperandCode, OperationCode

from mock_nnapi import _library

lib = _library.load()
U32_MAX = 2**32 - 1
VALID_CODES = range(0, 15)
DIMENSIONS = [0, 1, 1, 2, 2, 3, 4, 7, 16, 65536, 2**31, U32_MAX]
SCALES = [0.0, 0.0, 0.5, 1.0, -1.0, float("nan"), float("inf"), 1e-30]
ZERO_POINTS = [0, 0, 1, 128, 255, -1, -128, 300, 2**31 - 1]
TEMPLATE_OPERATIONS = [
    OperationCode.ADD,
    OperationCode.MUL,
    OperationCode.SUB,
    OperationCode.DIV,
    OperationCode.MAXIMUM,
    OperationCode.RELU,
    OperationCode.LOGISTIC,
    OperationCode.SOFTMAX,
    OperationCode.RESHAPE,
    OperationCode.CONCATENATION,
    OperationCode.TRANSPOSE,
    OperationCode.MEAN,
]


class Sequence:
    """One random program. Handles live in pools; dependencies are tracked so that an object is
    only freed after everything that uses it."""

    def __init__(self, rng: random.Random, cache_dir: str) -> None:
        self.rng = rng
        self.cache_dir = cache_dir
        self.codes: collections.Counter[int] = collections.Counter()
        self.calls = 0
        self.models: list[dict] = []
        self.compilations: list[dict] = []
        self.executions: list[dict] = []
        self.bursts: list[dict] = []
        self.memories: list[dict] = []
        self.descs: list[dict] = []
        self.keep: list[object] = []

    # ---- helpers --------------------------------------------------------------------------

    def call(self, name: str, *args: object) -> int:
        code = getattr(lib, name)(*args)
        self.calls += 1
        self.codes[code] += 1
        if code not in VALID_CODES:
            raise AssertionError(f"{name} returned {code}, not an NNAPI result code")
        return code

    def pick(self, pool: list[dict], null_chance: float = 0.08) -> dict | None:
        if not pool or self.rng.random() < null_chance:
            return None
        return self.rng.choice(pool)

    @staticmethod
    def handle(entry: dict | None) -> ctypes.c_void_p | None:
        return None if entry is None else entry["handle"]

    def u32_array(self, values: list[int]) -> ctypes.Array:
        array = (ctypes.c_uint32 * max(len(values), 1))(*values)
        self.keep.append(array)
        return array

    def operand_type(self, code: int | None = None, dims: list[int] | None = None):
        rng = self.rng
        if code is None:
            code = rng.choice([*list(range(-1, 17)), 10000, 10001])
        if dims is None:
            dims = [rng.choice(DIMENSIONS) for _ in range(rng.choice([0, 0, 1, 2, 3, 4, 6]))]
        t = _library.OperandType()
        t.type = code
        t.dimensionCount = len(dims)
        if dims:
            array = self.u32_array(dims)
            t.dimensions = ctypes.cast(array, ctypes.POINTER(ctypes.c_uint32))
        if rng.random() < 0.05:  # dimensionCount and pointer disagree
            t.dimensionCount = 0 if dims else 2
        t.scale = rng.choice(SCALES)
        t.zeroPoint = rng.choice(ZERO_POINTS)
        self.keep.append(t)
        return t

    def buffer(self, size_hint: int | None = None) -> tuple[ctypes.c_void_p | None, int]:
        rng = self.rng
        choice = rng.random()
        if choice < 0.08:
            return None, 0
        if choice < 0.12:
            return None, rng.choice([4, 16])  # NULL with a length
        size = (
            size_hint
            if size_hint is not None and rng.random() < 0.6
            else rng.choice([1, 2, 4, 8, 12, 16, 24, 64, 256])
        )
        array = np.zeros(max(size, 1) // 4 + 1, np.float32)
        self.keep.append(array)
        length = size if rng.random() < 0.9 else rng.choice([0, size + 4, 2**32, 2**63])
        return array.ctypes.data_as(ctypes.c_void_p), length

    # ---- actions --------------------------------------------------------------------------

    def model_create(self) -> None:
        handle = ctypes.c_void_p()
        if self.call("ANeuralNetworksModel_create", ctypes.byref(handle)) == 0:
            self.models.append({"handle": handle, "operands": 0, "users": 0, "types": []})

    def model_add_operand(self) -> None:
        model = self.pick(self.models)
        t = self.operand_type() if self.rng.random() > 0.05 else None
        code = self.call(
            "ANeuralNetworksModel_addOperand",
            self.handle(model),
            None if t is None else ctypes.byref(t),
        )
        if code == 0 and model is not None:
            model["operands"] += 1

    def operand_index(self, model: dict | None) -> int:
        count = model["operands"] if model else 0
        return self.rng.choice(
            [0, count - 1, count, count + 1, -1, 2**31 - 1, self.rng.randrange(max(count, 1))]
        )

    def model_set_value(self) -> None:
        model = self.pick(self.models)
        data, length = self.buffer()
        self.call(
            "ANeuralNetworksModel_setOperandValue",
            self.handle(model),
            self.operand_index(model),
            data,
            length,
        )

    def model_set_model(self) -> None:
        """setOperandValueFromModel with any model (finished or not, itself, NULL)."""
        model = self.pick(self.models)
        value = self.pick(self.models)
        code = self.call(
            "ANeuralNetworksModel_setOperandValueFromModel",
            self.handle(model),
            self.operand_index(model),
            self.handle(value),
        )
        if code == 0 and model is not None and value is not None:
            # The referenced model must outlive the model referring to it.
            value["users"] += 1
            model.setdefault("references", []).append(value)

    def control_flow_model(self) -> None:
        """IF (or WHILE) over template models from the pool: the outer operands follow the
        first branch's signature, sometimes spoilt; then compiled and computed."""
        rng = self.rng
        # Mostly finished one-operation models; sometimes any template model.
        branches = [
            m for m in self.models if "inputs" in m and (m.get("finished") or rng.random() < 0.1)
        ]
        if len(branches) < 2:
            self.template_model()
            return
        then_model = rng.choice(branches)
        else_model = then_model if rng.random() < 0.6 else rng.choice(branches)
        handle = ctypes.c_void_p()
        if self.call("ANeuralNetworksModel_create", ctypes.byref(handle)) != 0:
            return
        entry: dict[str, Any] = {"handle": handle, "operands": 0, "users": 0, "types": []}
        self.models.append(entry)

        def add(code: int, dims: list[int]) -> int:
            t = self.operand_type(code, dims)
            t.scale, t.zeroPoint = 0.0, 0
            self.call("ANeuralNetworksModel_addOperand", handle, ctypes.byref(t))
            entry["operands"] += 1
            entry["types"].append((code, dims))
            return entry["operands"] - 1

        def reference(model: dict) -> int:
            index = add(int(OperandCode.MODEL), [])
            if (
                self.call(
                    "ANeuralNetworksModel_setOperandValueFromModel", handle, index, model["handle"]
                )
                == 0
            ):
                model["users"] += 1
                entry.setdefault("references", []).append(model)
            return index

        condition = add(int(OperandCode.TENSOR_BOOL8), [1] if rng.random() < 0.9 else [2])
        references = [reference(then_model), reference(else_model)]
        values = [add(*then_model["types"][i]) for i in then_model["inputs"]]
        if rng.random() < 0.2 and values:
            values.pop(rng.randrange(len(values)))
        out = add(*then_model["types"][then_model["output"]])
        operation = OperationCode.IF if rng.random() < 0.85 else OperationCode.WHILE
        inputs = ([condition] if operation == OperationCode.IF else []) + references + values
        self.call(
            "ANeuralNetworksModel_addOperation",
            handle,
            int(operation),
            len(inputs),
            self.u32_array(inputs),
            1,
            self.u32_array([out]),
        )
        model_inputs = ([condition] if operation == OperationCode.IF else []) + values
        self.call(
            "ANeuralNetworksModel_identifyInputsAndOutputs",
            handle,
            len(model_inputs),
            self.u32_array(model_inputs),
            1,
            self.u32_array([out]),
        )
        entry["inputs"] = model_inputs
        entry["output"] = out
        self.call("ANeuralNetworksModel_finish", handle)
        self.run_model(entry)

    def model_add_operation(self) -> None:
        model = self.pick(self.models)
        rng = self.rng
        count = model["operands"] if model else 3
        inputs = [rng.randrange(-1, count + 2) % (2**32) for _ in range(rng.randrange(0, 6))]
        outputs = [rng.randrange(-1, count + 2) % (2**32) for _ in range(rng.randrange(0, 3))]
        operation = rng.choice([rng.randrange(-2, 110), int(rng.choice(TEMPLATE_OPERATIONS))])
        self.call(
            "ANeuralNetworksModel_addOperation",
            self.handle(model),
            operation,
            len(inputs),
            self.u32_array(inputs) if inputs or rng.random() < 0.5 else None,
            len(outputs),
            self.u32_array(outputs) if outputs or rng.random() < 0.5 else None,
        )

    def model_identify(self) -> None:
        model = self.pick(self.models)
        rng = self.rng
        count = model["operands"] if model else 2
        inputs = [rng.randrange(0, count + 2) for _ in range(rng.randrange(0, 3))]
        outputs = [rng.randrange(0, count + 2) for _ in range(rng.randrange(0, 3))]
        self.call(
            "ANeuralNetworksModel_identifyInputsAndOutputs",
            self.handle(model),
            len(inputs),
            self.u32_array(inputs),
            len(outputs),
            self.u32_array(outputs),
        )

    def model_finish(self) -> None:
        model = self.pick(self.models)
        if self.rng.random() < 0.3:
            self.call(
                "ANeuralNetworksModel_relaxComputationFloat32toFloat16",
                self.handle(model),
                self.rng.random() < 0.5,
            )
        self.call("ANeuralNetworksModel_finish", self.handle(model))

    def template_model(self) -> None:
        """A well-formed one-operation model (random shapes, some unknown), sometimes with one
        argument spoilt, so that compilations and executions get far."""
        rng = self.rng
        handle = ctypes.c_void_p()
        if self.call("ANeuralNetworksModel_create", ctypes.byref(handle)) != 0:
            return
        entry: dict[str, Any] = {"handle": handle, "operands": 0, "users": 0, "types": []}
        self.models.append(entry)
        f32 = int(OperandCode.TENSOR_FLOAT32)
        rank = rng.randrange(1, 5)
        shape = [rng.choice([1, 2, 3]) for _ in range(rank)]
        declared = [d if rng.random() < 0.7 else 0 for d in shape]

        def add(code: int, dims: list[int]) -> int:
            t = self.operand_type(code, dims)
            t.scale, t.zeroPoint = 0.0, 0
            self.call("ANeuralNetworksModel_addOperand", handle, ctypes.byref(t))
            entry["operands"] += 1
            entry["types"].append((code, dims))
            return entry["operands"] - 1

        def scalar(code: int, value: object) -> int:
            index = add(code, [])
            array = np.array(value, dtype=np.int32 if code == 1 else np.float32)
            self.keep.append(array)
            self.call(
                "ANeuralNetworksModel_setOperandValue",
                handle,
                index,
                array.ctypes.data_as(ctypes.c_void_p),
                array.nbytes,
            )
            return index

        operation = rng.choice(TEMPLATE_OPERATIONS)
        x = add(f32, declared)
        inputs = [x]
        if operation in (
            OperationCode.ADD,
            OperationCode.MUL,
            OperationCode.SUB,
            OperationCode.DIV,
        ):
            inputs += [add(f32, declared), scalar(1, rng.choice([0, 1, 3, 7]))]
        elif operation == OperationCode.MAXIMUM:
            inputs.append(add(f32, declared))
        elif operation == OperationCode.SOFTMAX:
            inputs.append(scalar(0, rng.choice([1.0, 0.0, -1.0])))
        elif operation == OperationCode.RESHAPE:
            target = add(int(OperandCode.TENSOR_INT32), [1])
            inputs.append(target)
        elif operation == OperationCode.CONCATENATION:
            inputs += [add(f32, declared), scalar(1, rng.randrange(-1, rank + 1))]
        elif operation == OperationCode.TRANSPOSE:
            inputs.append(add(int(OperandCode.TENSOR_INT32), [rank]))
        elif operation == OperationCode.MEAN:
            inputs += [add(int(OperandCode.TENSOR_INT32), [1]), scalar(1, rng.choice([0, 1]))]
        out = add(f32, [0] * rank if rng.random() < 0.5 else declared)
        if rng.random() < 0.1:
            inputs[rng.randrange(len(inputs))] = rng.randrange(0, entry["operands"] + 2)
        self.call(
            "ANeuralNetworksModel_addOperation",
            handle,
            int(operation),
            len(inputs),
            self.u32_array(inputs),
            1,
            self.u32_array([out]),
        )
        types = entry["types"]
        model_inputs = [i for i in inputs if i < len(types) and (types[i][1] != [] or i == x)]
        model_inputs = list(dict.fromkeys(model_inputs))
        self.call(
            "ANeuralNetworksModel_identifyInputsAndOutputs",
            handle,
            len(model_inputs),
            self.u32_array(model_inputs),
            1,
            self.u32_array([out]),
        )
        entry["inputs"] = model_inputs
        entry["output"] = out
        if rng.random() < 0.9:
            entry["finished"] = self.call("ANeuralNetworksModel_finish", handle) == 0

    def full_run(self) -> None:
        """Template model -> compilation -> execution with every argument set (sizes mostly
        right, shapes and values random) -> compute -> results: reaches the kernels."""
        self.template_model()
        self.run_model(self.models[-1] if self.models else None)

    def run_model(self, model: dict | None) -> None:
        """Compiles and computes a model built by template_model or control_flow_model, with
        every argument set (sizes mostly right, shapes and values random)."""
        rng = self.rng
        if model is None or "inputs" not in model:
            return
        handle = ctypes.c_void_p()
        if self.call("ANeuralNetworksCompilation_create", model["handle"], ctypes.byref(handle)):
            return
        model["users"] += 1
        compilation: dict[str, Any] = {"handle": handle, "model": model, "users": 0}
        self.compilations.append(compilation)
        if self.call("ANeuralNetworksCompilation_finish", handle):
            return
        execution_handle = ctypes.c_void_p()
        if self.call("ANeuralNetworksExecution_create", handle, ctypes.byref(execution_handle)):
            return
        compilation["users"] += 1
        execution = {"handle": execution_handle, "compilation": compilation, "memories": []}
        self.executions.append(execution)
        shapes = {}
        for position, operand in enumerate(model["inputs"] + [model["output"]]):
            code, dims = model["types"][operand]
            concrete = [d or rng.choice([1, 2, 3]) for d in dims]
            if code == int(OperandCode.TENSOR_BOOL8):
                concrete = [d or 1 for d in dims]
                array = np.array(rng.random() < 0.5, np.uint8).reshape(concrete or [1])
            elif code == int(OperandCode.TENSOR_INT32):
                values = [
                    rng.choice([-1, 0, 1, 2, 3, 6, 2**31 - 1]) for _ in range(max(concrete or [1]))
                ]
                concrete = [len(values)] if dims else []
                array = np.array(values, np.int32)
            else:
                array = np.ascontiguousarray(
                    np.random.default_rng(rng.randrange(2**32)).standard_normal(concrete or [1]),
                    np.float32,
                )
            shapes[operand] = concrete
            self.keep.append(array)
            is_output = position == len(model["inputs"])
            index = 0 if is_output else position
            t = None
            if 0 in dims or rng.random() < 0.2:
                t = self.operand_type(code, concrete)
                t.scale, t.zeroPoint = 0.0, 0
            length = array.nbytes if rng.random() < 0.85 else rng.choice([0, 4, array.nbytes * 2])
            self.call(
                "ANeuralNetworksExecution_setOutput"
                if is_output
                else "ANeuralNetworksExecution_setInput",
                execution_handle,
                index,
                None if t is None else ctypes.byref(t),
                array.ctypes.data_as(ctypes.c_void_p),
                length,
            )
        self.call("ANeuralNetworksExecution_compute", execution_handle)
        self.execution_results_of(execution)

    def execution_results_of(self, execution: dict) -> None:
        rank = ctypes.c_uint32()
        code = self.call(
            "ANeuralNetworksExecution_getOutputOperandRank",
            execution["handle"],
            0,
            ctypes.byref(rank),
        )
        if code in (0, 8) and rank.value <= 16:
            dims = (ctypes.c_uint32 * 16)()
            self.call(
                "ANeuralNetworksExecution_getOutputOperandDimensions", execution["handle"], 0, dims
            )

    def devices(self) -> list[ctypes.c_void_p]:
        count = ctypes.c_uint32()
        self.call("ANeuralNetworks_getDeviceCount", ctypes.byref(count))
        found = []
        for index in range(count.value + (1 if self.rng.random() < 0.2 else 0)):
            device = ctypes.c_void_p()
            if self.call("ANeuralNetworks_getDevice", index, ctypes.byref(device)) == 0:
                found.append(device)
        return found

    def compilation_create(self) -> None:
        model = self.pick(self.models)
        handle = ctypes.c_void_p()
        if self.rng.random() < 0.3:
            found = self.devices()
            chosen = self.rng.sample(found, k=self.rng.randrange(0, len(found) + 1))
            array = (ctypes.c_void_p * max(len(chosen), 1))(*[d.value for d in chosen])
            self.keep.append(array)
            code = self.call(
                "ANeuralNetworksCompilation_createForDevices",
                self.handle(model),
                array if chosen or self.rng.random() < 0.5 else None,
                len(chosen),
                ctypes.byref(handle),
            )
        else:
            code = self.call(
                "ANeuralNetworksCompilation_create", self.handle(model), ctypes.byref(handle)
            )
        if code == 0:
            assert model is not None, "a compilation was created from a NULL model"
            model["users"] += 1
            self.compilations.append({"handle": handle, "model": model, "users": 0})

    def compilation_configure(self) -> None:
        compilation = self.pick(self.compilations)
        rng = self.rng
        action = rng.randrange(5)
        if action == 0:
            self.call(
                "ANeuralNetworksCompilation_setPreference",
                self.handle(compilation),
                rng.choice([-1, 0, 1, 2, 3, 2**31 - 1]),
            )
        elif action == 1:
            token = (ctypes.c_uint8 * 32)(*[rng.randrange(256) for _ in range(32)])
            self.keep.append(token)
            directory = rng.choice([self.cache_dir, self.cache_dir + "/missing", "", None])
            self.call(
                "ANeuralNetworksCompilation_setCaching",
                self.handle(compilation),
                None if directory is None else directory.encode(),
                token if rng.random() < 0.9 else None,
            )
        elif action == 2:
            self.call(
                "ANeuralNetworksCompilation_setPriority",
                self.handle(compilation),
                rng.choice([90, 100, 110, 0, -5]),
            )
        elif action == 3:
            self.call(
                "ANeuralNetworksCompilation_setTimeout",
                self.handle(compilation),
                rng.choice([0, 1, 10**9, 2**64 - 1]),
            )
        else:
            value = ctypes.c_uint32()
            name = rng.choice(
                [
                    "ANeuralNetworksCompilation_getPreferredMemoryAlignmentForInput",
                    "ANeuralNetworksCompilation_getPreferredMemoryPaddingForOutput",
                ]
            )
            self.call(
                name,
                self.handle(compilation),
                rng.choice([0, 1, 5, U32_MAX]),
                ctypes.byref(value) if rng.random() < 0.9 else None,
            )

    def compilation_finish(self) -> None:
        self.call("ANeuralNetworksCompilation_finish", self.handle(self.pick(self.compilations)))

    def execution_create(self) -> None:
        compilation = self.pick(self.compilations)
        handle = ctypes.c_void_p()
        code = self.call(
            "ANeuralNetworksExecution_create", self.handle(compilation), ctypes.byref(handle)
        )
        if code == 0:
            assert compilation is not None
            compilation["users"] += 1
            self.executions.append(
                {"handle": handle, "compilation": compilation, "memories": [], "event": None}
            )

    def execution_argument(self) -> None:
        execution = self.pick(self.executions)
        rng = self.rng
        model = execution["compilation"]["model"] if execution else None
        index = rng.choice([0, 0, 1, 2, -1, 2**31 - 1])
        hint = None
        if model and model.get("types") and rng.random() < 0.8:
            code, dims = model["types"][min(max(index, 0), len(model["types"]) - 1)]
            hint = 4 * int(np.prod([d or rng.choice([1, 2, 3]) for d in dims] or [1]))
        t = None
        if rng.random() < 0.4:
            dims = [rng.choice([1, 2, 3, 0, U32_MAX]) for _ in range(rng.randrange(0, 5))]
            t = self.operand_type(int(OperandCode.TENSOR_FLOAT32), dims)
            t.scale, t.zeroPoint = 0.0, 0
        use_memory = self.memories and rng.random() < 0.2
        is_input = rng.random() < 0.55
        if use_memory:
            memory = rng.choice(self.memories)
            name = (
                "ANeuralNetworksExecution_setInputFromMemory"
                if is_input
                else "ANeuralNetworksExecution_setOutputFromMemory"
            )
            code = self.call(
                name,
                self.handle(execution),
                index,
                None if t is None else ctypes.byref(t),
                memory["handle"],
                rng.choice([0, 4, 64, 2**40]),
                rng.choice([0, 4, hint or 8, 2**33]),
            )
            if code == 0 and execution is not None:
                memory["users"] += 1
                execution["memories"].append(memory)
            return
        data, length = self.buffer(hint)
        name = (
            "ANeuralNetworksExecution_setInput"
            if is_input
            else "ANeuralNetworksExecution_setOutput"
        )
        self.call(
            name,
            self.handle(execution),
            index,
            None if t is None else ctypes.byref(t),
            data,
            length,
        )

    def execution_settings(self) -> None:
        execution = self.pick(self.executions)
        rng = self.rng
        name, value = rng.choice(
            [
                ("ANeuralNetworksExecution_setReusable", rng.random() < 0.5),
                ("ANeuralNetworksExecution_setTimeout", rng.choice([0, 1, 2**64 - 1])),
                ("ANeuralNetworksExecution_setLoopTimeout", rng.choice([0, 2**64 - 1])),
                ("ANeuralNetworksExecution_setMeasureTiming", rng.random() < 0.5),
                ("ANeuralNetworksExecution_enableInputAndOutputPadding", rng.random() < 0.5),
            ]
        )
        self.call(name, self.handle(execution), value)

    def execution_run(self) -> None:
        execution = self.pick(self.executions)
        rng = self.rng
        how = rng.randrange(4)
        if how == 0:
            self.call("ANeuralNetworksExecution_compute", self.handle(execution))
        elif how == 1:
            event = ctypes.c_void_p()
            code = self.call(
                "ANeuralNetworksExecution_startCompute", self.handle(execution), ctypes.byref(event)
            )
            if code == 0:
                self.call("ANeuralNetworksEvent_wait", event)
                lib.ANeuralNetworksEvent_free(event)
        elif how == 2:
            burst = self.pick(self.bursts)
            self.call(
                "ANeuralNetworksExecution_burstCompute", self.handle(execution), self.handle(burst)
            )
        else:
            event = ctypes.c_void_p()
            code = self.call(
                "ANeuralNetworksExecution_startComputeWithDependencies",
                self.handle(execution),
                None,
                0,
                rng.choice([0, 1, 10**9]),
                ctypes.byref(event),
            )
            if code == 0:
                self.call("ANeuralNetworksEvent_wait", event)
                lib.ANeuralNetworksEvent_free(event)

    def execution_results(self) -> None:
        execution = self.pick(self.executions)
        rng = self.rng
        index = rng.choice([0, 1, -1])
        rank = ctypes.c_uint32()
        self.call(
            "ANeuralNetworksExecution_getOutputOperandRank",
            self.handle(execution),
            index,
            ctypes.byref(rank) if rng.random() < 0.9 else None,
        )
        dims = (ctypes.c_uint32 * 16)()
        self.call(
            "ANeuralNetworksExecution_getOutputOperandDimensions",
            self.handle(execution),
            index,
            dims if rng.random() < 0.9 else None,
        )
        duration = ctypes.c_uint64()
        self.call(
            "ANeuralNetworksExecution_getDuration",
            self.handle(execution),
            rng.choice([0, 1, 2, 3, 7]),
            ctypes.byref(duration),
        )

    def burst_create(self) -> None:
        compilation = self.pick(self.compilations)
        handle = ctypes.c_void_p()
        if (
            self.call("ANeuralNetworksBurst_create", self.handle(compilation), ctypes.byref(handle))
            == 0
        ):
            assert compilation is not None
            compilation["users"] += 1
            self.bursts.append({"handle": handle, "compilation": compilation})

    def memory_create(self) -> None:
        rng = self.rng
        size = rng.choice([0, 4, 64, 4096])
        fd = os.memfd_create("api-fuzzer")
        if size:
            os.ftruncate(fd, size)
        handle = ctypes.c_void_p()
        code = self.call(
            "ANeuralNetworksMemory_createFromFd",
            rng.choice([size, size + 4096, 0, 2**40]),
            rng.choice([1, 2, 3, 0, 8]),
            rng.choice([fd, fd, -1]),
            rng.choice([0, 0, 4, 4096]),
            ctypes.byref(handle),
        )
        os.close(fd)
        if code == 0:
            self.memories.append({"handle": handle, "users": 0})

    def memory_desc(self) -> None:
        rng = self.rng
        desc = ctypes.c_void_p()
        if self.call("ANeuralNetworksMemoryDesc_create", ctypes.byref(desc)) != 0:
            return
        compilation = self.pick(self.compilations)
        role = rng.choice(
            ["ANeuralNetworksMemoryDesc_addInputRole", "ANeuralNetworksMemoryDesc_addOutputRole"]
        )
        self.call(
            role,
            desc,
            self.handle(compilation),
            rng.choice([0, 1, 9]),
            rng.choice([1.0, 0.5, 0.0, 2.0]),
        )
        dims = [rng.choice([0, 1, 2, 3]) for _ in range(rng.randrange(0, 4))]
        self.call("ANeuralNetworksMemoryDesc_setDimensions", desc, len(dims), self.u32_array(dims))
        memory = ctypes.c_void_p()
        if self.call("ANeuralNetworksMemoryDesc_finish", desc) == 0:
            if self.call("ANeuralNetworksMemory_createFromDesc", desc, ctypes.byref(memory)) == 0:
                self.memories.append({"handle": memory, "users": 0})
                if len(self.memories) > 1:
                    self.call("ANeuralNetworksMemory_copy", self.memories[0]["handle"], memory)
        lib.ANeuralNetworksMemoryDesc_free(desc)

    def free_something(self) -> None:
        """Frees one object nothing depends on any more."""
        rng = self.rng
        candidates = (
            [("execution", e) for e in self.executions]
            + [("burst", b) for b in self.bursts]
            + [("compilation", c) for c in self.compilations if c["users"] == 0]
            + [("model", m) for m in self.models if m["users"] == 0]
            + [("memory", m) for m in self.memories if m["users"] == 0]
        )
        if not candidates:
            return
        kind, entry = rng.choice(candidates)
        self.free(kind, entry)

    def free(self, kind: str, entry: dict) -> None:
        if kind == "execution":
            lib.ANeuralNetworksExecution_free(entry["handle"])
            entry["compilation"]["users"] -= 1
            for memory in entry["memories"]:
                memory["users"] -= 1
            self.executions.remove(entry)
        elif kind == "burst":
            lib.ANeuralNetworksBurst_free(entry["handle"])
            entry["compilation"]["users"] -= 1
            self.bursts.remove(entry)
        elif kind == "compilation":
            lib.ANeuralNetworksCompilation_free(entry["handle"])
            entry["model"]["users"] -= 1
            self.compilations.remove(entry)
        elif kind == "model":
            lib.ANeuralNetworksModel_free(entry["handle"])
            for referenced in entry.get("references", []):
                referenced["users"] -= 1
            self.models.remove(entry)
        else:
            lib.ANeuralNetworksMemory_free(entry["handle"])
            self.memories.remove(entry)

    def free_all(self) -> None:
        for entry in list(self.executions):
            self.free("execution", entry)
        for entry in list(self.bursts):
            self.free("burst", entry)
        for entry in list(self.compilations):
            self.free("compilation", entry)
        while self.models:  # referring models before the models they reference
            self.free("model", next(m for m in self.models if m["users"] == 0))
        for entry in list(self.memories):
            self.free("memory", entry)
        # Freeing NULL is allowed for every type.
        for name in (
            "ANeuralNetworksModel_free",
            "ANeuralNetworksCompilation_free",
            "ANeuralNetworksExecution_free",
            "ANeuralNetworksBurst_free",
            "ANeuralNetworksMemory_free",
            "ANeuralNetworksEvent_free",
            "ANeuralNetworksMemoryDesc_free",
        ):
            getattr(lib, name)(None)
        self.keep.clear()

    ACTIONS = [
        ("model_create", 3),
        ("template_model", 4),
        ("full_run", 6),
        ("model_add_operand", 5),
        ("model_set_value", 3),
        ("model_add_operation", 4),
        ("model_identify", 2),
        ("model_finish", 3),
        ("model_set_model", 1),
        ("control_flow_model", 3),
        ("compilation_create", 5),
        ("compilation_configure", 3),
        ("compilation_finish", 5),
        ("execution_create", 5),
        ("execution_argument", 8),
        ("execution_settings", 2),
        ("execution_run", 5),
        ("execution_results", 2),
        ("burst_create", 2),
        ("memory_create", 1),
        ("memory_desc", 1),
        ("free_something", 4),
    ]

    def run(self, calls: int) -> None:
        names = [name for name, _ in self.ACTIONS]
        weights = [weight for _, weight in self.ACTIONS]
        for _ in range(calls):
            getattr(self, self.rng.choices(names, weights)[0])()
        self.free_all()


def live_objects() -> int:
    value = ctypes.c_uint64()
    assert lib.MockNnapi_getCounter(b"live_objects", ctypes.byref(value)) == 0
    return int(value.value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="first sequence's seed")
    parser.add_argument("--sequences", type=int, default=100, help="number of random programs")
    parser.add_argument("--calls", type=int, default=60, help="actions per program")
    args = parser.parse_args(argv)
    codes: collections.Counter[int] = collections.Counter()
    calls = 0
    baseline = live_objects()
    with tempfile.TemporaryDirectory(prefix="api-fuzzer-") as cache_dir:
        for offset in range(args.sequences):
            seed = args.seed + offset
            # Printed before each program, so a crash names the seed that reproduces it.
            print(f"sequence seed={seed}", flush=True)
            sequence = Sequence(random.Random(seed), cache_dir)
            sequence.run(args.calls)
            calls += sequence.calls
            codes.update(sequence.codes)
            leaked = live_objects() - baseline
            if leaked:
                raise AssertionError(f"seed {seed}: {leaked} NNAPI objects still live after free")
    summary = {
        "sequences": args.sequences,
        "calls": calls,
        "codes": {str(code): count for code, count in sorted(codes.items())},
    }
    print("summary " + json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
