#include "device.h"

#include <algorithm>

namespace mock_nnapi {

bool Device::SupportsOperation(const Model& model, const Operation& operation) const {
  if (operation.feature_level > feature_level) return false;
  if (!supported_operations.empty() && supported_operations.count(operation.type) == 0) {
    return false;
  }
  auto operand_ok = [&](uint32_t index) {
    const Operand& operand = model.operands()[index];
    if (!supported_operand_types.empty() && supported_operand_types.count(operand.type) == 0) {
      return false;
    }
    return operand.dimensions.size() <= max_rank;
  };
  return std::all_of(operation.inputs.begin(), operation.inputs.end(), operand_ok) &&
         std::all_of(operation.outputs.begin(), operation.outputs.end(), operand_ok);
}

float Device::Cost(const Model& model, const Operation& operation, int32_t preference) const {
  const int32_t type = operation.inputs.empty() ? ANEURALNETWORKS_TENSOR_FLOAT32
                                                : model.operands()[operation.inputs[0]].type;
  const PerformanceInfo* info = &quantized_performance;
  if (type == ANEURALNETWORKS_TENSOR_FLOAT32 || type == ANEURALNETWORKS_FLOAT32) {
    info = model.relaxed_float32_to_float16() ? &relaxed_performance : &float32_performance;
  } else if (type == ANEURALNETWORKS_TENSOR_FLOAT16 || type == ANEURALNETWORKS_FLOAT16) {
    info = &float16_performance;
  }
  return preference == ANEURALNETWORKS_PREFER_LOW_POWER ? info->power_usage : info->exec_time;
}

namespace {
std::vector<std::unique_ptr<Device>> MakeReferenceDevices() {
  std::vector<std::unique_ptr<Device>> devices;
  auto cpu = std::make_unique<Device>();
  cpu->name = "mock-reference";
  cpu->version = "mock_nnapi-1";
  cpu->type = ANEURALNETWORKS_DEVICE_CPU;
  cpu->feature_level = kFeatureLevel8;
  devices.push_back(std::move(cpu));
  return devices;
}

std::vector<std::unique_ptr<Device>>& OwnedDevices() {
  static std::vector<std::unique_ptr<Device>> devices = MakeReferenceDevices();
  return devices;
}
}  // namespace

const std::vector<const Device*>& Devices() {
  static const std::vector<const Device*> devices = [] {
    std::vector<const Device*> list;
    for (const auto& device : OwnedDevices()) list.push_back(device.get());
    return list;
  }();
  return devices;
}

bool IsKnownDevice(const Device* device) {
  const auto& devices = Devices();
  return std::find(devices.begin(), devices.end(), device) != devices.end();
}

int64_t RuntimeFeatureLevel() { return kFeatureLevel8; }

}  // namespace mock_nnapi
