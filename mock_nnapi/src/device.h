// The NNAPI devices the mock exposes (ANeuralNetworksDevice).
//
// A device is declarative, like the sample drivers of Android: a name, a type, a feature level,
// relative performance figures (Android's Capabilities::PerformanceInfo, lower is better) and a
// predicate saying which operations it can run. The set of devices comes from the active device
// profile; without a profile the mock offers one CPU device, "mock-reference", that supports
// every operation the mock implements (like the emulator's nnapi-reference).
#ifndef MOCK_NNAPI_SRC_DEVICE_H_
#define MOCK_NNAPI_SRC_DEVICE_H_

#include <android/NeuralNetworksTypes.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "model.h"

namespace mock_nnapi {

struct PerformanceInfo {
  float exec_time = 1.f;
  float power_usage = 1.f;
};

class Device {
 public:
  std::string name;
  std::string version = "1";
  int32_t type = ANEURALNETWORKS_DEVICE_CPU;
  int64_t feature_level = kFeatureLevel8;
  // Android's relative performance figures used to pick a device per operation.
  PerformanceInfo float32_performance;
  PerformanceInfo float16_performance;
  PerformanceInfo quantized_performance;
  PerformanceInfo relaxed_performance;
  // Operation types the device runs; empty means every operation the mock implements.
  std::set<int32_t> supported_operations;
  // Operand types the device handles; empty means all.
  std::set<int32_t> supported_operand_types;
  uint32_t max_rank = 6;
  // A device made unavailable by fault injection is still listed but fails compilations.
  bool available = true;

  // Whether the device can run `operation` of `model` (the model's validation already passed).
  bool SupportsOperation(const Model& model, const Operation& operation) const;
  // The performance figure used for `operation` under `preference`.
  float Cost(const Model& model, const Operation& operation, int32_t preference) const;
};

// The devices of the active profile, in enumeration order (stable for the process).
const std::vector<const Device*>& Devices();
// True if `device` is one of Devices() (guards against foreign pointers).
bool IsKnownDevice(const Device* device);
// The runtime's feature level (ANeuralNetworks_getRuntimeFeatureLevel).
int64_t RuntimeFeatureLevel();

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_DEVICE_H_
