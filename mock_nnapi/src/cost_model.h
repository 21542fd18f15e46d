// SPDX-License-Identifier: Apache-2.0
// The cost model: MODELLED times (and energy) of executions and compilations on the devices of
// the active profile. The equations are documented once, in docs/cost-model.md. Nothing here
// is a measurement: the mock computes every result on the host, and these numbers say how long
// the profile's phone would take, according to the model.
#ifndef MOCK_NNAPI_SRC_COST_MODEL_H_
#define MOCK_NNAPI_SRC_COST_MODEL_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compilation.h"
#include "device.h"
#include "executor.h"

namespace mock_nnapi {

class JsonValue;
struct Profile;

// Work of one executed operation, from its operand shapes.
struct OperationWork {
  double flops = 0;  // arithmetic operations (a multiply-add counts 2)
  double bytes = 0;  // tensor bytes read and written
  // The part of `bytes` read or written in the device's on-chip memory (costed at its
  // on_chip_bandwidth_gbps, not through DRAM); 0 unless the device has on-chip memory.
  double on_chip_bytes = 0;
};
OperationWork CountOperationWork(int32_t operation_type,
                                 const std::vector<const OperandInfo*>& inputs,
                                 const std::vector<const OperandInfo*>& outputs);
// The work of an operation that has just executed: CountOperationWork, plus for IF and WHILE
// the work of every operation their referenced models ran (ops/control_flow.h), which the
// operation's prepare step handed over with SetControlFlowWork. Each observer of a run calls it
// once per executed operation, right after the operation ran on the same thread.
OperationWork CountExecutedOperationWork(int32_t operation_type,
                                         const std::vector<const OperandInfo*>& inputs,
                                         const std::vector<const OperandInfo*>& outputs);
void SetControlFlowWork(const OperationWork& work);

// The equation of one operation (docs/cost-model.md, "Time of an operation"): `work` of an
// operation of `operation_type` in `data_class` on a device with `timing` running at `speed`.
struct OperationCost {
  double compute_us = 0;  // flops / peak
  double memory_us = 0;   // (bytes - on_chip_bytes) / bandwidth
  double on_chip_us = 0;  // on_chip_bytes / on_chip_bandwidth
  double compute_efficiency = 1;
  double memory_efficiency = 1;
  bool compute_bound = true;
  double efficiency = 1;  // that of the bound side
  // max(compute / compute_eff, memory / memory_eff, on_chip) / speed
  double busy_us = 0;
  double energy_uj = 0;  // flops x pJ/op + bytes x pJ/byte
};
OperationCost CostOfOperation(const DeviceTiming& timing, int32_t operation_type,
                              const OperationWork& work, DataClass data_class, double speed = 1.0);
// The same equation for an operation of `operation_class` (a Relax operator on the host, a
// partitioning decision before any NNAPI model exists).
OperationCost CostOfOperation(const DeviceTiming& timing, OperationClass operation_class,
                              const OperationWork& work, DataClass data_class, double speed = 1.0);

// The time of copying `bytes` between host memory and the memory of a device with `timing`
// (latency + bytes / bandwidth). A CPU device shares host memory: callers do not transfer to it.
double TransferTimeUs(const DeviceTiming& timing, double bytes);

// Android's relative performance figures (Capabilities::PerformanceInfo) of a device, DERIVED
// from its cost-model parameters (docs/device-profiles.md, "Performance figures"): per data
// class, exec_time is the modelled time of the reference workload on the device (busy time
// plus per-operation overhead of each operation) divided by the same on `cpu`, and power_usage
// the modelled energy of the workload divided by the same on `cpu`; `cpu` (the runtime CPU)
// reports 1.0, as Android's nnapi-reference does.
std::array<PerformanceInfo, kDataClassCount> DerivePerformance(const DeviceTiming& device,
                                                               const DeviceTiming& cpu);

// One interval of the modelled timeline of an execution.
struct TimelineEvent {
  enum class Kind { kRuntime, kDriver, kTransfer, kOperation };
  Kind kind = Kind::kOperation;
  std::string name;
  // Lane (an index into ModelledExecution::lanes) and its device name.
  int lane = 0;
  double start_us = 0;
  double duration_us = 0;
  // kOperation.
  int64_t operation_index = -1;
  int32_t operation_type = 0;
  double flops = 0;
  double bytes = 0;
  double compute_us = 0;   // flops / peak
  double memory_us = 0;    // (bytes - on_chip_bytes) / bandwidth
  double on_chip_us = 0;   // on_chip_bytes / on_chip_bandwidth
  double busy_us = 0;      // max(compute / compute_eff, memory / memory_eff, on_chip) / speed
  double overhead_us = 0;  // per-operation driver overhead (0 when fused)
  double compute_efficiency = 1;
  double memory_efficiency = 1;
  // The efficiency of the side that bounds the operation.
  double efficiency = 1;
  bool compute_bound = true;
  // Run inside the kernel of the operation before it (fuse_elementwise): `fused_bytes` of its
  // input never went through memory (not counted in `bytes`, nor in the producer's).
  bool fused = false;
  double fused_bytes = 0;
  // The bytes of each temporary tensor the operation reads or writes (one entry per operand it
  // names, fused ones excepted) that is produced and read only within the operation's execution
  // step on its device: candidates for on-chip memory, whatever its capacity. `on_chip_bytes`
  // is the part of `bytes` costed on chip: the candidates of at most the device's capacity.
  std::vector<double> step_temporary_bytes;
  double on_chip_bytes = 0;
  double energy_uj = 0;
  DataClass data_class = DataClass::kFloat32;
  // Run by the runtime's CPU fallback (no device of the compilation supports it).
  bool cpu_fallback = false;
  // kTransfer.
  int64_t operand = -1;
  std::string direction;  // "host_to_device" or "device_to_host"
};

// The modelled timeline and totals of one execution.
struct ModelledExecution {
  // Lane 0 is the NNAPI runtime; then one lane per device that did work.
  std::vector<std::string> lanes;
  std::vector<TimelineEvent> events;
  // Time on the devices' compute hardware (sum of busy times).
  double on_hardware_us = 0;
  // Time in the drivers: hardware + per-operation and per-step overheads + transfers.
  double in_driver_us = 0;
  // What the application waits: driver time + the runtime's own overhead.
  double total_us = 0;
  double energy_uj = 0;
  double flops = 0;
  double bytes = 0;
  double transfer_bytes = 0;
};

// Collects each executed operation's work while the executor runs (and forwards to `next`),
// then builds the execution's modelled timeline.
class CostRecorder : public ExecutionObserver {
 public:
  CostRecorder(const Compilation& compilation, ExecutionObserver* next);
  void OnOperation(uint32_t operation_index, const std::vector<const OperandInfo*>& inputs,
                   const std::vector<const OperandInfo*>& outputs) override;
  ModelledExecution Finish() const;

 private:
  struct Record {
    uint32_t operation_index;
    OperationWork work;
    DataClass data_class;
    // Non-constant tensor operands with their byte sizes (for transfers).
    std::vector<std::pair<uint32_t, double>> inputs;
    std::vector<std::pair<uint32_t, double>> outputs;
  };
  // An input a record reads on chip from the operation before it (fuse_elementwise).
  struct Fused {
    int64_t operand = -1;  // -1: not fused
    double bytes = 0;
  };
  std::vector<Fused> FusedInputs() const;
  // Per record: TimelineEvent::step_temporary_bytes, given the fused inputs.
  std::vector<std::vector<double>> StepTemporaryBytes(const std::vector<Fused>& fused) const;
  const Compilation& compilation_;
  ExecutionObserver* next_;
  std::vector<Record> records_;
};

// The device whose parameters model operation `operation_index` of `compilation` (its assigned
// device, or the runtime CPU for the CPU fallback).
const Device& ModelledDevice(const Compilation& compilation, uint32_t operation_index);
// Modelled compilation time (us): per device used, fixed + per-operation cost, or the
// compilation-cache hit cost.
double ModelledCompilationUs(const Compilation& compilation);
double ModelledCompilationUs(const std::map<const Device*, size_t>& operations_per_device,
                             bool cache_hit);

// A recorded execution: what re-timing reads of a trace's events (their work, devices, classes,
// fusion and transfers, in timeline order). Read once, re-timed for any profile.
struct RecordedEvent {
  TimelineEvent::Kind kind = TimelineEvent::Kind::kOperation;
  std::string device;
  bool cpu_fallback = false;
  // kDriver: the index of the operation event whose execution step it is (the step is taken on
  // that operation's device), or -1 when no operation follows.
  int64_t step_of = -1;
  // kOperation.
  int32_t operation_type = 0;
  uint32_t operation_index = 0;
  DataClass data_class = DataClass::kFloat32;
  OperationWork work;
  double fused_bytes = 0;
  std::vector<double> step_temporary_bytes;
  // kTransfer.
  bool to_device = false;
  uint32_t operand = 0;
  double bytes = 0;
};
// Reads the "events" of a trace document (the JSON of MockNnapi_getLastTrace). False with
// `error` naming the event and field at fault.
bool ReadRecordedEvents(const JsonValue& trace, std::vector<RecordedEvent>* events,
                        std::string* error);
// Re-times recorded events on the devices of `profile`, found by name (a CPU fallback event on
// `profile`'s runtime CPU device). Each operation keeps its work, data class and fusion, each
// transfer its bytes and direction, the device sequence its execution steps; every duration
// comes from `profile`'s parameters through the same timeline as CostRecorder::Finish, on
// devices at full speed. With the profile the events were recorded on, the result is their own
// timeline. `operations_per_device` receives the count of operations per device (for
// ModelledCompilationUs). False with `error` naming the event whose device `profile` lacks.
bool RetimeExecution(const Profile& profile, const std::vector<RecordedEvent>& events,
                     ModelledExecution* result,
                     std::map<const Device*, size_t>* operations_per_device, std::string* error);
// Modelled microseconds as integer nanoseconds.
uint64_t ModelledNanoseconds(double microseconds);

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_COST_MODEL_H_
