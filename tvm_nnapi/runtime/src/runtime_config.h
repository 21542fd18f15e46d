// SPDX-License-Identifier: Apache-2.0
// Process-wide settings of the NNAPI runtime module, from the environment and from Python
// (tvm_nnapi.runtime.configure). Read once per compilation, so changes apply to later ones.
// Each option is set by name (set_option) or by the environment variable TVM_NNAPI_<NAME>
// read at start-up; runtime_config.cc holds the one list of names (docs/runtime.md describes
// them).
#ifndef TVM_NNAPI_RUNTIME_RUNTIME_CONFIG_H_
#define TVM_NNAPI_RUNTIME_RUNTIME_CONFIG_H_

#include <android/NeuralNetworksTypes.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tvm_nnapi {

struct RuntimeConfig {
  size_t cache_max_entries = 16;
  size_t cache_max_bytes = size_t{1} << 30;
  std::string compilation_cache_dir;
  int32_t preference = ANEURALNETWORKS_PREFER_FAST_SINGLE_ANSWER;
  bool use_burst = true;
  std::string policy = "nnapi";
  bool log_debug = false;
  // Device choice (ANeuralNetworksCompilation_createForDevices): comma-separated NNAPI device
  // names to compile for ("": NNAPI chooses), and whether to leave out CPU devices (like ONNX
  // Runtime's NNAPI_FLAG_CPU_DISABLED). Several device sets are separated by ';' and tried in
  // order: a set whose compilation or execution fails gives way to the next (DeviceSets).
  std::string devices;
  bool exclude_cpu = false;
};

// The device sets of `devices`, in order ("a,b;c" -> {"a,b", "c"}); one empty set when
// `devices` is empty (NNAPI chooses, or every device without CPUs). Empty sets in a list are
// dropped.
std::vector<std::string> DeviceSets(const std::string& devices);

// A copy of the current settings.
RuntimeConfig GetRuntimeConfig();
// Sets one option by its name. Throws a ValueError naming the option on a bad name or value.
void SetRuntimeOption(const std::string& name, const std::string& value);
// Every option of `config` as (name, the string set_option takes), in a fixed order.
std::vector<std::pair<std::string, std::string>> RuntimeOptionValues(const RuntimeConfig& config);
std::string PreferenceName(int32_t preference);

}  // namespace tvm_nnapi

#endif  // TVM_NNAPI_RUNTIME_RUNTIME_CONFIG_H_
