#include "policy.h"

#include <tvm/ffi/error.h>

#include <sstream>

namespace tvm_nnapi {
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
  // an operation may have too few inputs or a filter of the wrong rank: read shapes defensively
  // (a missing one counts as a scalar) and multiply in double, which cannot overflow.
  SubgraphCost cost;
  auto shape = [&](uint32_t id) { return graph.ConcreteShape(id, binding); };
  auto input_shape = [&](const GraphOperation& operation, size_t i) {
    return i < operation.inputs.size() ? shape(operation.inputs[i]) : std::vector<int64_t>{};
  };
  auto dims = [](const std::vector<int64_t>& dimensions, size_t first, size_t last) {
    double product = 1;
    for (size_t d = first; d <= last && d < dimensions.size(); ++d) {
      product *= static_cast<double>(dimensions[d]);
    }
    return product;
  };
  for (uint32_t id : graph.inputs) {
    cost.io_bytes += Elements(shape(id)) * OperandElementSize(graph.operands[id].type);
  }
  for (uint32_t id : graph.outputs) {
    cost.io_bytes += Elements(shape(id)) * OperandElementSize(graph.operands[id].type);
  }
  for (const GraphOperation& operation : graph.operations) {
    const double out = Elements(shape(operation.outputs[0]));
    const std::string& op = operation.op;
    if (op == "FULLY_CONNECTED") {
      cost.flops += 2 * out * dims(input_shape(operation, 1), 1, 1);
    } else if (op == "BATCH_MATMUL") {
      const std::vector<int64_t> a = input_shape(operation, 0);
      cost.flops += 2 * out * (a.empty() ? 1.0 : static_cast<double>(a.back()));
    } else if (op == "CONV_2D" || op == "GROUPED_CONV_2D") {
      cost.flops += 2 * out * dims(input_shape(operation, 1), 1, 3);  // [O, kH, kW, I/g]
    } else if (op == "DEPTHWISE_CONV_2D") {
      cost.flops += 2 * out * dims(input_shape(operation, 1), 1, 2);  // [1, kH, kW, O]
    } else if (op == "TRANSPOSE_CONV_2D") {
      cost.flops += 2 * Elements(input_shape(operation, 0)) * dims(input_shape(operation, 1), 0, 2);
    } else {
      cost.flops += out;
    }
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

}  // namespace tvm_nnapi
