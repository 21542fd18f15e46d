// SPDX-License-Identifier: Apache-2.0
// Process-wide settings of the NNAPI runtime module, from the environment and from Python
// (tvm_nnapi.runtime.configure). Read once per compilation, so changes apply to later ones.
//
//   TVM_NNAPI_CACHE_MAX_ENTRIES  compiled shape signatures kept per subgraph (default 16)
//   TVM_NNAPI_CACHE_MAX_BYTES    estimated activation bytes kept per subgraph (default 1 GiB)
//   TVM_NNAPI_CACHE_DIR          NNAPI compilation cache directory (setCaching); empty: off
//   TVM_NNAPI_PREFERENCE         fast | low_power | sustained (default fast)
//   TVM_NNAPI_USE_BURST          1 (default) or 0: run executions through an NNAPI burst
//   TVM_NNAPI_POLICY             device selection policy (policy.h; default "nnapi")
//   TVM_NNAPI_LOG                "debug" logs every placement decision and fallback
#ifndef TVM_NNAPI_RUNTIME_RUNTIME_CONFIG_H_
#define TVM_NNAPI_RUNTIME_RUNTIME_CONFIG_H_

#include <android/NeuralNetworksTypes.h>

#include <cstddef>
#include <cstdint>
#include <string>

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
  // Runtime's NNAPI_FLAG_CPU_DISABLED).
  std::string devices;
  bool exclude_cpu = false;
};

// A copy of the current settings.
RuntimeConfig GetRuntimeConfig();
// Sets one option by its name (the environment variable without "TVM_NNAPI_", lower case:
// "cache_max_entries", "cache_max_bytes", "cache_dir", "preference", "use_burst", "policy",
// "log", "devices", "exclude_cpu"). Throws a
// ValueError naming the option on a bad name or value.
void SetRuntimeOption(const std::string& name, const std::string& value);
std::string PreferenceName(int32_t preference);

}  // namespace tvm_nnapi

#endif  // TVM_NNAPI_RUNTIME_RUNTIME_CONFIG_H_
