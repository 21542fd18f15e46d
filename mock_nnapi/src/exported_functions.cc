// SPDX-License-Identifier: Apache-2.0
// The exported names of the NNAPI functions above feature level 1 (exported_functions.h): with
// glibc, indirect functions whose resolvers return the implementation, or nothing when
// MOCK_NNAPI_LIBRARY_FEATURE_LEVEL is below the function's feature level. A resolver runs when
// the name is looked up (dlsym, or a program's relocation), so the variable is read then.
#define MOCK_NNAPI_EXPORTED_FUNCTIONS_KEEP_NAMES
#include "exported_functions.h"

#include <android/NeuralNetworks.h>
#include <android/NeuralNetworksExtensions.h>

#include <cstdlib>
#include <cstring>

#if MOCK_NNAPI_LEVELLED_EXPORTS

// A resolver may run while the process starts, before the C++ runtime and any sanitizer runtime
// are initialised (an executable's own indirect functions are resolved then): the resolvers use
// the C library only and are not instrumented.
#if defined(__clang__)
#define MOCK_NNAPI_RESOLVER_ATTRIBUTES \
  __attribute__((no_sanitize("address", "undefined", "thread", "coverage")))
#else
#define MOCK_NNAPI_RESOLVER_ATTRIBUTES \
  __attribute__((no_sanitize("address", "undefined", "thread")))
#endif

namespace {

// The feature level (1-8) MOCK_NNAPI_LIBRARY_FEATURE_LEVEL names, or 8 when it is unset, empty
// or not a feature level.
MOCK_NNAPI_RESOLVER_ATTRIBUTES int LibraryFeatureLevel() {
  const char* text = std::getenv(MOCK_NNAPI_LIBRARY_FEATURE_LEVEL_VARIABLE);
  if (text == nullptr || text[0] == '\0') return 8;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0') return 8;
  if (value >= 1 && value <= 8) return static_cast<int>(value);
  if (value >= ANEURALNETWORKS_FEATURE_LEVEL_1 && value <= ANEURALNETWORKS_FEATURE_LEVEL_5) {
    return static_cast<int>(value - ANEURALNETWORKS_FEATURE_LEVEL_1 + 1);
  }
  if (value >= ANEURALNETWORKS_FEATURE_LEVEL_6 && value <= ANEURALNETWORKS_FEATURE_LEVEL_8) {
    return static_cast<int>(value - ANEURALNETWORKS_FEATURE_LEVEL_6 + 6);
  }
  return 8;
}

}  // namespace

// For each function F of level L: the implementation's declaration (its type is F's), the
// resolver and F as an indirect function.
#define MOCK_NNAPI_DECLARE_IMPLEMENTATION(name, level) \
  extern "C" decltype(name) MockNnapiImpl_##name;
MOCK_NNAPI_LEVELLED_FUNCTIONS(MOCK_NNAPI_DECLARE_IMPLEMENTATION)
#undef MOCK_NNAPI_DECLARE_IMPLEMENTATION

#define MOCK_NNAPI_RESOLVER(name, level)                                       \
  extern "C" MOCK_NNAPI_RESOLVER_ATTRIBUTES decltype(&MockNnapiImpl_##name)    \
  MockNnapiResolve_##name() {                                                  \
    return LibraryFeatureLevel() >= (level) ? &MockNnapiImpl_##name : nullptr; \
  }                                                                            \
  extern "C" MOCK_NNAPI_EXPORT decltype(MockNnapiImpl_##name) name             \
      __attribute__((ifunc("MockNnapiResolve_" #name)));
MOCK_NNAPI_LEVELLED_FUNCTIONS(MOCK_NNAPI_RESOLVER)
#undef MOCK_NNAPI_RESOLVER

#endif  // MOCK_NNAPI_LEVELLED_EXPORTS
