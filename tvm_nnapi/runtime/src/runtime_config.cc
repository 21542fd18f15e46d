// SPDX-License-Identifier: Apache-2.0
#include "runtime_config.h"

#include <android/NeuralNetworksTypes.h>
#include <tvm/ffi/error.h>

#include <cctype>
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

bool ParseFlag(const std::string& name, const std::string& value) {
  return ParseCount(name, value) != 0;
}

int32_t ParsePreference(const std::string& value) {
  if (value == "fast") return ANEURALNETWORKS_PREFER_FAST_SINGLE_ANSWER;
  if (value == "low_power") return ANEURALNETWORKS_PREFER_LOW_POWER;
  if (value == "sustained") return ANEURALNETWORKS_PREFER_SUSTAINED_SPEED;
  TVM_FFI_THROW(ValueError) << "NNAPI runtime option preference='" << value
                            << "' must be fast, low_power or sustained";
}

// The options: each one's name (also its environment variable, upper-cased after "TVM_NNAPI_"),
// how a string sets it and how it reads back as that string. The one list of option names.
struct OptionSpec {
  const char* name;
  void (*apply)(RuntimeConfig* config, const std::string& value);
  std::string (*read)(const RuntimeConfig& config);
};

const OptionSpec kOptions[] = {
    {"cache_max_entries",
     [](RuntimeConfig* config, const std::string& value) {
       const uint64_t entries = ParseCount("cache_max_entries", value);
       if (entries == 0) {
         TVM_FFI_THROW(ValueError) << "NNAPI runtime option cache_max_entries must be at least 1";
       }
       config->cache_max_entries = entries;
     },
     [](const RuntimeConfig& config) { return std::to_string(config.cache_max_entries); }},
    {"cache_max_bytes",
     [](RuntimeConfig* config, const std::string& value) {
       config->cache_max_bytes = ParseCount("cache_max_bytes", value);
     },
     [](const RuntimeConfig& config) { return std::to_string(config.cache_max_bytes); }},
    {"cache_dir",
     [](RuntimeConfig* config, const std::string& value) { config->compilation_cache_dir = value; },
     [](const RuntimeConfig& config) { return config.compilation_cache_dir; }},
    {"preference",
     [](RuntimeConfig* config, const std::string& value) {
       config->preference = ParsePreference(value);
     },
     [](const RuntimeConfig& config) { return PreferenceName(config.preference); }},
    {"use_burst",
     [](RuntimeConfig* config, const std::string& value) {
       config->use_burst = ParseFlag("use_burst", value);
     },
     [](const RuntimeConfig& config) { return std::string(config.use_burst ? "1" : "0"); }},
    {"policy",
     [](RuntimeConfig* config, const std::string& value) {
       Policy::Parse(value);  // validates
       config->policy = value;
     },
     [](const RuntimeConfig& config) { return config.policy; }},
    {"log",
     [](RuntimeConfig* config, const std::string& value) { config->log_debug = value == "debug"; },
     [](const RuntimeConfig& config) { return std::string(config.log_debug ? "debug" : ""); }},
    {"devices",
     // Names are checked against the devices present at compilation.
     [](RuntimeConfig* config, const std::string& value) { config->devices = value; },
     [](const RuntimeConfig& config) { return config.devices; }},
    {"exclude_cpu",
     [](RuntimeConfig* config, const std::string& value) {
       config->exclude_cpu = ParseFlag("exclude_cpu", value);
     },
     [](const RuntimeConfig& config) { return std::string(config.exclude_cpu ? "1" : "0"); }},
};

std::string JoinedOptionNames() {
  std::string names;
  for (const OptionSpec& option : kOptions) {
    if (!names.empty()) names += ", ";
    names += option.name;
  }
  return names;
}

void Apply(RuntimeConfig* config, const std::string& name, const std::string& value) {
  for (const OptionSpec& option : kOptions) {
    if (name == option.name) {
      option.apply(config, value);
      return;
    }
  }
  TVM_FFI_THROW(ValueError) << "unknown NNAPI runtime option '" << name << "' ("
                            << JoinedOptionNames() << ")";
}

std::string EnvironmentVariable(const char* name) {
  std::string variable = "TVM_NNAPI_";
  for (const char* c = name; *c != '\0'; ++c) {
    variable += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
  }
  return variable;
}

RuntimeConfig& Config() {
  static RuntimeConfig config = [] {
    RuntimeConfig initial;
    for (const OptionSpec& option : kOptions) {
      const char* value = std::getenv(EnvironmentVariable(option.name).c_str());
      if (value != nullptr && value[0] != '\0') option.apply(&initial, value);
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

std::vector<std::pair<std::string, std::string>> RuntimeOptionValues(const RuntimeConfig& config) {
  std::vector<std::pair<std::string, std::string>> values;
  for (const OptionSpec& option : kOptions) values.emplace_back(option.name, option.read(config));
  return values;
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

std::vector<std::string> DeviceSets(const std::string& devices) {
  std::vector<std::string> sets;
  size_t start = 0;
  while (start <= devices.size()) {
    size_t end = devices.find(';', start);
    if (end == std::string::npos) end = devices.size();
    const std::string set = devices.substr(start, end - start);
    if (set.find_first_not_of(", ") != std::string::npos) sets.push_back(set);
    start = end + 1;
  }
  if (sets.empty()) sets.emplace_back();
  return sets;
}

}  // namespace tvm_nnapi
