// SPDX-License-Identifier: Apache-2.0
// ANeuralNetworksCompilation: device assignment of each operation, preferences and caching.
//
// Compilation caching (ANeuralNetworksCompilation_setCaching). finish() looks in the cache
// directory for the file "<64 hex digits of the token>.mock_nnapi_cache". A file that is valid
// and records the fingerprint of this compilation is a hit: the device assignment is read from it
// and the (modelled) compilation work is skipped. Anything else is a miss: the compilation runs
// and the file is (re)written atomically (a 0600 temporary file in the same directory, then
// rename). A missing cache directory silently disables caching, as on Android.
//
// File format version 1, integers little-endian:
//   offset 0   8 bytes   magic "MNNAPIC\0"
//          8   uint32    format version (1)
//         12   32 bytes  the caching token
//         44   32 bytes  fingerprint: SHA-256 of the model (operands with their types, shapes,
//                        quantisation and constant values, operations, inputs and outputs,
//                        relaxed flag, referenced models) and of the device list and preference
//         76   uint32    number of operations N
//         80   N int32   device of each operation (index into the compilation's device list,
//                        or -1 for the runtime's CPU fallback)
//     80+4N   32 bytes  checksum: SHA-256 of bytes [0, 80+4N)
// A file is never trusted unless it is a regular file owned by the user, opened without
// following symbolic links, of exactly this size, with matching magic, version, token,
// fingerprint, operation count, in-range devices and checksum.
#ifndef MOCK_NNAPI_SRC_COMPILATION_H_
#define MOCK_NNAPI_SRC_COMPILATION_H_

#include <android/NeuralNetworksTypes.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "device.h"
#include "model.h"
#include "object_counter.h"
#include "sha256.h"

namespace mock_nnapi {

using nnapi_common::Sha256;
using nnapi_common::Sha256Digest;

// The device that runs operations no listed device supports when compiling without an explicit
// device list: the runtime's own CPU implementation (Android's "CPU fallback").
constexpr int kRuntimeCpuFallback = -1;

using CacheToken = std::array<uint8_t, ANEURALNETWORKS_BYTE_SIZE_OF_CACHE_TOKEN>;

class Compilation : public CountedObject<Compilation> {
 public:
  static constexpr ObjectKind kObjectKind = ObjectKind::kCompilation;
  // Alignment and padding the runtime prefers for execution buffers (bytes).
  static constexpr uint32_t kPreferredAlignment = 64;
  static constexpr uint32_t kPreferredPadding = 64;

  // `devices` empty: ANeuralNetworksCompilation_create (all devices plus CPU fallback).
  Compilation(const Model* model, std::vector<const Device*> devices);

  int SetPreference(int32_t preference);
  int SetPriority(int priority);
  int SetTimeout(uint64_t duration_ns);
  int SetCaching(const char* cache_dir, const uint8_t* token);
  int Finish();
  int GetPreferredMemoryAlignment(bool input, uint32_t index, uint32_t* alignment) const;
  int GetPreferredMemoryPadding(bool input, uint32_t index, uint32_t* padding) const;

  const Model& model() const { return *model_; }
  bool finished() const { return finished_; }
  // Finished successfully: executions, bursts and memory roles may use it. (Like Android, a
  // failed finish() still counts as finished: it cannot be retried.)
  bool usable() const { return finished_ && valid_; }
  bool explicit_devices() const { return explicit_devices_; }
  // Exactly one device given through createForDevices (needed for timeouts and timing).
  bool single_explicit_device() const { return explicit_devices_ && devices_.size() == 1; }
  const std::vector<const Device*>& devices() const { return devices_; }
  int32_t preference() const { return preference_; }
  int priority() const { return priority_; }
  std::optional<uint64_t> timeout_ns() const { return timeout_ns_; }
  // Per operation (model order): index into devices(), or kRuntimeCpuFallback.
  const std::vector<int>& operation_devices() const { return operation_devices_; }
  bool cache_hit() const { return cache_hit_; }

 private:
  int CheckNotFinished(const char* function) const;
  int CompileOrLoad();
  int ChooseDevices();
  int CheckDevicesAvailable() const;
  // The profile's compilation driver failures of the assigned devices (DriverFailure).
  int CheckDriverFailures() const;
  Sha256Digest Fingerprint() const;
  // True on a hit. A file under `name` that is not trusted sets `discarded` to the reason.
  bool LoadFromCache(int directory, const std::string& name, const Sha256Digest& fingerprint,
                     std::string* discarded);
  void StoreInCache(int directory, const std::string& name, const Sha256Digest& fingerprint) const;

  const Model* model_;
  std::vector<const Device*> devices_;
  bool explicit_devices_;
  int32_t preference_ = ANEURALNETWORKS_PREFER_FAST_SINGLE_ANSWER;
  int priority_ = ANEURALNETWORKS_PRIORITY_DEFAULT;
  std::optional<uint64_t> timeout_ns_;
  std::optional<std::string> cache_dir_;
  CacheToken cache_token_{};
  bool cache_hit_ = false;
  bool finished_ = false;
  bool valid_ = false;
  std::vector<int> operation_devices_;
};

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_COMPILATION_H_
