// SPDX-License-Identifier: Apache-2.0
#include "check.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mock_nnapi {
namespace {
thread_local std::string t_last_error;
}  // namespace

bool LoggingEnabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("MOCK_NNAPI_LOG");
    return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
  }();
  return enabled;
}

void RecordError(const std::string& message) {
  t_last_error = message;
  if (LoggingEnabled()) std::fprintf(stderr, "mock_nnapi: %s\n", message.c_str());
}

const std::string& LastError() { return t_last_error; }

void ClearLastError() { t_last_error.clear(); }

void LogInfo(const std::string& message) {
  if (LoggingEnabled()) std::fprintf(stderr, "mock_nnapi: %s\n", message.c_str());
}

}  // namespace mock_nnapi
