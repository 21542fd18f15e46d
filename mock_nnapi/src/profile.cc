// SPDX-License-Identifier: Apache-2.0
#include "profile.h"

#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>

#include "cost_model.h"
#include "json.h"
#include "nnapi_facts.h"
#include "operand_types.h"

namespace mock_nnapi {

// Defined in the file generated from mock_nnapi/profiles/*.json (embed_profiles.cmake).
extern const EmbeddedProfile kEmbeddedProfiles[];
extern const size_t kEmbeddedProfileCount;

namespace {

constexpr char kSchema[] = "mock_nnapi.device_profile/1";
constexpr size_t kMaximumProfileBytes = 4 << 20;

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}
std::string Index(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

std::string Describe(const JsonValue& value) {
  if (value.is_string()) return "the string " + JsonQuote(value.string_value());
  if (value.is_number()) return "the number " + JsonNumber(value.number_value());
  return std::string("a JSON ") + JsonValue::KindName(value.kind());
}

// Reads the fields of a profile, stopping at the first problem; every message names the field.
class ProfileReader {
 public:
  explicit ProfileReader(std::string* error) : error_(error) {}

  bool Fail(const std::string& path, const std::string& message) {
    if (error_->empty())
      *error_ = (path.empty() ? std::string("(top level)") : path) + ": " + message;
    return false;
  }

  bool ExpectKind(const JsonValue& value, JsonValue::Kind kind, const std::string& path) {
    if (value.kind() == kind) return true;
    return Fail(path,
                std::string("expected ") + (kind == JsonValue::Kind::kArray ? "an " : "a ") +
                    (kind == JsonValue::Kind::kNumber ? "number" : JsonValue::KindName(kind)) +
                    ", found " + Describe(value));
  }

  // Rejects members other than `allowed` (a typo must not silently become a default).
  bool CheckKeys(const JsonValue& object, const std::string& path,
                 std::initializer_list<const char*> allowed) {
    for (const JsonValue::Member& member : object.object_members()) {
      bool known = false;
      for (const char* key : allowed) known = known || member.first == key;
      if (!known) {
        std::string list;
        for (const char* key : allowed) list += (list.empty() ? "" : ", ") + std::string(key);
        return Fail(Join(path, member.first), "unknown field (expected one of: " + list + ")");
      }
    }
    return true;
  }

  const JsonValue* Required(const JsonValue& object, const std::string& path, const char* key) {
    const JsonValue* value = object.Find(key);
    if (value == nullptr) Fail(Join(path, key), "required field is missing");
    return value;
  }

  bool String(const JsonValue& object, const std::string& path, const char* key, std::string* out,
              bool required = true) {
    const JsonValue* value = object.Find(key);
    if (value == nullptr)
      return required ? Fail(Join(path, key), "required field is missing") : true;
    if (!ExpectKind(*value, JsonValue::Kind::kString, Join(path, key))) return false;
    if (value->string_value().empty()) return Fail(Join(path, key), "expected a non-empty string");
    *out = value->string_value();
    return true;
  }

  bool Bool(const JsonValue& object, const std::string& path, const char* key, bool* out) {
    const JsonValue* value = object.Find(key);
    if (value == nullptr) return true;  // booleans are optional and default to false
    if (!value->is_bool()) {
      return Fail(Join(path, key), "expected true or false, found " + Describe(*value));
    }
    *out = value->bool_value();
    return true;
  }

  enum class Range { kPositive, kNonNegative, kFraction };

  // Every figure of a profile (GOP/s, GB/s, microseconds, picojoules, factors) is far below
  // this on any phone: a larger one is a mistake, not a device.
  static constexpr double kPhysicalLimit = 1e9;

  bool Number(const JsonValue& value, const std::string& path, Range range, double* out) {
    const char* expected = range == Range::kPositive      ? "a positive number"
                           : range == Range::kNonNegative ? "a number >= 0"
                                                          : "a number in (0, 1]";
    if (!value.is_number())
      return Fail(path, std::string("expected ") + expected + ", found " + Describe(value));
    const double number = value.number_value();
    const bool ok = range == Range::kPositive      ? number > 0
                    : range == Range::kNonNegative ? number >= 0
                                                   : number > 0 && number <= 1;
    if (!ok) return Fail(path, std::string("expected ") + expected + ", found " + Describe(value));
    if (number > kPhysicalLimit) {
      return Fail(path,
                  "expected at most 1e9 (no phone has such a figure), found " + Describe(value));
    }
    *out = number;
    return true;
  }

  bool Number(const JsonValue& object, const std::string& path, const char* key, Range range,
              double* out, bool required = true) {
    const JsonValue* value = object.Find(key);
    if (value == nullptr)
      return required ? Fail(Join(path, key), "required field is missing") : true;
    return Number(*value, Join(path, key), range, out);
  }

  bool ReadFeatureLevel(const JsonValue& value, const std::string& path, int64_t* out) {
    static const int64_t kLevels[] = {kFeatureLevel1, kFeatureLevel2, kFeatureLevel3,
                                      kFeatureLevel4, kFeatureLevel5, kFeatureLevel6,
                                      kFeatureLevel7, kFeatureLevel8};
    if (value.is_integer()) {
      const int64_t level = value.integer_value();
      if (level >= 1 && level <= 8) {
        *out = kLevels[level - 1];
        return true;
      }
      for (int64_t code : kLevels) {
        if (level == code) {
          *out = code;
          return true;
        }
      }
    }
    return Fail(path, "expected a feature level: 1-8, or its code 27-31, 1000006-1000008; found " +
                          Describe(value));
  }

  // An operation name ("CONV_2D") as its OperationCode.
  bool ReadOperationCode(const JsonValue& value, const std::string& path, int32_t* out) {
    if (!ExpectKind(value, JsonValue::Kind::kString, path)) return false;
    if (const auto* facts = nnapi_common::FindOperationFacts(value.string_value())) {
      *out = facts->code;
      return true;
    }
    return Fail(path, "unknown NNAPI operation " + JsonQuote(value.string_value()) +
                          " (use the OperationCode name without prefix, e.g. \"CONV_2D\")");
  }

  bool OperationList(const JsonValue& value, const std::string& path, std::set<int32_t>* out) {
    if (!ExpectKind(value, JsonValue::Kind::kArray, path)) return false;
    for (size_t i = 0; i < value.array_items().size(); ++i) {
      int32_t code;
      if (!ReadOperationCode(value.array_items()[i], Index(path, i), &code)) return false;
      if (!out->insert(code).second) return Fail(Index(path, i), "operation listed twice");
    }
    return true;
  }

  // Tensor operand type names ("TENSOR_FLOAT16") as OperandCodes, or "all" (an empty set).
  bool OperandTypeList(const JsonValue& value, const std::string& path, std::set<int32_t>* out) {
    if (value.is_string() && value.string_value() == "all") return true;
    if (!value.is_array()) {
      return Fail(path,
                  "expected \"all\" or an array of operand type names, found " + Describe(value));
    }
    if (value.array_items().empty()) return Fail(path, "expected at least one operand type");
    for (size_t i = 0; i < value.array_items().size(); ++i) {
      const JsonValue& item = value.array_items()[i];
      const std::string item_path = Index(path, i);
      if (!ExpectKind(item, JsonValue::Kind::kString, item_path)) return false;
      const auto* facts = nnapi_common::FindOperandTypeFacts(item.string_value());
      const int32_t found = facts != nullptr ? facts->code : -1;
      if (found < 0) {
        return Fail(item_path, "unknown operand type " + JsonQuote(item.string_value()) +
                                   " (use the OperandCode name, e.g. \"TENSOR_FLOAT32\")");
      }
      if (!IsTensorType(found)) {
        return Fail(item_path, JsonQuote(item.string_value()) + " is not a tensor operand type");
      }
      if (!out->insert(found).second) return Fail(item_path, "operand type listed twice");
    }
    return true;
  }

  // An object keyed by data class name; float32, float16 and quant8 are required, the others
  // default to a related class (relaxed_float32 and int32 to float32, quant16 and bool8 to
  // quant8). `read` reads one entry.
  template <typename T>
  bool DataClassTable(const JsonValue& object, const std::string& path, const char* key,
                      std::array<T, kDataClassCount>* out,
                      const std::function<bool(const JsonValue&, const std::string&, T*)>& read) {
    const JsonValue* table = Required(object, path, key);
    if (table == nullptr) return false;
    const std::string table_path = Join(path, key);
    if (!ExpectKind(*table, JsonValue::Kind::kObject, table_path)) return false;
    std::array<bool, kDataClassCount> present{};
    for (const JsonValue::Member& member : table->object_members()) {
      const std::optional<DataClass> data_class = DataClassFromName(member.first);
      if (!data_class) {
        return Fail(Join(table_path, member.first),
                    "unknown data class (expected float32, relaxed_float32, float16, quant8, "
                    "quant16, int32 or bool8)");
      }
      const int index = static_cast<int>(*data_class);
      if (!read(member.second, Join(table_path, member.first), &(*out)[index])) return false;
      present[index] = true;
    }
    for (DataClass required : {DataClass::kFloat32, DataClass::kFloat16, DataClass::kQuant8}) {
      if (!present[static_cast<int>(required)]) {
        return Fail(Join(table_path, DataClassName(required)), "required field is missing");
      }
    }
    auto fill = [&](DataClass target, DataClass source) {
      if (!present[static_cast<int>(target)]) {
        (*out)[static_cast<int>(target)] = (*out)[static_cast<int>(source)];
      }
    };
    fill(DataClass::kRelaxedFloat32, DataClass::kFloat32);
    fill(DataClass::kInt32, DataClass::kFloat32);
    fill(DataClass::kQuant16, DataClass::kQuant8);
    fill(DataClass::kBool8, DataClass::kQuant8);
    return true;
  }

  bool ReadSupport(const JsonValue& value, const std::string& path, Device* device) {
    if (!ExpectKind(value, JsonValue::Kind::kObject, path)) return false;
    if (!CheckKeys(value, path,
                   {"operations", "exclude_operations", "data_types", "operation_data_types",
                    "max_rank", "relaxed_float32", "notes"})) {
      return false;
    }
    const JsonValue* operations = Required(value, path, "operations");
    if (operations == nullptr) return false;
    const bool all = operations->is_string() && operations->string_value() == "all";
    if (!all) {
      if (!operations->is_array()) {
        return Fail(
            Join(path, "operations"),
            "expected \"all\" or an array of operation names, found " + Describe(*operations));
      }
      if (!OperationList(*operations, Join(path, "operations"), &device->supported_operations)) {
        return false;
      }
      if (device->supported_operations.empty()) {
        return Fail(Join(path, "operations"), "expected at least one operation");
      }
    }
    if (const JsonValue* excluded = value.Find("exclude_operations")) {
      std::set<int32_t> codes;
      if (!OperationList(*excluded, Join(path, "exclude_operations"), &codes)) return false;
      if (all && !codes.empty()) {
        // "all" means every operation the mock implements; list them to exclude some.
        for (const nnapi_common::OperationFacts& operation : nnapi_common::kOperations) {
          if (codes.count(operation.code) == 0) device->supported_operations.insert(operation.code);
        }
      } else {
        for (int32_t code : codes) device->supported_operations.erase(code);
      }
    }
    const JsonValue* types = Required(value, path, "data_types");
    if (types == nullptr) return false;
    if (!OperandTypeList(*types, Join(path, "data_types"), &device->supported_operand_types)) {
      return false;
    }
    if (const JsonValue* per_operation = value.Find("operation_data_types")) {
      const std::string per_path = Join(path, "operation_data_types");
      if (!ExpectKind(*per_operation, JsonValue::Kind::kObject, per_path)) return false;
      for (const JsonValue::Member& member : per_operation->object_members()) {
        const auto* facts = nnapi_common::FindOperationFacts(member.first);
        const int32_t code = facts != nullptr ? facts->code : -1;
        if (code < 0) {
          return Fail(Join(per_path, member.first), "unknown NNAPI operation name");
        }
        if (!OperandTypeList(member.second, Join(per_path, member.first),
                             &device->operation_operand_types[code])) {
          return false;
        }
      }
    }
    const JsonValue* max_rank = Required(value, path, "max_rank");
    if (max_rank == nullptr) return false;
    if (!max_rank->is_integer() || max_rank->integer_value() < 1 || max_rank->integer_value() > 8) {
      return Fail(Join(path, "max_rank"),
                  "expected an integer from 1 to 8, found " + Describe(*max_rank));
    }
    device->max_rank = static_cast<uint32_t>(max_rank->integer_value());
    return Bool(value, path, "relaxed_float32", &device->relaxed_float32);
  }

  // `driver_failures`: an array of {operation, data_types?, at, result?, every?, notes?}.
  bool DriverFailures(const JsonValue& value, const std::string& path, Device* device) {
    if (!ExpectKind(value, JsonValue::Kind::kArray, path)) return false;
    for (size_t i = 0; i < value.array_items().size(); ++i) {
      const JsonValue& item = value.array_items()[i];
      const std::string item_path = Index(path, i);
      if (!ExpectKind(item, JsonValue::Kind::kObject, item_path) ||
          !CheckKeys(item, item_path,
                     {"operation", "data_types", "at", "result", "every", "notes"})) {
        return false;
      }
      DriverFailure failure;
      const JsonValue* operation = Required(item, item_path, "operation");
      if (operation == nullptr ||
          !ReadOperationCode(*operation, Join(item_path, "operation"), &failure.operation)) {
        return false;
      }
      if (const JsonValue* types = item.Find("data_types")) {
        if (!OperandTypeList(*types, Join(item_path, "data_types"), &failure.operand_types)) {
          return false;
        }
      }
      std::string stage;
      if (!String(item, item_path, "at", &stage)) return false;
      if (stage == "compilation") {
        failure.stage = DriverFailure::Stage::kCompilation;
      } else if (stage == "execution") {
        failure.stage = DriverFailure::Stage::kExecution;
      } else {
        return Fail(Join(item_path, "at"),
                    "expected \"compilation\" or \"execution\", found " + JsonQuote(stage));
      }
      const bool compilation = failure.stage == DriverFailure::Stage::kCompilation;
      if (const JsonValue* result = item.Find("result")) {
        const bool known =
            result->is_string() && (result->string_value() == "OP_FAILED" ||
                                    (compilation && result->string_value() == "BAD_DATA"));
        if (!known) {
          return Fail(Join(item_path, "result"),
                      std::string(compilation ? "expected \"OP_FAILED\" or \"BAD_DATA\""
                                              : "expected \"OP_FAILED\"") +
                          ", found " + Describe(*result));
        }
        failure.result = result->string_value() == "BAD_DATA" ? ANEURALNETWORKS_BAD_DATA
                                                              : ANEURALNETWORKS_OP_FAILED;
      }
      if (const JsonValue* every = item.Find("every")) {
        if (compilation) {
          return Fail(Join(item_path, "every"), "only an execution failure can be periodic");
        }
        if (!every->is_integer() || every->integer_value() < 1 ||
            every->integer_value() > 1000000) {
          return Fail(Join(item_path, "every"),
                      "expected an integer from 1 to 1000000, found " + Describe(*every));
        }
        failure.every = static_cast<uint32_t>(every->integer_value());
      }
      if (item.Find("notes") != nullptr) {
        std::string notes;
        if (!String(item, item_path, "notes", &notes)) return false;
      }
      device->driver_failures.push_back(failure);
    }
    device->driver_failure_runs.assign(device->driver_failures.size(), 0);
    return true;
  }

  bool ReadDevice(const JsonValue& value, const std::string& path, Device* device) {
    if (!ExpectKind(value, JsonValue::Kind::kObject, path)) return false;
    if (value.Find("performance") != nullptr) {
      // Refused rather than ignored: a profile written for the hand-written figures would
      // otherwise silently assign operations differently from what its author read.
      return Fail(Join(path, "performance"),
                  "no longer read: Android's exec_time and power_usage figures are derived "
                  "from the device's cost-model parameters (throughput, efficiencies, "
                  "overheads, energy; docs/device-profiles.md, \"Performance figures\"); "
                  "remove the field and set those parameters instead");
    }
    if (!CheckKeys(value, path,
                   {"name", "type", "version", "feature_level", "runtime_cpu", "notes", "support",
                    "throughput", "memory_bandwidth_gbps", "efficiency", "compute_efficiency",
                    "memory_efficiency", "fuse_elementwise", "on_chip_memory", "overhead_us",
                    "transfer", "compilation_us", "energy", "driver_failures"})) {
      return false;
    }
    if (!String(value, path, "name", &device->name)) return false;
    std::string type;
    if (!String(value, path, "type", &type)) return false;
    static const std::map<std::string, int32_t> kTypes = {
        {"CPU", ANEURALNETWORKS_DEVICE_CPU},
        {"GPU", ANEURALNETWORKS_DEVICE_GPU},
        {"ACCELERATOR", ANEURALNETWORKS_DEVICE_ACCELERATOR},
        {"OTHER", ANEURALNETWORKS_DEVICE_OTHER}};
    const auto found_type = kTypes.find(type);
    if (found_type == kTypes.end()) {
      return Fail(
          Join(path, "type"),
          "expected \"CPU\", \"GPU\", \"ACCELERATOR\" or \"OTHER\", found " + JsonQuote(type));
    }
    device->type = found_type->second;
    if (!String(value, path, "version", &device->version)) return false;
    const JsonValue* level = Required(value, path, "feature_level");
    if (level == nullptr ||
        !ReadFeatureLevel(*level, Join(path, "feature_level"), &device->feature_level)) {
      return false;
    }
    device->profile_feature_level = device->feature_level;
    if (!Bool(value, path, "runtime_cpu", &device->runtime_cpu)) return false;
    if (device->runtime_cpu && device->type != ANEURALNETWORKS_DEVICE_CPU) {
      return Fail(Join(path, "runtime_cpu"),
                  "only a device of type \"CPU\" can be the runtime CPU");
    }
    if (value.Find("notes") != nullptr) {
      std::string notes;
      if (!String(value, path, "notes", &notes)) return false;
    }
    const JsonValue* support = Required(value, path, "support");
    if (support == nullptr || !ReadSupport(*support, Join(path, "support"), device)) return false;
    if (const JsonValue* failures = value.Find("driver_failures")) {
      if (!DriverFailures(*failures, Join(path, "driver_failures"), device)) return false;
    }

    const std::function<bool(const JsonValue&, const std::string&, double*)> positive =
        [this](const JsonValue& entry, const std::string& entry_path, double* out) {
          return Number(entry, entry_path, Range::kPositive, out);
        };
    const std::function<bool(const JsonValue&, const std::string&, double*)> non_negative =
        [this](const JsonValue& entry, const std::string& entry_path, double* out) {
          return Number(entry, entry_path, Range::kNonNegative, out);
        };
    DeviceTiming& timing = device->timing;
    if (!DataClassTable<double>(value, path, "throughput", &timing.peak_gops, positive)) {
      return false;
    }
    if (!Number(value, path, "memory_bandwidth_gbps", Range::kPositive,
                &timing.memory_bandwidth_gbps)) {
      return false;
    }
    if (!Efficiency(value, path, &timing)) return false;
    if (!SplitEfficiency(value, path, "compute_efficiency", timing.efficiency,
                         &timing.compute_efficiency) ||
        !SplitEfficiency(value, path, "memory_efficiency", timing.efficiency,
                         &timing.memory_efficiency) ||
        !Bool(value, path, "fuse_elementwise", &timing.fuse_elementwise)) {
      return false;
    }
    if (const JsonValue* on_chip = value.Find("on_chip_memory")) {
      const std::string on_chip_path = Join(path, "on_chip_memory");
      double kib = 0;
      if (!ExpectKind(*on_chip, JsonValue::Kind::kObject, on_chip_path) ||
          !CheckKeys(*on_chip, on_chip_path, {"kib", "bandwidth_gbps"}) ||
          !Number(*on_chip, on_chip_path, "kib", Range::kPositive, &kib) ||
          !Number(*on_chip, on_chip_path, "bandwidth_gbps", Range::kPositive,
                  &timing.on_chip_bandwidth_gbps)) {
        return false;
      }
      timing.on_chip_memory_bytes = kib * 1024;
    }

    const JsonValue* overhead = Required(value, path, "overhead_us");
    if (overhead == nullptr) return false;
    const std::string overhead_path = Join(path, "overhead_us");
    if (!ExpectKind(*overhead, JsonValue::Kind::kObject, overhead_path) ||
        !CheckKeys(*overhead, overhead_path, {"execution", "operation"}) ||
        !Number(*overhead, overhead_path, "execution", Range::kNonNegative,
                &timing.execution_overhead_us) ||
        !Number(*overhead, overhead_path, "operation", Range::kNonNegative,
                &timing.operation_overhead_us)) {
      return false;
    }

    const JsonValue* transfer = value.Find("transfer");
    const std::string transfer_path = Join(path, "transfer");
    if (transfer == nullptr && device->type != ANEURALNETWORKS_DEVICE_CPU) {
      return Fail(transfer_path, "required field is missing (only CPU devices share host memory)");
    }
    if (transfer != nullptr &&
        (!ExpectKind(*transfer, JsonValue::Kind::kObject, transfer_path) ||
         !CheckKeys(*transfer, transfer_path, {"latency_us", "bandwidth_gbps"}) ||
         !Number(*transfer, transfer_path, "latency_us", Range::kNonNegative,
                 &timing.transfer_latency_us) ||
         !Number(*transfer, transfer_path, "bandwidth_gbps", Range::kPositive,
                 &timing.transfer_bandwidth_gbps))) {
      return false;
    }

    const JsonValue* compilation = Required(value, path, "compilation_us");
    if (compilation == nullptr) return false;
    const std::string compilation_path = Join(path, "compilation_us");
    if (!ExpectKind(*compilation, JsonValue::Kind::kObject, compilation_path) ||
        !CheckKeys(*compilation, compilation_path, {"fixed", "per_operation", "cache_hit"}) ||
        !Number(*compilation, compilation_path, "fixed", Range::kNonNegative,
                &timing.compilation_fixed_us) ||
        !Number(*compilation, compilation_path, "per_operation", Range::kNonNegative,
                &timing.compilation_per_operation_us) ||
        !Number(*compilation, compilation_path, "cache_hit", Range::kNonNegative,
                &timing.compilation_cache_hit_us)) {
      return false;
    }

    const JsonValue* energy = Required(value, path, "energy");
    if (energy == nullptr) return false;
    const std::string energy_path = Join(path, "energy");
    return ExpectKind(*energy, JsonValue::Kind::kObject, energy_path) &&
           CheckKeys(*energy, energy_path, {"pj_per_op", "pj_per_byte"}) &&
           DataClassTable<double>(*energy, energy_path, "pj_per_op", &timing.energy_pj_per_op,
                                  non_negative) &&
           Number(*energy, energy_path, "pj_per_byte", Range::kNonNegative,
                  &timing.energy_pj_per_byte);
  }

  bool Efficiency(const JsonValue& device, const std::string& path, DeviceTiming* timing) {
    const JsonValue* efficiency = Required(device, path, "efficiency");
    if (efficiency == nullptr) return false;
    const std::string efficiency_path = Join(path, "efficiency");
    if (!ExpectKind(*efficiency, JsonValue::Kind::kObject, efficiency_path)) return false;
    double fallback = 0;
    if (!Number(*efficiency, efficiency_path, "default", Range::kFraction, &fallback)) return false;
    timing->efficiency.fill(fallback);
    for (const JsonValue::Member& member : efficiency->object_members()) {
      if (member.first == "default") continue;
      const std::optional<OperationClass> operation_class = OperationClassFromName(member.first);
      if (!operation_class) {
        return Fail(Join(efficiency_path, member.first),
                    "unknown operation class (expected default, convolution, "
                    "depthwise_convolution, fully_connected, matmul, pooling, elementwise, "
                    "softmax, reduction, normalization, data_movement or other)");
      }
      if (!Number(member.second, Join(efficiency_path, member.first), Range::kFraction,
                  &timing->efficiency[static_cast<int>(*operation_class)])) {
        return false;
      }
    }
    return true;
  }

  // `compute_efficiency` or `memory_efficiency` (optional): per operation class (and `default`)
  // a fraction, or a data-class object of fractions (with its own optional `default`). An entry
  // left out falls back to the class's `default` entry, then to the table's `default`, then to
  // `efficiency` of the class (`fallback`).
  using SplitTable = std::array<std::array<double, kDataClassCount>, kOperationClassCount>;
  bool SplitEfficiency(const JsonValue& device, const std::string& path, const char* key,
                       const std::array<double, kOperationClassCount>& fallback, SplitTable* out) {
    for (int k = 0; k < kOperationClassCount; ++k) out->at(k).fill(fallback[k]);
    const JsonValue* table = device.Find(key);
    if (table == nullptr) return true;
    const std::string table_path = Join(path, key);
    if (!ExpectKind(*table, JsonValue::Kind::kObject, table_path)) return false;
    // Reads one entry (a number or a data-class object) into `row`.
    auto entry = [&](const JsonValue& value, const std::string& entry_path,
                     std::array<double, kDataClassCount>* row) {
      if (value.is_number()) {
        double number = 0;
        if (!Number(value, entry_path, Range::kFraction, &number)) return false;
        row->fill(number);
        return true;
      }
      if (!value.is_object()) {
        return Fail(entry_path,
                    "expected a number in (0, 1] or an object keyed by data class, "
                    "found " +
                        Describe(value));
      }
      if (const JsonValue* fallback_value = value.Find("default")) {
        double number = 0;
        if (!Number(*fallback_value, Join(entry_path, "default"), Range::kFraction, &number)) {
          return false;
        }
        row->fill(number);
      }
      for (const JsonValue::Member& member : value.object_members()) {
        if (member.first == "default") continue;
        const std::optional<DataClass> data_class = DataClassFromName(member.first);
        if (!data_class) {
          return Fail(Join(entry_path, member.first),
                      "unknown data class (expected default, float32, relaxed_float32, float16, "
                      "quant8, quant16, int32 or bool8)");
        }
        if (!Number(member.second, Join(entry_path, member.first), Range::kFraction,
                    &row->at(static_cast<int>(*data_class)))) {
          return false;
        }
      }
      return true;
    };
    if (const JsonValue* fallback_value = table->Find("default")) {
      for (int k = 0; k < kOperationClassCount; ++k) {
        if (!entry(*fallback_value, Join(table_path, "default"), &out->at(k))) return false;
      }
    }
    for (const JsonValue::Member& member : table->object_members()) {
      if (member.first == "default") continue;
      const std::optional<OperationClass> operation_class = OperationClassFromName(member.first);
      if (!operation_class) {
        return Fail(Join(table_path, member.first),
                    "unknown operation class (expected default, convolution, "
                    "depthwise_convolution, fully_connected, matmul, pooling, elementwise, "
                    "softmax, reduction, normalization, data_movement or other)");
      }
      if (!entry(member.second, Join(table_path, member.first),
                 &out->at(static_cast<int>(*operation_class)))) {
        return false;
      }
    }
    return true;
  }

  bool Sources(const JsonValue& value, const std::string& path) {
    if (!ExpectKind(value, JsonValue::Kind::kArray, path)) return false;
    if (value.array_items().empty()) {
      return Fail(path, "expected at least one entry saying where the numbers come from");
    }
    for (size_t i = 0; i < value.array_items().size(); ++i) {
      const JsonValue& entry = value.array_items()[i];
      const std::string entry_path = Index(path, i);
      if (!ExpectKind(entry, JsonValue::Kind::kObject, entry_path) ||
          !CheckKeys(entry, entry_path, {"fields", "value", "source", "estimate"})) {
        return false;
      }
      const JsonValue* fields = Required(entry, entry_path, "fields");
      if (fields == nullptr ||
          !ExpectKind(*fields, JsonValue::Kind::kArray, Join(entry_path, "fields"))) {
        return false;
      }
      if (fields->array_items().empty()) {
        return Fail(Join(entry_path, "fields"), "expected at least one field path");
      }
      for (size_t f = 0; f < fields->array_items().size(); ++f) {
        if (!ExpectKind(fields->array_items()[f], JsonValue::Kind::kString,
                        Index(Join(entry_path, "fields"), f))) {
          return false;
        }
      }
      std::string text;
      if (!String(entry, entry_path, "source", &text)) return false;
      if (entry.Find("value") != nullptr && !String(entry, entry_path, "value", &text))
        return false;
      const JsonValue* estimate = Required(entry, entry_path, "estimate");
      if (estimate == nullptr) return false;
      if (!estimate->is_bool()) {
        return Fail(Join(entry_path, "estimate"),
                    "expected true (an estimate) or false (a published figure), found " +
                        Describe(*estimate));
      }
    }
    return true;
  }

  bool ReadProfile(const JsonValue& root, Profile* profile) {
    if (!ExpectKind(root, JsonValue::Kind::kObject, "")) return false;
    if (!CheckKeys(
            root, "",
            {"schema", "name", "description", "soc", "runtime", "sources", "devices", "notes"})) {
      return false;
    }
    std::string schema;
    if (!String(root, "", "schema", &schema)) return false;
    if (schema != kSchema) {
      return Fail("schema", "expected " + JsonQuote(kSchema) + ", found " + JsonQuote(schema));
    }
    if (!String(root, "", "name", &profile->name)) return false;
    for (char c : profile->name) {
      const bool ok =
          (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
      if (!ok) return Fail("name", "use lower-case letters, digits, '-', '_' and '.' only");
    }
    if (!String(root, "", "description", &profile->description)) return false;
    if (const JsonValue* soc = root.Find("soc")) {
      if (!ExpectKind(*soc, JsonValue::Kind::kObject, "soc")) return false;
      for (const JsonValue::Member& member : soc->object_members()) {
        if (!member.second.is_string() && !member.second.is_number()) {
          return Fail(Join("soc", member.first),
                      "expected a string or a number, found " + Describe(member.second));
        }
      }
    }
    if (root.Find("notes") != nullptr) {
      std::string notes;
      if (!String(root, "", "notes", &notes)) return false;
    }
    if (const JsonValue* runtime = root.Find("runtime")) {
      if (!ExpectKind(*runtime, JsonValue::Kind::kObject, "runtime") ||
          !CheckKeys(*runtime, "runtime", {"feature_level", "overhead_us"})) {
        return false;
      }
      if (const JsonValue* level = runtime->Find("feature_level")) {
        if (!ReadFeatureLevel(*level, "runtime.feature_level", &profile->runtime_feature_level)) {
          return false;
        }
      }
      if (!Number(*runtime, "runtime", "overhead_us", Range::kNonNegative,
                  &profile->runtime_overhead_us, /*required=*/false)) {
        return false;
      }
    }
    const JsonValue* sources = Required(root, "", "sources");
    if (sources == nullptr || !Sources(*sources, "sources")) return false;

    const JsonValue* devices = Required(root, "", "devices");
    if (devices == nullptr || !ExpectKind(*devices, JsonValue::Kind::kArray, "devices")) {
      return false;
    }
    if (devices->array_items().empty()) return Fail("devices", "expected at least one device");
    std::set<std::string> names;
    bool have_runtime_cpu = false;
    for (size_t i = 0; i < devices->array_items().size(); ++i) {
      auto device = std::make_unique<Device>();
      const std::string device_path = Index("devices", i);
      if (!ReadDevice(devices->array_items()[i], device_path, device.get())) return false;
      if (!names.insert(device->name).second) {
        return Fail(Join(device_path, "name"),
                    "another device already has the name " + JsonQuote(device->name));
      }
      if (device->runtime_cpu) {
        if (have_runtime_cpu) {
          return Fail(Join(device_path, "runtime_cpu"), "only one device can be the runtime CPU");
        }
        have_runtime_cpu = true;
      }
      profile->devices.push_back(std::move(device));
    }
    // Android's performance figures, derived from the cost model relative to the device that
    // models the runtime's CPU (which therefore reports 1.0, as nnapi-reference does).
    std::unique_ptr<Device> default_cpu;
    const Device* cpu = nullptr;
    for (const auto& device : profile->devices) {
      if (device->runtime_cpu) cpu = device.get();
    }
    if (cpu == nullptr) {
      default_cpu = MakeDefaultRuntimeCpuDevice();
      cpu = default_cpu.get();
    }
    for (auto& device : profile->devices) {
      device->performance = DerivePerformance(device->timing, cpu->timing);
    }
    return true;
  }

 private:
  std::string* error_;
};

bool LooksLikePath(const std::string& name) {
  const std::string suffix = ".json";
  return name.find('/') != std::string::npos ||
         (name.size() >= suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0);
}

// "<directory of this library>/../profiles": where install() puts the built-in profiles.
std::string InstalledProfileDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&AvailableProfileNames), &info) == 0 ||
      info.dli_fname == nullptr) {
    return "";
  }
  std::string library = info.dli_fname;
  const size_t slash = library.rfind('/');
  if (slash == std::string::npos) return "";
  return library.substr(0, slash) + "/../profiles";
}

std::vector<std::string> SearchDirectories() {
  std::vector<std::string> directories;
  if (const char* directory = std::getenv(kProfileDirectoryEnvironmentVariable)) {
    if (*directory != '\0') directories.push_back(directory);
  }
  const std::string installed = InstalledProfileDirectory();
  if (!installed.empty()) directories.push_back(installed);
  return directories;
}

enum class ReadResult { kOk, kMissing, kFailed };

ReadResult ReadFile(const std::string& path, std::string* text, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return ReadResult::kMissing;
    *error = path + ": cannot open: " + std::strerror(errno);
    return ReadResult::kFailed;
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) {
    *error = path + ": read error";
    return ReadResult::kFailed;
  }
  *text = content.str();
  if (text->size() > kMaximumProfileBytes) {
    *error = path + ": larger than 4 MiB; not a device profile";
    return ReadResult::kFailed;
  }
  return ReadResult::kOk;
}

}  // namespace

bool ParseProfile(const std::string& text, const std::string& origin, Profile* profile,
                  std::string* error) {
  error->clear();
  JsonValue root;
  std::string message;
  if (!ParseJson(text, &root, &message)) {
    *error = origin + ": invalid JSON: " + message;
    return false;
  }
  ProfileReader reader(&message);
  if (!reader.ReadProfile(root, profile)) {
    *error = origin + ": " + message;
    return false;
  }
  profile->origin = origin;
  profile->json_text = text;
  return true;
}

bool LoadProfile(const std::string& name_or_path, Profile* profile, std::string* error) {
  std::string text;
  if (LooksLikePath(name_or_path)) {
    const ReadResult read = ReadFile(name_or_path, &text, error);
    if (read == ReadResult::kMissing) *error = name_or_path + ": no such profile file";
    return read == ReadResult::kOk && ParseProfile(text, name_or_path, profile, error);
  }
  // A name: the first directory that has "<name>.json", then the embedded copy.
  for (const std::string& directory : SearchDirectories()) {
    const std::string path = directory + "/" + name_or_path + ".json";
    const ReadResult read = ReadFile(path, &text, error);
    if (read == ReadResult::kFailed) return false;
    if (read == ReadResult::kMissing) continue;
    if (!ParseProfile(text, path, profile, error)) return false;
    if (profile->name != name_or_path) {
      *error = path + ": name: " + JsonQuote(profile->name) + " differs from the file name " +
               JsonQuote(name_or_path);
      return false;
    }
    return true;
  }
  for (size_t i = 0; i < kEmbeddedProfileCount; ++i) {
    if (name_or_path == kEmbeddedProfiles[i].name) {
      return ParseProfile(kEmbeddedProfiles[i].json, "built-in profile " + name_or_path, profile,
                          error);
    }
  }
  std::string names;
  for (const std::string& name : AvailableProfileNames())
    names += (names.empty() ? "" : ", ") + name;
  *error = "no device profile named " + JsonQuote(name_or_path) + " (available: " + names +
           "; or give a path to a .json file)";
  return false;
}

std::vector<std::string> AvailableProfileNames() {
  std::set<std::string> names;
  for (size_t i = 0; i < kEmbeddedProfileCount; ++i) names.insert(kEmbeddedProfiles[i].name);
  for (const std::string& directory : SearchDirectories()) {
    DIR* listing = opendir(directory.c_str());
    if (listing == nullptr) continue;
    while (const dirent* entry = readdir(listing)) {
      const std::string file = entry->d_name;
      const std::string suffix = ".json";
      if (file.size() > suffix.size() &&
          file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0) {
        names.insert(file.substr(0, file.size() - suffix.size()));
      }
    }
    closedir(listing);
  }
  return std::vector<std::string>(names.begin(), names.end());
}

}  // namespace mock_nnapi
