// SPDX-License-Identifier: Apache-2.0
// Check macros for the mock NNAPI runtime.
//
// Every failed check records a message (file, line, condition, values) as the thread's last error
// (readable through MockNnapi_getLastError), prints it to stderr when MOCK_NNAPI_LOG is set, and
// makes the enclosing function return an NNAPI result code:
//
//   NN_CHECK(index < operands_.size(), ANEURALNETWORKS_BAD_DATA) << "operand " << index;
//   NN_CHECK_EQ(count, 3u, ANEURALNETWORKS_BAD_DATA) << "ADD inputs";
//   NN_RETURN_IF_ERROR(ValidateOperand(type));
#ifndef MOCK_NNAPI_SRC_CHECK_H_
#define MOCK_NNAPI_SRC_CHECK_H_

#include <sstream>
#include <string>

namespace mock_nnapi {

// Records `message` as this thread's last error and logs it when logging is enabled.
void RecordError(const std::string& message);
// The last error recorded on this thread ("" if none since ClearLastError).
const std::string& LastError();
void ClearLastError();
// Writes a log line to stderr when MOCK_NNAPI_LOG is set (any non-empty value but "0").
void LogInfo(const std::string& message);
bool LoggingEnabled();

// Collects the message of a failed check; converts to the result code when returned.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition, int code) : code_(code) {
    stream_ << file << ":" << line << ": check failed: " << condition;
  }
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    if (!has_detail_) {
      stream_ << ": ";
      has_detail_ = true;
    }
    stream_ << value;
    return *this;
  }
  operator int() {
    RecordError(stream_.str());
    return code_;
  }

 private:
  std::ostringstream stream_;
  bool has_detail_ = false;
  int code_;
};

}  // namespace mock_nnapi

#define NN_CHECK(condition, code) \
  if (!(condition)) return ::mock_nnapi::CheckFailure(__FILE__, __LINE__, #condition, code)

// Unconditional failure: `NN_FAIL(ANEURALNETWORKS_BAD_DATA) << "why";`
#define NN_FAIL(code) return ::mock_nnapi::CheckFailure(__FILE__, __LINE__, "request refused", code)

#define NN_CHECK_OP_(a, b, op, code)                                             \
  if (!((a)op(b)))                                                               \
  return ::mock_nnapi::CheckFailure(__FILE__, __LINE__, #a " " #op " " #b, code) \
         << "(" << (a) << " vs " << (b) << ") "

#define NN_CHECK_EQ(a, b, code) NN_CHECK_OP_(a, b, ==, code)
#define NN_CHECK_NE(a, b, code) NN_CHECK_OP_(a, b, !=, code)
#define NN_CHECK_LT(a, b, code) NN_CHECK_OP_(a, b, <, code)
#define NN_CHECK_LE(a, b, code) NN_CHECK_OP_(a, b, <=, code)
#define NN_CHECK_GT(a, b, code) NN_CHECK_OP_(a, b, >, code)
#define NN_CHECK_GE(a, b, code) NN_CHECK_OP_(a, b, >=, code)

#define NN_RETURN_IF_ERROR(expr)                                \
  do {                                                          \
    int nn_return_if_error_code_ = (expr);                      \
    if (nn_return_if_error_code_ != ANEURALNETWORKS_NO_ERROR) { \
      return nn_return_if_error_code_;                          \
    }                                                           \
  } while (false)

// Null-argument check used by the C entry points.
#define NN_CHECK_NOT_NULL(pointer) NN_CHECK((pointer) != nullptr, ANEURALNETWORKS_UNEXPECTED_NULL)

#endif  // MOCK_NNAPI_SRC_CHECK_H_
