// SPDX-License-Identifier: Apache-2.0
#include "cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "json.h"
#include "nnapi_work.h"
#include "profile.h"

namespace mock_nnapi {

// ---- Work per operation ------------------------------------------------------------------------

namespace {

double Elements(const OperandInfo& info) {
  double count = 1;
  for (uint32_t dimension : info.dimensions) count *= dimension;
  return count;
}

double TensorBytes(const OperandInfo& info) {
  if (info.omitted || !IsTensorType(info.type)) return 0;
  return Elements(info) * static_cast<double>(ElementSize(info.type));
}

// The operation as the shared work formulas (nnapi_work.h) read it: shapes and scalar values.
nnapi_common::WorkOperation WorkOperationOf(const std::vector<const OperandInfo*>& inputs,
                                            const OperandInfo& output) {
  nnapi_common::WorkOperation operation;
  operation.inputs.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const OperandInfo& info = *inputs[i];
    nnapi_common::WorkOperand& operand = operation.inputs[i];
    operand.shape.assign(info.dimensions.begin(), info.dimensions.end());
    if (info.omitted || info.data == nullptr) continue;
    if (info.type == ANEURALNETWORKS_BOOL && info.length >= 1) {
      operand.value = info.data[0] != 0;
    } else if (info.type == ANEURALNETWORKS_INT32 && info.length >= sizeof(int32_t)) {
      int32_t value;
      std::memcpy(&value, info.data, sizeof(value));
      operand.value = value;
    } else if (info.type == ANEURALNETWORKS_UINT32 && info.length >= sizeof(uint32_t)) {
      uint32_t value;
      std::memcpy(&value, info.data, sizeof(value));
      operand.value = value;
    }
  }
  operation.output.assign(output.dimensions.begin(), output.dimensions.end());
  return operation;
}

}  // namespace

OperationWork CountOperationWork(int32_t operation_type,
                                 const std::vector<const OperandInfo*>& inputs,
                                 const std::vector<const OperandInfo*>& outputs) {
  OperationWork work;
  for (const OperandInfo* info : inputs) work.bytes += TensorBytes(*info);
  for (const OperandInfo* info : outputs) work.bytes += TensorBytes(*info);
  if (inputs.empty() || outputs.empty()) return work;
  // The one formula per operation, shared with the runtime's placement policy.
  work.flops = nnapi_common::OperationFlops(operation_type, WorkOperationOf(inputs, *outputs[0]));
  return work;
}

namespace {
// Set by an IF's or WHILE's prepare step, taken by the observer call that follows it.
thread_local OperationWork t_control_flow_work;
}  // namespace

void SetControlFlowWork(const OperationWork& work) { t_control_flow_work = work; }

OperationWork CountExecutedOperationWork(int32_t operation_type,
                                         const std::vector<const OperandInfo*>& inputs,
                                         const std::vector<const OperandInfo*>& outputs) {
  OperationWork work = CountOperationWork(operation_type, inputs, outputs);
  if (operation_type == ANEURALNETWORKS_IF || operation_type == ANEURALNETWORKS_WHILE) {
    work.flops += t_control_flow_work.flops;
    work.bytes += t_control_flow_work.bytes;
    t_control_flow_work = OperationWork{};
  }
  return work;
}

OperationCost CostOfOperation(const DeviceTiming& timing, int32_t operation_type,
                              const OperationWork& work, DataClass data_class, double speed) {
  return CostOfOperation(timing, OperationClassOf(operation_type), work, data_class, speed);
}

double TransferTimeUs(const DeviceTiming& timing, double bytes) {
  return timing.transfer_latency_us + bytes / (timing.transfer_bandwidth_gbps * 1e3);
}

OperationCost CostOfOperation(const DeviceTiming& timing, OperationClass operation_class,
                              const OperationWork& work, DataClass data_class, double speed) {
  const int data_index = static_cast<int>(data_class);
  const int class_index = static_cast<int>(operation_class);
  OperationCost cost;
  cost.compute_us = work.flops / (timing.peak_gops[data_index] * 1e3);
  // A device without on-chip memory moves every byte through DRAM.
  const double on_chip_bytes = timing.on_chip_memory_bytes > 0 ? work.on_chip_bytes : 0;
  cost.memory_us = (work.bytes - on_chip_bytes) / (timing.memory_bandwidth_gbps * 1e3);
  cost.compute_efficiency = timing.compute_efficiency[class_index][data_index];
  cost.memory_efficiency = timing.memory_efficiency[class_index][data_index];
  const double compute_busy = cost.compute_us / cost.compute_efficiency;
  double memory_busy = cost.memory_us / cost.memory_efficiency;
  if (on_chip_bytes > 0) {
    // On-chip traffic runs at the on-chip rate, alongside (overlapping) the DRAM traffic: the
    // memory side is the slower of the two.
    cost.on_chip_us = on_chip_bytes / (timing.on_chip_bandwidth_gbps * 1e3);
    memory_busy = std::max(memory_busy, cost.on_chip_us);
  }
  // With one efficiency and no on-chip traffic the comparison is the roofline's.
  cost.compute_bound = cost.compute_efficiency == cost.memory_efficiency && cost.on_chip_us == 0
                           ? cost.compute_us >= cost.memory_us
                           : compute_busy >= memory_busy;
  cost.efficiency = cost.compute_bound ? cost.compute_efficiency : cost.memory_efficiency;
  cost.busy_us = std::max(compute_busy, memory_busy) / speed;
  cost.energy_uj =
      (work.flops * timing.energy_pj_per_op[data_index] + work.bytes * timing.energy_pj_per_byte) *
      1e-6;
  return cost;
}

// ---- Android's performance figures, derived --------------------------------------------------

namespace {

// Bytes of one tensor element of each data class (relaxed float32 tensors stay float32 in
// memory; bool8 and the 8-bit quantized types are one byte), and of a bias element (TENSOR_INT32
// for the quantized classes, as NNAPI requires).
constexpr double kElementBytes[kDataClassCount] = {4, 4, 2, 1, 2, 4, 1};
constexpr double kBiasBytes[kDataClassCount] = {4, 4, 2, 4, 4, 4, 1};

struct ReferenceOperation {
  int32_t type;
  std::vector<std::vector<int64_t>> inputs;  // tensor shapes: input, weights, bias
  std::vector<int64_t> output;
};

// The reference workload of the derived figures (docs/device-profiles.md): one operation on
// each side of the roofline, at sizes typical of the CNNs and LLMs the backend offloads. A 3x3
// CONV_2D of a 56x56x64 feature map to 64 channels (a ResNet/MobileNet stage; 231 MFLOP,
// compute bound on every built-in device) and a FULLY_CONNECTED of one token through a
// 1024x1024 weight (an LLM decode projection; 2 MFLOP for 1M weights, memory bound).
const std::vector<ReferenceOperation>& ReferenceWorkload() {
  static const std::vector<ReferenceOperation>* workload = new std::vector<ReferenceOperation>{
      {ANEURALNETWORKS_CONV_2D, {{1, 56, 56, 64}, {64, 3, 3, 64}, {64}}, {1, 56, 56, 64}},
      {ANEURALNETWORKS_FULLY_CONNECTED, {{1, 1024}, {1024, 1024}, {1024}}, {1, 1024}},
  };
  return *workload;
}

double ShapeElements(const std::vector<int64_t>& shape) {
  double count = 1;
  for (int64_t dimension : shape) count *= static_cast<double>(dimension);
  return count;
}

// Modelled time (us) and energy (uJ) of the reference workload in `data_class`.
std::pair<double, double> ReferenceCost(const DeviceTiming& timing, DataClass data_class) {
  double time_us = 0;
  double energy_uj = 0;
  for (const ReferenceOperation& operation : ReferenceWorkload()) {
    nnapi_common::WorkOperation shapes;
    OperationWork work;
    for (size_t i = 0; i < operation.inputs.size(); ++i) {
      const std::vector<int64_t>& shape = operation.inputs[i];
      shapes.inputs.push_back({shape, std::nullopt});
      const double* bytes = i == 2 ? kBiasBytes : kElementBytes;
      work.bytes += ShapeElements(shape) * bytes[static_cast<int>(data_class)];
    }
    shapes.output = operation.output;
    work.bytes += ShapeElements(operation.output) * kElementBytes[static_cast<int>(data_class)];
    work.flops = nnapi_common::OperationFlops(operation.type, shapes);
    const OperationCost cost = CostOfOperation(timing, operation.type, work, data_class);
    time_us += cost.busy_us + timing.operation_overhead_us;
    energy_uj += cost.energy_uj;
  }
  return {time_us, energy_uj};
}

float Ratio(double value, double reference) {
  if (reference > 0) return static_cast<float>(value / reference);
  // A reference CPU that models no energy: equal when both are free, else the largest figure.
  return value > 0 ? std::numeric_limits<float>::max() : 1.f;
}

}  // namespace

std::array<PerformanceInfo, kDataClassCount> DerivePerformance(const DeviceTiming& device,
                                                               const DeviceTiming& cpu) {
  std::array<PerformanceInfo, kDataClassCount> figures{};
  for (int c = 0; c < kDataClassCount; ++c) {
    const auto [time_us, energy_uj] = ReferenceCost(device, static_cast<DataClass>(c));
    const auto [cpu_time_us, cpu_energy_uj] = ReferenceCost(cpu, static_cast<DataClass>(c));
    figures[c].exec_time = Ratio(time_us, cpu_time_us);
    figures[c].power_usage = Ratio(energy_uj, cpu_energy_uj);
  }
  return figures;
}

// ---- Devices of a compilation ------------------------------------------------------------------

const Device& ModelledDevice(const Compilation& compilation, uint32_t operation_index) {
  const std::vector<int>& assignment = compilation.operation_devices();
  const int device =
      operation_index < assignment.size() ? assignment[operation_index] : kRuntimeCpuFallback;
  if (device == kRuntimeCpuFallback) return RuntimeCpuDevice();
  return *compilation.devices()[device];
}

double ModelledCompilationUs(const Compilation& compilation) {
  std::map<const Device*, size_t> operations_per_device;
  for (uint32_t op = 0; op < compilation.model().operations().size(); ++op) {
    ++operations_per_device[&ModelledDevice(compilation, op)];
  }
  return ModelledCompilationUs(operations_per_device, compilation.cache_hit());
}

double ModelledCompilationUs(const std::map<const Device*, size_t>& operations_per_device,
                             bool cache_hit) {
  double total = 0;
  for (const auto& [device, count] : operations_per_device) {
    const DeviceTiming& timing = device->timing;
    total += cache_hit ? timing.compilation_cache_hit_us
                       : timing.compilation_fixed_us +
                             timing.compilation_per_operation_us * static_cast<double>(count);
  }
  return total;
}

uint64_t ModelledNanoseconds(double microseconds) {
  const double nanoseconds = std::round(microseconds * 1000.0);
  if (!(nanoseconds >= 0)) return 0;
  constexpr uint64_t kLargest = std::numeric_limits<uint64_t>::max() - 1;
  if (nanoseconds >= static_cast<double>(kLargest)) return kLargest;
  return static_cast<uint64_t>(nanoseconds);
}

// ---- Execution timeline ------------------------------------------------------------------------

CostRecorder::CostRecorder(const Compilation& compilation, ExecutionObserver* next)
    : compilation_(compilation), next_(next) {}

void CostRecorder::OnOperation(uint32_t operation_index,
                               const std::vector<const OperandInfo*>& inputs,
                               const std::vector<const OperandInfo*>& outputs) {
  const Model& model = compilation_.model();
  if (operation_index >= model.operations().size()) {  // not an operation of the main model
    if (next_ != nullptr) next_->OnOperation(operation_index, inputs, outputs);
    return;
  }
  const Operation& operation = model.operations()[operation_index];
  Record record;
  record.operation_index = operation_index;
  record.work = CountExecutedOperationWork(operation.type, inputs, outputs);
  const int32_t first_type = operation.inputs.empty() ? ANEURALNETWORKS_TENSOR_FLOAT32
                                                      : model.operands()[operation.inputs[0]].type;
  record.data_class = DataClassOf(first_type, model.relaxed_float32_to_float16());
  // Constants live on the device since compilation; only values made at run time move.
  for (size_t i = 0; i < inputs.size() && i < operation.inputs.size(); ++i) {
    const OperandLifetime lifetime = model.operands()[operation.inputs[i]].lifetime;
    const bool produced_at_run_time = lifetime == OperandLifetime::kTemporary ||
                                      lifetime == OperandLifetime::kModelInput ||
                                      lifetime == OperandLifetime::kModelOutput;
    const double bytes = TensorBytes(*inputs[i]);
    if (produced_at_run_time && bytes > 0) record.inputs.emplace_back(operation.inputs[i], bytes);
  }
  for (size_t i = 0; i < outputs.size() && i < operation.outputs.size(); ++i) {
    record.outputs.emplace_back(operation.outputs[i], TensorBytes(*outputs[i]));
  }
  records_.push_back(std::move(record));
  if (next_ != nullptr) next_->OnOperation(operation_index, inputs, outputs);
}

namespace {

// Builds the timeline: one clock, steps and transfers in execution order.
class TimelineBuilder {
 public:
  TimelineBuilder() { result_.lanes.push_back("NNAPI runtime"); }

  int Lane(const Device& device) {
    auto found = lanes_.find(&device);
    if (found != lanes_.end()) return found->second;
    const int lane = static_cast<int>(result_.lanes.size());
    result_.lanes.push_back(device.name.empty() ? "runtime CPU fallback" : device.name);
    lanes_[&device] = lane;
    return lane;
  }

  void Add(TimelineEvent event) {
    event.start_us = clock_us_;
    clock_us_ += event.duration_us;
    result_.events.push_back(std::move(event));
  }

  // Host memory is shared by CPU devices; every other device has its own (nullptr = host).
  static const Device* Domain(const Device& device) {
    return device.type == ANEURALNETWORKS_DEVICE_CPU ? nullptr : &device;
  }

  void Transfer(const Device& device, bool to_device, uint32_t operand, double bytes) {
    const DeviceTiming& timing = device.timing;
    TimelineEvent event;
    event.kind = TimelineEvent::Kind::kTransfer;
    event.direction = to_device ? "host_to_device" : "device_to_host";
    event.name = to_device ? "transfer host->" + device.name : "transfer " + device.name + "->host";
    event.lane = Lane(device);
    event.operand = operand;
    event.bytes = bytes;
    event.duration_us = TransferTimeUs(timing, bytes);
    event.energy_uj = bytes * timing.energy_pj_per_byte * 1e-6;
    result_.transfer_bytes += bytes;
    transfer_us_ += event.duration_us;
    result_.energy_uj += event.energy_uj;
    Add(std::move(event));
  }

  // Makes `operand` available where `device` computes, copying through host memory.
  void MoveTo(uint32_t operand, double bytes, const Device* destination) {
    std::set<const Device*>& places = residency_[operand];
    if (places.empty()) places.insert(nullptr);  // a model input starts in host memory
    if (places.count(destination) > 0) return;
    if (places.count(nullptr) == 0) {
      Transfer(**places.begin(), /*to_device=*/false, operand, bytes);
      places.insert(nullptr);
    }
    if (destination != nullptr) {
      Transfer(*destination, /*to_device=*/true, operand, bytes);
      places.insert(destination);
    }
  }

  void Produced(uint32_t operand, const Device* domain) { residency_[operand] = {domain}; }

  void Step(const Device& device) {
    if (&device == step_device_) return;
    step_device_ = &device;
    if (device.timing.execution_overhead_us <= 0) return;
    TimelineEvent event;
    event.kind = TimelineEvent::Kind::kDriver;
    event.name = "execution step on " + device.name;
    event.lane = Lane(device);
    event.duration_us = device.timing.execution_overhead_us;
    driver_us_ += event.duration_us;
    Add(std::move(event));
  }

  // `step_temporary_bytes`: TimelineEvent::step_temporary_bytes; those of at most the device's
  // on-chip capacity are costed on chip.
  void Operation(const Device& device, int32_t type, uint32_t index, OperationWork work,
                 DataClass data_class, bool cpu_fallback, double fused_bytes,
                 std::vector<double> step_temporary_bytes) {
    const DeviceTiming& timing = device.timing;
    work.on_chip_bytes = 0;
    if (timing.on_chip_memory_bytes > 0) {
      for (double bytes : step_temporary_bytes) {
        if (bytes <= timing.on_chip_memory_bytes) work.on_chip_bytes += bytes;
      }
    }
    TimelineEvent event;
    event.kind = TimelineEvent::Kind::kOperation;
    event.name = OperationTypeName(type);
    event.lane = Lane(device);
    event.operation_index = index;
    event.operation_type = type;
    event.data_class = data_class;
    event.cpu_fallback = cpu_fallback;
    event.flops = work.flops;
    event.bytes = work.bytes;
    const OperationCost cost = CostOfOperation(timing, type, work, data_class, device.speed);
    event.compute_us = cost.compute_us;
    event.memory_us = cost.memory_us;
    event.on_chip_us = cost.on_chip_us;
    event.on_chip_bytes = work.on_chip_bytes;
    event.step_temporary_bytes = std::move(step_temporary_bytes);
    event.compute_efficiency = cost.compute_efficiency;
    event.memory_efficiency = cost.memory_efficiency;
    event.compute_bound = cost.compute_bound;
    event.efficiency = cost.efficiency;
    event.busy_us = cost.busy_us;
    event.fused = fused_bytes > 0;
    event.fused_bytes = fused_bytes;
    event.overhead_us = event.fused ? 0 : timing.operation_overhead_us;
    event.duration_us = event.busy_us + event.overhead_us;
    event.energy_uj = cost.energy_uj;
    result_.on_hardware_us += event.busy_us;
    driver_us_ += event.overhead_us;
    result_.energy_uj += event.energy_uj;
    result_.flops += work.flops;
    result_.bytes += work.bytes;
    Add(std::move(event));
  }

  void Runtime(double overhead_us) {
    TimelineEvent event;
    event.kind = TimelineEvent::Kind::kRuntime;
    event.name = "NNAPI runtime overhead";
    event.lane = 0;
    event.duration_us = overhead_us;
    runtime_us_ += overhead_us;
    Add(std::move(event));
  }

  // Model outputs left in a device's memory are copied back to the host.
  void ReturnOutputs(const std::vector<uint32_t>& outputs,
                     const std::map<uint32_t, double>& bytes) {
    for (uint32_t operand : outputs) {
      const auto found = bytes.find(operand);
      if (found != bytes.end()) MoveTo(operand, found->second, nullptr);
    }
  }

  ModelledExecution Finish() {
    result_.in_driver_us = result_.on_hardware_us + driver_us_ + transfer_us_;
    result_.total_us = result_.in_driver_us + runtime_us_;
    return std::move(result_);
  }

 private:
  ModelledExecution result_;
  std::map<const Device*, int> lanes_;
  std::map<uint32_t, std::set<const Device*>> residency_;
  const Device* step_device_ = nullptr;
  double clock_us_ = 0;
  double driver_us_ = 0;
  double transfer_us_ = 0;
  double runtime_us_ = 0;
};

}  // namespace

namespace {

// Whether operations of `type` can run inside their producer's kernel (fuse_elementwise):
// element-wise arithmetic and activations, not the resampling of RESIZE_BILINEAR.
bool FusibleElementwise(int32_t type) {
  const nnapi_common::OperationFacts* facts = nnapi_common::FindOperationFacts(type);
  return facts != nullptr && (facts->cost == nnapi_common::CostKind::kElementwise ||
                              facts->cost == nnapi_common::CostKind::kTranscendental);
}

}  // namespace

std::vector<CostRecorder::Fused> CostRecorder::FusedInputs() const {
  // An element-wise operation on a fusing device runs in the kernel of the operation executed
  // just before it on the same device when one of its inputs is that operation's output, a
  // temporary no other operation reads: the tensor stays on chip (docs/cost-model.md).
  const Model& model = compilation_.model();
  std::map<uint32_t, int> readers;
  for (const Operation& operation : model.operations()) {
    for (uint32_t input : std::set<uint32_t>(operation.inputs.begin(), operation.inputs.end())) {
      ++readers[input];
    }
  }
  std::vector<Fused> fused(records_.size());
  for (size_t i = 1; i < records_.size(); ++i) {
    const Record& record = records_[i];
    const Record& producer = records_[i - 1];
    const Device& device = ModelledDevice(compilation_, record.operation_index);
    if (!device.timing.fuse_elementwise ||
        &ModelledDevice(compilation_, producer.operation_index) != &device ||
        !FusibleElementwise(model.operations()[record.operation_index].type)) {
      continue;
    }
    for (const auto& [operand, bytes] : record.inputs) {
      const bool made_by_producer =
          std::any_of(producer.outputs.begin(), producer.outputs.end(),
                      [operand = operand](const auto& output) { return output.first == operand; });
      if (made_by_producer && model.operands()[operand].lifetime == OperandLifetime::kTemporary &&
          readers[operand] == 1) {
        fused[i] = Fused{operand, bytes};
        break;
      }
    }
  }
  return fused;
}

namespace {

bool IsLocal(const std::map<uint32_t, bool>& local, uint32_t operand) {
  const auto found = local.find(operand);
  return found != local.end() && found->second;
}

}  // namespace

std::vector<std::vector<double>> CostRecorder::StepTemporaryBytes(
    const std::vector<Fused>& fused) const {
  // A temporary stays within an execution step when the record that produced it and every
  // record that reads it belong to the same run of consecutive records on one device, and the
  // model's operations read it at least once.
  const Model& model = compilation_.model();
  std::vector<size_t> step(records_.size(), 0);
  const Device* previous = nullptr;
  for (size_t i = 0; i < records_.size(); ++i) {
    const Device* device = &ModelledDevice(compilation_, records_[i].operation_index);
    step[i] = i == 0 ? 0 : step[i - 1] + (device != previous ? 1 : 0);
    previous = device;
  }
  std::map<uint32_t, size_t> producer_step;
  for (size_t i = 0; i < records_.size(); ++i) {
    for (const auto& [operand, bytes] : records_[i].outputs) {
      if (model.operands()[operand].lifetime == OperandLifetime::kTemporary) {
        producer_step[operand] = step[i];
      }
    }
  }
  // Per temporary a record produced: true while every reader seen is in the producer's step.
  std::map<uint32_t, bool> local;
  for (size_t i = 0; i < records_.size(); ++i) {
    for (const auto& [operand, bytes] : records_[i].inputs) {
      const auto found = producer_step.find(operand);
      if (found == producer_step.end()) continue;
      bool& within_step = local.emplace(operand, true).first->second;
      within_step = within_step && found->second == step[i];
    }
  }
  std::vector<std::vector<double>> result(records_.size());
  for (size_t i = 0; i < records_.size(); ++i) {
    const Record& record = records_[i];
    bool skipped_fused_input = false;
    for (const auto& [operand, bytes] : record.inputs) {
      if (!skipped_fused_input && static_cast<int64_t>(operand) == fused[i].operand) {
        skipped_fused_input = true;  // read inside the producer's kernel
        continue;
      }
      if (IsLocal(local, operand)) result[i].push_back(bytes);
    }
    const int64_t fused_into_next = i + 1 < records_.size() ? fused[i + 1].operand : -1;
    for (const auto& [operand, bytes] : record.outputs) {
      if (static_cast<int64_t>(operand) == fused_into_next) continue;  // never written
      if (IsLocal(local, operand) && bytes > 0) result[i].push_back(bytes);
    }
  }
  return result;
}

ModelledExecution CostRecorder::Finish() const {
  TimelineBuilder timeline;
  timeline.Runtime(RuntimeOverheadUs());
  std::map<uint32_t, double> produced_bytes;
  const std::vector<Fused> fused = FusedInputs();
  std::vector<std::vector<double>> step_temporary_bytes = StepTemporaryBytes(fused);
  for (size_t i = 0; i < records_.size(); ++i) {
    const Record& record = records_[i];
    const Device& device = ModelledDevice(compilation_, record.operation_index);
    timeline.Step(device);
    const Device* domain = TimelineBuilder::Domain(device);
    for (const auto& [operand, bytes] : record.inputs) timeline.MoveTo(operand, bytes, domain);
    const int32_t type = compilation_.model().operations()[record.operation_index].type;
    const std::vector<int>& assignment = compilation_.operation_devices();
    const bool cpu_fallback = record.operation_index >= assignment.size() ||
                              assignment[record.operation_index] == kRuntimeCpuFallback;
    // A fused input is neither written by the producer nor read back by this operation.
    OperationWork work = record.work;
    work.bytes -= fused[i].bytes;
    if (i + 1 < records_.size()) work.bytes -= fused[i + 1].bytes;
    timeline.Operation(device, type, record.operation_index, work, record.data_class, cpu_fallback,
                       fused[i].bytes, std::move(step_temporary_bytes[i]));
    for (const auto& [operand, bytes] : record.outputs) {
      timeline.Produced(operand, domain);
      produced_bytes[operand] = bytes;
    }
  }
  timeline.ReturnOutputs(compilation_.model().outputs(), produced_bytes);
  return timeline.Finish();
}

// ---- Re-timing a recorded execution -----------------------------------------------------------

namespace {

// Reads the fields of one trace event, naming the event in every error.
class EventReader {
 public:
  EventReader(const JsonValue& event, size_t index, std::string* error)
      : event_(event), path_("events[" + std::to_string(index) + "]"), error_(error) {}

  bool Fail(const std::string& field, const std::string& what) {
    *error_ = path_ + (field.empty() ? "" : "." + field) + ": " + what;
    return false;
  }
  const std::string& path() const { return path_; }

  bool String(const char* key, std::string* out) {
    const JsonValue* value = event_.Find(key);
    if (value == nullptr || !value->is_string()) return Fail(key, "expected a string");
    *out = value->string_value();
    return true;
  }
  bool Number(const char* key, double* out, bool required = true) {
    const JsonValue* value = event_.Find(key);
    if (value == nullptr && !required) return true;
    if (value == nullptr || !value->is_number() || !(value->number_value() >= 0)) {
      return Fail(key, "expected a non-negative number");
    }
    *out = value->number_value();
    return true;
  }
  // An optional array of non-negative numbers (empty when absent).
  bool Numbers(const char* key, std::vector<double>* out) {
    out->clear();
    const JsonValue* value = event_.Find(key);
    if (value == nullptr) return true;
    if (!value->is_array()) return Fail(key, "expected an array of non-negative numbers");
    for (const JsonValue& item : value->array_items()) {
      if (!item.is_number() || !(item.number_value() >= 0)) {
        return Fail(key, "expected an array of non-negative numbers");
      }
      out->push_back(item.number_value());
    }
    return true;
  }
  bool Integer(const char* key, int64_t* out) {
    const JsonValue* value = event_.Find(key);
    if (value == nullptr || !value->is_integer()) return Fail(key, "expected an integer");
    *out = value->integer_value();
    return true;
  }
  bool Bool(const char* key, bool* out) {
    const JsonValue* value = event_.Find(key);
    if (value == nullptr) return true;  // optional, false when absent
    if (!value->is_bool()) return Fail(key, "expected true or false");
    *out = value->bool_value();
    return true;
  }

 private:
  const JsonValue& event_;
  std::string path_;
  std::string* error_;
};

}  // namespace

bool ReadRecordedEvents(const JsonValue& trace, std::vector<RecordedEvent>* events,
                        std::string* error) {
  if (!trace.is_object()) {
    *error = "expected a trace object (MockNnapi_getLastTrace)";
    return false;
  }
  const JsonValue* items = trace.Find("events");
  if (items == nullptr || !items->is_array()) {
    *error = "events: expected an array of timeline events";
    return false;
  }
  events->clear();
  events->reserve(items->array_items().size());
  for (size_t i = 0; i < items->array_items().size(); ++i) {
    const JsonValue& item = items->array_items()[i];
    EventReader read(item, i, error);
    if (!item.is_object()) return read.Fail("", "expected an event object");
    RecordedEvent event;
    std::string kind;
    if (!read.String("kind", &kind)) return false;
    if (kind == "runtime") {
      event.kind = TimelineEvent::Kind::kRuntime;
      events->push_back(std::move(event));
      continue;
    }
    if (!read.Bool("cpu_fallback", &event.cpu_fallback) || !read.String("device", &event.device)) {
      return false;
    }
    if (kind == "driver") {
      event.kind = TimelineEvent::Kind::kDriver;
    } else if (kind == "transfer") {
      event.kind = TimelineEvent::Kind::kTransfer;
      std::string direction;
      int64_t operand = -1;
      if (!read.String("direction", &direction) || !read.Number("bytes", &event.bytes) ||
          !read.Integer("operand", &operand)) {
        return false;
      }
      if (direction != "host_to_device" && direction != "device_to_host") {
        return read.Fail("direction", "expected host_to_device or device_to_host");
      }
      if (operand < 0 || operand > std::numeric_limits<uint32_t>::max()) {
        return read.Fail("operand", "expected an operand index");
      }
      event.to_device = direction == "host_to_device";
      event.operand = static_cast<uint32_t>(operand);
    } else if (kind == "operation") {
      event.kind = TimelineEvent::Kind::kOperation;
      int64_t type = 0;
      int64_t index = 0;
      std::string data_class;
      if (!read.Integer("operation_type", &type) || !read.Integer("operation", &index) ||
          !read.String("data_class", &data_class) || !read.Number("flops", &event.work.flops) ||
          !read.Number("bytes", &event.work.bytes) ||
          !read.Number("fused_bytes", &event.fused_bytes, /*required=*/false) ||
          !read.Numbers("step_temporary_bytes", &event.step_temporary_bytes)) {
        return false;
      }
      if (type < 0 || type > std::numeric_limits<int32_t>::max() ||
          nnapi_common::FindOperationFacts(static_cast<int32_t>(type)) == nullptr) {
        return read.Fail("operation_type", "not an NNAPI operation code");
      }
      if (index < 0 || index > std::numeric_limits<uint32_t>::max()) {
        return read.Fail("operation", "expected an operation index");
      }
      const std::optional<DataClass> parsed = DataClassFromName(data_class);
      if (!parsed) return read.Fail("data_class", "unknown data class " + data_class);
      event.operation_type = static_cast<int32_t>(type);
      event.operation_index = static_cast<uint32_t>(index);
      event.data_class = *parsed;
    } else {
      return read.Fail("kind", "unknown event kind " + kind);
    }
    events->push_back(std::move(event));
  }
  // A step is taken on the device of the operation it precedes (a CPU fallback included).
  int64_t next_operation = -1;
  for (size_t i = events->size(); i-- > 0;) {
    RecordedEvent& event = (*events)[i];
    if (event.kind == TimelineEvent::Kind::kOperation) next_operation = static_cast<int64_t>(i);
    if (event.kind == TimelineEvent::Kind::kDriver) event.step_of = next_operation;
  }
  return true;
}

bool RetimeExecution(const Profile& profile, const std::vector<RecordedEvent>& events,
                     ModelledExecution* result,
                     std::map<const Device*, size_t>* operations_per_device, std::string* error) {
  std::map<std::string, const Device*, std::less<>> by_name;
  const Device* runtime_cpu = nullptr;
  for (const auto& device : profile.devices) {
    by_name[device->name] = device.get();
    if (device->runtime_cpu && runtime_cpu == nullptr) runtime_cpu = device.get();
  }
  const std::unique_ptr<Device> default_cpu = MakeDefaultRuntimeCpuDevice();
  if (runtime_cpu == nullptr) runtime_cpu = default_cpu.get();

  // The device of each event: by name, a CPU fallback operation on the runtime CPU, a step on
  // the device of its operation.
  std::vector<const Device*> devices(events.size(), nullptr);
  for (size_t i = 0; i < events.size(); ++i) {
    const RecordedEvent& event = events[i];
    if (event.kind == TimelineEvent::Kind::kRuntime || event.kind == TimelineEvent::Kind::kDriver) {
      continue;
    }
    if (event.cpu_fallback) {
      devices[i] = runtime_cpu;
      continue;
    }
    const auto found = by_name.find(event.device);
    if (found == by_name.end()) {
      *error = "events[" + std::to_string(i) + "].device: profile '" + profile.name +
               "' has no device named '" + event.device + "'";
      return false;
    }
    devices[i] = found->second;
  }
  TimelineBuilder timeline;
  for (size_t i = 0; i < events.size(); ++i) {
    const RecordedEvent& event = events[i];
    switch (event.kind) {
      case TimelineEvent::Kind::kRuntime:
        timeline.Runtime(profile.runtime_overhead_us);
        break;
      case TimelineEvent::Kind::kDriver:
        if (event.step_of >= 0) timeline.Step(*devices[event.step_of]);
        break;
      case TimelineEvent::Kind::kTransfer:
        timeline.Transfer(*devices[i], event.to_device, event.operand, event.bytes);
        break;
      case TimelineEvent::Kind::kOperation:
        // A device that had no step event (no step overhead when recorded) still pays one.
        timeline.Step(*devices[i]);
        timeline.Operation(*devices[i], event.operation_type, event.operation_index, event.work,
                           event.data_class, event.cpu_fallback, event.fused_bytes,
                           event.step_temporary_bytes);
        ++(*operations_per_device)[devices[i]];
        break;
    }
  }
  *result = timeline.Finish();
  return true;
}

}  // namespace mock_nnapi
