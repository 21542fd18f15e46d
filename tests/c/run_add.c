// SPDX-License-Identifier: Apache-2.0
/*
 * A plain C NNAPI client: builds out = a + b (ADD of two [2, 2] float tensors), compiles it,
 * runs it and prints the result. Written only against the NDK API (android/NeuralNetworks.h),
 * so the same source builds against Android's libneuralnetworks.so.
 *
 * Exit status: 0 on success, 1 when an NNAPI call fails (the call and its code go to stderr),
 * 2 when the result is wrong.
 */
#include <android/NeuralNetworks.h>
#include <stdio.h>

#define CHECK(call)                                                                 \
  do {                                                                              \
    int code_ = (call);                                                             \
    if (code_ != ANEURALNETWORKS_NO_ERROR) {                                        \
      fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, code_); \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

static int run(float* out) {
  ANeuralNetworksModel* model = NULL;
  ANeuralNetworksCompilation* compilation = NULL;
  ANeuralNetworksExecution* execution = NULL;
  ANeuralNetworksEvent* event = NULL;
  const uint32_t dims[2] = {2, 2};
  const ANeuralNetworksOperandType tensor = {ANEURALNETWORKS_TENSOR_FLOAT32, 2, dims, 0.f, 0};
  const ANeuralNetworksOperandType scalar = {ANEURALNETWORKS_INT32, 0, NULL, 0.f, 0};
  const int32_t activation = ANEURALNETWORKS_FUSED_NONE;
  const uint32_t inputs[3] = {0, 1, 2};
  const uint32_t model_inputs[2] = {0, 1};
  const uint32_t outputs[1] = {3};
  const float a[4] = {1.f, 2.f, 3.f, 4.f};
  const float b[4] = {10.f, 20.f, 30.f, 40.f};
  int result = 1;

  CHECK(ANeuralNetworksModel_create(&model));
  CHECK(ANeuralNetworksModel_addOperand(model, &tensor));
  CHECK(ANeuralNetworksModel_addOperand(model, &tensor));
  CHECK(ANeuralNetworksModel_addOperand(model, &scalar));
  CHECK(ANeuralNetworksModel_addOperand(model, &tensor));
  CHECK(ANeuralNetworksModel_setOperandValue(model, 2, &activation, sizeof(activation)));
  CHECK(ANeuralNetworksModel_addOperation(model, ANEURALNETWORKS_ADD, 3, inputs, 1, outputs));
  CHECK(ANeuralNetworksModel_identifyInputsAndOutputs(model, 2, model_inputs, 1, outputs));
  CHECK(ANeuralNetworksModel_finish(model));

  CHECK(ANeuralNetworksCompilation_create(model, &compilation));
  CHECK(ANeuralNetworksCompilation_setPreference(compilation,
                                                 ANEURALNETWORKS_PREFER_FAST_SINGLE_ANSWER));
  CHECK(ANeuralNetworksCompilation_finish(compilation));

  CHECK(ANeuralNetworksExecution_create(compilation, &execution));
  CHECK(ANeuralNetworksExecution_setInput(execution, 0, NULL, a, sizeof(a)));
  CHECK(ANeuralNetworksExecution_setInput(execution, 1, NULL, b, sizeof(b)));
  CHECK(ANeuralNetworksExecution_setOutput(execution, 0, NULL, out, 4 * sizeof(float)));
  CHECK(ANeuralNetworksExecution_startCompute(execution, &event));
  CHECK(ANeuralNetworksEvent_wait(event));
  result = 0;

  ANeuralNetworksEvent_free(event);
  ANeuralNetworksExecution_free(execution);
  ANeuralNetworksCompilation_free(compilation);
  ANeuralNetworksModel_free(model);
  return result;
}

int main(void) {
  float out[4] = {0.f, 0.f, 0.f, 0.f};
  const float expected[4] = {11.f, 22.f, 33.f, 44.f};
  int i;
  if (run(out) != 0) return 1;
  printf("%g %g %g %g\n", out[0], out[1], out[2], out[3]);
  for (i = 0; i < 4; ++i) {
    if (out[i] != expected[i]) return 2;
  }
  return 0;
}
