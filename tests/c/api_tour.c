// SPDX-License-Identifier: Apache-2.0
/*
 * A tour of the NNAPI C API in one process, for leak and sanitizer checks of the mock: success
 * and error paths of models, compilations (with caching), executions (sync, async, burst,
 * fenced with an eventfd dependency), dynamic output shapes, memories from file descriptors
 * and descriptors, and Memory_copy. Every object is freed; run it under AddressSanitizer with
 * detect_leaks=1 to check that the library frees everything too.
 *
 * Usage: api_tour <cache directory>. Exit status 0 on success, 1 on an unexpected result code.
 */
#define _GNU_SOURCE
#include <android/NeuralNetworks.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXPECT(call, expected)                                                                  \
  do {                                                                                          \
    int code_ = (call);                                                                         \
    if (code_ != (expected)) {                                                                  \
      fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", __FILE__, __LINE__, #call, code_, \
              (expected));                                                                      \
      return 1;                                                                                 \
    }                                                                                           \
  } while (0)
#define OK(call) EXPECT(call, ANEURALNETWORKS_NO_ERROR)

/* out = a + b with a, b of [2] and an output declared with `out_dims` (NULL: as the inputs). */
static int build_model(ANeuralNetworksModel** model, const uint32_t* out_dims) {
  static const uint32_t dims[1] = {2};
  const ANeuralNetworksOperandType tensor = {ANEURALNETWORKS_TENSOR_FLOAT32, 1, dims, 0.f, 0};
  const ANeuralNetworksOperandType output = {ANEURALNETWORKS_TENSOR_FLOAT32, 1,
                                             out_dims ? out_dims : dims, 0.f, 0};
  const ANeuralNetworksOperandType scalar = {ANEURALNETWORKS_INT32, 0, NULL, 0.f, 0};
  const int32_t activation = ANEURALNETWORKS_FUSED_NONE;
  const uint32_t inputs[3] = {0, 1, 2};
  const uint32_t outputs[1] = {3};
  OK(ANeuralNetworksModel_create(model));
  OK(ANeuralNetworksModel_addOperand(*model, &tensor));
  OK(ANeuralNetworksModel_addOperand(*model, &tensor));
  OK(ANeuralNetworksModel_addOperand(*model, &scalar));
  OK(ANeuralNetworksModel_addOperand(*model, &output));
  EXPECT(ANeuralNetworksModel_addOperand(*model, NULL), ANEURALNETWORKS_UNEXPECTED_NULL);
  OK(ANeuralNetworksModel_setOperandValue(*model, 2, &activation, sizeof(activation)));
  EXPECT(ANeuralNetworksModel_addOperation(*model, -1, 3, inputs, 1, outputs),
         ANEURALNETWORKS_BAD_DATA);
  OK(ANeuralNetworksModel_addOperation(*model, ANEURALNETWORKS_ADD, 3, inputs, 1, outputs));
  OK(ANeuralNetworksModel_identifyInputsAndOutputs(*model, 2, inputs, 1, outputs));
  OK(ANeuralNetworksModel_finish(*model));
  EXPECT(ANeuralNetworksModel_finish(*model), ANEURALNETWORKS_BAD_STATE);
  return 0;
}

static int compile(ANeuralNetworksModel* model, const char* cache_dir,
                   ANeuralNetworksCompilation** compilation) {
  uint8_t token[ANEURALNETWORKS_BYTE_SIZE_OF_CACHE_TOKEN];
  memset(token, 7, sizeof(token));
  OK(ANeuralNetworksCompilation_create(model, compilation));
  OK(ANeuralNetworksCompilation_setCaching(*compilation, cache_dir, token));
  EXPECT(ANeuralNetworksCompilation_setPreference(*compilation, 40), ANEURALNETWORKS_BAD_DATA);
  OK(ANeuralNetworksCompilation_finish(*compilation));
  return 0;
}

static int set_arguments(ANeuralNetworksExecution* execution, const float* a, const float* b,
                         float* out, size_t out_length) {
  OK(ANeuralNetworksExecution_setInput(execution, 0, NULL, a, 2 * sizeof(float)));
  EXPECT(ANeuralNetworksExecution_setInput(execution, 1, NULL, b, 3 * sizeof(float)),
         ANEURALNETWORKS_BAD_DATA);
  OK(ANeuralNetworksExecution_setInput(execution, 1, NULL, b, 2 * sizeof(float)));
  OK(ANeuralNetworksExecution_setOutput(execution, 0, NULL, out, out_length));
  return 0;
}

static int executions(ANeuralNetworksCompilation* compilation) {
  const float a[2] = {1.f, 2.f};
  const float b[2] = {3.f, 4.f};
  float out[2] = {0.f, 0.f};
  ANeuralNetworksExecution* execution = NULL;
  ANeuralNetworksEvent* event = NULL;
  ANeuralNetworksEvent* fence = NULL;
  ANeuralNetworksBurst* burst = NULL;
  int efd;

  /* Synchronous, then async reuse of a reusable execution. */
  OK(ANeuralNetworksExecution_create(compilation, &execution));
  OK(ANeuralNetworksExecution_setReusable(execution, true));
  if (set_arguments(execution, a, b, out, sizeof(out))) return 1;
  OK(ANeuralNetworksExecution_compute(execution));
  OK(ANeuralNetworksExecution_startCompute(execution, &event));
  OK(ANeuralNetworksEvent_wait(event));
  ANeuralNetworksEvent_free(event);
  ANeuralNetworksExecution_free(execution);

  /* A computation that fails its checks (no arguments), then a burst. */
  OK(ANeuralNetworksExecution_create(compilation, &execution));
  EXPECT(ANeuralNetworksExecution_compute(execution), ANEURALNETWORKS_BAD_DATA);
  EXPECT(ANeuralNetworksExecution_compute(execution), ANEURALNETWORKS_BAD_STATE);
  ANeuralNetworksExecution_free(execution);
  OK(ANeuralNetworksBurst_create(compilation, &burst));
  OK(ANeuralNetworksExecution_create(compilation, &execution));
  if (set_arguments(execution, a, b, out, sizeof(out))) return 1;
  OK(ANeuralNetworksExecution_burstCompute(execution, burst));
  ANeuralNetworksExecution_free(execution);
  ANeuralNetworksBurst_free(burst);

  /* Fenced, waiting for an eventfd standing in for a sync fence. */
  efd = eventfd(1, 0);
  if (efd < 0) return 1;
  OK(ANeuralNetworksEvent_createFromSyncFenceFd(efd, &fence));
  close(efd);
  OK(ANeuralNetworksExecution_create(compilation, &execution));
  if (set_arguments(execution, a, b, out, sizeof(out))) return 1;
  OK(ANeuralNetworksExecution_startComputeWithDependencies(
      execution, (const ANeuralNetworksEvent* const*)&fence, 1, 0, &event));
  OK(ANeuralNetworksEvent_wait(event));
  ANeuralNetworksEvent_free(event);
  ANeuralNetworksEvent_free(fence);
  ANeuralNetworksExecution_free(execution);
  return out[0] == 4.f && out[1] == 6.f ? 0 : 1;
}

static int dynamic_shapes(void) {
  static const uint32_t unknown[1] = {0};
  const float a[2] = {1.f, 2.f};
  float out[2] = {0.f, 0.f};
  uint32_t rank = 0;
  ANeuralNetworksModel* model = NULL;
  ANeuralNetworksCompilation* compilation = NULL;
  ANeuralNetworksExecution* execution = NULL;
  if (build_model(&model, unknown)) return 1;
  OK(ANeuralNetworksCompilation_create(model, &compilation));
  OK(ANeuralNetworksCompilation_finish(compilation));
  OK(ANeuralNetworksExecution_create(compilation, &execution));
  if (set_arguments(execution, a, a, out, sizeof(float))) return 1;
  EXPECT(ANeuralNetworksExecution_compute(execution), ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE);
  EXPECT(ANeuralNetworksExecution_getOutputOperandRank(execution, 0, &rank),
         ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE);
  ANeuralNetworksExecution_free(execution);
  OK(ANeuralNetworksExecution_create(compilation, &execution));
  if (set_arguments(execution, a, a, out, sizeof(out))) return 1;
  OK(ANeuralNetworksExecution_compute(execution));
  ANeuralNetworksExecution_free(execution);
  ANeuralNetworksCompilation_free(compilation);
  ANeuralNetworksModel_free(model);
  return rank == 1 && out[1] == 4.f ? 0 : 1;
}

static int memories(ANeuralNetworksCompilation* compilation) {
  ANeuralNetworksMemory* fd_memory = NULL;
  ANeuralNetworksMemory* device_memory = NULL;
  ANeuralNetworksMemoryDesc* desc = NULL;
  int fd = memfd_create("api_tour", 0);
  if (fd < 0 || ftruncate(fd, 8) != 0) return 1;
  OK(ANeuralNetworksMemory_createFromFd(8, PROT_READ | PROT_WRITE, fd, 0, &fd_memory));
  EXPECT(ANeuralNetworksMemory_createFromFd(0, PROT_READ, fd, 0, &device_memory),
         ANEURALNETWORKS_BAD_DATA);
  close(fd);
  OK(ANeuralNetworksMemoryDesc_create(&desc));
  OK(ANeuralNetworksMemoryDesc_addInputRole(desc, compilation, 0, 1.f));
  EXPECT(ANeuralNetworksMemoryDesc_addInputRole(desc, compilation, 0, 1.f),
         ANEURALNETWORKS_BAD_DATA);
  OK(ANeuralNetworksMemoryDesc_finish(desc));
  OK(ANeuralNetworksMemory_createFromDesc(desc, &device_memory));
  ANeuralNetworksMemoryDesc_free(desc);
  EXPECT(ANeuralNetworksMemory_copy(device_memory, fd_memory), ANEURALNETWORKS_BAD_DATA);
  OK(ANeuralNetworksMemory_copy(fd_memory, device_memory));
  OK(ANeuralNetworksMemory_copy(device_memory, fd_memory));
  ANeuralNetworksMemory_free(device_memory);
  ANeuralNetworksMemory_free(fd_memory);
  return 0;
}

int main(int argc, char** argv) {
  ANeuralNetworksModel* model = NULL;
  ANeuralNetworksCompilation* compilation = NULL;
  ANeuralNetworksCompilation* cached = NULL;
  if (argc != 2) return 1;
  if (build_model(&model, NULL)) return 1;
  if (compile(model, argv[1], &compilation)) return 1;
  if (compile(model, argv[1], &cached)) return 1; /* a cache hit */
  if (executions(compilation) || executions(cached)) return 1;
  if (dynamic_shapes()) return 1;
  if (memories(compilation)) return 1;
  ANeuralNetworksCompilation_free(cached);
  ANeuralNetworksCompilation_free(compilation);
  ANeuralNetworksModel_free(model);
  puts("ok");
  return 0;
}
