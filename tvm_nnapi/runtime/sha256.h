// SHA-256 (FIPS 180-4), used to derive NNAPI compilation-cache tokens.
#ifndef TVM_NNAPI_RUNTIME_SHA256_H_
#define TVM_NNAPI_RUNTIME_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tvm_nnapi {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t size);
  void Update(const std::string& text) { Update(text.data(), text.size()); }
  // Adds a length-prefixed field, so that ("ab", "c") and ("a", "bc") hash differently.
  void UpdateField(const std::string& text);
  std::array<uint8_t, 32> Finish();
  static std::string Hex(const std::array<uint8_t, 32>& digest);

 private:
  void Compress(const uint8_t* block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

}  // namespace tvm_nnapi

#endif  // TVM_NNAPI_RUNTIME_SHA256_H_
