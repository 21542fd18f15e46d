// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the mock NNAPI's model-building, compilation and execution surface.
//
// The fuzz input is a program: each step takes an opcode byte and its arguments from the input
// (FuzzedDataProvider) and makes one NNAPI call on a model, its compilation or an execution:
// addOperand (every operand type and a few invalid codes, rank 0-4, small, zero or huge
// dimensions, quantisation parameters), setOperandValue (with the exact size, a wrong size or
// NULL), setOperandSymmPerChannelQuantParams, addOperation (every operation code and a few invalid
// ones, operand lists drawn from the operands so far), identifyInputsAndOutputs,
// relaxComputationFloat32toFloat16, finish, getSupportedOperationsForDevices, compilation
// create/setPreference/setPriority/finish, and executions with input and output buffers sized
// from the operands (or not), compute and the output-shape queries. Everything is freed at the
// end of each input, and the mock's live-object counter must then be zero.
//
// The oracle is the sanitizers (ASan + UBSan), libFuzzer's crash/timeout/OOM detection, every
// call returning a result code Android defines (0..14), and no object leaking. Build and run:
// scripts/run_libfuzzer.sh (docs/reliability.md).
#include <android/NeuralNetworks.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <mock_nnapi/mock_nnapi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace {

constexpr size_t kMaxSteps = 96;
constexpr size_t kMaxOperands = 64;
constexpr size_t kMaxBufferBytes = 1 << 16;

void CheckCode(int code, const char* call) {
  if (code < ANEURALNETWORKS_NO_ERROR || code > ANEURALNETWORKS_DEAD_OBJECT) {
    std::fprintf(stderr, "%s returned %d, not an NNAPI result code\n", call, code);
    std::abort();
  }
}

#define CALL(expr) CheckCode((expr), #expr)

struct Operand {
  int32_t type;
  std::vector<uint32_t> dims;
  bool scalar;
};

size_t ElementBytes(int32_t type) {
  switch (type) {
    case ANEURALNETWORKS_BOOL:
    case ANEURALNETWORKS_TENSOR_BOOL8:
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
    case ANEURALNETWORKS_TENSOR_QUANT8_SYMM:
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
    case ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL:
      return 1;
    case ANEURALNETWORKS_FLOAT16:
    case ANEURALNETWORKS_TENSOR_FLOAT16:
    case ANEURALNETWORKS_TENSOR_QUANT16_SYMM:
    case ANEURALNETWORKS_TENSOR_QUANT16_ASYMM:
      return 2;
    default:
      return 4;
  }
}

// Bytes of a fully specified operand, or 0 when a dimension is unknown (or it is too large for
// the harness to allocate).
size_t OperandBytes(const Operand& operand) {
  size_t bytes = ElementBytes(operand.type);
  for (uint32_t d : operand.dims) {
    if (d == 0 || d > kMaxBufferBytes) return 0;
    bytes *= d;
    if (bytes > kMaxBufferBytes) return 0;
  }
  return bytes;
}

class Program {
 public:
  explicit Program(FuzzedDataProvider& data) : data_(data) {}

  ~Program() {
    for (ANeuralNetworksExecution* execution : executions_)
      ANeuralNetworksExecution_free(execution);
    for (ANeuralNetworksCompilation* compilation : compilations_) {
      ANeuralNetworksCompilation_free(compilation);
    }
    ANeuralNetworksModel_free(model_);
  }

  void Run() {
    if (ANeuralNetworksModel_create(&model_) != ANEURALNETWORKS_NO_ERROR) return;
    for (size_t step = 0; step < kMaxSteps && data_.remaining_bytes() > 0; ++step) {
      switch (data_.ConsumeIntegralInRange<uint8_t>(0, 15)) {
        case 0:
        case 1:
        case 2:
          AddOperand();
          break;
        case 3:
        case 4:
          SetValue();
          break;
        case 5:
        case 6:
          AddOperation();
          break;
        case 7:
          Identify();
          break;
        case 8:
          CALL(ANeuralNetworksModel_finish(model_));
          break;
        case 9:
          CALL(ANeuralNetworksModel_relaxComputationFloat32toFloat16(model_, data_.ConsumeBool()));
          break;
        case 10:
          SetChannelQuant();
          break;
        case 11:
          Compile();
          break;
        case 12:
          Execute();
          break;
        case 13:
          Supported();
          break;
        case 14:
        case 15:
          AddOperationWithNewOperands();
          break;
      }
    }
    // Most programs should reach an execution: finish what the steps built (with the model
    // inputs and outputs the new-operand operations made, unless the program chose its own).
    if (!identified_ && (!auto_inputs_.empty() || !auto_outputs_.empty())) {
      inputs_ = auto_inputs_;
      outputs_ = auto_outputs_;
      CALL(ANeuralNetworksModel_identifyInputsAndOutputs(
          model_, static_cast<uint32_t>(inputs_.size()), inputs_.empty() ? nullptr : inputs_.data(),
          static_cast<uint32_t>(outputs_.size()), outputs_.empty() ? nullptr : outputs_.data()));
    }
    CALL(ANeuralNetworksModel_finish(model_));
    Compile();
    Execute();
  }

 private:
  uint32_t Dimension() {
    switch (data_.ConsumeIntegralInRange<uint8_t>(0, 15)) {
      case 0:
        return 0;  // unknown
      case 1:
        return data_.ConsumeIntegral<uint32_t>();  // anything, huge included
      default:
        return data_.ConsumeIntegralInRange<uint32_t>(1, 6);
    }
  }

  int32_t OperandType() {
    const uint8_t pick = data_.ConsumeIntegralInRange<uint8_t>(0, 20);
    if (pick <= 15) return pick;  // FLOAT32 .. MODEL
    // Frequent types again, then invalid codes.
    const int32_t more[] = {ANEURALNETWORKS_TENSOR_FLOAT32, ANEURALNETWORKS_INT32,
                            ANEURALNETWORKS_TENSOR_INT32, -1, 10000};
    return more[pick - 16];
  }

  void AddOperand() {
    if (operands_.size() >= kMaxOperands) return;
    Operand operand;
    operand.type = OperandType();
    operand.scalar =
        operand.type == ANEURALNETWORKS_FLOAT32 || operand.type == ANEURALNETWORKS_INT32 ||
        operand.type == ANEURALNETWORKS_UINT32 || operand.type == ANEURALNETWORKS_BOOL ||
        operand.type == ANEURALNETWORKS_FLOAT16 || operand.type == 15;
    const uint8_t rank =
        operand.scalar && data_.ConsumeBool() ? 0 : data_.ConsumeIntegralInRange<uint8_t>(0, 4);
    for (uint8_t i = 0; i < rank; ++i) operand.dims.push_back(Dimension());
    ANeuralNetworksOperandType type{};
    type.type = operand.type;
    type.dimensionCount = rank;
    type.dimensions = rank == 0 ? nullptr : operand.dims.data();
    const float scales[] = {0.f, 0.5f, 0.125f, 1.f / 256, -1.f, 1e-30f};
    type.scale = scales[data_.ConsumeIntegralInRange<uint8_t>(0, 5)];
    if (IsQuantized(operand.type) && type.scale == 0.f) type.scale = 0.25f;
    type.zeroPoint = data_.ConsumeBool() ? 0 : data_.ConsumeIntegralInRange<int32_t>(-130, 300);
    if (ANeuralNetworksModel_addOperand(model_, &type) == ANEURALNETWORKS_NO_ERROR) {
      operands_.push_back(operand);
    }
  }

  static bool IsQuantized(int32_t type) {
    return type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM ||
           type == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED ||
           type == ANEURALNETWORKS_TENSOR_QUANT8_SYMM ||
           type == ANEURALNETWORKS_TENSOR_QUANT16_ASYMM ||
           type == ANEURALNETWORKS_TENSOR_QUANT16_SYMM;
  }

  int32_t OperandIndex() {
    if (operands_.empty() || data_.ConsumeIntegralInRange<uint8_t>(0, 31) == 0) {
      return data_.ConsumeIntegralInRange<int32_t>(-1, 70);
    }
    return data_.ConsumeIntegralInRange<int32_t>(0, static_cast<int32_t>(operands_.size()) - 1);
  }

  // Bytes for a value: small integers most of the time (they make valid axes, sizes, codes).
  std::vector<uint8_t> Value(size_t bytes, int32_t type) {
    std::vector<uint8_t> value(bytes);
    if (data_.ConsumeBool()) {
      const size_t elements = bytes / ElementBytes(type);
      for (size_t i = 0; i < elements; ++i) {
        const int32_t small = data_.ConsumeIntegralInRange<int32_t>(-2, 5);
        if (type == ANEURALNETWORKS_FLOAT32 || type == ANEURALNETWORKS_TENSOR_FLOAT32) {
          const float f = static_cast<float>(small) * 0.5f;
          std::memcpy(&value[i * 4], &f, 4);
        } else {
          std::memcpy(&value[i * ElementBytes(type)], &small, ElementBytes(type));
        }
      }
    } else {
      const std::vector<uint8_t> raw = data_.ConsumeBytes<uint8_t>(bytes);
      std::copy(raw.begin(), raw.end(), value.begin());
    }
    return value;
  }

  // Values over 128 bytes are only referenced by the model until it is finished (the NDK's
  // contract), so every value lives as long as the program.
  const std::vector<uint8_t>& KeepValue(std::vector<uint8_t> value) {
    values_.push_back(std::move(value));
    return values_.back();
  }

  void SetValue() {
    const int32_t index = OperandIndex();
    if (data_.ConsumeIntegralInRange<uint8_t>(0, 7) == 0) {
      CALL(ANeuralNetworksModel_setOperandValue(model_, index, nullptr, 0));  // omitted
      return;
    }
    size_t bytes = 4;
    int32_t type = ANEURALNETWORKS_INT32;
    if (index >= 0 && static_cast<size_t>(index) < operands_.size()) {
      const Operand& operand = operands_[index];
      type = operand.type;
      bytes = operand.dims.empty() ? ElementBytes(type) : OperandBytes(operand);
      if (bytes == 0) bytes = data_.ConsumeIntegralInRange<size_t>(1, 64);
    }
    if (data_.ConsumeIntegralInRange<uint8_t>(0, 15) == 0) {
      bytes = data_.ConsumeIntegralInRange<size_t>(0, 256);  // a wrong size
    }
    const std::vector<uint8_t>& value = KeepValue(Value(bytes, type));
    CALL(ANeuralNetworksModel_setOperandValue(model_, index, value.empty() ? nullptr : value.data(),
                                              value.size()));
  }

  void SetChannelQuant() {
    ANeuralNetworksSymmPerChannelQuantParams params{};
    std::vector<float> scales(data_.ConsumeIntegralInRange<size_t>(0, 8), 0.5f);
    if (!scales.empty() && data_.ConsumeBool()) scales[0] = -1.f;
    params.channelDim = data_.ConsumeIntegralInRange<uint32_t>(0, 4);
    params.scaleCount = static_cast<uint32_t>(scales.size());
    params.scales = scales.empty() ? nullptr : scales.data();
    CALL(ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(model_, OperandIndex(), &params));
  }

  std::vector<uint32_t> IndexList(size_t max) {
    std::vector<uint32_t> list(data_.ConsumeIntegralInRange<size_t>(0, max));
    for (uint32_t& index : list) index = static_cast<uint32_t>(OperandIndex());
    return list;
  }

  void AddOperation() {
    int32_t type = data_.ConsumeIntegralInRange<int32_t>(0, 106);
    if (type == 106) type = data_.ConsumeBool() ? -1 : 10000;  // invalid, OEM_OPERATION
    const std::vector<uint32_t> inputs = IndexList(16);
    const std::vector<uint32_t> outputs = IndexList(4);
    CALL(ANeuralNetworksModel_addOperation(model_, type, static_cast<uint32_t>(inputs.size()),
                                           inputs.empty() ? nullptr : inputs.data(),
                                           static_cast<uint32_t>(outputs.size()),
                                           outputs.empty() ? nullptr : outputs.data()));
  }

  // Adds an operand; returns its index, or -1 when refused.
  int32_t NewOperand(int32_t type, const std::vector<uint32_t>& dims, float scale,
                     int32_t zero_point) {
    if (operands_.size() >= kMaxOperands) return -1;
    ANeuralNetworksOperandType operand_type{};
    operand_type.type = type;
    operand_type.dimensionCount = static_cast<uint32_t>(dims.size());
    operand_type.dimensions = dims.empty() ? nullptr : dims.data();
    operand_type.scale = scale;
    operand_type.zeroPoint = zero_point;
    if (ANeuralNetworksModel_addOperand(model_, &operand_type) != ANEURALNETWORKS_NO_ERROR) {
      return -1;
    }
    operands_.push_back({type, dims, dims.empty()});
    return static_cast<int32_t>(operands_.size()) - 1;
  }

  // An operation whose operands are made for it, each input chosen by a kind byte: a model input
  // tensor of the operation's main type and shape, an INT32, FLOAT32 or BOOL constant scalar, an
  // INT32 constant vector, an omitted operand, or an existing operand (often the previous
  // operation's output, which chains operations). Outputs are new tensors of the main type with
  // unknown or the main dimensions. Valid operations, whose kernels run, are far likelier so.
  void AddOperationWithNewOperands() {
    const int32_t operation = data_.ConsumeIntegralInRange<int32_t>(0, 105);
    const int32_t main_types[] = {
        ANEURALNETWORKS_TENSOR_FLOAT32,       ANEURALNETWORKS_TENSOR_FLOAT16,
        ANEURALNETWORKS_TENSOR_QUANT8_ASYMM,  ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED,
        ANEURALNETWORKS_TENSOR_INT32,         ANEURALNETWORKS_TENSOR_BOOL8,
        ANEURALNETWORKS_TENSOR_QUANT16_ASYMM, ANEURALNETWORKS_TENSOR_QUANT16_SYMM};
    const int32_t main = main_types[data_.ConsumeIntegralInRange<uint8_t>(0, 7)];
    const float scale = IsQuantized(main) ? 0.25f : 0.f;
    const int32_t zero_point =
        main == ANEURALNETWORKS_TENSOR_QUANT8_ASYMM || main == ANEURALNETWORKS_TENSOR_QUANT16_ASYMM
            ? 3
            : 0;
    std::vector<uint32_t> shape(data_.ConsumeIntegralInRange<uint8_t>(1, 4));
    for (uint32_t& d : shape) d = data_.ConsumeIntegralInRange<uint32_t>(1, 4);
    std::vector<uint32_t> inputs(data_.ConsumeIntegralInRange<size_t>(1, 12));
    for (uint32_t& input : inputs) {
      int32_t index = -1;
      switch (data_.ConsumeIntegralInRange<uint8_t>(0, 8)) {
        case 0:
        case 1:
          index = NewOperand(main, shape, scale, zero_point);
          if (index >= 0) auto_inputs_.push_back(static_cast<uint32_t>(index));
          break;
        case 2:
        case 3:
          index = NewConstant(ANEURALNETWORKS_INT32, {});
          break;
        case 4:
          index = NewConstant(ANEURALNETWORKS_FLOAT32, {});
          break;
        case 5:
          index = NewConstant(ANEURALNETWORKS_BOOL, {});
          break;
        case 6:
          index = NewConstant(ANEURALNETWORKS_TENSOR_INT32,
                              {data_.ConsumeIntegralInRange<uint32_t>(1, 4)});
          break;
        case 7:
          index = NewOperand(main, shape, scale, zero_point);
          if (index >= 0) CALL(ANeuralNetworksModel_setOperandValue(model_, index, nullptr, 0));
          break;
        default:
          index = last_output_ >= 0 && data_.ConsumeBool() ? last_output_ : OperandIndex();
          break;
      }
      input = static_cast<uint32_t>(index);
    }
    std::vector<uint32_t> outputs(data_.ConsumeIntegralInRange<size_t>(1, 4));
    for (uint32_t& output : outputs) {
      const std::vector<uint32_t> dims =
          data_.ConsumeBool() ? shape : std::vector<uint32_t>(shape.size(), 0);
      output = static_cast<uint32_t>(NewOperand(main, dims, scale, zero_point));
    }
    const int code = ANeuralNetworksModel_addOperation(
        model_, operation, static_cast<uint32_t>(inputs.size()), inputs.data(),
        static_cast<uint32_t>(outputs.size()), outputs.data());
    CheckCode(code, "ANeuralNetworksModel_addOperation");
    if (code == ANEURALNETWORKS_NO_ERROR) {
      // The previous operation's outputs are consumed (chained) or become model outputs.
      for (uint32_t output : outputs) auto_outputs_.push_back(output);
      last_output_ = static_cast<int32_t>(outputs[0]);
    }
  }

  int32_t NewConstant(int32_t type, const std::vector<uint32_t>& dims) {
    const int32_t index = NewOperand(type, dims, 0.f, 0);
    if (index < 0) return index;
    const size_t elements = dims.empty() ? 1 : dims[0];
    const std::vector<uint8_t>& value = KeepValue(Value(elements * ElementBytes(type), type));
    CALL(ANeuralNetworksModel_setOperandValue(model_, index, value.data(), value.size()));
    return index;
  }

  void Identify() {
    identified_ = true;
    inputs_ = IndexList(6);
    outputs_ = IndexList(4);
    CALL(ANeuralNetworksModel_identifyInputsAndOutputs(
        model_, static_cast<uint32_t>(inputs_.size()), inputs_.empty() ? nullptr : inputs_.data(),
        static_cast<uint32_t>(outputs_.size()), outputs_.empty() ? nullptr : outputs_.data()));
  }

  void Supported() {
    uint32_t count = 0;
    if (ANeuralNetworks_getDeviceCount(&count) != ANEURALNETWORKS_NO_ERROR || count == 0) return;
    ANeuralNetworksDevice* device = nullptr;
    CALL(ANeuralNetworks_getDevice(data_.ConsumeIntegralInRange<uint32_t>(0, count - 1), &device));
    if (device == nullptr) return;
    bool supported[256] = {};
    CALL(ANeuralNetworksModel_getSupportedOperationsForDevices(model_, &device, 1, supported));
  }

  void Compile() {
    if (compilations_.size() >= 2) return;
    ANeuralNetworksCompilation* compilation = nullptr;
    if (ANeuralNetworksCompilation_create(model_, &compilation) != ANEURALNETWORKS_NO_ERROR) {
      return;
    }
    compilations_.push_back(compilation);
    if (data_.ConsumeBool()) {
      CALL(ANeuralNetworksCompilation_setPreference(compilation,
                                                    data_.ConsumeIntegralInRange<int32_t>(-1, 3)));
    }
    if (data_.ConsumeBool()) {
      CALL(ANeuralNetworksCompilation_setPriority(compilation,
                                                  data_.ConsumeIntegralInRange<int32_t>(89, 112)));
    }
    if (ANeuralNetworksCompilation_finish(compilation) == ANEURALNETWORKS_NO_ERROR) {
      finished_ = compilation;
    }
  }

  // A buffer for model input or output `position`, sized from its operand when known.
  std::vector<uint8_t>& Buffer(int32_t operand, bool is_input) {
    size_t bytes = 0;
    int32_t type = ANEURALNETWORKS_TENSOR_FLOAT32;
    if (operand >= 0 && static_cast<size_t>(operand) < operands_.size()) {
      bytes = OperandBytes(operands_[operand]);
      type = operands_[operand].type;
    }
    if (bytes == 0 || data_.ConsumeIntegralInRange<uint8_t>(0, 15) == 0) {
      bytes = data_.ConsumeIntegralInRange<size_t>(1, 1024);
    }
    buffers_.push_back(is_input ? Value(bytes, type) : std::vector<uint8_t>(bytes));
    return buffers_.back();
  }

  void Execute() {
    if (finished_ == nullptr || executions_.size() >= 3) return;
    ANeuralNetworksExecution* execution = nullptr;
    if (ANeuralNetworksExecution_create(finished_, &execution) != ANEURALNETWORKS_NO_ERROR) return;
    executions_.push_back(execution);
    buffers_.reserve(buffers_.size() + inputs_.size() + outputs_.size() + 2);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      std::vector<uint8_t>& buffer = Buffer(static_cast<int32_t>(inputs_[i]), true);
      CALL(ANeuralNetworksExecution_setInput(execution, static_cast<int32_t>(i), nullptr,
                                             buffer.data(), buffer.size()));
    }
    for (size_t i = 0; i < outputs_.size(); ++i) {
      std::vector<uint8_t>& buffer = Buffer(static_cast<int32_t>(outputs_[i]), false);
      CALL(ANeuralNetworksExecution_setOutput(execution, static_cast<int32_t>(i), nullptr,
                                              buffer.data(), buffer.size()));
    }
    const int code = ANeuralNetworksExecution_compute(execution);
    CheckCode(code, "ANeuralNetworksExecution_compute");
    for (size_t i = 0; i < outputs_.size(); ++i) {
      uint32_t rank = 0;
      CALL(
          ANeuralNetworksExecution_getOutputOperandRank(execution, static_cast<int32_t>(i), &rank));
      uint32_t dims[8] = {};
      if (rank <= 8) {
        CALL(ANeuralNetworksExecution_getOutputOperandDimensions(execution, static_cast<int32_t>(i),
                                                                 dims));
      }
    }
  }

  FuzzedDataProvider& data_;
  ANeuralNetworksModel* model_ = nullptr;
  std::vector<Operand> operands_;
  std::vector<uint32_t> inputs_, outputs_;
  // What AddOperationWithNewOperands made: model inputs, operation outputs, the last output.
  std::vector<uint32_t> auto_inputs_, auto_outputs_;
  int32_t last_output_ = -1;
  bool identified_ = false;
  std::vector<ANeuralNetworksCompilation*> compilations_;
  ANeuralNetworksCompilation* finished_ = nullptr;
  std::vector<ANeuralNetworksExecution*> executions_;
  // Buffers outlive the executions that reference them (std::vector of vectors: reserved above,
  // and each inner buffer's storage does not move when the outer one grows).
  std::vector<std::vector<uint8_t>> buffers_;
  std::vector<std::vector<uint8_t>> values_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  {
    Program(provider).Run();
  }
  uint64_t live = 0;
  if (MockNnapi_getCounter("live_objects", &live) != 0 || live != 0) {
    std::fprintf(stderr, "%lld NNAPI objects still alive after freeing everything\n",
                 static_cast<long long>(live));
    std::abort();
  }
  return 0;
}
