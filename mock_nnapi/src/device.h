// SPDX-License-Identifier: Apache-2.0
// The NNAPI devices the mock exposes (ANeuralNetworksDevice).
//
// A device is declarative, like the sample drivers of Android: a name, a type, a feature level,
// relative performance figures (Android's Capabilities::PerformanceInfo, lower is better,
// derived from the cost model), a
// predicate saying which operations it can run, and the cost-model parameters of its hardware.
// The set of devices comes from the active device profile (profile.h, docs/device-profiles.md):
// MOCK_NNAPI_PROFILE or MockNnapi_setProfile; without one the mock offers the "reference"
// profile: one CPU device, "mock-reference", that supports every operation the mock implements
// (like the emulator's nnapi-reference).
#ifndef MOCK_NNAPI_SRC_DEVICE_H_
#define MOCK_NNAPI_SRC_DEVICE_H_

#include <android/NeuralNetworksTypes.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model.h"

namespace mock_nnapi {

struct PerformanceInfo {
  float exec_time = 1.f;
  float power_usage = 1.f;
};

// Data-type classes: the granularity of Android's performance figures and of the cost model's
// throughput and energy. An operation's class comes from its first input (like Android's
// performance lookup); TENSOR_FLOAT32 counts as relaxed when the model allows float16 compute.
enum class DataClass { kFloat32, kRelaxedFloat32, kFloat16, kQuant8, kQuant16, kInt32, kBool8 };
constexpr int kDataClassCount = 7;
// "float32", "relaxed_float32", "float16", "quant8", "quant16", "int32", "bool8".
const char* DataClassName(DataClass data_class);
std::optional<DataClass> DataClassFromName(const std::string& name);
DataClass DataClassOf(int32_t operand_type, bool relaxed);

// Operation classes: the granularity of the cost model's efficiency factors. An operation's
// class follows from its cost kind (common/nnapi_operations.inc).
enum class OperationClass {
  kConvolution,
  kDepthwiseConvolution,
  kFullyConnected,
  kMatMul,
  kPooling,
  kElementwise,
  kSoftmax,
  kReduction,
  kNormalization,
  kDataMovement,
  kOther,
};
constexpr int kOperationClassCount = 11;
// "convolution", "depthwise_convolution", "fully_connected", "matmul", "pooling", "elementwise",
// "softmax", "reduction", "normalization", "data_movement", "other".
const char* OperationClassName(OperationClass operation_class);
std::optional<OperationClass> OperationClassFromName(const std::string& name);
OperationClass OperationClassOf(int32_t operation_type);

// Parameters of the cost model for one device (docs/cost-model.md). Every time derived from
// them is a modelled time, never a measurement.
struct DeviceTiming {
  // Peak throughput per data class in GOP/s (GFLOP/s for floating point).
  std::array<double, kDataClassCount> peak_gops{};
  // Energy per operation (pJ) per data class, and per byte moved to or from memory.
  std::array<double, kDataClassCount> energy_pj_per_op{};
  double energy_pj_per_byte = 0;
  // Sustained memory bandwidth of the device (GB/s).
  double memory_bandwidth_gbps = 1;
  // Fraction of the roofline an operation class achieves, in (0, 1] (the profile's
  // `efficiency`: one factor for compute and memory time).
  std::array<double, kOperationClassCount> efficiency{};
  // Fractions of peak compute and of memory bandwidth reached, per operation class and data
  // class (the profile's `compute_efficiency` / `memory_efficiency`; each entry the profile
  // leaves out is `efficiency` of the class, so a profile with one factor models as before).
  std::array<std::array<double, kDataClassCount>, kOperationClassCount> compute_efficiency{};
  std::array<std::array<double, kDataClassCount>, kOperationClassCount> memory_efficiency{};
  // Element-wise operations run inside the kernel of the operation that produced their input
  // (on chip): the intermediate tensor is neither written nor read back (`fuse_elementwise`).
  bool fuse_elementwise = false;
  // On-chip memory of the device (the profile's `on_chip_memory`; 0: none). A temporary tensor
  // produced and read within one execution step on the device, of at most this many bytes, is
  // read and written at `on_chip_bandwidth_gbps` instead of through DRAM (docs/cost-model.md).
  double on_chip_memory_bytes = 0;
  double on_chip_bandwidth_gbps = 0;
  // Driver cost of each execution step on the device, and of each operation (us).
  double execution_overhead_us = 0;
  double operation_overhead_us = 0;
  // Host<->device copies; a CPU device shares host memory and never transfers.
  double transfer_latency_us = 0;
  double transfer_bandwidth_gbps = 1;
  // Compilation: fixed + per operation, or the cost of a compilation-cache hit (us).
  double compilation_fixed_us = 0;
  double compilation_per_operation_us = 0;
  double compilation_cache_hit_us = 0;
};

// The fault kinds of MockNnapi_injectDeviceFault (include/mock_nnapi/mock_nnapi.h).
enum class DeviceFault {
  kHidden = 1,
  kUnavailable = 2,
  kFeatureLevel = 3,
  kExecutionTimeout = 4,
  kThrottle = 5,
};

// A failure the profile describes (`driver_failures`, docs/device-profiles.md): an operation the
// device reports supported (getSupportedOperationsForDevices) but fails to compile, or fails to
// execute, as some vendor drivers do.
struct DriverFailure {
  enum class Stage { kCompilation, kExecution };
  int32_t operation = 0;
  // Types of the operation's first input the failure applies to; empty means every type.
  std::set<int32_t> operand_types;
  Stage stage = Stage::kCompilation;
  // ANEURALNETWORKS_OP_FAILED or ANEURALNETWORKS_BAD_DATA (compilation); OP_FAILED (execution).
  int result = ANEURALNETWORKS_OP_FAILED;
  // Execution: every `every`-th execution that runs the operation on the device fails (1: all).
  uint32_t every = 1;
};

class Device {
 public:
  std::string name;
  std::string version = "1";
  int32_t type = ANEURALNETWORKS_DEVICE_CPU;
  // The feature level the device reports (fault injection may lower it) and the profile's.
  int64_t feature_level = kFeatureLevel8;
  int64_t profile_feature_level = kFeatureLevel8;
  // The runtime's own CPU implementation (Android's nnapi-reference): preferred on ties and
  // the cost model of the CPU fallback.
  bool runtime_cpu = false;
  // Android's relative performance figures (lower is better) per data class, derived from the
  // cost-model parameters when the profile is read (DerivePerformance, cost_model.h).
  std::array<PerformanceInfo, kDataClassCount> performance{};
  // Operation types the device runs; empty means every operation the mock implements.
  std::set<int32_t> supported_operations;
  // Operand types accepted as an operation's first input; empty means all.
  std::set<int32_t> supported_operand_types;
  // Per-operation replacement of supported_operand_types.
  std::map<int32_t, std::set<int32_t>> operation_operand_types;
  // Accepts TENSOR_FLOAT32 operations where TENSOR_FLOAT16 is supported when the model allows
  // relaxed computation (ANeuralNetworksModel_relaxComputationFloat32toFloat16).
  bool relaxed_float32 = false;
  // Largest tensor rank of any operand.
  uint32_t max_rank = 6;
  DeviceTiming timing;
  // The profile's driver failures, and per entry the executions that ran its operation so far
  // (counted under the device registry's lock; reset with the faults).
  std::vector<DriverFailure> driver_failures;
  std::vector<uint64_t> driver_failure_runs;

  // Fault injection state (MockNnapi_injectDeviceFault; MockNnapi_clearFaults restores it).
  // A hidden device is not enumerated; an unavailable one is listed but fails compilations.
  bool hidden = false;
  bool available = true;
  // Result code of executions using the device while an execution-timeout fault is armed, and
  // how many more executions it affects (< 0: all).
  int execution_fault = ANEURALNETWORKS_NO_ERROR;
  int32_t execution_fault_remaining = 0;
  // Modelled speed relative to the profile, in (0, 1] (1: unthrottled).
  double speed = 1.0;

  // Whether the device can run `operation` of `model` (the model's validation already passed).
  bool SupportsOperation(const Model& model, const Operation& operation) const;
  // IF and WHILE (once listed by the device's support): every operation of their referenced
  // models supported.
  bool SupportsControlFlow(const Model& model, const Operation& operation) const;
  // The index in driver_failures of the first entry for `operation` of `model` at `stage`, or
  // -1. An entry applies only where the device supports the operation.
  int DriverFailureFor(const Model& model, const Operation& operation,
                       DriverFailure::Stage stage) const;
  // The performance figure used for `operation` under `preference`.
  float Cost(const Model& model, const Operation& operation, int32_t preference) const;
};

// The devices of the active profile in enumeration order, without hidden ones. A copy: the
// active profile may change (MockNnapi_setProfile) while no NNAPI object uses its devices.
std::vector<const Device*> Devices();
// True if `device` is one of Devices() (guards against foreign and stale pointers).
bool IsKnownDevice(const Device* device);
// The runtime's feature level (ANeuralNetworks_getRuntimeFeatureLevel), from the profile.
int64_t RuntimeFeatureLevel();
// The device whose parameters model the runtime's CPU fallback: the profile's runtime_cpu
// device, or built-in defaults (docs/cost-model.md). Valid until the profile changes.
const Device& RuntimeCpuDevice();
// The NNAPI runtime's own modelled cost per execution (us).
double RuntimeOverheadUs();
// A device with the parameters that model the CPU fallback of a profile without a runtime_cpu
// device (the same device as profiles/reference.json).
std::unique_ptr<Device> MakeDefaultRuntimeCpuDevice();

// Counts one execution that runs the operation of `device`'s driver failure `entry`; returns
// the failure's result code when this execution is one that fails, else NO_ERROR.
int TakeDriverExecutionFailure(const Device& device, int entry);
// "<device> fails <OPERATION> (<first input type>) at <stage> with <result code name>": what a
// driver failure did, for error messages and logs.
std::string DescribeDriverFailure(const Device& device, const Model& model,
                                  const Operation& operation, int entry);

// Selects the active profile: a built-in profile name or a path to a JSON file. BAD_DATA with
// the parse error recorded (MockNnapi_getLastError) for a bad profile; BAD_STATE while NNAPI
// objects that reference the current devices are alive.
int SelectProfile(const std::string& name_or_path);
std::string ActiveProfileName();
// Where the active profile came from: its file path, or "built-in".
std::string ActiveProfileOrigin();
// The JSON text of the active profile.
std::string ActiveProfileJson();
// The derived performance figures of every device of the active profile, as JSON:
// {"<device>": {"<data class>": {"exec_time": x, "power_usage": y}, ...}, ...}.
std::string ActiveDevicePerformanceJson();

// Device fault injection (MockNnapi_injectDeviceFault). BAD_DATA for an unknown device name,
// fault kind or value.
int InjectDeviceFault(const std::string& device_name, int32_t fault, int64_t value, int32_t count);
// Restores every device of the active profile (called by MockNnapi_clearFaults).
void ClearDeviceFaults();
// The result code an armed execution-timeout fault of `device` imposes on one execution
// (consuming one use), or NO_ERROR.
int TakeExecutionFault(const Device& device);

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_DEVICE_H_
