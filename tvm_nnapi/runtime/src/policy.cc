// SPDX-License-Identifier: Apache-2.0
#include "policy.h"

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/reflection/registry.h>

#include <sstream>

#include "nnapi_work.h"

namespace tvm_nnapi {

namespace ffi = tvm::ffi;

namespace {

double ParsePositive(const std::string& key, const std::string& value) {
  try {
    size_t end = 0;
    const double parsed = std::stod(value, &end);
    if (end == value.size() && parsed >= 0) return parsed;
  } catch (const std::exception&) {
  }
  TVM_FFI_THROW(ValueError) << "NNAPI policy: '" << key << "=" << value
                            << "' needs a non-negative number";
}

double Elements(const std::vector<int64_t>& shape) {
  double count = 1;
  for (int64_t d : shape) count *= static_cast<double>(d);
  return count;
}

}  // namespace

Policy Policy::Parse(const std::string& text) {
  Policy policy;
  if (text.empty() || text == "nnapi") return policy;
  if (text == "host") {
    policy.kind = Kind::kHost;
    return policy;
  }
  if (text.rfind("threshold:", 0) == 0) {
    policy.kind = Kind::kThreshold;
    policy.threshold_flops = ParsePositive("threshold", text.substr(10));
    return policy;
  }
  if (text.rfind("cost:", 0) == 0) {
    policy.kind = Kind::kCost;
    std::stringstream items(text.substr(5));
    std::string item;
    while (std::getline(items, item, ',')) {
      const size_t equals = item.find('=');
      if (equals == std::string::npos) {
        TVM_FFI_THROW(ValueError) << "NNAPI policy: '" << item << "' is not key=value";
      }
      const std::string key = item.substr(0, equals);
      const double value = ParsePositive(key, item.substr(equals + 1));
      if (key == "nnapi_gflops") {
        policy.nnapi_gflops = value;
      } else if (key == "host_gflops") {
        policy.host_gflops = value;
      } else if (key == "call_us") {
        policy.call_us = value;
      } else if (key == "transfer_gbps") {
        policy.transfer_gbps = value;
      } else {
        TVM_FFI_THROW(ValueError) << "NNAPI policy: unknown cost key '" << key
                                  << "' (nnapi_gflops, host_gflops, call_us, transfer_gbps)";
      }
    }
    if (policy.nnapi_gflops <= 0 || policy.host_gflops <= 0 || policy.transfer_gbps <= 0) {
      TVM_FFI_THROW(ValueError) << "NNAPI policy: throughputs must be positive";
    }
    return policy;
  }
  TVM_FFI_THROW(ValueError) << "unknown NNAPI policy '" << text
                            << "' (nnapi, host, threshold:FLOPS, cost:key=value,...)";
}

std::string Policy::ToString() const {
  std::ostringstream text;
  switch (kind) {
    case Kind::kNnapi:
      return "nnapi";
    case Kind::kHost:
      return "host";
    case Kind::kThreshold:
      text << "threshold:" << threshold_flops;
      return text.str();
    case Kind::kCost:
      text << "cost:nnapi_gflops=" << nnapi_gflops << ",host_gflops=" << host_gflops
           << ",call_us=" << call_us << ",transfer_gbps=" << transfer_gbps;
      return text.str();
  }
  return "nnapi";
}

SubgraphCost EstimateCost(const Graph& graph, const std::vector<int64_t>& binding) {
  // The graph has not met NNAPI's validation yet (the model is built after this decision), so
  // an operation may have too few inputs or a filter of the wrong rank: the shared formulas read
  // shapes defensively and multiply in double, which cannot overflow.
  SubgraphCost cost;
  auto shape = [&](uint32_t id) { return graph.ConcreteShape(id, binding); };
  for (uint32_t id : graph.inputs) {
    cost.io_bytes += Elements(shape(id)) * OperandElementSize(graph.operands[id].type);
  }
  for (uint32_t id : graph.outputs) {
    cost.io_bytes += Elements(shape(id)) * OperandElementSize(graph.operands[id].type);
  }
  for (const GraphOperation& operation : graph.operations) {
    // The one work formula per operation, shared with the mock's cost model (nnapi_work.h).
    nnapi_common::WorkOperation work;
    for (uint32_t id : operation.inputs) {
      const GraphOperand& operand = graph.operands[id];
      nnapi_common::WorkOperand& input = work.inputs.emplace_back();
      if (!operand.is_scalar) {
        input.shape = shape(id);
      } else if (operand.kind == GraphOperand::Kind::kValue && operand.int_values.size() == 1) {
        try {
          input.value = operand.int_values[0].Evaluate(binding);
        } catch (const ffi::Error&) {
          // An unevaluable value stays unknown here; building the model reports it.
        }
      }
    }
    work.output = shape(operation.outputs[0]);
    cost.flops += nnapi_common::OperationFlops(operation.type, work);
  }
  return cost;
}

Placement Decide(const Policy& policy, const SubgraphCost& cost, std::string* reason) {
  std::ostringstream why;
  Placement placement = Placement::kNnapi;
  switch (policy.kind) {
    case Policy::Kind::kNnapi:
      why << "policy nnapi";
      break;
    case Policy::Kind::kHost:
      placement = Placement::kHost;
      why << "policy host";
      break;
    case Policy::Kind::kThreshold:
      placement = cost.flops >= policy.threshold_flops ? Placement::kNnapi : Placement::kHost;
      why << "estimated " << cost.flops << " FLOPs vs threshold " << policy.threshold_flops;
      break;
    case Policy::Kind::kCost: {
      const double nnapi = policy.call_us * 1e-6 + cost.io_bytes / (policy.transfer_gbps * 1e9) +
                           cost.flops / (policy.nnapi_gflops * 1e9);
      const double host = cost.flops / (policy.host_gflops * 1e9);
      placement = nnapi <= host ? Placement::kNnapi : Placement::kHost;
      why << "modelled NNAPI " << nnapi * 1e6 << " us vs modelled host " << host * 1e6 << " us";
      break;
    }
  }
  if (reason != nullptr) *reason = why.str();
  return placement;
}

// The estimate of a graph for concrete input shapes, for tests that compare it with the mock's
// cost model: {"flops": ..., "io_bytes": ...}.
TVM_FFI_STATIC_INIT_BLOCK() {
  namespace refl = tvm::ffi::reflection;
  refl::GlobalDef().def(
      "tvm_nnapi.runtime.estimate_cost",
      [](const ffi::String& graph_json, int64_t constants_size,
         const ffi::Array<ffi::Array<int64_t>>& input_shapes) -> ffi::Map<ffi::String, double> {
        const Graph graph = Graph::Parse(std::string(graph_json), constants_size);
        std::vector<std::vector<int64_t>> shapes;
        for (const ffi::Array<int64_t>& input : input_shapes) {
          shapes.emplace_back(input.begin(), input.end());
        }
        if (shapes.size() != graph.inputs.size()) {
          TVM_FFI_THROW(ValueError)
              << "tvm_nnapi.runtime.estimate_cost: graph '" << graph.symbol << "' takes "
              << graph.inputs.size() << " inputs, got " << shapes.size() << " shapes";
        }
        const SubgraphCost cost = EstimateCost(graph, graph.BindSymbols(shapes));
        return ffi::Map<ffi::String, double>{{"flops", cost.flops}, {"io_bytes", cost.io_bytes}};
      });
}

}  // namespace tvm_nnapi
