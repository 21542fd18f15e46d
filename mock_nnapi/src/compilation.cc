#include "compilation.h"

namespace mock_nnapi {

Compilation::Compilation(const Model* model, std::vector<const Device*> devices)
    : model_(model), devices_(std::move(devices)), explicit_devices_(!devices_.empty()) {
  if (devices_.empty()) devices_ = Devices();
}

int Compilation::CheckNotFinished(const char* function) const {
  NN_CHECK(!finished_, ANEURALNETWORKS_BAD_STATE) << function << " called after finish";
  return ANEURALNETWORKS_NO_ERROR;
}

int Compilation::SetPreference(int32_t preference) {
  NN_RETURN_IF_ERROR(CheckNotFinished("ANeuralNetworksCompilation_setPreference"));
  NN_CHECK(preference >= ANEURALNETWORKS_PREFER_LOW_POWER &&
               preference <= ANEURALNETWORKS_PREFER_SUSTAINED_SPEED,
           ANEURALNETWORKS_BAD_DATA)
      << "setPreference: invalid preference " << preference;
  preference_ = preference;
  return ANEURALNETWORKS_NO_ERROR;
}

int Compilation::SetPriority(int priority) {
  NN_RETURN_IF_ERROR(CheckNotFinished("ANeuralNetworksCompilation_setPriority"));
  NN_CHECK(priority == ANEURALNETWORKS_PRIORITY_LOW ||
               priority == ANEURALNETWORKS_PRIORITY_MEDIUM ||
               priority == ANEURALNETWORKS_PRIORITY_HIGH,
           ANEURALNETWORKS_BAD_DATA)
      << "setPriority: invalid priority " << priority;
  priority_ = priority;
  return ANEURALNETWORKS_NO_ERROR;
}

int Compilation::SetTimeout(uint64_t duration_ns) {
  NN_RETURN_IF_ERROR(CheckNotFinished("ANeuralNetworksCompilation_setTimeout"));
  NN_CHECK(single_explicit_device(), ANEURALNETWORKS_BAD_DATA)
      << "setTimeout needs a compilation created by createForDevices with exactly one device";
  if (duration_ns == 0) {
    timeout_ns_.reset();
  } else {
    timeout_ns_ = duration_ns;
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Compilation::SetCaching(const char* cache_dir, const uint8_t* token) {
  NN_RETURN_IF_ERROR(CheckNotFinished("ANeuralNetworksCompilation_setCaching"));
  cache_dir_ = std::string(cache_dir);
  std::copy(token, token + ANEURALNETWORKS_BYTE_SIZE_OF_CACHE_TOKEN, cache_token_.begin());
  return ANEURALNETWORKS_NO_ERROR;
}

int Compilation::AssignDevices() {
  // Android's rule (ExecutionPlan's findBestDeviceForEachOperation): each operation goes to the
  // supporting device with the best performance figure for the compilation's preference; with
  // no explicit device list, operations no device supports run on the runtime's CPU fallback.
  // With an explicit list, an operation none of the listed devices supports fails the
  // compilation with BAD_DATA.
  const Model& model = *model_;
  operation_devices_.assign(model.operations().size(), kRuntimeCpuFallback);
  for (size_t op = 0; op < model.operations().size(); ++op) {
    const Operation& operation = model.operations()[op];
    int best = kRuntimeCpuFallback;
    float best_cost = 0.f;
    for (size_t d = 0; d < devices_.size(); ++d) {
      const Device& device = *devices_[d];
      if (!device.SupportsOperation(model, operation)) continue;
      const float cost = device.Cost(model, operation, preference_);
      // Ties go to the CPU device, as in Android (it avoids data transfers).
      const bool better = best == kRuntimeCpuFallback || cost < best_cost ||
                          (cost == best_cost && device.type == ANEURALNETWORKS_DEVICE_CPU);
      if (better) {
        best = static_cast<int>(d);
        best_cost = cost;
      }
    }
    if (explicit_devices_) {
      NN_CHECK(best != kRuntimeCpuFallback, ANEURALNETWORKS_BAD_DATA)
          << "Compilation_finish: no listed device supports operation " << op << " ("
          << OperationTypeName(operation.type) << ")";
    }
    operation_devices_[op] = best;
  }
  for (int device : operation_devices_) {
    if (device != kRuntimeCpuFallback) {
      NN_CHECK(devices_[device]->available, ANEURALNETWORKS_UNAVAILABLE_DEVICE)
          << "Compilation_finish: device " << devices_[device]->name << " is unavailable";
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Compilation::Finish() {
  NN_CHECK(!finished_, ANEURALNETWORKS_BAD_STATE) << "Compilation_finish called twice";
  NN_RETURN_IF_ERROR(AssignDevices());
  finished_ = true;
  return ANEURALNETWORKS_NO_ERROR;
}

int Compilation::GetPreferredMemoryAlignment(bool input, uint32_t index,
                                             uint32_t* alignment) const {
  NN_CHECK(finished_, ANEURALNETWORKS_BAD_STATE) << "the compilation is not finished";
  const size_t count = input ? model_->inputs().size() : model_->outputs().size();
  NN_CHECK_LT(index, count, ANEURALNETWORKS_BAD_DATA) << (input ? "input" : "output") << " index";
  *alignment = kPreferredAlignment;
  return ANEURALNETWORKS_NO_ERROR;
}

int Compilation::GetPreferredMemoryPadding(bool input, uint32_t index, uint32_t* padding) const {
  NN_CHECK(finished_, ANEURALNETWORKS_BAD_STATE) << "the compilation is not finished";
  const size_t count = input ? model_->inputs().size() : model_->outputs().size();
  NN_CHECK_LT(index, count, ANEURALNETWORKS_BAD_DATA) << (input ? "input" : "output") << " index";
  *padding = kPreferredPadding;
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace mock_nnapi
