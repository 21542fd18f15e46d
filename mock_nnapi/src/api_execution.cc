// SPDX-License-Identifier: Apache-2.0
// C entry points: compilations, executions, events, bursts, memories and memory descriptors.
// clang-format off
// First: the functions above feature level 1 are defined here under their internal names.
#include "exported_functions.h"
// clang-format on

#include <android/NeuralNetworks.h>
#include <android/NeuralNetworksExtensions.h>

#include <memory>

#include "check.h"
#include "compilation.h"
#include "execution.h"
#include "fault_injection.h"
#include "memory.h"
#include "statistics.h"

using mock_nnapi::Burst;
using mock_nnapi::Compilation;
using mock_nnapi::Device;
using mock_nnapi::Event;
using mock_nnapi::Execution;
using mock_nnapi::Memory;
using mock_nnapi::MemoryDesc;
using mock_nnapi::Model;

namespace mock_nnapi {
int ValidateDeviceList(const ANeuralNetworksDevice* const* devices, uint32_t count,
                       std::vector<const Device*>* result);
}  // namespace mock_nnapi

namespace {
template <typename T, typename Handle>
T* As(Handle* handle) {
  return reinterpret_cast<T*>(handle);
}
template <typename T, typename Handle>
const T* As(const Handle* handle) {
  return reinterpret_cast<const T*>(handle);
}
template <typename Handle, typename T>
Handle* ToHandle(T* object) {
  return reinterpret_cast<Handle*>(object);
}

int CreateCompilation(ANeuralNetworksModel* model, std::vector<const Device*> devices,
                      ANeuralNetworksCompilation** compilation) {
  *compilation = nullptr;
  const Model* m = As<Model>(model);
  NN_CHECK(m->finished() && !m->invalid(), ANEURALNETWORKS_BAD_STATE)
      << "Compilation_create: the model is not finished or is invalid";
  auto* created = new (std::nothrow) Compilation(m, std::move(devices));
  NN_CHECK(created != nullptr, ANEURALNETWORKS_OUT_OF_MEMORY) << "Compilation_create";
  *compilation = ToHandle<ANeuralNetworksCompilation>(created);
  return ANEURALNETWORKS_NO_ERROR;
}
}  // namespace

extern "C" {

// ---- Compilations ------------------------------------------------------------------------------

int ANeuralNetworksCompilation_create(ANeuralNetworksModel* model,
                                      ANeuralNetworksCompilation** compilation) {
  NN_INJECTION_POINT("ANeuralNetworksCompilation_create");
  NN_CHECK(model != nullptr && compilation != nullptr, ANEURALNETWORKS_UNEXPECTED_NULL)
      << "Compilation_create: model or compilation is NULL";
  return CreateCompilation(model, {}, compilation);
}

int ANeuralNetworksCompilation_createForDevices(ANeuralNetworksModel* model,
                                                const ANeuralNetworksDevice* const* devices,
                                                uint32_t numDevices,
                                                ANeuralNetworksCompilation** compilation) {
  NN_INJECTION_POINT("ANeuralNetworksCompilation_createForDevices");
  NN_CHECK(model != nullptr && devices != nullptr && compilation != nullptr,
           ANEURALNETWORKS_UNEXPECTED_NULL)
      << "Compilation_createForDevices: model, devices or compilation is NULL";
  NN_CHECK_GT(numDevices, 0u, ANEURALNETWORKS_BAD_DATA)
      << "Compilation_createForDevices: the device list is empty";
  std::vector<const Device*> list;
  NN_RETURN_IF_ERROR(mock_nnapi::ValidateDeviceList(devices, numDevices, &list));
  return CreateCompilation(model, std::move(list), compilation);
}

void ANeuralNetworksCompilation_free(ANeuralNetworksCompilation* compilation) {
  delete As<Compilation>(compilation);
}

int ANeuralNetworksCompilation_setPreference(ANeuralNetworksCompilation* compilation,
                                             int32_t preference) {
  NN_INJECTION_POINT("ANeuralNetworksCompilation_setPreference");
  NN_CHECK_NOT_NULL(compilation);
  return As<Compilation>(compilation)->SetPreference(preference);
}

int ANeuralNetworksCompilation_setPriority(ANeuralNetworksCompilation* compilation, int priority) {
  NN_INJECTION_POINT("ANeuralNetworksCompilation_setPriority");
  NN_CHECK_NOT_NULL(compilation);
  return As<Compilation>(compilation)->SetPriority(priority);
}

int ANeuralNetworksCompilation_setTimeout(ANeuralNetworksCompilation* compilation,
                                          uint64_t duration) {
  NN_INJECTION_POINT("ANeuralNetworksCompilation_setTimeout");
  NN_CHECK_NOT_NULL(compilation);
  return As<Compilation>(compilation)->SetTimeout(duration);
}

int ANeuralNetworksCompilation_setCaching(ANeuralNetworksCompilation* compilation,
                                          const char* cacheDir, const uint8_t* token) {
  NN_INJECTION_POINT("ANeuralNetworksCompilation_setCaching");
  NN_CHECK_NOT_NULL(compilation);
  NN_CHECK_NOT_NULL(cacheDir);
  NN_CHECK_NOT_NULL(token);
  return As<Compilation>(compilation)->SetCaching(cacheDir, token);
}

int ANeuralNetworksCompilation_finish(ANeuralNetworksCompilation* compilation) {
  NN_INJECTION_POINT("ANeuralNetworksCompilation_finish");
  NN_CHECK_NOT_NULL(compilation);
  mock_nnapi::WaitWhileCompilationsHeld();
  return As<Compilation>(compilation)->Finish();
}

#define NN_PREFERRED_MEMORY_QUERY(function, method, is_input)                                    \
  int function(const ANeuralNetworksCompilation* compilation, uint32_t index, uint32_t* value) { \
    NN_INJECTION_POINT(#function);                                                               \
    NN_CHECK_NOT_NULL(compilation);                                                              \
    NN_CHECK_NOT_NULL(value);                                                                    \
    return As<Compilation>(compilation)->method(is_input, index, value);                         \
  }
NN_PREFERRED_MEMORY_QUERY(ANeuralNetworksCompilation_getPreferredMemoryAlignmentForInput,
                          GetPreferredMemoryAlignment, true)
NN_PREFERRED_MEMORY_QUERY(ANeuralNetworksCompilation_getPreferredMemoryPaddingForInput,
                          GetPreferredMemoryPadding, true)
NN_PREFERRED_MEMORY_QUERY(ANeuralNetworksCompilation_getPreferredMemoryAlignmentForOutput,
                          GetPreferredMemoryAlignment, false)
NN_PREFERRED_MEMORY_QUERY(ANeuralNetworksCompilation_getPreferredMemoryPaddingForOutput,
                          GetPreferredMemoryPadding, false)
#undef NN_PREFERRED_MEMORY_QUERY

int ANeuralNetworksCompilation_addExtensionAttribute(ANeuralNetworksCompilation* compilation,
                                                     const char* extensionName,
                                                     uint16_t attributeCodeWithinExtension,
                                                     const void* data, size_t length) {
  NN_INJECTION_POINT("ANeuralNetworksCompilation_addExtensionAttribute");
  NN_CHECK_NOT_NULL(compilation);
  NN_CHECK_NOT_NULL(extensionName);
  NN_CHECK(data != nullptr || length == 0, ANEURALNETWORKS_UNEXPECTED_NULL) << "data";
  const Compilation* c = As<Compilation>(compilation);
  NN_CHECK(!c->finished(), ANEURALNETWORKS_BAD_STATE) << "addExtensionAttribute after finish";
  NN_CHECK(c->single_explicit_device(), ANEURALNETWORKS_BAD_DATA)
      << "Compilation_addExtensionAttribute needs a compilation created by createForDevices "
         "with one device";
  NN_FAIL(ANEURALNETWORKS_BAD_DATA) << "unknown extension " << extensionName;
}

// ---- Executions
// ----------------------------------------------------------------------------------

int ANeuralNetworksExecution_create(ANeuralNetworksCompilation* compilation,
                                    ANeuralNetworksExecution** execution) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_create");
  NN_CHECK(compilation != nullptr && execution != nullptr, ANEURALNETWORKS_UNEXPECTED_NULL)
      << "Execution_create: compilation or execution is NULL";
  *execution = nullptr;
  const Compilation* c = As<Compilation>(compilation);
  NN_CHECK(c->usable(), ANEURALNETWORKS_BAD_STATE)
      << "Execution_create: the compilation is not finished or failed to finish";
  auto* created = new (std::nothrow) Execution(c);
  NN_CHECK(created != nullptr, ANEURALNETWORKS_OUT_OF_MEMORY) << "Execution_create";
  *execution = ToHandle<ANeuralNetworksExecution>(created);
  return ANEURALNETWORKS_NO_ERROR;
}

void ANeuralNetworksExecution_free(ANeuralNetworksExecution* execution) {
  Execution* e = As<Execution>(execution);
  if (e != nullptr && e->in_flight()) {
    // Android ignores (and logs) the free of an execution that is still computing.
    mock_nnapi::RecordError("ANeuralNetworksExecution_free: the execution is in flight; ignored");
    return;
  }
  delete e;
}

int ANeuralNetworksExecution_setInput(ANeuralNetworksExecution* execution, int32_t index,
                                      const ANeuralNetworksOperandType* type, const void* buffer,
                                      size_t length) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_setInput");
  NN_CHECK_NOT_NULL(execution);
  NN_CHECK(buffer != nullptr || length == 0, ANEURALNETWORKS_UNEXPECTED_NULL)
      << "setInput: NULL buffer with length " << length;
  return As<Execution>(execution)->SetInput(index, type, buffer, length);
}

int ANeuralNetworksExecution_setInputFromMemory(ANeuralNetworksExecution* execution, int32_t index,
                                                const ANeuralNetworksOperandType* type,
                                                const ANeuralNetworksMemory* memory, size_t offset,
                                                size_t length) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_setInputFromMemory");
  NN_CHECK_NOT_NULL(execution);
  NN_CHECK_NOT_NULL(memory);
  return As<Execution>(execution)->SetInputFromMemory(index, type, As<Memory>(memory), offset,
                                                      length);
}

int ANeuralNetworksExecution_setOutput(ANeuralNetworksExecution* execution, int32_t index,
                                       const ANeuralNetworksOperandType* type, void* buffer,
                                       size_t length) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_setOutput");
  NN_CHECK_NOT_NULL(execution);
  NN_CHECK(buffer != nullptr || length == 0, ANEURALNETWORKS_UNEXPECTED_NULL)
      << "setOutput: NULL buffer with length " << length;
  return As<Execution>(execution)->SetOutput(index, type, buffer, length);
}

int ANeuralNetworksExecution_setOutputFromMemory(ANeuralNetworksExecution* execution, int32_t index,
                                                 const ANeuralNetworksOperandType* type,
                                                 const ANeuralNetworksMemory* memory, size_t offset,
                                                 size_t length) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_setOutputFromMemory");
  NN_CHECK_NOT_NULL(execution);
  NN_CHECK_NOT_NULL(memory);
  return As<Execution>(execution)->SetOutputFromMemory(index, type, As<Memory>(memory), offset,
                                                       length);
}

int ANeuralNetworksExecution_compute(ANeuralNetworksExecution* execution) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_compute");
  NN_CHECK_NOT_NULL(execution);
  return As<Execution>(execution)->Compute();
}

int ANeuralNetworksExecution_startCompute(ANeuralNetworksExecution* execution,
                                          ANeuralNetworksEvent** event) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_startCompute");
  NN_CHECK_NOT_NULL(event);
  *event = nullptr;
  NN_CHECK_NOT_NULL(execution);
  std::unique_ptr<Event> created;
  NN_RETURN_IF_ERROR(As<Execution>(execution)->StartCompute(&created));
  *event = ToHandle<ANeuralNetworksEvent>(created.release());
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksExecution_startComputeWithDependencies(
    ANeuralNetworksExecution* execution, const ANeuralNetworksEvent* const* dependencies,
    uint32_t num_dependencies, uint64_t duration, ANeuralNetworksEvent** event) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_startComputeWithDependencies");
  NN_CHECK_NOT_NULL(event);
  *event = nullptr;
  NN_CHECK(dependencies != nullptr || num_dependencies == 0, ANEURALNETWORKS_UNEXPECTED_NULL)
      << "dependencies";
  NN_CHECK_NOT_NULL(execution);
  // Like Android: dependencies backed by a fence are handed to the execution (for the mock's
  // own fenced executions, their completion, whose error stands for a fence signalled with an
  // error); the others are waited for here (their result is not checked).
  std::vector<int> fences;
  std::vector<std::shared_ptr<mock_nnapi::Completion>> computations;
  for (uint32_t i = 0; i < num_dependencies; ++i) {
    NN_CHECK(dependencies[i] != nullptr, ANEURALNETWORKS_UNEXPECTED_NULL) << "dependency " << i;
    const Event* dependency = As<Event>(dependencies[i]);
    if (dependency->fence_fd() >= 0 && dependency->completion()) {
      computations.push_back(dependency->completion());
    } else if (dependency->fence_fd() >= 0) {
      fences.push_back(dependency->fence_fd());
    } else {
      dependency->Wait();
    }
  }
  std::unique_ptr<Event> created;
  NN_RETURN_IF_ERROR(As<Execution>(execution)->StartComputeWithDependencies(fences, computations,
                                                                            duration, &created));
  *event = ToHandle<ANeuralNetworksEvent>(created.release());
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksExecution_getOutputOperandRank(ANeuralNetworksExecution* execution,
                                                  int32_t index, uint32_t* rank) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_getOutputOperandRank");
  NN_CHECK_NOT_NULL(execution);
  NN_CHECK_NOT_NULL(rank);
  return As<Execution>(execution)->GetOutputOperandRank(index, rank);
}

int ANeuralNetworksExecution_getOutputOperandDimensions(ANeuralNetworksExecution* execution,
                                                        int32_t index, uint32_t* dimensions) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_getOutputOperandDimensions");
  NN_CHECK_NOT_NULL(execution);
  NN_CHECK_NOT_NULL(dimensions);
  return As<Execution>(execution)->GetOutputOperandDimensions(index, dimensions);
}

int ANeuralNetworksExecution_setMeasureTiming(ANeuralNetworksExecution* execution, bool measure) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_setMeasureTiming");
  NN_CHECK_NOT_NULL(execution);
  return As<Execution>(execution)->SetMeasureTiming(measure);
}

int ANeuralNetworksExecution_getDuration(const ANeuralNetworksExecution* execution,
                                         int32_t durationCode, uint64_t* duration) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_getDuration");
  NN_CHECK_NOT_NULL(execution);
  NN_CHECK_NOT_NULL(duration);
  NN_CHECK(durationCode >= ANEURALNETWORKS_DURATION_ON_HARDWARE &&
               durationCode <= ANEURALNETWORKS_FENCED_DURATION_IN_DRIVER,
           ANEURALNETWORKS_BAD_DATA)
      << "getDuration: invalid duration code " << durationCode;
  return As<Execution>(execution)->GetDuration(durationCode, duration);
}

int ANeuralNetworksExecution_setTimeout(ANeuralNetworksExecution* execution, uint64_t duration) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_setTimeout");
  NN_CHECK_NOT_NULL(execution);
  return As<Execution>(execution)->SetTimeout(duration);
}

int ANeuralNetworksExecution_setLoopTimeout(ANeuralNetworksExecution* execution,
                                            uint64_t duration) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_setLoopTimeout");
  NN_CHECK_NOT_NULL(execution);
  return As<Execution>(execution)->SetLoopTimeout(duration);
}

int ANeuralNetworksExecution_setReusable(ANeuralNetworksExecution* execution, bool reusable) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_setReusable");
  NN_CHECK_NOT_NULL(execution);
  return As<Execution>(execution)->SetReusable(reusable);
}

int ANeuralNetworksExecution_enableInputAndOutputPadding(ANeuralNetworksExecution* execution,
                                                         bool enable) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_enableInputAndOutputPadding");
  NN_CHECK_NOT_NULL(execution);
  return As<Execution>(execution)->EnableInputAndOutputPadding(enable);
}

int ANeuralNetworksExecution_addExtensionAttribute(ANeuralNetworksExecution* execution,
                                                   const char* extensionName,
                                                   uint16_t attributeCodeWithinExtension,
                                                   const void* data, size_t length) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_addExtensionAttribute");
  NN_CHECK_NOT_NULL(execution);
  NN_CHECK_NOT_NULL(extensionName);
  NN_CHECK(data != nullptr || length == 0, ANEURALNETWORKS_UNEXPECTED_NULL) << "data";
  return As<Execution>(execution)->AddExtensionAttribute(extensionName);
}

uint64_t ANeuralNetworks_getDefaultLoopTimeout(void) { return mock_nnapi::kDefaultLoopTimeoutNs; }

uint64_t ANeuralNetworks_getMaximumLoopTimeout(void) { return mock_nnapi::kMaximumLoopTimeoutNs; }

// ---- Events
// ----------------------------------------------------------------------------------------

int ANeuralNetworksEvent_wait(ANeuralNetworksEvent* event) {
  NN_INJECTION_POINT("ANeuralNetworksEvent_wait");
  NN_CHECK_NOT_NULL(event);
  return As<Event>(event)->Wait();
}

void ANeuralNetworksEvent_free(ANeuralNetworksEvent* event) { delete As<Event>(event); }

int ANeuralNetworksEvent_createFromSyncFenceFd(int sync_fence_fd, ANeuralNetworksEvent** event) {
  NN_INJECTION_POINT("ANeuralNetworksEvent_createFromSyncFenceFd");
  NN_CHECK_NOT_NULL(event);
  *event = nullptr;
  std::unique_ptr<Event> created;
  NN_RETURN_IF_ERROR(Event::CreateFromSyncFenceFd(sync_fence_fd, &created));
  *event = ToHandle<ANeuralNetworksEvent>(created.release());
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksEvent_getSyncFenceFd(const ANeuralNetworksEvent* event, int* sync_fence_fd) {
  NN_INJECTION_POINT("ANeuralNetworksEvent_getSyncFenceFd");
  NN_CHECK_NOT_NULL(sync_fence_fd);
  *sync_fence_fd = -1;
  NN_CHECK_NOT_NULL(event);
  return As<Event>(event)->GetSyncFenceFd(sync_fence_fd);
}

// ---- Bursts
// ------------------------------------------------------------------------------------------

int ANeuralNetworksBurst_create(ANeuralNetworksCompilation* compilation,
                                ANeuralNetworksBurst** burst) {
  NN_INJECTION_POINT("ANeuralNetworksBurst_create");
  NN_CHECK(compilation != nullptr && burst != nullptr, ANEURALNETWORKS_UNEXPECTED_NULL)
      << "Burst_create: compilation or burst is NULL";
  *burst = nullptr;
  const Compilation* c = As<Compilation>(compilation);
  NN_CHECK(c->usable(), ANEURALNETWORKS_BAD_STATE)
      << "Burst_create: the compilation is not finished or failed to finish";
  auto* created = new (std::nothrow) Burst(c);
  NN_CHECK(created != nullptr, ANEURALNETWORKS_OUT_OF_MEMORY) << "Burst_create";
  *burst = ToHandle<ANeuralNetworksBurst>(created);
  return ANEURALNETWORKS_NO_ERROR;
}

void ANeuralNetworksBurst_free(ANeuralNetworksBurst* burst) { delete As<Burst>(burst); }

int ANeuralNetworksExecution_burstCompute(ANeuralNetworksExecution* execution,
                                          ANeuralNetworksBurst* burst) {
  NN_INJECTION_POINT("ANeuralNetworksExecution_burstCompute");
  NN_CHECK_NOT_NULL(execution);
  NN_CHECK_NOT_NULL(burst);
  return As<Execution>(execution)->BurstCompute(As<Burst>(burst));
}

// ---- Memories
// --------------------------------------------------------------------------------------

int ANeuralNetworksMemory_createFromFd(size_t size, int protect, int fd, size_t offset,
                                       ANeuralNetworksMemory** memory) {
  NN_INJECTION_POINT("ANeuralNetworksMemory_createFromFd");
  NN_CHECK_NOT_NULL(memory);
  *memory = nullptr;
  std::unique_ptr<Memory> created;
  NN_RETURN_IF_ERROR(Memory::CreateFromFd(size, protect, fd, offset, &created));
  *memory = ToHandle<ANeuralNetworksMemory>(created.release());
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksMemory_createFromAHardwareBuffer(const AHardwareBuffer* ahwb,
                                                    ANeuralNetworksMemory** memory) {
  NN_INJECTION_POINT("ANeuralNetworksMemory_createFromAHardwareBuffer");
  NN_CHECK_NOT_NULL(memory);
  *memory = nullptr;
  NN_CHECK_NOT_NULL(ahwb);
  // There is no AHardwareBuffer allocator off Android: no buffer can be valid here.
  NN_FAIL(ANEURALNETWORKS_BAD_DATA) << "AHardwareBuffer memories are not available off Android";
}

void ANeuralNetworksMemory_free(ANeuralNetworksMemory* memory) { delete As<Memory>(memory); }

int ANeuralNetworksMemory_createFromDesc(const ANeuralNetworksMemoryDesc* desc,
                                         ANeuralNetworksMemory** memory) {
  NN_INJECTION_POINT("ANeuralNetworksMemory_createFromDesc");
  NN_CHECK_NOT_NULL(memory);
  *memory = nullptr;
  NN_CHECK_NOT_NULL(desc);
  std::unique_ptr<Memory> created;
  NN_RETURN_IF_ERROR(Memory::CreateFromDesc(*As<MemoryDesc>(desc), &created));
  *memory = ToHandle<ANeuralNetworksMemory>(created.release());
  return ANEURALNETWORKS_NO_ERROR;
}

int ANeuralNetworksMemory_copy(const ANeuralNetworksMemory* src, const ANeuralNetworksMemory* dst) {
  NN_INJECTION_POINT("ANeuralNetworksMemory_copy");
  NN_CHECK_NOT_NULL(src);
  NN_CHECK_NOT_NULL(dst);
  return Memory::Copy(*As<Memory>(src), *As<Memory>(dst));
}

int ANeuralNetworksMemoryDesc_create(ANeuralNetworksMemoryDesc** desc) {
  NN_INJECTION_POINT("ANeuralNetworksMemoryDesc_create");
  NN_CHECK_NOT_NULL(desc);
  auto* created = new (std::nothrow) MemoryDesc();
  *desc = ToHandle<ANeuralNetworksMemoryDesc>(created);
  NN_CHECK(created != nullptr, ANEURALNETWORKS_OUT_OF_MEMORY) << "MemoryDesc_create";
  return ANEURALNETWORKS_NO_ERROR;
}

void ANeuralNetworksMemoryDesc_free(ANeuralNetworksMemoryDesc* desc) {
  delete As<MemoryDesc>(desc);
}

int ANeuralNetworksMemoryDesc_addInputRole(ANeuralNetworksMemoryDesc* desc,
                                           const ANeuralNetworksCompilation* compilation,
                                           uint32_t index, float frequency) {
  NN_INJECTION_POINT("ANeuralNetworksMemoryDesc_addInputRole");
  NN_CHECK_NOT_NULL(desc);
  NN_CHECK_NOT_NULL(compilation);
  return As<MemoryDesc>(desc)->AddRole(*As<Compilation>(compilation), true, index, frequency);
}

int ANeuralNetworksMemoryDesc_addOutputRole(ANeuralNetworksMemoryDesc* desc,
                                            const ANeuralNetworksCompilation* compilation,
                                            uint32_t index, float frequency) {
  NN_INJECTION_POINT("ANeuralNetworksMemoryDesc_addOutputRole");
  NN_CHECK_NOT_NULL(desc);
  NN_CHECK_NOT_NULL(compilation);
  return As<MemoryDesc>(desc)->AddRole(*As<Compilation>(compilation), false, index, frequency);
}

int ANeuralNetworksMemoryDesc_setDimensions(ANeuralNetworksMemoryDesc* desc, uint32_t rank,
                                            const uint32_t* dimensions) {
  NN_INJECTION_POINT("ANeuralNetworksMemoryDesc_setDimensions");
  NN_CHECK(desc != nullptr && (dimensions != nullptr || rank == 0), ANEURALNETWORKS_UNEXPECTED_NULL)
      << "MemoryDesc_setDimensions: desc or dimensions is NULL";
  return As<MemoryDesc>(desc)->SetDimensions(mock_nnapi::Dimensions(dimensions, dimensions + rank));
}

int ANeuralNetworksMemoryDesc_finish(ANeuralNetworksMemoryDesc* desc) {
  NN_INJECTION_POINT("ANeuralNetworksMemoryDesc_finish");
  NN_CHECK_NOT_NULL(desc);
  return As<MemoryDesc>(desc)->Finish();
}

}  // extern "C"
