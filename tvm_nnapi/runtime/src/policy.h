// SPDX-License-Identifier: Apache-2.0
// Input-based device selection: per concrete shape signature, run a subgraph on NNAPI or on
// TVM's host code for the same subgraph (when the module carries a host fallback).
//
// Policies (runtime option "policy", env TVM_NNAPI_POLICY):
//   nnapi                 always NNAPI (the default)
//   host                  always the host fallback
//   threshold:N           NNAPI when the subgraph's estimated FLOPs are at least N, else host
//   cost:K=V,...          compare modelled times (seconds, from the keys below) and pick the
//                         faster; keys: nnapi_gflops, host_gflops, call_us (NNAPI per-call
//                         overhead), transfer_gbps (host<->device bandwidth for inputs and
//                         outputs). Typically derived from a device profile in Python
//                         (tvm_nnapi.runtime_api.cost_policy_from_profile).
//       modelled NNAPI time = call_us * 1e-6 + io_bytes / (transfer_gbps * 1e9)
//                             + flops / (nnapi_gflops * 1e9)
//       modelled host time  = flops / (host_gflops * 1e9)
#ifndef TVM_NNAPI_RUNTIME_POLICY_H_
#define TVM_NNAPI_RUNTIME_POLICY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph.h"

namespace tvm_nnapi {

struct Policy {
  enum class Kind { kNnapi, kHost, kThreshold, kCost };
  Kind kind = Kind::kNnapi;
  double threshold_flops = 0;
  double nnapi_gflops = 1;
  double host_gflops = 1;
  double call_us = 0;
  double transfer_gbps = 1;

  // Parses a policy string; throws a ValueError naming the bad part.
  static Policy Parse(const std::string& text);
  std::string ToString() const;
};

// Work estimate of a subgraph under a symbol binding: each operation's FLOPs from the formula the
// mock's cost model uses too (common/nnapi_work.h), and the bytes of the subgraph's inputs and
// outputs. tvm_nnapi.runtime.estimate_cost(graph_json, constants_size, input_shapes) returns it.
struct SubgraphCost {
  double flops = 0;
  double io_bytes = 0;
};
SubgraphCost EstimateCost(const Graph& graph, const std::vector<int64_t>& binding);

enum class Placement { kNnapi, kHost };
// The policy's choice; `reason` explains it (for debug logs and statistics).
Placement Decide(const Policy& policy, const SubgraphCost& cost, std::string* reason);

}  // namespace tvm_nnapi

#endif  // TVM_NNAPI_RUNTIME_POLICY_H_
