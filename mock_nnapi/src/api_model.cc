// SPDX-License-Identifier: Apache-2.0
// C entry points: models and devices. Each one is thin: null checks (UNEXPECTED_NULL), the
// injection point for fault tests, then a call into the Model / Device objects.
// clang-format off
// First: the functions above feature level 1 are defined here under their internal names.
#include "exported_functions.h"
// clang-format on

#include <android/NeuralNetworks.h>
#include <android/NeuralNetworksExtensions.h>

#include <algorithm>

#include "check.h"
#include "device.h"
#include "fault_injection.h"
#include "memory.h"
#include "model.h"
#include "statistics.h"

using mock_nnapi::Device;
using mock_nnapi::Memory;
using mock_nnapi::Model;

namespace {
Model* AsModel(ANeuralNetworksModel* model) { return reinterpret_cast<Model*>(model); }
const Model* AsModel(const ANeuralNetworksModel* model) {
  return reinterpret_cast<const Model*>(model);
}
const Device* AsDevice(const ANeuralNetworksDevice* device) {
  return reinterpret_cast<const Device*>(device);
}
}  // namespace

namespace mock_nnapi {
// Shared by getSupportedOperationsForDevices and createForDevices, in Android's order: device i
// must not be NULL (UNEXPECTED_NULL) nor repeated later in the list (BAD_DATA), before device
// i + 1 is looked at. The mock also refuses pointers it never handed out (Android would crash).
int ValidateDeviceList(const ANeuralNetworksDevice* const* devices, uint32_t count,
                       std::vector<const Device*>* result) {
  for (uint32_t i = 0; i < count; ++i) {
    NN_CHECK(devices[i] != nullptr, ANEURALNETWORKS_UNEXPECTED_NULL) << "device " << i;
    for (uint32_t j = i + 1; j < count; ++j) {
      NN_CHECK(devices[i] != devices[j], ANEURALNETWORKS_BAD_DATA)
          << "device " << i << " is listed again at " << j;
    }
    const Device* device = AsDevice(devices[i]);
    NN_CHECK(IsKnownDevice(device), ANEURALNETWORKS_BAD_DATA) << "device " << i << " is unknown";
    result->push_back(device);
  }
  return ANEURALNETWORKS_NO_ERROR;
}
}  // namespace mock_nnapi

extern "C" {

int ANeuralNetworksModel_create(ANeuralNetworksModel** model) {
  NN_INJECTION_POINT("ANeuralNetworksModel_create");
  NN_CHECK_NOT_NULL(model);
  *model = reinterpret_cast<ANeuralNetworksModel*>(new (std::nothrow) Model());
  NN_CHECK(*model != nullptr, ANEURALNETWORKS_OUT_OF_MEMORY) << "Model_create";
  return ANEURALNETWORKS_NO_ERROR;
}

void ANeuralNetworksModel_free(ANeuralNetworksModel* model) { delete AsModel(model); }

int ANeuralNetworksModel_finish(ANeuralNetworksModel* model) {
  NN_INJECTION_POINT("ANeuralNetworksModel_finish");
  NN_CHECK_NOT_NULL(model);
  NN_RETURN_IF_ERROR(AsModel(model)->Finish());
  mock_nnapi::Increment(mock_nnapi::Counter::kModelsFinished);
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksModel_addOperand(ANeuralNetworksModel* model,
                                    const ANeuralNetworksOperandType* type) {
  NN_INJECTION_POINT("ANeuralNetworksModel_addOperand");
  NN_CHECK_NOT_NULL(model);
  NN_CHECK_NOT_NULL(type);
  return AsModel(model)->AddOperand(*type);
}

int ANeuralNetworksModel_setOperandValue(ANeuralNetworksModel* model, int32_t index,
                                         const void* buffer, size_t length) {
  NN_INJECTION_POINT("ANeuralNetworksModel_setOperandValue");
  NN_CHECK_NOT_NULL(model);
  NN_CHECK(buffer != nullptr || length == 0, ANEURALNETWORKS_UNEXPECTED_NULL)
      << "setOperandValue: NULL buffer with length " << length;
  return AsModel(model)->SetOperandValue(index, buffer, length);
}

int ANeuralNetworksModel_setOperandValueFromMemory(ANeuralNetworksModel* model, int32_t index,
                                                   const ANeuralNetworksMemory* memory,
                                                   size_t offset, size_t length) {
  NN_INJECTION_POINT("ANeuralNetworksModel_setOperandValueFromMemory");
  NN_CHECK_NOT_NULL(model);
  NN_CHECK_NOT_NULL(memory);
  return AsModel(model)->SetOperandValueFromMemory(index, reinterpret_cast<const Memory*>(memory),
                                                   offset, length);
}

int ANeuralNetworksModel_setOperandValueFromModel(ANeuralNetworksModel* model, int32_t index,
                                                  const ANeuralNetworksModel* value) {
  NN_INJECTION_POINT("ANeuralNetworksModel_setOperandValueFromModel");
  NN_CHECK_NOT_NULL(model);
  NN_CHECK_NOT_NULL(value);
  return AsModel(model)->SetOperandValueFromModel(index, AsModel(value));
}

int ANeuralNetworksModel_addOperation(ANeuralNetworksModel* model,
                                      ANeuralNetworksOperationType type, uint32_t inputCount,
                                      const uint32_t* inputs, uint32_t outputCount,
                                      const uint32_t* outputs) {
  NN_INJECTION_POINT("ANeuralNetworksModel_addOperation");
  NN_CHECK_NOT_NULL(model);
  NN_CHECK_NOT_NULL(inputs);
  NN_CHECK_NOT_NULL(outputs);
  return AsModel(model)->AddOperation(type, inputCount, inputs, outputCount, outputs);
}

int ANeuralNetworksModel_identifyInputsAndOutputs(ANeuralNetworksModel* model, uint32_t inputCount,
                                                  const uint32_t* inputs, uint32_t outputCount,
                                                  const uint32_t* outputs) {
  NN_INJECTION_POINT("ANeuralNetworksModel_identifyInputsAndOutputs");
  NN_CHECK_NOT_NULL(model);
  NN_CHECK_NOT_NULL(inputs);
  NN_CHECK_NOT_NULL(outputs);
  return AsModel(model)->IdentifyInputsAndOutputs(inputCount, inputs, outputCount, outputs);
}

int ANeuralNetworksModel_relaxComputationFloat32toFloat16(ANeuralNetworksModel* model, bool allow) {
  NN_INJECTION_POINT("ANeuralNetworksModel_relaxComputationFloat32toFloat16");
  NN_CHECK_NOT_NULL(model);
  return AsModel(model)->RelaxComputationFloat32toFloat16(allow);
}

int ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(
    ANeuralNetworksModel* model, int32_t index,
    const ANeuralNetworksSymmPerChannelQuantParams* channelQuant) {
  NN_INJECTION_POINT("ANeuralNetworksModel_setOperandSymmPerChannelQuantParams");
  NN_CHECK_NOT_NULL(model);
  NN_CHECK_NOT_NULL(channelQuant);
  return AsModel(model)->SetOperandSymmPerChannelQuantParams(index, *channelQuant);
}

int ANeuralNetworksModel_getSupportedOperationsForDevices(
    const ANeuralNetworksModel* model, const ANeuralNetworksDevice* const* devices,
    uint32_t numDevices, bool* supportedOps) {
  NN_INJECTION_POINT("ANeuralNetworksModel_getSupportedOperationsForDevices");
  NN_CHECK(model != nullptr && devices != nullptr && supportedOps != nullptr,
           ANEURALNETWORKS_UNEXPECTED_NULL)
      << "getSupportedOperationsForDevices: model, devices or supportedOps is NULL";
  NN_CHECK_GT(numDevices, 0u, ANEURALNETWORKS_BAD_DATA)
      << "getSupportedOperationsForDevices: the device list is empty";
  const Model& m = *AsModel(model);
  NN_CHECK(m.finished() && !m.invalid(), ANEURALNETWORKS_BAD_STATE)
      << "getSupportedOperationsForDevices: the model is not finished";
  std::vector<const Device*> list;
  NN_RETURN_IF_ERROR(mock_nnapi::ValidateDeviceList(devices, numDevices, &list));
  for (size_t op = 0; op < m.operations().size(); ++op) {
    supportedOps[op] = std::any_of(list.begin(), list.end(), [&](const Device* device) {
      return device->SupportsOperation(m, m.operations()[op]);
    });
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// ---- Devices
// -------------------------------------------------------------------------------------

int ANeuralNetworks_getDeviceCount(uint32_t* numDevices) {
  NN_INJECTION_POINT("ANeuralNetworks_getDeviceCount");
  NN_CHECK_NOT_NULL(numDevices);
  *numDevices = static_cast<uint32_t>(mock_nnapi::Devices().size());
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworks_getDevice(uint32_t devIndex, ANeuralNetworksDevice** device) {
  NN_INJECTION_POINT("ANeuralNetworks_getDevice");
  NN_CHECK_NOT_NULL(device);
  const auto& devices = mock_nnapi::Devices();
  NN_CHECK_LT(devIndex, devices.size(), ANEURALNETWORKS_BAD_DATA) << "getDevice index";
  *device = reinterpret_cast<ANeuralNetworksDevice*>(const_cast<Device*>(devices[devIndex]));
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksDevice_getName(const ANeuralNetworksDevice* device, const char** name) {
  NN_INJECTION_POINT("ANeuralNetworksDevice_getName");
  NN_CHECK_NOT_NULL(device);
  NN_CHECK_NOT_NULL(name);
  *name = AsDevice(device)->name.c_str();
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksDevice_getType(const ANeuralNetworksDevice* device, int32_t* type) {
  NN_INJECTION_POINT("ANeuralNetworksDevice_getType");
  NN_CHECK_NOT_NULL(device);
  NN_CHECK_NOT_NULL(type);
  *type = AsDevice(device)->type;
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksDevice_getVersion(const ANeuralNetworksDevice* device, const char** version) {
  NN_INJECTION_POINT("ANeuralNetworksDevice_getVersion");
  NN_CHECK_NOT_NULL(device);
  NN_CHECK_NOT_NULL(version);
  *version = AsDevice(device)->version.c_str();
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksDevice_getFeatureLevel(const ANeuralNetworksDevice* device,
                                          int64_t* featureLevel) {
  NN_INJECTION_POINT("ANeuralNetworksDevice_getFeatureLevel");
  NN_CHECK_NOT_NULL(device);
  NN_CHECK_NOT_NULL(featureLevel);
  // Android reports min(runtime feature level, device feature level).
  *featureLevel = std::min(mock_nnapi::RuntimeFeatureLevel(), AsDevice(device)->feature_level);
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksDevice_wait(const ANeuralNetworksDevice* device) {
  NN_INJECTION_POINT("ANeuralNetworksDevice_wait");
  NN_CHECK_NOT_NULL(device);
  NN_CHECK(AsDevice(device)->available, ANEURALNETWORKS_UNAVAILABLE_DEVICE)
      << "Device_wait: " << AsDevice(device)->name << " is unavailable";
  return ANEURALNETWORKS_NO_ERROR;
}

int64_t ANeuralNetworks_getRuntimeFeatureLevel(void) { return mock_nnapi::RuntimeFeatureLevel(); }

// ---- Extensions: the mock's devices support none ------------------------------------------------

int ANeuralNetworksDevice_getExtensionSupport(const ANeuralNetworksDevice* device,
                                              const char* extensionName,
                                              bool* isExtensionSupported) {
  NN_INJECTION_POINT("ANeuralNetworksDevice_getExtensionSupport");
  NN_CHECK_NOT_NULL(device);
  NN_CHECK_NOT_NULL(extensionName);
  NN_CHECK_NOT_NULL(isExtensionSupported);
  *isExtensionSupported = false;
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksModel_getExtensionOperandType(ANeuralNetworksModel* model,
                                                 const char* extensionName,
                                                 uint16_t operandCodeWithinExtension,
                                                 int32_t* type) {
  NN_INJECTION_POINT("ANeuralNetworksModel_getExtensionOperandType");
  NN_CHECK_NOT_NULL(model);
  NN_CHECK_NOT_NULL(extensionName);
  NN_CHECK_NOT_NULL(type);
  NN_FAIL(ANEURALNETWORKS_BAD_DATA) << "unknown extension " << extensionName;
}

int ANeuralNetworksModel_getExtensionOperationType(ANeuralNetworksModel* model,
                                                   const char* extensionName,
                                                   uint16_t operationCodeWithinExtension,
                                                   ANeuralNetworksOperationType* type) {
  NN_INJECTION_POINT("ANeuralNetworksModel_getExtensionOperationType");
  NN_CHECK_NOT_NULL(model);
  NN_CHECK_NOT_NULL(extensionName);
  NN_CHECK_NOT_NULL(type);
  NN_FAIL(ANEURALNETWORKS_BAD_DATA) << "unknown extension " << extensionName;
}

int ANeuralNetworksModel_setOperandExtensionData(ANeuralNetworksModel* model, int32_t index,
                                                 const void* data, size_t length) {
  NN_INJECTION_POINT("ANeuralNetworksModel_setOperandExtensionData");
  NN_CHECK_NOT_NULL(model);
  NN_CHECK(data != nullptr || length == 0, ANEURALNETWORKS_UNEXPECTED_NULL) << "data";
  NN_RETURN_IF_ERROR(AsModel(model)->CheckMutable("ANeuralNetworksModel_setOperandExtensionData"));
  NN_RETURN_IF_ERROR(AsModel(model)->CheckOperandIndex(index, "setOperandExtensionData"));
  NN_FAIL(ANEURALNETWORKS_BAD_DATA)
      << "setOperandExtensionData: operand " << index << " is not of an extension type";
}

}  // extern "C"
