// SPDX-License-Identifier: Apache-2.0
#include "compilation.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cost_model.h"
#include "memory.h"
#include "statistics.h"

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
  // Android only rejects values above the last PreferenceCode (a negative value passes).
  NN_CHECK(preference <= ANEURALNETWORKS_PREFER_SUSTAINED_SPEED, ANEURALNETWORKS_BAD_DATA)
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

int Compilation::ChooseDevices() {
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
      // Ties go to the runtime's CPU device, as in Android (DeviceManager::getCpuDevice()).
      const bool better = best == kRuntimeCpuFallback || cost < best_cost ||
                          (cost == best_cost && device.runtime_cpu);
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
  return ANEURALNETWORKS_NO_ERROR;
}

int Compilation::CheckDevicesAvailable() const {
  for (int device : operation_devices_) {
    if (device != kRuntimeCpuFallback) {
      NN_CHECK(devices_[device]->available, ANEURALNETWORKS_UNAVAILABLE_DEVICE)
          << "Compilation_finish: device " << devices_[device]->name << " is unavailable";
    }
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Compilation::CheckDriverFailures() const {
  const Model& model = *model_;
  for (size_t op = 0; op < operation_devices_.size(); ++op) {
    if (operation_devices_[op] == kRuntimeCpuFallback) continue;
    const Device& device = *devices_[operation_devices_[op]];
    const Operation& operation = model.operations()[op];
    const int entry = device.DriverFailureFor(model, operation, DriverFailure::Stage::kCompilation);
    if (entry < 0) continue;
    Increment(Counter::kDriverFailures);
    return CheckFailure(__FILE__, __LINE__, "the driver compiles what it supports",
                        device.driver_failures[entry].result)
           << "Compilation_finish: operation " << op << ": "
           << DescribeDriverFailure(device, model, operation, entry);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

int Compilation::Finish() {
  NN_CHECK(!finished_, ANEURALNETWORKS_BAD_STATE) << "Compilation_finish called twice";
  // Like Android, the compilation counts as finished even when it fails below.
  finished_ = true;
  const int code = CompileOrLoad();
  valid_ = code == ANEURALNETWORKS_NO_ERROR;
  if (valid_) Increment(Counter::kCompilationsFinished);
  return code;
}

int Compilation::GetPreferredMemoryAlignment(bool input, uint32_t index,
                                             uint32_t* alignment) const {
  NN_CHECK(usable(), ANEURALNETWORKS_BAD_STATE)
      << "getPreferredMemoryAlignment: the compilation is not finished or failed to finish";
  const size_t count = input ? model_->inputs().size() : model_->outputs().size();
  NN_CHECK_LT(index, count, ANEURALNETWORKS_BAD_DATA) << (input ? "input" : "output") << " index";
  *alignment = kPreferredAlignment;
  return ANEURALNETWORKS_NO_ERROR;
}

int Compilation::GetPreferredMemoryPadding(bool input, uint32_t index, uint32_t* padding) const {
  NN_CHECK(usable(), ANEURALNETWORKS_BAD_STATE)
      << "getPreferredMemoryPadding: the compilation is not finished or failed to finish";
  const size_t count = input ? model_->inputs().size() : model_->outputs().size();
  NN_CHECK_LT(index, count, ANEURALNETWORKS_BAD_DATA) << (input ? "input" : "output") << " index";
  *padding = kPreferredPadding;
  return ANEURALNETWORKS_NO_ERROR;
}

// ---- Compilation cache -------------------------------------------------------------------------

namespace {

constexpr char kCacheMagic[8] = {'M', 'N', 'N', 'A', 'P', 'I', 'C', '\0'};
constexpr uint32_t kCacheFormatVersion = 1;
constexpr size_t kCacheHeaderSize = 8 + 4 + 32 + 32 + 4;  // up to the operation devices
constexpr size_t kCacheChecksumSize = 32;

void HashModel(const Model& model, Sha256* hash) {
  hash->UpdateInteger(static_cast<uint64_t>(model.operands().size()));
  for (const Operand& operand : model.operands()) {
    hash->UpdateInteger(operand.type);
    hash->UpdateInteger(static_cast<uint8_t>(operand.rank_known));
    hash->UpdateInteger(static_cast<uint64_t>(operand.dimensions.size()));
    for (uint32_t dimension : operand.dimensions) hash->UpdateInteger(dimension);
    hash->UpdateFloat(operand.scale);
    hash->UpdateInteger(operand.zero_point);
    hash->UpdateInteger(static_cast<uint8_t>(operand.channel_quant.has_value()));
    if (operand.channel_quant) {
      hash->UpdateInteger(operand.channel_quant->channel_dim);
      hash->UpdateInteger(static_cast<uint64_t>(operand.channel_quant->scales.size()));
      for (float scale : operand.channel_quant->scales) hash->UpdateFloat(scale);
    }
    hash->UpdateInteger(static_cast<int32_t>(operand.lifetime));
    if (const uint8_t* data = model.ConstantData(operand)) {
      hash->UpdateInteger(static_cast<uint64_t>(operand.value_length));
      hash->Update(data, operand.value_length);
    }
    if (operand.lifetime == OperandLifetime::kModelReference) {
      HashModel(*operand.referenced_model, hash);
    }
  }
  hash->UpdateInteger(static_cast<uint64_t>(model.operations().size()));
  for (const Operation& operation : model.operations()) {
    hash->UpdateInteger(operation.type);
    hash->UpdateInteger(static_cast<uint64_t>(operation.inputs.size()));
    for (uint32_t index : operation.inputs) hash->UpdateInteger(index);
    hash->UpdateInteger(static_cast<uint64_t>(operation.outputs.size()));
    for (uint32_t index : operation.outputs) hash->UpdateInteger(index);
  }
  hash->UpdateInteger(static_cast<uint64_t>(model.inputs().size()));
  for (uint32_t index : model.inputs()) hash->UpdateInteger(index);
  hash->UpdateInteger(static_cast<uint64_t>(model.outputs().size()));
  for (uint32_t index : model.outputs()) hash->UpdateInteger(index);
  hash->UpdateInteger(static_cast<uint8_t>(model.relaxed_float32_to_float16()));
}

std::string CacheFileName(const CacheToken& token) {
  static const char kHex[] = "0123456789abcdef";
  std::string name;
  for (uint8_t byte : token) {
    name += kHex[byte >> 4];
    name += kHex[byte & 15];
  }
  return name + ".mock_nnapi_cache";
}

void AppendUint32(std::vector<uint8_t>* bytes, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes->push_back(static_cast<uint8_t>(value >> (8 * i)));
}

uint32_t ReadUint32(const uint8_t* bytes) {
  return uint32_t{bytes[0]} | (uint32_t{bytes[1]} << 8) | (uint32_t{bytes[2]} << 16) |
         (uint32_t{bytes[3]} << 24);
}

bool WriteAll(int fd, const uint8_t* data, size_t length) {
  while (length > 0) {
    const ssize_t written = write(fd, data, length);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    data += written;
    length -= static_cast<size_t>(written);
  }
  return true;
}

bool ReadAll(int fd, uint8_t* data, size_t length) {
  while (length > 0) {
    const ssize_t got = read(fd, data, length);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    data += got;
    length -= static_cast<size_t>(got);
  }
  return true;
}

}  // namespace

Sha256Digest Compilation::Fingerprint() const {
  Sha256 hash;
  hash.UpdateString("mock_nnapi compilation fingerprint 1");
  HashModel(*model_, &hash);
  hash.UpdateInteger(static_cast<uint8_t>(explicit_devices_));
  hash.UpdateInteger(static_cast<uint64_t>(devices_.size()));
  for (const Device* device : devices_) {
    hash.UpdateString(device->name);
    hash.UpdateString(device->version);
    hash.UpdateInteger(device->type);
    hash.UpdateInteger(device->feature_level);
  }
  hash.UpdateInteger(preference_);
  return hash.Finish();
}

bool Compilation::LoadFromCache(int directory, const std::string& name,
                                const Sha256Digest& fingerprint, std::string* discarded) {
  // O_NOFOLLOW: a symbolic link planted under the cache name is never read through; O_NONBLOCK:
  // opening a planted FIFO must not hang.
  const int fd = openat(directory, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ELOOP) *discarded = "a symbolic link";
    return false;  // otherwise no entry yet
  }
  const size_t operation_count = model_->operations().size();
  const size_t expected_size = kCacheHeaderSize + 4 * operation_count + kCacheChecksumSize;
  std::vector<uint8_t> bytes;
  struct stat info{};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    *discarded = "not a regular file";
  } else if (info.st_uid != geteuid()) {
    *discarded = "owned by another user";
  } else if (static_cast<uint64_t>(info.st_size) != expected_size) {
    *discarded = std::to_string(info.st_size) + " bytes where " + std::to_string(expected_size) +
                 " were expected (truncated or extended)";
  } else {
    bytes.resize(expected_size);
    if (!ReadAll(fd, bytes.data(), bytes.size())) {
      bytes.clear();
      *discarded = "unreadable";
    }
  }
  close(fd);
  if (bytes.empty()) return false;

  const uint8_t* cursor = bytes.data();
  const size_t body_size = expected_size - kCacheChecksumSize;
  const Sha256Digest checksum = Sha256::Of(bytes.data(), body_size);
  auto reject = [discarded](const char* reason) {
    *discarded = reason;
    return false;
  };
  if (std::memcmp(checksum.data(), bytes.data() + body_size, checksum.size()) != 0) {
    return reject("its checksum does not match (corrupted)");
  }
  if (std::memcmp(cursor, kCacheMagic, sizeof(kCacheMagic)) != 0) {
    return reject("not a mock_nnapi cache file");
  }
  cursor += sizeof(kCacheMagic);
  if (ReadUint32(cursor) != kCacheFormatVersion) return reject("another cache format version");
  cursor += 4;
  if (std::memcmp(cursor, cache_token_.data(), cache_token_.size()) != 0) {
    return reject("written for another token");
  }
  cursor += cache_token_.size();
  if (std::memcmp(cursor, fingerprint.data(), fingerprint.size()) != 0) {
    return reject("written for another model, device set or preference");
  }
  cursor += fingerprint.size();
  if (ReadUint32(cursor) != operation_count) return reject("another operation count");
  cursor += 4;
  std::vector<int> assignment(operation_count);
  for (size_t op = 0; op < operation_count; ++op, cursor += 4) {
    const int device = static_cast<int32_t>(ReadUint32(cursor));
    const bool in_range = (device >= 0 && static_cast<size_t>(device) < devices_.size()) ||
                          (device == kRuntimeCpuFallback && !explicit_devices_);
    if (!in_range) return reject("a device index out of range");
    assignment[op] = device;
  }
  operation_devices_ = std::move(assignment);
  return true;
}

namespace {

void ReportDiscardedCacheEntry(const std::string& path, const std::string& reason) {
  Increment(Counter::kCompilationCacheDiscarded);
  const std::string message = "compilation cache: discarded " + path + " (" + reason +
                              "); compiling again and rewriting it";
  // Said once per process on stderr (a cache directory shared by many runs stays readable);
  // every discard is counted (compilation_cache_discarded) and logged with MOCK_NNAPI_LOG.
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    std::fprintf(stderr, "mock_nnapi: %s\n", message.c_str());
  } else {
    LogInfo(message);
  }
}

}  // namespace

void Compilation::StoreInCache(int directory, const std::string& name,
                               const Sha256Digest& fingerprint) const {
  std::vector<uint8_t> bytes(kCacheMagic, kCacheMagic + sizeof(kCacheMagic));
  AppendUint32(&bytes, kCacheFormatVersion);
  bytes.insert(bytes.end(), cache_token_.begin(), cache_token_.end());
  bytes.insert(bytes.end(), fingerprint.begin(), fingerprint.end());
  AppendUint32(&bytes, static_cast<uint32_t>(operation_devices_.size()));
  for (int device : operation_devices_) AppendUint32(&bytes, static_cast<uint32_t>(device));
  const Sha256Digest checksum = Sha256::Of(bytes.data(), bytes.size());
  bytes.insert(bytes.end(), checksum.begin(), checksum.end());

  // Write a private temporary file next to the final one, then rename it into place: readers
  // see either the old file or the complete new one, and rename() replaces a planted symbolic
  // link itself rather than writing through it.
  static std::atomic<uint64_t> sequence{0};
  const std::string temporary =
      "." + name + ".tmp." + std::to_string(getpid()) + "." + std::to_string(sequence.fetch_add(1));
  const int fd = openat(directory, temporary.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    LogInfo("compilation cache: cannot create " + temporary + ": " + std::strerror(errno));
    return;
  }
  const bool written = fchmod(fd, 0600) == 0 && WriteAll(fd, bytes.data(), bytes.size());
  const bool closed = close(fd) == 0;
  if (!written || !closed || renameat(directory, temporary.c_str(), directory, name.c_str()) != 0) {
    LogInfo("compilation cache: cannot write " + name + ": " + std::strerror(errno));
    unlinkat(directory, temporary.c_str(), 0);
  }
}

int Compilation::CompileOrLoad() {
  cache_hit_ = false;
  int directory = -1;
  Sha256Digest fingerprint{};
  std::string name;
  if (cache_dir_) {
    // Android requires the directory to exist; without it caching is silently skipped.
    directory = open(cache_dir_->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (directory < 0) LogInfo("compilation cache: no directory " + *cache_dir_);
  }
  if (directory >= 0) {
    fingerprint = Fingerprint();
    name = CacheFileName(cache_token_);
    std::string discarded;
    cache_hit_ = LoadFromCache(directory, name, fingerprint, &discarded);
    Increment(cache_hit_ ? Counter::kCompilationCacheHits : Counter::kCompilationCacheMisses);
    if (!discarded.empty()) ReportDiscardedCacheEntry(*cache_dir_ + "/" + name, discarded);
  }
  // A hit skips the modelled compilation work: the device assignment comes from the file.
  int code = cache_hit_ ? ANEURALNETWORKS_NO_ERROR : ChooseDevices();
  if (code == ANEURALNETWORKS_NO_ERROR) code = CheckDevicesAvailable();
  if (code == ANEURALNETWORKS_NO_ERROR) code = CheckDriverFailures();
  // Android's CompilationBuilder::finish: without an explicit device list, a driver failure (not
  // a user error: any code but BAD_DATA and UNEXPECTED_NULL) falls back to the runtime's CPU for
  // the whole model. Not cached.
  bool cpu_fallback = false;
  if (code != ANEURALNETWORKS_NO_ERROR && code != ANEURALNETWORKS_BAD_DATA &&
      code != ANEURALNETWORKS_UNEXPECTED_NULL && !explicit_devices_) {
    LogInfo("Compilation_finish: falling back to the CPU for the whole model");
    operation_devices_.assign(model_->operations().size(), kRuntimeCpuFallback);
    cpu_fallback = true;
    code = ANEURALNETWORKS_NO_ERROR;
  }
  // setTimeout: the deadline is compared with the modelled compilation time (cost_model.h).
  if (code == ANEURALNETWORKS_NO_ERROR && timeout_ns_) {
    const uint64_t modelled_ns = ModelledNanoseconds(ModelledCompilationUs(*this));
    if (modelled_ns > *timeout_ns_) {
      code = CheckFailure(__FILE__, __LINE__, "modelled compilation time <= timeout",
                          ANEURALNETWORKS_MISSED_DEADLINE_TRANSIENT)
             << "the modelled compilation time " << modelled_ns << " ns exceeds the timeout "
             << *timeout_ns_ << " ns";
    }
  }
  if (code == ANEURALNETWORKS_NO_ERROR && directory >= 0 && !cache_hit_ && !cpu_fallback) {
    StoreInCache(directory, name, fingerprint);
  }
  if (directory >= 0) close(directory);
  return code;
}

}  // namespace mock_nnapi
