// ANeuralNetworksCompilation: device assignment of each operation, preferences and caching.
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

namespace mock_nnapi {

// The device that runs operations no listed device supports when compiling without an explicit
// device list: the runtime's own CPU implementation (Android's "CPU fallback").
constexpr int kRuntimeCpuFallback = -1;

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
  int AssignDevices();
  int CheckNotFinished(const char* function) const;

  const Model* model_;
  std::vector<const Device*> devices_;
  bool explicit_devices_;
  int32_t preference_ = ANEURALNETWORKS_PREFER_FAST_SINGLE_ANSWER;
  int priority_ = ANEURALNETWORKS_PRIORITY_DEFAULT;
  std::optional<uint64_t> timeout_ns_;
  std::optional<std::string> cache_dir_;
  std::array<uint8_t, ANEURALNETWORKS_BYTE_SIZE_OF_CACHE_TOKEN> cache_token_{};
  bool cache_hit_ = false;
  bool finished_ = false;
  std::vector<int> operation_devices_;
};

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_COMPILATION_H_
