// SPDX-License-Identifier: Apache-2.0
#include "nnapi_module.h"

#include <dlpack/dlpack.h>
#include <sys/stat.h>
#include <tvm/ffi/cast.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

#include "half.h"
#include "overlap.h"
#include "sha256.h"

namespace tvm_nnapi {

namespace ffi = tvm::ffi;

namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::ostringstream text;
  text << "(";
  for (size_t i = 0; i < shape.size(); ++i) text << (i ? ", " : "") << shape[i];
  text << ")";
  return text.str();
}

// The DLPack dtype that holds an NNAPI tensor type.
bool DTypeMatches(int32_t type, const DLDataType& dtype) {
  auto is = [&](uint8_t code, uint8_t bits) {
    return dtype.code == code && dtype.bits == bits && dtype.lanes == 1;
  };
  switch (type) {
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      return is(kDLFloat, 32);
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      return is(kDLFloat, 16);
    case ANEURALNETWORKS_TENSOR_INT32:
      return is(kDLInt, 32);
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM:
      return is(kDLUInt, 8);
    case ANEURALNETWORKS_TENSOR_QUANT8_ASYMM_SIGNED:
    case ANEURALNETWORKS_TENSOR_QUANT8_SYMM:
    case ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL:  // int8 weights passed as inputs
      return is(kDLInt, 8);
    case ANEURALNETWORKS_TENSOR_BOOL8:
      return is(kDLBool, 8) || is(kDLUInt, 1) || is(kDLUInt, 8);
    default:
      return false;
  }
}

bool IsCompact(const DLTensor& tensor) {
  if (tensor.strides == nullptr) return true;
  int64_t expected = 1;
  for (int i = tensor.ndim - 1; i >= 0; --i) {
    if (tensor.shape[i] != 1 && tensor.strides[i] != expected) return false;
    expected *= tensor.shape[i];
  }
  return true;
}

template <typename T>
void AppendBytes(std::vector<uint8_t>* out, T value) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
  out->insert(out->end(), bytes, bytes + sizeof(T));
}

}  // namespace

size_t TensorBytes(const DLTensor& tensor) {
  size_t bytes = (tensor.dtype.bits * tensor.dtype.lanes + 7) / 8;
  for (int d = 0; d < tensor.ndim; ++d) bytes *= static_cast<size_t>(tensor.shape[d]);
  return bytes;
}

// Creates the NNAPI cache directory (owner-only, 0700) if it does not exist, and checks an
// existing one: it must be a real directory (a symbolic link is refused, not followed), owned by
// this user and writable by nobody else, since whoever can write there can plant files or links
// under the names the NNAPI driver will open. (The driver names its files after the hashed
// token only and opens them without following links; see the mock's compilation.h.)
void PrepareCacheDirectory(const std::string& path) {
  struct stat info;
  if (lstat(path.c_str(), &info) != 0) {
    // Create missing parents as well (mkdir -p), each owner-only.
    for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
      const std::string prefix = path.substr(0, slash);
      if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
        TVM_FFI_THROW(RuntimeError)
            << "cannot create NNAPI cache directory '" << prefix << "': " << std::strerror(errno);
      }
      if (slash == std::string::npos) break;
    }
    if (lstat(path.c_str(), &info) != 0) {
      TVM_FFI_THROW(RuntimeError) << "cannot inspect NNAPI cache directory '" << path
                                  << "': " << std::strerror(errno);
    }
  }
  if (S_ISLNK(info.st_mode) || !S_ISDIR(info.st_mode)) {
    TVM_FFI_THROW(ValueError) << "NNAPI cache directory '" << path
                              << "' is not a directory (symbolic links are refused)";
  }
  if (info.st_uid != geteuid()) {
    TVM_FFI_THROW(ValueError) << "NNAPI cache directory '" << path << "' is owned by user "
                              << info.st_uid << ", not by this process's user " << geteuid();
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(info.st_mode & 07777));
    TVM_FFI_THROW(ValueError) << "NNAPI cache directory '" << path << "' has mode " << mode
                              << ": others can write there; use an owner-only directory "
                              << "(chmod 700)";
  }
}

namespace {

// Prints `message` on stderr the first time `key` is seen in this process.
void WarnOnce(const std::string& key, const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string> said;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!said.insert(key).second) return;
  }
  std::fprintf(stderr, "tvm_nnapi: %s\n", message.c_str());
}

// "'<library>' has no <function> (NNAPI feature level N, Android V)": for what an older NNAPI
// lacks.
std::string Lacks(const Nnapi& nnapi, const char* function, int level, const char* android) {
  return "'" + nnapi.library_path + "' has no " + function + " (NNAPI feature level " +
         std::to_string(level) + ", Android " + android + ")";
}

std::string DeviceName(const Nnapi& nnapi, const ANeuralNetworksDevice* device) {
  const char* name = nullptr;
  if (nnapi.ANeuralNetworksDevice_getName == nullptr ||
      nnapi.ANeuralNetworksDevice_getName(device, &name) != ANEURALNETWORKS_NO_ERROR ||
      name == nullptr) {
    return "(unnamed device)";
  }
  return Printable(name);
}

// The devices RuntimeConfig::devices and exclude_cpu choose, for
// ANeuralNetworksCompilation_createForDevices; empty when NNAPI is to choose.
std::vector<ANeuralNetworksDevice*> ChosenDevices(const Nnapi& nnapi, const RuntimeConfig& config,
                                                  const std::string& symbol) {
  std::vector<ANeuralNetworksDevice*> chosen;
  if (config.devices.empty() && !config.exclude_cpu) return chosen;
  // An NNAPI without the device functions (Android 9 and older) compiles for its own choice of
  // devices: the only set it has.
  for (const auto& [function, present] :
       {std::pair<const char*, bool>{"ANeuralNetworks_getDeviceCount",
                                     nnapi.ANeuralNetworks_getDeviceCount != nullptr},
        {"ANeuralNetworks_getDevice", nnapi.ANeuralNetworks_getDevice != nullptr},
        {"ANeuralNetworksDevice_getName", nnapi.ANeuralNetworksDevice_getName != nullptr},
        {"ANeuralNetworksDevice_getType", nnapi.ANeuralNetworksDevice_getType != nullptr},
        {"ANeuralNetworksCompilation_createForDevices",
         nnapi.ANeuralNetworksCompilation_createForDevices != nullptr}}) {
    if (!present) {
      WarnOnce("devices", Lacks(nnapi, function, 3, "10") + ": the devices and exclude_cpu " +
                              "options are ignored and NNAPI chooses the devices");
      return chosen;
    }
  }
  std::vector<std::string> wanted;
  std::stringstream list(config.devices);
  for (std::string name; std::getline(list, name, ',');) {
    if (!name.empty()) wanted.push_back(name);
  }
  uint32_t count = 0;
  nnapi.ANeuralNetworks_getDeviceCount(&count);
  std::vector<std::string> present;
  std::vector<std::string> found;
  for (uint32_t index = 0; index < count; ++index) {
    ANeuralNetworksDevice* device = nullptr;
    const char* name = nullptr;
    int32_t type = 0;
    if (nnapi.ANeuralNetworks_getDevice(index, &device) != ANEURALNETWORKS_NO_ERROR ||
        nnapi.ANeuralNetworksDevice_getName(device, &name) != ANEURALNETWORKS_NO_ERROR ||
        nnapi.ANeuralNetworksDevice_getType(device, &type) != ANEURALNETWORKS_NO_ERROR) {
      continue;
    }
    present.emplace_back(name);
    const bool named =
        wanted.empty() || std::find(wanted.begin(), wanted.end(), name) != wanted.end();
    if (named) found.emplace_back(name);
    if (named && !(config.exclude_cpu && type == ANEURALNETWORKS_DEVICE_CPU)) {
      chosen.push_back(device);
    }
  }
  std::string missing;
  for (const std::string& name : wanted) {
    if (std::find(found.begin(), found.end(), name) == found.end()) {
      missing += (missing.empty() ? "" : ", ") + name;
    }
  }
  if (!missing.empty() || chosen.empty()) {
    std::string names;
    for (const std::string& name : present) names += (names.empty() ? "" : ", ") + name;
    TVM_FFI_THROW(ValueError) << "NNAPI subgraph '" << symbol << "': "
                              << (missing.empty() ? "no NNAPI device is left after excluding CPUs"
                                                  : "no NNAPI device named " + missing)
                              << " (devices: " << names << ")";
  }
  return chosen;
}

}  // namespace

// ---- CompiledModel ---------------------------------------------------------------------------

void CompiledModel::Check(int code, const char* function, const std::string& what) const {
  if (code == ANEURALNETWORKS_NO_ERROR) return;
  std::ostringstream message;
  message << SubgraphPrefix(graph_.symbol) << function;
  if (!what.empty()) message << " for " << what;
  message << " returned " << ResultCodeString(code);
  if (nnapi_.MockNnapi_getLastError != nullptr) {
    const char* detail = nnapi_.MockNnapi_getLastError();
    if (detail != nullptr && detail[0] != '\0') message << " [mock_nnapi: " << detail << "]";
  }
  TVM_FFI_THROW(RuntimeError) << message.str();
}

CompiledModel::CompiledModel(const Nnapi& nnapi, const Graph& graph, ConstantBytes constants,
                             const std::vector<int64_t>& binding, const RuntimeConfig& config,
                             const std::array<uint8_t, 32>* cache_token, size_t device_set)
    : nnapi_(nnapi), graph_(graph), device_set_(device_set) {
  const auto start = std::chrono::steady_clock::now();
  try {
    Build(constants, binding, config, cache_token);
  } catch (...) {
    Release();  // a constructor that throws runs no destructor: free what was created
    throw;
  }
  compile_time_ns_ =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
}

namespace {

// The operand's concrete dimensions as NNAPI's uint32s; `bytes` gets its size. NNAPI dimensions
// are uint32 and an operand holds at most 4 GiB (Android's limit): larger shapes are refused
// here with the operand's name rather than truncated.
std::vector<uint32_t> NnapiDimensions(const Graph& graph, uint32_t id,
                                      const std::vector<int64_t>& binding, uint64_t* bytes) {
  const GraphOperand& operand = graph.operands[id];
  std::vector<uint32_t> dims;
  *bytes = OperandElementSize(operand.type);
  for (int64_t d : graph.ConcreteShape(id, binding)) {
    if (d > int64_t{std::numeric_limits<uint32_t>::max()} ||
        (d != 0 && *bytes > std::numeric_limits<uint32_t>::max() / static_cast<uint64_t>(d))) {
      TVM_FFI_THROW(ValueError) << SubgraphPrefix(graph.symbol) << operand.name
                                << " would need more than 4 GiB (dimension " << d
                                << "), the most an NNAPI operand can hold";
    }
    *bytes *= static_cast<uint64_t>(d);
    dims.push_back(static_cast<uint32_t>(d));
  }
  return dims;
}

// The bytes of an inline value (kValue) under a binding, in the operand's NNAPI type.
std::vector<uint8_t> InlineValueBytes(const Graph& graph, const GraphOperand& operand,
                                      const std::vector<int64_t>& binding) {
  std::vector<uint8_t> bytes;
  switch (operand.type) {
    case ANEURALNETWORKS_FLOAT32:
    case ANEURALNETWORKS_TENSOR_FLOAT32:
      for (double v : operand.float_values) AppendBytes(&bytes, static_cast<float>(v));
      break;
    case ANEURALNETWORKS_FLOAT16:
    case ANEURALNETWORKS_TENSOR_FLOAT16:
      for (double v : operand.float_values) {
        AppendBytes(&bytes, nnapi_common::FloatToHalfBits(static_cast<float>(v)));
      }
      break;
    case ANEURALNETWORKS_BOOL:
    case ANEURALNETWORKS_TENSOR_BOOL8:
      for (const DimExpr& v : operand.int_values) {
        AppendBytes(&bytes, static_cast<uint8_t>(graph.EvaluateFor(v, binding, operand.name) != 0));
      }
      break;
    case ANEURALNETWORKS_INT32:
    case ANEURALNETWORKS_UINT32:
    case ANEURALNETWORKS_TENSOR_INT32:
      for (const DimExpr& v : operand.int_values) {
        // A value that does not fit the operand's 32 bits is an error, not a wrap-around.
        const int64_t value = graph.EvaluateFor(v, binding, operand.name);
        const bool is_unsigned = operand.type == ANEURALNETWORKS_UINT32;
        const int64_t low = is_unsigned ? 0 : std::numeric_limits<int32_t>::min();
        const int64_t high = is_unsigned ? std::numeric_limits<uint32_t>::max()
                                         : std::numeric_limits<int32_t>::max();
        if (value < low || value > high) {
          TVM_FFI_THROW(ValueError) << SubgraphPrefix(graph.symbol) << operand.name << " value "
                                    << value << " (" << v.ToString(graph.symbols)
                                    << ") does not fit in " << (is_unsigned ? "uint32" : "int32");
        }
        AppendBytes(&bytes, static_cast<uint32_t>(value));
      }
      break;
    default:
      TVM_FFI_THROW(ValueError) << SubgraphPrefix(graph.symbol) << operand.name
                                << " cannot hold an inline value";
  }
  return bytes;
}

}  // namespace

// Build: the model (operands with their values, operations, interface), then its compilation.
void CompiledModel::Build(ConstantBytes constants, const std::vector<int64_t>& binding,
                          const RuntimeConfig& config, const std::array<uint8_t, 32>* cache_token) {
  BuildModel(constants, binding);
  Compile(config, cache_token);
}

void CompiledModel::BuildModel(ConstantBytes constants, const std::vector<int64_t>& binding) {
  Check(nnapi_.ANeuralNetworksModel_create(&model_), "ANeuralNetworksModel_create", "");
  values_.reserve(graph_.operands.size());
  for (size_t id = 0; id < graph_.operands.size(); ++id) {
    AddOperand(static_cast<uint32_t>(id), constants, binding);
  }
  AddOperationsAndInterface();
  for (uint32_t id : graph_.inputs) input_shapes_.push_back(graph_.ConcreteShape(id, binding));
  for (uint32_t id : graph_.outputs) output_shapes_.push_back(graph_.ConcreteShape(id, binding));
}

CompiledModel::CompiledModel(const Nnapi& nnapi, const Graph& graph)
    : nnapi_(nnapi), graph_(graph) {}

std::unique_ptr<CompiledModel> CompiledModel::ModelOnly(const Nnapi& nnapi, const Graph& graph,
                                                        ConstantBytes constants,
                                                        const std::vector<int64_t>& binding) {
  std::unique_ptr<CompiledModel> model(new CompiledModel(nnapi, graph));
  try {
    model->BuildModel(constants, binding);
  } catch (...) {
    model->Release();
    throw;
  }
  return model;
}

std::vector<bool> CompiledModel::SupportedOperations(ANeuralNetworksDevice* device) const {
  if (nnapi_.ANeuralNetworksModel_getSupportedOperationsForDevices == nullptr) {
    TVM_FFI_THROW(RuntimeError) << SubgraphPrefix(graph_.symbol)
                                << "asking which operations a device supports needs NNAPI "
                                   "feature level 3 (Android 10)";
  }
  const size_t count = graph_.operations.size();
  std::unique_ptr<bool[]> supported(new bool[count == 0 ? 1 : count]());
  const ANeuralNetworksDevice* devices[] = {device};
  Check(nnapi_.ANeuralNetworksModel_getSupportedOperationsForDevices(model_, devices, 1,
                                                                     supported.get()),
        "ANeuralNetworksModel_getSupportedOperationsForDevices", "");
  return std::vector<bool>(supported.get(), supported.get() + count);
}

void CompiledModel::AddOperand(uint32_t id, ConstantBytes constants,
                               const std::vector<int64_t>& binding) {
  const GraphOperand& operand = graph_.operands[id];
  const int32_t index = static_cast<int32_t>(id);
  uint64_t bytes = 0;
  const std::vector<uint32_t> dims = NnapiDimensions(graph_, id, binding, &bytes);
  ANeuralNetworksOperandType type{operand.type, static_cast<uint32_t>(dims.size()),
                                  dims.empty() ? nullptr : dims.data(), operand.scale,
                                  operand.zero_point};
  if (operand.kind != GraphOperand::Kind::kConstant && operand.kind != GraphOperand::Kind::kValue) {
    estimated_bytes_ += static_cast<size_t>(bytes);
  }
  Check(nnapi_.ANeuralNetworksModel_addOperand(model_, &type), "ANeuralNetworksModel_addOperand",
        operand.name);
  if (operand.channel_dim.has_value()) {
    if (nnapi_.ANeuralNetworksModel_setOperandSymmPerChannelQuantParams == nullptr) {
      TVM_FFI_THROW(RuntimeError)
          << SubgraphPrefix(graph_.symbol) << operand.name
          << " needs per-channel quantisation, and "
          << Lacks(nnapi_, "ANeuralNetworksModel_setOperandSymmPerChannelQuantParams", 3, "10");
    }
    ANeuralNetworksSymmPerChannelQuantParams params{
        *operand.channel_dim, static_cast<uint32_t>(operand.channel_scales.size()),
        operand.channel_scales.data()};
    Check(nnapi_.ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(model_, index, &params),
          "ANeuralNetworksModel_setOperandSymmPerChannelQuantParams", operand.name);
  }
  switch (operand.kind) {
    case GraphOperand::Kind::kConstant:
      // Large values are referenced, not copied: the module keeps `constants` alive.
      Check(nnapi_.ANeuralNetworksModel_setOperandValue(
                model_, index, constants.data + operand.offset, operand.nbytes),
            "ANeuralNetworksModel_setOperandValue", operand.name);
      break;
    case GraphOperand::Kind::kValue:
      values_.push_back(InlineValueBytes(graph_, operand, binding));
      Check(nnapi_.ANeuralNetworksModel_setOperandValue(model_, index, values_.back().data(),
                                                        values_.back().size()),
            "ANeuralNetworksModel_setOperandValue", operand.name);
      break;
    case GraphOperand::Kind::kOmitted:
      Check(nnapi_.ANeuralNetworksModel_setOperandValue(model_, index, nullptr, 0),
            "ANeuralNetworksModel_setOperandValue", operand.name + " (omitted)");
      break;
    default:
      break;
  }
}

void CompiledModel::AddOperationsAndInterface() {
  const Graph& graph = graph_;
  for (const GraphOperation& operation : graph.operations) {
    Check(nnapi_.ANeuralNetworksModel_addOperation(
              model_, operation.type, static_cast<uint32_t>(operation.inputs.size()),
              operation.inputs.data(), static_cast<uint32_t>(operation.outputs.size()),
              operation.outputs.data()),
          "ANeuralNetworksModel_addOperation", graph.Describe(operation));
  }
  // NNAPI takes no null list, even an empty one; an empty input list is then refused as
  // BAD_DATA, which names the problem (the partition offloads nothing that reads only constants).
  static const uint32_t kNoInputs[1] = {0};
  Check(nnapi_.ANeuralNetworksModel_identifyInputsAndOutputs(
            model_, static_cast<uint32_t>(graph.inputs.size()),
            graph.inputs.empty() ? kNoInputs : graph.inputs.data(),
            static_cast<uint32_t>(graph.outputs.size()), graph.outputs.data()),
        "ANeuralNetworksModel_identifyInputsAndOutputs", "");
  if (graph.relax_fp32_to_fp16 &&
      nnapi_.ANeuralNetworksModel_relaxComputationFloat32toFloat16 == nullptr) {
    WarnOnce("relax",
             Lacks(nnapi_, "ANeuralNetworksModel_relaxComputationFloat32toFloat16", 2, "9") +
                 ": subgraphs partitioned with relax_fp32_to_fp16 compute in float32");
  }
  if (graph.relax_fp32_to_fp16 && nnapi_.ANeuralNetworksModel_relaxComputationFloat32toFloat16) {
    Check(nnapi_.ANeuralNetworksModel_relaxComputationFloat32toFloat16(model_, true),
          "ANeuralNetworksModel_relaxComputationFloat32toFloat16", "");
  }
  Check(nnapi_.ANeuralNetworksModel_finish(model_), "ANeuralNetworksModel_finish", "");
}

void CompiledModel::Compile(const RuntimeConfig& config,
                            const std::array<uint8_t, 32>* cache_token) {
  const Nnapi& nnapi = nnapi_;
  const std::vector<ANeuralNetworksDevice*> devices = ChosenDevices(nnapi, config, graph_.symbol);
  if (devices.empty()) {
    Check(nnapi.ANeuralNetworksCompilation_create(model_, &compilation_),
          "ANeuralNetworksCompilation_create", "");
  } else {
    Check(nnapi.ANeuralNetworksCompilation_createForDevices(
              model_, devices.data(), static_cast<uint32_t>(devices.size()), &compilation_),
          "ANeuralNetworksCompilation_createForDevices", config.devices);
  }
  Check(nnapi.ANeuralNetworksCompilation_setPreference(compilation_, config.preference),
        "ANeuralNetworksCompilation_setPreference", "");
  if (!config.compilation_cache_dir.empty() &&
      nnapi.ANeuralNetworksCompilation_setCaching == nullptr) {
    WarnOnce("cache_dir",
             Lacks(nnapi, "ANeuralNetworksCompilation_setCaching", 3, "10") +
                 ": the cache_dir option is ignored and every compilation compiles in full");
  }
  if (cache_token != nullptr && !config.compilation_cache_dir.empty() &&
      nnapi.ANeuralNetworksCompilation_setCaching != nullptr) {
    PrepareCacheDirectory(config.compilation_cache_dir);
    Check(nnapi.ANeuralNetworksCompilation_setCaching(
              compilation_, config.compilation_cache_dir.c_str(), cache_token->data()),
          "ANeuralNetworksCompilation_setCaching", config.compilation_cache_dir);
  }
  if (!devices.empty()) {
    std::string names;
    for (ANeuralNetworksDevice* device : devices) {
      names += (names.empty() ? "" : ", ") + DeviceName(nnapi, device);
    }
    placement_ = (devices.size() == 1 ? "NNAPI device " : "NNAPI devices ") + names;
  }
  const int finished = nnapi.ANeuralNetworksCompilation_finish(compilation_);
  if (finished != ANEURALNETWORKS_NO_ERROR && !devices.empty()) {
    ThrowIfDevicesRefuse(devices, config, finished);
    ThrowDriverFailure(devices, finished);
  }
  Check(finished, "ANeuralNetworksCompilation_finish", "");
  single_device_ = devices.size() == 1;
  uint64_t modelled = 0;
  if (nnapi.MockNnapi_getModelledCompilationTime != nullptr &&
      nnapi.MockNnapi_getModelledCompilationTime(compilation_, &modelled) == 0) {
    modelled_compile_time_ns_ = static_cast<int64_t>(modelled);
  }
  if (config.use_burst && nnapi.ANeuralNetworksBurst_create != nullptr &&
      nnapi.ANeuralNetworksExecution_burstCompute != nullptr) {
    Check(nnapi.ANeuralNetworksBurst_create(compilation_, &burst_), "ANeuralNetworksBurst_create",
          "");
  }
}

void CompiledModel::ThrowIfDevicesRefuse(const std::vector<ANeuralNetworksDevice*>& devices,
                                         const RuntimeConfig& config, int code) const {
  if (nnapi_.ANeuralNetworksModel_getSupportedOperationsForDevices == nullptr) return;
  std::vector<bool> taken(graph_.operations.size(), false);
  try {
    for (ANeuralNetworksDevice* device : devices) {
      const std::vector<bool> supported = SupportedOperations(device);
      for (size_t i = 0; i < taken.size(); ++i) taken[i] = taken[i] || supported[i];
    }
  } catch (const tvm::ffi::Error&) {
    return;  // the plain result code it is
  }
  std::map<std::string, int> refused;
  for (size_t i = 0; i < taken.size(); ++i) {
    if (taken[i]) continue;
    const GraphOperation& operation = graph_.operations[i];
    refused[operation.op + " (code " + std::to_string(operation.type) +
            (operation.source.empty() ? "" : ", " + operation.source) + ")"]++;
  }
  if (refused.empty()) return;
  std::ostringstream names;
  for (const auto& [name, count] : refused) {
    names << (names.tellp() > 0 ? ", " : "") << name
          << (count > 1 ? " x" + std::to_string(count) : std::string());
  }
  const std::string chosen =
      (config.devices.empty() ? std::string("every device") : config.devices) +
      (config.exclude_cpu ? " without CPUs" : "");
  TVM_FFI_THROW(RuntimeError) << SubgraphPrefix(graph_.symbol)
                              << "ANeuralNetworksCompilation_finish returned "
                              << ResultCodeString(code) << ": the chosen NNAPI devices (" << chosen
                              << ") do not support " << names.str()
                              << " (getSupportedOperationsForDevices)";
}

std::string CompiledModel::OperationList(const std::vector<size_t>& operations) const {
  std::map<std::string, int> counts;
  std::vector<std::string> order;
  auto add = [&](size_t i) {
    const GraphOperation& operation = graph_.operations[i];
    const std::string name = operation.op + " (code " + std::to_string(operation.type) +
                             (operation.source.empty() ? "" : ", " + operation.source) + ")";
    if (counts[name]++ == 0) order.push_back(name);
  };
  if (operations.empty()) {
    for (size_t i = 0; i < graph_.operations.size(); ++i) add(i);
  } else {
    for (size_t i : operations) add(i);
  }
  std::string text;
  for (const std::string& name : order) {
    text += (text.empty() ? "" : ", ") + name +
            (counts[name] > 1 ? " x" + std::to_string(counts[name]) : std::string());
  }
  return text;
}

void CompiledModel::ThrowDriverFailure(const std::vector<ANeuralNetworksDevice*>& devices,
                                       int code) const {
  // Which operations each device claims; NNAPI gave each operation to one of them.
  std::ostringstream claims;
  try {
    for (ANeuralNetworksDevice* device : devices) {
      const std::vector<bool> supported = SupportedOperations(device);
      std::vector<size_t> claimed;
      for (size_t i = 0; i < supported.size(); ++i) {
        if (supported[i]) claimed.push_back(i);
      }
      if (claimed.empty()) continue;
      claims << (claims.tellp() > 0 ? "; " : "") << DeviceName(nnapi_, device)
             << " reports supporting " << OperationList(claimed);
    }
  } catch (const tvm::ffi::Error&) {
    return;  // NNAPI cannot say: the plain result code it is
  }
  std::ostringstream message;
  message << SubgraphPrefix(graph_.symbol) << "ANeuralNetworksCompilation_finish returned "
          << ResultCodeString(code) << " on " << placement_ << ", which "
          << (devices.size() == 1 ? "claims" : "claim") << " every operation of the subgraph ("
          << claims.str() << "): the driver failed an operation it reports supported";
  if (nnapi_.MockNnapi_getLastError != nullptr) {
    const char* detail = nnapi_.MockNnapi_getLastError();
    if (detail != nullptr && detail[0] != '\0') message << " [mock_nnapi: " << detail << "]";
  }
  TVM_FFI_THROW(RuntimeError) << message.str();
}

void CompiledModel::CheckExecution(int code, const char* function) const {
  if (code == ANEURALNETWORKS_NO_ERROR) return;
  std::ostringstream message;
  message << SubgraphPrefix(graph_.symbol) << function << " returned " << ResultCodeString(code)
          << " on " << placement_ << " running " << OperationList({});
  if (nnapi_.MockNnapi_getLastError != nullptr) {
    const char* detail = nnapi_.MockNnapi_getLastError();
    if (detail != nullptr && detail[0] != '\0') message << " [mock_nnapi: " << detail << "]";
  }
  TVM_FFI_THROW(RuntimeError) << message.str();
}

void CompiledModel::Release() {
  if (burst_ != nullptr) nnapi_.ANeuralNetworksBurst_free(burst_);
  if (compilation_ != nullptr) nnapi_.ANeuralNetworksCompilation_free(compilation_);
  if (model_ != nullptr) nnapi_.ANeuralNetworksModel_free(model_);
  burst_ = nullptr;
  compilation_ = nullptr;
  model_ = nullptr;
}

CompiledModel::~CompiledModel() { Release(); }

ExecutionTiming CompiledModel::Execute(const std::vector<const void*>& inputs,
                                       const std::vector<size_t>& input_bytes,
                                       const std::vector<void*>& outputs,
                                       const std::vector<size_t>& output_bytes) const {
  ANeuralNetworksExecution* execution = nullptr;
  Check(nnapi_.ANeuralNetworksExecution_create(compilation_, &execution),
        "ANeuralNetworksExecution_create", "");
  // Free the execution on every path, including the throwing ones.
  std::unique_ptr<ANeuralNetworksExecution, decltype(nnapi_.ANeuralNetworksExecution_free)> guard(
      execution, nnapi_.ANeuralNetworksExecution_free);
  for (size_t i = 0; i < inputs.size(); ++i) {
    Check(nnapi_.ANeuralNetworksExecution_setInput(execution, static_cast<int32_t>(i), nullptr,
                                                   inputs[i], input_bytes[i]),
          "ANeuralNetworksExecution_setInput", "input " + std::to_string(i));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    Check(nnapi_.ANeuralNetworksExecution_setOutput(execution, static_cast<int32_t>(i), nullptr,
                                                    outputs[i], output_bytes[i]),
          "ANeuralNetworksExecution_setOutput", "output " + std::to_string(i));
  }
  // NNAPI reports durations of executions of single-device compilations only; a driver that
  // refuses to measure costs nothing but the durations.
  const bool measure =
      single_device_ && nnapi_.ANeuralNetworksExecution_setMeasureTiming != nullptr &&
      nnapi_.ANeuralNetworksExecution_getDuration != nullptr &&
      nnapi_.ANeuralNetworksExecution_setMeasureTiming(execution, true) == ANEURALNETWORKS_NO_ERROR;
  ExecutionTiming timing;
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> burst_lock(burst_mutex_, std::defer_lock);
  if (burst_ != nullptr && burst_lock.try_lock()) {
    CheckExecution(nnapi_.ANeuralNetworksExecution_burstCompute(execution, burst_),
                   "ANeuralNetworksExecution_burstCompute");
    burst_computes_++;
  } else if (nnapi_.ANeuralNetworksExecution_compute != nullptr) {
    CheckExecution(nnapi_.ANeuralNetworksExecution_compute(execution),
                   "ANeuralNetworksExecution_compute");
  } else {
    ANeuralNetworksEvent* event = nullptr;
    CheckExecution(nnapi_.ANeuralNetworksExecution_startCompute(execution, &event),
                   "ANeuralNetworksExecution_startCompute");
    const int code = nnapi_.ANeuralNetworksEvent_wait(event);
    nnapi_.ANeuralNetworksEvent_free(event);
    CheckExecution(code, "ANeuralNetworksEvent_wait");
  }
  timing.wall_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  if (measure) {
    uint64_t on_hardware = UINT64_MAX;
    uint64_t in_driver = UINT64_MAX;
    if (nnapi_.ANeuralNetworksExecution_getDuration(execution, ANEURALNETWORKS_DURATION_ON_HARDWARE,
                                                    &on_hardware) == ANEURALNETWORKS_NO_ERROR &&
        nnapi_.ANeuralNetworksExecution_getDuration(execution, ANEURALNETWORKS_DURATION_IN_DRIVER,
                                                    &in_driver) == ANEURALNETWORKS_NO_ERROR &&
        on_hardware != UINT64_MAX && in_driver != UINT64_MAX) {
      timing.on_hardware_ns = static_cast<int64_t>(on_hardware);
      timing.in_driver_ns = static_cast<int64_t>(in_driver);
    }
  }
  return timing;
}

// ---- NnapiModuleObj -------------------------------------------------------------------------

NnapiModuleObj::NnapiModuleObj(std::string symbol, std::string graph_json, std::string constants)
    : symbol_(std::move(symbol)),
      graph_json_(std::move(graph_json)),
      constants_(std::move(constants)),
      constants_view_(constants_),
      graph_(Graph::Parse(graph_json_, constants_view_.size)) {
  if (graph_.symbol != symbol_) {
    TVM_FFI_THROW(ValueError) << "NNAPI module symbol '" << Printable(symbol_)
                              << "' differs from its graph's symbol '" << Printable(graph_.symbol)
                              << "'";
  }
}

namespace {

// The bytes of a constant blob given as a tensor: a contiguous CPU tensor, its whole extent.
ConstantBytes TensorConstantBytes(const ffi::Tensor& tensor) {
  const DLTensor& data = *tensor.GetDLTensorPtr();
  if (data.device.device_type != kDLCPU) {
    TVM_FFI_THROW(ValueError) << "the constants of an NNAPI module must be in host memory";
  }
  if (!tensor.IsContiguous()) {
    TVM_FFI_THROW(ValueError) << "the constants of an NNAPI module must be a contiguous tensor";
  }
  return ConstantBytes(static_cast<const char*>(data.data) + data.byte_offset, TensorBytes(data));
}

}  // namespace

NnapiModuleObj::NnapiModuleObj(std::string symbol, std::string graph_json, ffi::Tensor constants)
    : symbol_(std::move(symbol)),
      graph_json_(std::move(graph_json)),
      constants_tensor_(constants),
      constants_view_(TensorConstantBytes(constants)),
      graph_(Graph::Parse(graph_json_, constants_view_.size)) {
  if (graph_.symbol != symbol_) {
    TVM_FFI_THROW(ValueError) << "NNAPI module symbol '" << Printable(symbol_)
                              << "' differs from its graph's symbol '" << Printable(graph_.symbol)
                              << "'";
  }
}

ffi::Optional<ffi::Function> NnapiModuleObj::GetFunction(const ffi::String& name) {
  ffi::ObjectPtr<ffi::Object> self = ffi::GetObjectPtr<ffi::Object>(this);
  if (name == symbol_) {
    return ffi::Function([self, this](ffi::PackedArgs args, ffi::Any* rv) { Run(args); });
  }
  if (name == symbol_ + kAsyncSuffix) {
    // Starts Run on a thread of its own; tvm_nnapi.runtime.join waits for it (overlap.h).
    return ffi::Function([self, this](ffi::PackedArgs args, ffi::Any* rv) {
      started_calls_++;
      StartOverlapped(args, graph_.outputs.size(),
                      [self, this](ffi::PackedArgs call) { Run(call); });
    });
  }
  if (name == "get_symbol") {
    return ffi::Function([self, this](ffi::PackedArgs, ffi::Any* rv) { *rv = symbol_; });
  }
  if (name == "get_graph_json") {
    return ffi::Function([self, this](ffi::PackedArgs, ffi::Any* rv) { *rv = graph_json_; });
  }
  if (name == "get_stats") {
    return ffi::Function([self, this](ffi::PackedArgs, ffi::Any* rv) { *rv = Stats(); });
  }
  if (name == "get_fallback_reasons") {
    // The newest reasons (oldest first) for which a call or compilation left NNAPI's first
    // device set: a later device set or the host fallback.
    return ffi::Function([self, this](ffi::PackedArgs, ffi::Any* rv) {
      ffi::Array<ffi::String> reasons;
      std::lock_guard<std::mutex> lock(mutex_);
      for (const std::string& reason : fallback_reasons_) reasons.push_back(reason);
      *rv = reasons;
    });
  }
  if (name == "get_symbols") {
    return ffi::Function([self, this](ffi::PackedArgs, ffi::Any* rv) {
      ffi::Array<ffi::String> symbols;
      for (const std::string& symbol : graph_.symbols) symbols.push_back(symbol);
      *rv = symbols;
    });
  }
  if (name == "precompile") {
    // precompile({"seq_len": 128, ...}): compile the signature those symbol values give.
    return ffi::Function([self, this](ffi::PackedArgs args, ffi::Any* rv) {
      auto values = args[0].cast<ffi::Map<ffi::String, int64_t>>();
      Signature binding;
      for (const std::string& symbol : graph_.symbols) {
        auto it = values.find(symbol);
        if (it == values.end()) {
          TVM_FFI_THROW(ValueError) << SubgraphPrefix(symbol_) << "precompile needs a "
                                    << "value for symbol '" << symbol << "'";
        }
        if ((*it).second < 0) {
          TVM_FFI_THROW(ValueError)
              << SubgraphPrefix(symbol_) << "symbol '" << symbol << "' must be non-negative";
        }
        binding.push_back((*it).second);
      }
      GetCompiled(binding);
      *rv = true;
    });
  }
  return std::nullopt;
}

std::array<uint8_t, 32> NnapiModuleObj::CacheToken(const Signature& binding,
                                                   const RuntimeConfig& config) {
  // Everything that changes the compiled result: the graph, its constants, the concrete shapes,
  // the compilation preference and the NNAPI implementation (library and feature level).
  std::call_once(constants_digest_once_, [this] {
    constants_digest_ = nnapi_common::Sha256::Of(constants_view_.data, constants_view_.size);
  });
  const Nnapi& nnapi = GetNnapi();
  nnapi_common::Sha256 token;
  token.UpdateString("tvm-nnapi compilation cache v1");
  token.UpdateString(graph_json_);
  token.Update(constants_digest_.data(), constants_digest_.size());
  for (int64_t value : binding) token.UpdateInteger(value);
  token.UpdateString(PreferenceName(config.preference));
  token.UpdateString(nnapi.library_path);
  token.UpdateInteger(nnapi.runtime_feature_level);
  token.UpdateString(config.devices);
  token.UpdateInteger(config.exclude_cpu ? 1 : 0);
  return token.Finish();
}

void NnapiModuleObj::EvictLocked(const RuntimeConfig& config) {
  // Keep at least the most recent entry, however large it is.
  while (lru_.size() > 1 &&
         (lru_.size() > config.cache_max_entries || cached_bytes_ > config.cache_max_bytes)) {
    auto it = cache_.find(lru_.back());
    cached_bytes_ -= it->second.compiled->estimated_bytes();
    cache_.erase(it);  // NNAPI objects go when the last in-flight call releases them
    lru_.pop_back();
    evictions_++;
  }
}

std::shared_ptr<const CompiledModel> NnapiModuleObj::GetCompiled(const Signature& binding) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // A signature another call is compiling is waited for, then found in the cache (a hit, as
    // for a call that arrives once it is compiled). If that compilation failed, or the entry was
    // already evicted, this call compiles it, as a later call would.
    while (true) {
      auto it = cache_.find(binding);
      if (it != cache_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second.position);
        cache_hits_++;
        return it->second.compiled;
      }
      if (compiling_.count(binding) == 0) break;
      compiled_.wait(lock);
    }
    compiling_.insert(binding);
  }
  return CompileAndCache(binding);
}

std::shared_ptr<const CompiledModel> NnapiModuleObj::CompileAndCache(const Signature& binding,
                                                                     size_t first_set) {
  // Runs without mutex_; `binding` is in compiling_, so no other call compiles it meanwhile.
  std::shared_ptr<const CompiledModel> compiled;
  RuntimeConfig config;
  try {
    config = GetRuntimeConfig();
    const std::vector<std::string> sets = DeviceSets(config.devices);
    if (first_set >= sets.size()) {
      TVM_FFI_THROW(RuntimeError) << SubgraphPrefix(symbol_) << "no device set is left after "
                                  << sets.size() << " (devices='" << Printable(config.devices)
                                  << "')";
    }
    for (size_t set = first_set; set < sets.size(); ++set) {
      RuntimeConfig set_config = config;
      set_config.devices = sets[set];
      const std::array<uint8_t, 32> token = CacheToken(binding, set_config);
      try {
        compiled = std::make_shared<const CompiledModel>(GetNnapi(), graph_, constants_view_,
                                                         binding, set_config, &token, set);
        break;
      } catch (const ffi::Error& error) {
        // A device name no device has is the caller's mistake, not a device's: no fallback.
        if (error.kind() != "RuntimeError") throw;
        if (set + 1 == sets.size()) {
          if (set == first_set) throw;
          TVM_FFI_THROW(RuntimeError) << error.message() << " (device set " << set + 1 << " of "
                                      << sets.size() << "; the earlier ones failed as logged)";
        }
        device_set_fallbacks_++;
        RecordFallback(binding, error.message() + "; compiling for device set " +
                                    std::to_string(set + 2) + " of " + std::to_string(sets.size()) +
                                    " (" + sets[set + 1] + ") instead");
      }
    }
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      compiling_.erase(binding);
    }
    compiled_.notify_all();
    throw;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    compiling_.erase(binding);
    compilations_++;
    compile_time_ns_ += compiled->compile_time_ns();
    modelled_compile_time_ns_ += compiled->modelled_compile_time_ns();
    lru_.push_front(binding);
    cache_.emplace(binding, CacheEntry{compiled, lru_.begin()});
    cached_bytes_ += compiled->estimated_bytes();
    EvictLocked(config);
  }
  compiled_.notify_all();
  return compiled;
}

std::shared_ptr<const CompiledModel> NnapiModuleObj::NextDeviceSet(const Signature& binding,
                                                                   const CompiledModel* failed) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      auto it = cache_.find(binding);
      if (it != cache_.end() && it->second.compiled->device_set() > failed->device_set()) {
        return it->second.compiled;  // another call moved it already
      }
      if (compiling_.count(binding) == 0) {
        if (it != cache_.end()) {
          cached_bytes_ -= it->second.compiled->estimated_bytes();
          lru_.erase(it->second.position);
          cache_.erase(it);  // freed once the calls using it return
        }
        break;
      }
      compiled_.wait(lock);
    }
    compiling_.insert(binding);
  }
  return CompileAndCache(binding, failed->device_set() + 1);
}

void NnapiModuleObj::RecordFallback(const Signature& binding, const std::string& reason) {
  std::ostringstream signature;
  for (size_t s = 0; s < graph_.symbols.size(); ++s) {
    signature << (s ? ", " : "") << graph_.symbols[s] << "=" << binding[s];
  }
  const std::string text = reason + " [shape signature: " +
                           (graph_.symbols.empty() ? std::string("static") : signature.str()) + "]";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fallback_reasons_.push_back(text);
    while (fallback_reasons_.size() > kReasonsKept) fallback_reasons_.pop_front();
  }
  std::fprintf(stderr, "tvm_nnapi: %s\n", text.c_str());
}

ffi::Map<ffi::String, int64_t> NnapiModuleObj::Stats() {
  ffi::Map<ffi::String, int64_t> stats;
  stats.Set("calls", calls_.load());
  stats.Set("started_calls", started_calls_.load());
  stats.Set("compilations", compilations_.load());
  stats.Set("cache_hits", cache_hits_.load());
  stats.Set("cache_misses", compilations_.load());
  stats.Set("evictions", evictions_.load());
  // NNAPI's disk cache entries found and not trusted, where the library says (the mock does).
  uint64_t discarded = 0;
  const Nnapi& nnapi = GetNnapi();
  if (nnapi.MockNnapi_getCounter != nullptr &&
      nnapi.MockNnapi_getCounter("compilation_cache_discarded", &discarded) == 0) {
    stats.Set("nnapi_cache_discarded", static_cast<int64_t>(discarded));
  }
  stats.Set("compile_time_ns", compile_time_ns_.load());
  stats.Set("modelled_compile_time_ns", modelled_compile_time_ns_.load());
  std::lock_guard<std::mutex> lock(mutex_);
  stats.Set("cached_signatures", static_cast<int64_t>(cache_.size()));
  stats.Set("cached_bytes", static_cast<int64_t>(cached_bytes_));
  int64_t bursts = 0;
  for (const auto& [signature, entry] : cache_) bursts += entry.compiled->burst_computes();
  stats.Set("burst_computes_cached", bursts);
  stats.Set("nnapi_calls", nnapi_calls_.load());
  stats.Set("host_calls", host_calls_.load());
  stats.Set("fallbacks", fallbacks_.load());
  stats.Set("device_set_fallbacks", device_set_fallbacks_.load());
  stats.Set("execution_failures", execution_failures_.load());
  stats.Set("execute_time_ns", execute_time_ns_.load());
  stats.Set("timed_executions", timed_executions_.load());
  stats.Set("duration_on_hardware_ns", duration_on_hardware_ns_.load());
  stats.Set("duration_in_driver_ns", duration_in_driver_ns_.load());
  int64_t decided_host = 0;
  for (const auto& [signature, placement] : decisions_) {
    decided_host += placement == Placement::kHost ? 1 : 0;
  }
  stats.Set("signatures_on_host", decided_host);
  stats.Set("signatures_on_nnapi", static_cast<int64_t>(decisions_.size()) - decided_host);
  return stats;
}

void NnapiModuleObj::Run(ffi::PackedArgs args) {
  const size_t num_inputs = graph_.inputs.size();
  const size_t num_outputs = graph_.outputs.size();
  const size_t num_skipped = graph_.skip_arguments.size();
  if (static_cast<size_t>(args.size()) != num_inputs + num_skipped + num_outputs) {
    TVM_FFI_THROW(ValueError) << SubgraphName(symbol_) << " takes " << num_inputs
                              << " tensor inputs, " << num_skipped << " shape arguments and "
                              << num_outputs << " outputs, got " << args.size() << " arguments";
  }
  // Tensors in order: inputs (skipping shape arguments), then outputs.
  std::vector<DLTensor*> tensors;
  size_t next_skip = 0;
  for (size_t position = 0; position < static_cast<size_t>(args.size()); ++position) {
    if (next_skip < num_skipped && graph_.skip_arguments[next_skip] == position) {
      ++next_skip;
      continue;
    }
    const size_t i = tensors.size();
    const bool is_input = i < num_inputs;
    const size_t index = is_input ? i : i - num_inputs;
    const std::string role = (is_input ? "input " : "output ") + std::to_string(index);
    auto tensor = args[position].try_cast<DLTensor*>();
    if (!tensor.has_value()) {
      TVM_FFI_THROW(TypeError) << SubgraphPrefix(symbol_) << role << " is not a tensor";
    }
    DLTensor* t = *tensor;
    const GraphOperand& operand =
        graph_.operands[is_input ? graph_.inputs[index] : graph_.outputs[index]];
    if (t->device.device_type != kDLCPU) {
      TVM_FFI_THROW(ValueError) << SubgraphPrefix(symbol_) << role
                                << " must be in host (CPU) memory";
    }
    if (!DTypeMatches(operand.type, t->dtype)) {
      TVM_FFI_THROW(TypeError) << SubgraphPrefix(symbol_) << role << " has the wrong dtype for "
                               << operand.name;
    }
    if (!IsCompact(*t)) {
      TVM_FFI_THROW(ValueError) << SubgraphPrefix(symbol_) << role
                                << " must be a compact (row-major) tensor";
    }
    tensors.push_back(t);
  }
  std::vector<std::vector<int64_t>> input_shapes;
  for (size_t i = 0; i < num_inputs; ++i) {
    input_shapes.emplace_back(tensors[i]->shape, tensors[i]->shape + tensors[i]->ndim);
  }
  const std::vector<int64_t> binding = graph_.BindSymbols(input_shapes);
  for (size_t i = 0; i < num_outputs; ++i) {
    const std::vector<int64_t> expected = graph_.ConcreteShape(graph_.outputs[i], binding);
    DLTensor* t = tensors[num_inputs + i];
    const std::vector<int64_t> actual(t->shape, t->shape + t->ndim);
    if (actual != expected) {
      TVM_FFI_THROW(ValueError) << SubgraphPrefix(symbol_) << "output " << i << " has shape "
                                << ShapeString(actual) << ", the graph produces "
                                << ShapeString(expected);
    }
  }
  calls_++;
  const RuntimeConfig config = GetRuntimeConfig();
  if (PlacementFor(binding, config) == Placement::kHost) {
    RunHost(args, tensors);
    host_calls_++;
    return;
  }
  try {
    RunNnapi(binding, tensors);
    nnapi_calls_++;
  } catch (const ffi::Error& error) {
    std::ostringstream signature;
    for (size_t s = 0; s < graph_.symbols.size(); ++s) {
      signature << (s ? ", " : "") << graph_.symbols[s] << "=" << binding[s];
    }
    if (!HasHostFallback()) {
      TVM_FFI_THROW(RuntimeError) << error.message() << " [shape signature: "
                                  << (graph_.symbols.empty() ? "static" : signature.str())
                                  << "; no host fallback in this module]";
    }
    fallbacks_++;
    RecordFallback(binding, error.message() + "; running TVM's host code instead");
    RunHost(args, tensors);
    host_calls_++;
  }
}

void NnapiModuleObj::RunNnapi(const Signature& binding, const std::vector<DLTensor*>& tensors) {
  std::shared_ptr<const CompiledModel> compiled = GetCompiled(binding);
  const size_t num_inputs = graph_.inputs.size();
  std::vector<const void*> inputs;
  std::vector<size_t> input_bytes;
  std::vector<void*> outputs;
  std::vector<size_t> output_bytes;
  for (size_t i = 0; i < tensors.size(); ++i) {
    DLTensor* t = tensors[i];
    const size_t bytes = TensorBytes(*t);
    uint8_t* data = static_cast<uint8_t*>(t->data) + t->byte_offset;
    if (i < num_inputs) {
      inputs.push_back(data);
      input_bytes.push_back(bytes);
    } else {
      outputs.push_back(data);
      output_bytes.push_back(bytes);
    }
  }
  ExecutionTiming timing;
  while (true) {
    try {
      timing = compiled->Execute(inputs, input_bytes, outputs, output_bytes);
      break;
    } catch (const ffi::Error& error) {
      execution_failures_++;
      // The next device set, if any, takes the signature from now on (a device that failed an
      // execution is not trusted with it again); otherwise the caller's fallback or error.
      const size_t sets = DeviceSets(GetRuntimeConfig().devices).size();
      if (error.kind() != "RuntimeError" || compiled->device_set() + 1 >= sets) throw;
      device_set_fallbacks_++;
      RecordFallback(binding, error.message() + "; running on device set " +
                                  std::to_string(compiled->device_set() + 2) + " of " +
                                  std::to_string(sets) + " instead");
      compiled = NextDeviceSet(binding, compiled.get());
    }
  }
  execute_time_ns_ += timing.wall_ns;
  if (timing.on_hardware_ns >= 0) {
    timed_executions_++;
    duration_on_hardware_ns_ += timing.on_hardware_ns;
    duration_in_driver_ns_ += timing.in_driver_ns;
  }
}

Placement NnapiModuleObj::PlacementFor(const Signature& binding, const RuntimeConfig& config) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (decisions_policy_ != config.policy) {
      decisions_.clear();
      decisions_policy_ = config.policy;
    }
    auto it = decisions_.find(binding);
    if (it != decisions_.end()) return it->second;
  }
  const Policy policy = Policy::Parse(config.policy);
  std::string reason;
  Placement placement = Decide(policy, EstimateCost(graph_, binding), &reason);
  if (placement == Placement::kHost && !HasHostFallback()) {
    placement = Placement::kNnapi;
    reason += "; no host fallback in this module, so NNAPI";
  }
  if (config.log_debug) {
    std::fprintf(stderr, "tvm_nnapi: subgraph '%s' signature [", symbol_.c_str());
    for (size_t s = 0; s < binding.size(); ++s) {
      std::fprintf(stderr, "%s%s=%lld", s ? ", " : "", graph_.symbols[s].c_str(),
                   static_cast<long long>(binding[s]));
    }
    std::fprintf(stderr, "] -> %s (%s)\n", placement == Placement::kHost ? "host" : "nnapi",
                 reason.c_str());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  decisions_[binding] = placement;
  return placement;
}

bool NnapiModuleObj::HasHostFallback() {
  std::lock_guard<std::mutex> lock(host_mutex_);
  if (!host_checked_) {
    host_checked_ = true;
    for (const ffi::Any& item : imports_) {
      auto module = item.cast<ffi::Module>();
      if (std::string(module->kind()) == "relax.VMExecutable") {
        ffi::Function load = module->GetFunction("vm_load_executable").value();
        ffi::Module vm = load().cast<ffi::Module>();
        // Host CPU, pooled allocator (what relax.VirtualMachine(executable, tvm.cpu()) does).
        vm->GetFunction("vm_initialization").value()(static_cast<int>(kDLCPU), 0, 2);
        host_main_ = vm->GetFunction("main");
        host_vm_ = vm;
        break;
      }
    }
  }
  return host_main_.has_value();
}

void NnapiModuleObj::RunHost(ffi::PackedArgs args, const std::vector<DLTensor*>& tensors) {
  if (!HasHostFallback()) {
    TVM_FFI_THROW(RuntimeError) << SubgraphName(symbol_)
                                << " has no host fallback (build with host_fallback=True)";
  }
  const size_t num_inputs = graph_.inputs.size();
  const size_t num_outputs = graph_.outputs.size();
  const int num_params = args.size() - static_cast<int>(num_outputs);
  std::lock_guard<std::mutex> lock(host_mutex_);
  ffi::Any result;
  host_main_.value().CallPacked(args.Slice(0, num_params), &result);
  std::vector<ffi::Tensor> results;
  if (num_outputs == 1) {
    results.push_back(result.cast<ffi::Tensor>());
  } else {
    for (const ffi::Any& item : result.cast<ffi::Array<ffi::Any>>()) {
      results.push_back(item.cast<ffi::Tensor>());
    }
  }
  if (results.size() != num_outputs) {
    TVM_FFI_THROW(RuntimeError) << SubgraphPrefix(symbol_) << "host fallback returned "
                                << results.size() << " outputs, expected " << num_outputs;
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    const DLTensor* from = results[i].GetDLTensorPtr();
    DLTensor* to = tensors[num_inputs + i];
    const size_t bytes = TensorBytes(*to);
    const bool same_shape =
        from->ndim == to->ndim && std::equal(to->shape, to->shape + to->ndim, from->shape);
    if (!same_shape || from->dtype.code != to->dtype.code || from->dtype.bits != to->dtype.bits ||
        !IsCompact(*from)) {
      TVM_FFI_THROW(RuntimeError) << SubgraphPrefix(symbol_) << "host fallback output " << i
                                  << " does not match the destination tensor";
    }
    std::memcpy(static_cast<uint8_t*>(to->data) + to->byte_offset,
                static_cast<const uint8_t*>(from->data) + from->byte_offset, bytes);
  }
}

// ---- Serialization
// -------------------------------------------------------------------------------

namespace {
constexpr char kMagic[8] = {'T', 'V', 'M', 'N', 'N', 'A', 'P', 'I'};
constexpr uint32_t kSerializationVersion = 1;

void WriteU64(std::string* out, uint64_t value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(value));
}

class Reader {
 public:
  explicit Reader(const ffi::Bytes& bytes) : data_(bytes.data()), size_(bytes.size()) {}
  void Read(void* out, size_t n, const char* what) {
    if (n > size_ - pos_) {
      TVM_FFI_THROW(ValueError) << "corrupt NNAPI module: truncated while reading " << what << " ("
                                << size_ << " bytes in all)";
    }
    std::memcpy(out, data_ + pos_, n);
    pos_ += n;
  }
  std::string ReadString(const char* what) {
    uint64_t length = 0;
    Read(&length, sizeof(length), what);
    if (length > size_ - pos_) {
      TVM_FFI_THROW(ValueError) << "corrupt NNAPI module: " << what << " claims " << length
                                << " bytes, only " << size_ - pos_ << " remain";
    }
    std::string text(data_ + pos_, length);
    pos_ += length;
    return text;
  }
  bool AtEnd() const { return pos_ == size_; }

 private:
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
};
}  // namespace

ffi::Bytes NnapiModuleObj::SaveToBytes() const {
  std::string out(kMagic, sizeof(kMagic));
  out.append(reinterpret_cast<const char*>(&kSerializationVersion), sizeof(uint32_t));
  for (const ConstantBytes part :
       {ConstantBytes(symbol_), ConstantBytes(graph_json_), constants_view_}) {
    WriteU64(&out, part.size);
    out.append(part.data, part.size);
  }
  return ffi::Bytes(std::move(out));
}

ffi::Module NnapiModuleObj::LoadFromBytes(const ffi::Bytes& bytes) {
  Reader reader(bytes);
  char magic[sizeof(kMagic)];
  reader.Read(magic, sizeof(magic), "the header");
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) {
    TVM_FFI_THROW(ValueError) << "corrupt NNAPI module: bad magic (not a tvm_nnapi module)";
  }
  uint32_t version = 0;
  reader.Read(&version, sizeof(version), "the format version");
  if (version != kSerializationVersion) {
    TVM_FFI_THROW(ValueError) << "NNAPI module format version " << version
                              << " is not supported (this runtime reads version "
                              << kSerializationVersion << ")";
  }
  std::string symbol = reader.ReadString("the symbol");
  std::string graph_json = reader.ReadString("the graph JSON");
  std::string constants = reader.ReadString("the constants");
  if (!reader.AtEnd()) {
    TVM_FFI_THROW(ValueError) << "corrupt NNAPI module: trailing bytes after the constants";
  }
  return ffi::Module(ffi::make_object<NnapiModuleObj>(std::move(symbol), std::move(graph_json),
                                                      std::move(constants)));
}

// `constants`: bytes (copied into the module) or a contiguous CPU tensor (referenced in place).
ffi::Module CreateNnapiModule(const ffi::String& symbol, const ffi::String& graph_json,
                              const ffi::Any& constants) {
  if (auto tensor = constants.as<ffi::Tensor>()) {
    return ffi::Module(
        ffi::make_object<NnapiModuleObj>(std::string(symbol), std::string(graph_json), *tensor));
  }
  auto bytes = constants.try_cast<ffi::Bytes>();
  if (!bytes.has_value()) {
    TVM_FFI_THROW(TypeError) << "tvm_nnapi.runtime.create: the constants must be bytes or a "
                                "tensor, not "
                             << constants.GetTypeKey();
  }
  return ffi::Module(ffi::make_object<NnapiModuleObj>(std::string(symbol), std::string(graph_json),
                                                      std::string(bytes->data(), bytes->size())));
}

namespace {

// The runtime options in effect, as the strings set_option takes.
ffi::Map<ffi::String, ffi::String> OptionsInEffect() {
  ffi::Map<ffi::String, ffi::String> options;
  for (const auto& [name, value] : RuntimeOptionValues(GetRuntimeConfig())) {
    options.Set(name, value);
  }
  return options;
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  namespace refl = tvm::ffi::reflection;
  refl::GlobalDef()
      .def("ffi.Module.load_from_bytes.nnapi", NnapiModuleObj::LoadFromBytes)
      .def("tvm_nnapi.runtime.create", CreateNnapiModule)
      .def("tvm_nnapi.runtime.parse_graph",
           [](const ffi::String& graph_json, int64_t constants_size) -> int64_t {
             Graph graph = Graph::Parse(std::string(graph_json), constants_size);
             return static_cast<int64_t>(graph.operations.size());
           })
      .def("tvm_nnapi.runtime.module_to_bytes",
           [](const ffi::Module& module) -> ffi::Bytes {
             if (std::string(module->kind()) != "nnapi") {
               TVM_FFI_THROW(TypeError) << "expected an nnapi module, got " << module->kind();
             }
             return module->SaveToBytes();
           })
      .def("tvm_nnapi.runtime.set_option",
           [](const ffi::String& name, const ffi::String& value) {
             SetRuntimeOption(std::string(name), std::string(value));
           })
      .def("tvm_nnapi.runtime.get_options", OptionsInEffect)
      .def("tvm_nnapi.runtime.option_names",
           []() -> ffi::String {
             // The option names, comma-separated: readable across TVM RPC.
             std::string names;
             for (const auto& [name, value] : RuntimeOptionValues(GetRuntimeConfig())) {
               names += names.empty() ? name : "," + name;
             }
             return names;
           })
      .def("tvm_nnapi.runtime.get_option",
           [](const ffi::String& name) -> ffi::String {
             // One option as a string: what a caller across TVM RPC can read.
             const ffi::Map<ffi::String, ffi::String> options = OptionsInEffect();
             auto found = options.find(name);
             if (found == options.end()) {
               TVM_FFI_THROW(ValueError) << "unknown NNAPI runtime option '" << name << "'";
             }
             return (*found).second;
           })
      // Counters of the process's mock NNAPI, callable over RPC (-1 on a real NNAPI).
      .def("tvm_nnapi.runtime.mock_counter",
           [](const ffi::String& name) -> int64_t {
             const Nnapi& nnapi = GetNnapi();
             uint64_t value = 0;
             if (nnapi.MockNnapi_getCounter == nullptr ||
                 nnapi.MockNnapi_getCounter(std::string(name).c_str(), &value) != 0) {
               return -1;
             }
             return static_cast<int64_t>(value);
           })
      .def("tvm_nnapi.runtime.mock_operation_count",
           [](const ffi::String& operation) -> int64_t {
             const Nnapi& nnapi = GetNnapi();
             const int32_t code = OperationCode(std::string(operation));
             if (nnapi.MockNnapi_getOperationExecutedCount == nullptr || code < 0) return -1;
             return static_cast<int64_t>(nnapi.MockNnapi_getOperationExecutedCount(code));
           })
      .def("tvm_nnapi.runtime.nnapi_library",
           []() -> ffi::String { return GetNnapi().library_path; });
}

}  // namespace tvm_nnapi
