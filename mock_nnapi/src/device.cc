// SPDX-License-Identifier: Apache-2.0
#include "device.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <mutex>

#include "check.h"
#include "json.h"
#include "nnapi_facts.h"
#include "object_counter.h"
#include "operand_types.h"
#include "profile.h"

namespace mock_nnapi {

// ---- Data and operation classes ----------------------------------------------------------------

namespace {
const char* const kDataClassNames[kDataClassCount] = {
    "float32", "relaxed_float32", "float16", "quant8", "quant16", "int32", "bool8"};
const char* const kOperationClassNames[kOperationClassCount] = {"convolution",
                                                                "depthwise_convolution",
                                                                "fully_connected",
                                                                "matmul",
                                                                "pooling",
                                                                "elementwise",
                                                                "softmax",
                                                                "reduction",
                                                                "normalization",
                                                                "data_movement",
                                                                "other"};
}  // namespace

const char* DataClassName(DataClass data_class) {
  return kDataClassNames[static_cast<int>(data_class)];
}

std::optional<DataClass> DataClassFromName(const std::string& name) {
  for (int i = 0; i < kDataClassCount; ++i) {
    if (name == kDataClassNames[i]) return static_cast<DataClass>(i);
  }
  return std::nullopt;
}

DataClass DataClassOf(int32_t operand_type, bool relaxed) {
  switch (operand_type) {
    case ANEURALNETWORKS_FLOAT32:
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      return relaxed ? DataClass::kRelaxedFloat32 : DataClass::kFloat32;
    case ANEURALNETWORKS_FLOAT16:
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      return DataClass::kFloat16;
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
    case ANEURALNETWORKS_TENSOR_QUANT8_SYMM:
    case ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL:
      return DataClass::kQuant8;
    case ANEURALNETWORKS_TENSOR_QUANT16_ASYMM:
    case ANEURALNETWORKS_TENSOR_QUANT16_SYMM:
      return DataClass::kQuant16;
    case ANEURALNETWORKS_BOOL:
    case ANEURALNETWORKS_TENSOR_BOOL8:
      return DataClass::kBool8;
    default:
      return DataClass::kInt32;
  }
}

const char* OperationClassName(OperationClass operation_class) {
  return kOperationClassNames[static_cast<int>(operation_class)];
}

std::optional<OperationClass> OperationClassFromName(const std::string& name) {
  for (int i = 0; i < kOperationClassCount; ++i) {
    if (name == kOperationClassNames[i]) return static_cast<OperationClass>(i);
  }
  return std::nullopt;
}

OperationClass OperationClassOf(int32_t operation_type) {
  // The efficiency class follows from the operation's cost kind (common/nnapi_operations.inc).
  const nnapi_common::OperationFacts* facts = nnapi_common::FindOperationFacts(operation_type);
  if (facts == nullptr) return OperationClass::kOther;
  switch (facts->cost) {
    case nnapi_common::CostKind::kConvolution:
    case nnapi_common::CostKind::kTransposeConvolution:
      return OperationClass::kConvolution;
    case nnapi_common::CostKind::kDepthwiseConvolution:
      return OperationClass::kDepthwiseConvolution;
    case nnapi_common::CostKind::kFullyConnected:
    case nnapi_common::CostKind::kRecurrent:
      return OperationClass::kFullyConnected;
    case nnapi_common::CostKind::kMatMul:
      return OperationClass::kMatMul;
    case nnapi_common::CostKind::kPooling:
    case nnapi_common::CostKind::kL2Pooling:
      return OperationClass::kPooling;
    case nnapi_common::CostKind::kElementwise:
    case nnapi_common::CostKind::kTranscendental:
    case nnapi_common::CostKind::kBilinear:
      return OperationClass::kElementwise;
    case nnapi_common::CostKind::kSoftmax:
      return OperationClass::kSoftmax;
    case nnapi_common::CostKind::kReduction:
    case nnapi_common::CostKind::kSelection:
    case nnapi_common::CostKind::kSampling:
      return OperationClass::kReduction;
    case nnapi_common::CostKind::kL2Normalization:
    case nnapi_common::CostKind::kInstanceNormalization:
    case nnapi_common::CostKind::kLocalResponseNormalization:
      return OperationClass::kNormalization;
    case nnapi_common::CostKind::kDataMovement:
      return OperationClass::kDataMovement;
    case nnapi_common::CostKind::kHashing:
    case nnapi_common::CostKind::kControlFlow:
    case nnapi_common::CostKind::kNotModelled:
      return OperationClass::kOther;
  }
  return OperationClass::kOther;
}

// ---- Device ------------------------------------------------------------------------------------

bool Device::SupportsOperation(const Model& model, const Operation& operation) const {
  if (operation.feature_level > feature_level) return false;
  if (!supported_operations.empty() && supported_operations.count(operation.type) == 0) {
    return false;
  }
  if (operation.type == ANEURALNETWORKS_IF || operation.type == ANEURALNETWORKS_WHILE) {
    return SupportsControlFlow(model, operation);
  }
  // The data type is the first input's (as in Android's performance lookup); a per-operation
  // list replaces the device-wide one.
  if (!operation.inputs.empty()) {
    const int32_t first_type = model.operands()[operation.inputs[0]].type;
    const auto per_operation = operation_operand_types.find(operation.type);
    const std::set<int32_t>& allowed = per_operation != operation_operand_types.end()
                                           ? per_operation->second
                                           : supported_operand_types;
    if (!allowed.empty() && allowed.count(first_type) == 0) {
      const bool relaxed = relaxed_float32 && model.relaxed_float32_to_float16() &&
                           first_type == ANEURALNETWORKS_TENSOR_FLOAT32 &&
                           allowed.count(ANEURALNETWORKS_TENSOR_FLOAT16) > 0;
      if (!relaxed) return false;
    }
  }
  auto rank_ok = [&](uint32_t index) {
    return model.operands()[index].dimensions.size() <= max_rank;
  };
  return std::all_of(operation.inputs.begin(), operation.inputs.end(), rank_ok) &&
         std::all_of(operation.outputs.begin(), operation.outputs.end(), rank_ok);
}

bool Device::SupportsControlFlow(const Model& model, const Operation& operation) const {
  // Android runs IF and WHILE on a driver only when the driver reports them supported, which
  // takes every operation of their referenced models; otherwise (every profile's accelerators
  // exclude them) the runtime interprets them on its CPU. The data-type rule of the other
  // operations (the first input's type) does not apply: IF's is the condition, WHILE's a model.
  for (uint32_t input : operation.inputs) {
    const Operand& operand = model.operands()[input];
    if (operand.lifetime != OperandLifetime::kModelReference) continue;
    const Model& referenced = *operand.referenced_model;
    for (const Operation& inner : referenced.operations()) {
      if (!SupportsOperation(referenced, inner)) return false;
    }
  }
  return true;
}

int Device::DriverFailureFor(const Model& model, const Operation& operation,
                             DriverFailure::Stage stage) const {
  for (size_t i = 0; i < driver_failures.size(); ++i) {
    const DriverFailure& failure = driver_failures[i];
    if (failure.stage != stage || failure.operation != operation.type) continue;
    if (!failure.operand_types.empty()) {
      if (operation.inputs.empty()) continue;
      if (failure.operand_types.count(model.operands()[operation.inputs[0]].type) == 0) continue;
    }
    if (!SupportsOperation(model, operation)) return -1;
    return static_cast<int>(i);
  }
  return -1;
}

float Device::Cost(const Model& model, const Operation& operation, int32_t preference) const {
  // Android's ModelBuilder::getPerformance: the first input's type picks the figure.
  const int32_t type = operation.inputs.empty() ? ANEURALNETWORKS_TENSOR_FLOAT32
                                                : model.operands()[operation.inputs[0]].type;
  const PerformanceInfo& info =
      performance[static_cast<int>(DataClassOf(type, model.relaxed_float32_to_float16()))];
  return preference == ANEURALNETWORKS_PREFER_LOW_POWER ? info.power_usage : info.exec_time;
}

// ---- The active profile ------------------------------------------------------------------------

// Also the last resort when even the built-in reference profile cannot be read: the same
// device as profiles/reference.json.
std::unique_ptr<Device> MakeDefaultRuntimeCpuDevice() {
  auto cpu = std::make_unique<Device>();
  cpu->name = "mock-reference";
  cpu->version = "mock_nnapi-1";
  cpu->type = ANEURALNETWORKS_DEVICE_CPU;
  cpu->runtime_cpu = true;
  DeviceTiming& timing = cpu->timing;
  timing.peak_gops.fill(100);
  timing.energy_pj_per_op.fill(10);
  timing.energy_pj_per_byte = 50;
  timing.memory_bandwidth_gbps = 10;
  timing.efficiency.fill(1);
  for (auto& row : timing.compute_efficiency) row.fill(1);
  for (auto& row : timing.memory_efficiency) row.fill(1);
  timing.execution_overhead_us = 10;
  timing.operation_overhead_us = 1;
  timing.compilation_fixed_us = 100;
  timing.compilation_per_operation_us = 10;
  timing.compilation_cache_hit_us = 20;
  return cpu;
}

namespace {

struct Registry {
  std::mutex mutex;
  bool loaded = false;
  Profile profile;
  // Devices of earlier profiles: never freed, so a stale handle is still safe to compare.
  std::vector<std::unique_ptr<Device>> retired;
  // Parameters of the CPU fallback when the profile has no runtime_cpu device.
  std::unique_ptr<Device> default_runtime_cpu = MakeDefaultRuntimeCpuDevice();
};

Registry& TheRegistry() {
  static Registry* registry = new Registry();  // never destroyed: used until process exit
  return *registry;
}

void Install(Registry& registry, Profile&& profile) {
  for (auto& device : registry.profile.devices) registry.retired.push_back(std::move(device));
  registry.profile = std::move(profile);
  registry.loaded = true;
}

// Loads the first profile: $MOCK_NNAPI_PROFILE, else "reference". A bad profile named in the
// environment is reported on stderr and replaced by the reference profile.
void EnsureLoaded(Registry& registry) {
  if (registry.loaded) return;
  const char* requested = std::getenv(kProfileEnvironmentVariable);
  Profile profile;
  std::string error;
  if (requested != nullptr && *requested != '\0') {
    if (LoadProfile(requested, &profile, &error)) {
      Install(registry, std::move(profile));
      return;
    }
    std::cerr << "mock_nnapi: " << kProfileEnvironmentVariable << "=" << requested
              << " rejected: " << error << "; using the \"" << kDefaultProfileName << "\" profile"
              << std::endl;
    RecordError(error);
    profile = Profile();
  }
  if (!LoadProfile(kDefaultProfileName, &profile, &error)) {
    std::cerr << "mock_nnapi: " << error << std::endl;
    profile = Profile();
    profile.name = kDefaultProfileName;
    profile.origin = "built-in fallback";
    profile.devices.push_back(MakeDefaultRuntimeCpuDevice());
  }
  Install(registry, std::move(profile));
}

Device* FindDevice(Registry& registry, const std::string& name) {
  for (auto& device : registry.profile.devices) {
    if (device->name == name) return device.get();
  }
  return nullptr;
}

void ResetFaults(Device* device) {
  device->hidden = false;
  device->available = true;
  device->feature_level = device->profile_feature_level;
  device->execution_fault = ANEURALNETWORKS_NO_ERROR;
  device->execution_fault_remaining = 0;
  device->speed = 1.0;
  device->driver_failure_runs.assign(device->driver_failures.size(), 0);
}

}  // namespace

std::vector<const Device*> Devices() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  EnsureLoaded(registry);
  std::vector<const Device*> devices;
  for (const auto& device : registry.profile.devices) {
    if (!device->hidden) devices.push_back(device.get());
  }
  return devices;
}

bool IsKnownDevice(const Device* device) {
  const std::vector<const Device*> devices = Devices();
  return std::find(devices.begin(), devices.end(), device) != devices.end();
}

int64_t RuntimeFeatureLevel() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  EnsureLoaded(registry);
  return registry.profile.runtime_feature_level;
}

const Device& RuntimeCpuDevice() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  EnsureLoaded(registry);
  for (const auto& device : registry.profile.devices) {
    if (device->runtime_cpu) return *device;
  }
  return *registry.default_runtime_cpu;
}

double RuntimeOverheadUs() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  EnsureLoaded(registry);
  return registry.profile.runtime_overhead_us;
}

int SelectProfile(const std::string& name_or_path) {
  Profile profile;
  std::string error;
  NN_CHECK(LoadProfile(name_or_path, &profile, &error), ANEURALNETWORKS_BAD_DATA) << error;
  // Compilations made before the switch keep the devices they were compiled for: Install()
  // retires the old devices instead of freeing them, so those pointers stay valid.
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  Install(registry, std::move(profile));
  return ANEURALNETWORKS_NO_ERROR;
}

std::string ActiveProfileName() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  EnsureLoaded(registry);
  return registry.profile.name;
}

std::string ActiveProfileOrigin() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  EnsureLoaded(registry);
  return registry.profile.origin;
}

std::string ActiveProfileJson() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  EnsureLoaded(registry);
  return registry.profile.json_text;
}

std::string ActiveDevicePerformanceJson() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  EnsureLoaded(registry);
  std::string json = "{";
  for (const auto& device : registry.profile.devices) {
    if (json.size() > 1) json += ",";
    json += JsonQuote(device->name) + ":{";
    for (int c = 0; c < kDataClassCount; ++c) {
      const PerformanceInfo& info = device->performance[c];
      json += std::string(c > 0 ? "," : "") + "\"" + DataClassName(static_cast<DataClass>(c)) +
              "\":{\"exec_time\":" + JsonNumber(info.exec_time, 9) +
              ",\"power_usage\":" + JsonNumber(info.power_usage, 9) + "}";
    }
    json += "}";
  }
  return json + "}";
}

// ---- Device faults -----------------------------------------------------------------------------

int InjectDeviceFault(const std::string& device_name, int32_t fault, int64_t value, int32_t count) {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  EnsureLoaded(registry);
  Device* device = FindDevice(registry, device_name);
  NN_CHECK(device != nullptr, ANEURALNETWORKS_BAD_DATA)
      << "MockNnapi_injectDeviceFault: the profile \"" << registry.profile.name
      << "\" has no device named \"" << device_name << "\"";
  switch (static_cast<DeviceFault>(fault)) {
    case DeviceFault::kHidden:
      device->hidden = true;
      return ANEURALNETWORKS_NO_ERROR;
    case DeviceFault::kUnavailable:
      device->available = false;
      return ANEURALNETWORKS_NO_ERROR;
    case DeviceFault::kFeatureLevel: {
      static const int64_t kLevels[] = {kFeatureLevel1, kFeatureLevel2, kFeatureLevel3,
                                        kFeatureLevel4, kFeatureLevel5, kFeatureLevel6,
                                        kFeatureLevel7, kFeatureLevel8};
      NN_CHECK(std::find(std::begin(kLevels), std::end(kLevels), value) != std::end(kLevels),
               ANEURALNETWORKS_BAD_DATA)
          << "MockNnapi_injectDeviceFault: " << value << " is not a FeatureLevelCode";
      device->feature_level = value;
      return ANEURALNETWORKS_NO_ERROR;
    }
    case DeviceFault::kExecutionTimeout:
      NN_CHECK(value == ANEURALNETWORKS_MISSED_DEADLINE_TRANSIENT ||
                   value == ANEURALNETWORKS_MISSED_DEADLINE_PERSISTENT,
               ANEURALNETWORKS_BAD_DATA)
          << "MockNnapi_injectDeviceFault: an execution timeout returns "
             "MISSED_DEADLINE_TRANSIENT (10) or MISSED_DEADLINE_PERSISTENT (11), not "
          << value;
      NN_CHECK(count != 0, ANEURALNETWORKS_BAD_DATA)
          << "MockNnapi_injectDeviceFault: count 0 arms nothing";
      device->execution_fault = static_cast<int>(value);
      device->execution_fault_remaining = count;
      return ANEURALNETWORKS_NO_ERROR;
    case DeviceFault::kThrottle:
      NN_CHECK(value >= 1 && value <= 100, ANEURALNETWORKS_BAD_DATA)
          << "MockNnapi_injectDeviceFault: throttle to " << value
          << "% of the profile's speed; expected 1-100";
      device->speed = static_cast<double>(value) / 100.0;
      return ANEURALNETWORKS_NO_ERROR;
  }
  NN_FAIL(ANEURALNETWORKS_BAD_DATA) << "MockNnapi_injectDeviceFault: unknown fault kind " << fault;
}

void ClearDeviceFaults() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  for (auto& device : registry.profile.devices) ResetFaults(device.get());
}

int TakeExecutionFault(const Device& device) {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  Device& mutable_device = const_cast<Device&>(device);
  if (mutable_device.execution_fault == ANEURALNETWORKS_NO_ERROR) return ANEURALNETWORKS_NO_ERROR;
  const int code = mutable_device.execution_fault;
  if (mutable_device.execution_fault_remaining > 0 &&
      --mutable_device.execution_fault_remaining == 0) {
    mutable_device.execution_fault = ANEURALNETWORKS_NO_ERROR;
  }
  return code;
}

int TakeDriverExecutionFailure(const Device& device, int entry) {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  Device& mutable_device = const_cast<Device&>(device);
  const DriverFailure& failure = device.driver_failures.at(static_cast<size_t>(entry));
  mutable_device.driver_failure_runs.resize(device.driver_failures.size(), 0);
  const uint64_t run = ++mutable_device.driver_failure_runs[static_cast<size_t>(entry)];
  return run % failure.every == 0 ? failure.result : ANEURALNETWORKS_NO_ERROR;
}

std::string DescribeDriverFailure(const Device& device, const Model& model,
                                  const Operation& operation, int entry) {
  const DriverFailure& failure = device.driver_failures.at(static_cast<size_t>(entry));
  std::string text = device.name + " fails " + OperationTypeName(operation.type);
  if (!operation.inputs.empty()) {
    text += " (" + OperandTypeName(model.operands()[operation.inputs[0]].type) + ")";
  }
  text += failure.stage == DriverFailure::Stage::kCompilation ? " at compilation" : " at execution";
  if (failure.stage == DriverFailure::Stage::kExecution && failure.every > 1) {
    text += " (every " + std::to_string(failure.every) + " executions)";
  }
  return text + " with ANEURALNETWORKS_" + ResultCodeName(failure.result) +
         ", though it reports the operation supported (the profile's driver_failures)";
}

}  // namespace mock_nnapi
