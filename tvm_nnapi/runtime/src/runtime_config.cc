// SPDX-License-Identifier: Apache-2.0
#include "runtime_config.h"

#include <android/NeuralNetworksTypes.h>
#include <tvm/ffi/error.h>

#include <cstdlib>
#include <mutex>

#include "policy.h"

namespace tvm_nnapi {
namespace {

std::mutex& ConfigMutex() {
  static std::mutex mutex;
  return mutex;
}

uint64_t ParseCount(const std::string& name, const std::string& value) {
  try {
    size_t end = 0;
    const long long parsed = std::stoll(value, &end);
    if (end == value.size() && parsed >= 0) return static_cast<uint64_t>(parsed);
  } catch (const std::exception&) {
  }
  TVM_FFI_THROW(ValueError) << "NNAPI runtime option " << name << "='" << value
                            << "' is not a non-negative integer";
}

void Apply(RuntimeConfig* config, const std::string& name, const std::string& value) {
  if (name == "cache_max_entries") {
    config->cache_max_entries = ParseCount(name, value);
    if (config->cache_max_entries == 0) {
      TVM_FFI_THROW(ValueError) << "NNAPI runtime option cache_max_entries must be at least 1";
    }
  } else if (name == "cache_max_bytes") {
    config->cache_max_bytes = ParseCount(name, value);
  } else if (name == "cache_dir") {
    config->compilation_cache_dir = value;
  } else if (name == "preference") {
    if (value == "fast") {
      config->preference = ANEURALNETWORKS_PREFER_FAST_SINGLE_ANSWER;
    } else if (value == "low_power") {
      config->preference = ANEURALNETWORKS_PREFER_LOW_POWER;
    } else if (value == "sustained") {
      config->preference = ANEURALNETWORKS_PREFER_SUSTAINED_SPEED;
    } else {
      TVM_FFI_THROW(ValueError) << "NNAPI runtime option preference='" << value
                                << "' must be fast, low_power or sustained";
    }
  } else if (name == "use_burst") {
    config->use_burst = ParseCount(name, value) != 0;
  } else if (name == "policy") {
    Policy::Parse(value);  // validates
    config->policy = value;
  } else if (name == "log") {
    config->log_debug = value == "debug";
  } else if (name == "devices") {
    config->devices = value;  // names are checked against the devices present at compilation
  } else if (name == "exclude_cpu") {
    config->exclude_cpu = ParseCount(name, value) != 0;
  } else {
    TVM_FFI_THROW(ValueError) << "unknown NNAPI runtime option '" << name
                              << "' (cache_max_entries, cache_max_bytes, cache_dir, preference, "
                                 "use_burst, policy, log, devices, exclude_cpu)";
  }
}

RuntimeConfig& Config() {
  static RuntimeConfig config = [] {
    RuntimeConfig initial;
    const struct {
      const char* env;
      const char* name;
    } kVariables[] = {
        {"TVM_NNAPI_CACHE_MAX_ENTRIES", "cache_max_entries"},
        {"TVM_NNAPI_CACHE_MAX_BYTES", "cache_max_bytes"},
        {"TVM_NNAPI_CACHE_DIR", "cache_dir"},
        {"TVM_NNAPI_PREFERENCE", "preference"},
        {"TVM_NNAPI_USE_BURST", "use_burst"},
        {"TVM_NNAPI_POLICY", "policy"},
        {"TVM_NNAPI_LOG", "log"},
        {"TVM_NNAPI_DEVICES", "devices"},
        {"TVM_NNAPI_EXCLUDE_CPU", "exclude_cpu"},
    };
    for (const auto& variable : kVariables) {
      const char* value = std::getenv(variable.env);
      if (value != nullptr && value[0] != '\0') Apply(&initial, variable.name, value);
    }
    return initial;
  }();
  return config;
}

}  // namespace

RuntimeConfig GetRuntimeConfig() {
  std::lock_guard<std::mutex> lock(ConfigMutex());
  return Config();
}

void SetRuntimeOption(const std::string& name, const std::string& value) {
  std::lock_guard<std::mutex> lock(ConfigMutex());
  RuntimeConfig updated = Config();
  Apply(&updated, name, value);
  Config() = updated;
}

std::string PreferenceName(int32_t preference) {
  switch (preference) {
    case ANEURALNETWORKS_PREFER_LOW_POWER:
      return "low_power";
    case ANEURALNETWORKS_PREFER_SUSTAINED_SPEED:
      return "sustained";
    default:
      return "fast";
  }
}

}  // namespace tvm_nnapi
