// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the runtime's graph JSON parser (tvm_nnapi/runtime/src/graph.cc), built
// with tvm-ffi only (its JSON parser, containers and errors); no TVM, no NNAPI.
//
// Input: byte 0 picks the size of the constant blob the graph is checked against, byte 1 the
// value every symbolic dimension of the inputs is bound to; the rest is the JSON document.
// A document that parses is then used as the runtime uses it: every operation described, the
// symbols bound from input shapes, every operand's concrete shape and every inline value
// evaluated.
//
// The oracle: Graph::Parse and the calls after it either succeed or throw tvm::ffi::Error (the
// runtime turns that into a Python exception naming the graph's fault); any other exception, a
// crash, a sanitizer report (ASan + UBSan), a timeout or running out of memory is a bug.
// Build and run: scripts/run_libfuzzer.sh (docs/reliability.md).
#include <tvm/ffi/error.h>

#include <cstdint>
#include <string>
#include <vector>

#include "graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint64_t constant_sizes[] = {0, 16, 4096, uint64_t{1} << 40};
  const uint64_t constants_size = constant_sizes[data[0] % 4];
  const int64_t symbol_value = data[1] % 8;
  const std::string json(reinterpret_cast<const char*>(data) + 2, size - 2);
  try {
    const tvm_nnapi::Graph graph = tvm_nnapi::Graph::Parse(json, constants_size);
    for (const tvm_nnapi::GraphOperation& operation : graph.operations) {
      (void)graph.Describe(operation);
    }
    std::vector<std::vector<int64_t>> input_shapes;
    for (uint32_t input : graph.inputs) {
      std::vector<int64_t> shape;
      for (const tvm_nnapi::DimExpr& dim : graph.operands[input].shape) {
        shape.push_back(dim.is_constant() ? dim.Evaluate({}) : symbol_value);
      }
      input_shapes.push_back(shape);
    }
    const std::vector<int64_t> binding = graph.BindSymbols(input_shapes);
    for (uint32_t i = 0; i < graph.operands.size(); ++i) {
      (void)graph.ConcreteShape(i, binding);
      for (const tvm_nnapi::DimExpr& value : graph.operands[i].int_values) {
        (void)graph.EvaluateFor(value, binding, graph.operands[i].name);
      }
    }
  } catch (const tvm::ffi::Error&) {
    // A refused graph: the documented outcome.
  }
  return 0;
}
