// SPDX-License-Identifier: Apache-2.0
// A small, strict JSON reader and writer helpers (RFC 8259), so the mock needs no library.
//
// The reader accepts exactly RFC 8259 JSON: no comments, no trailing commas, no NaN/Infinity,
// no duplicate object keys, no control characters or invalid UTF-8 in strings, and nothing but
// whitespace after the value. Errors name the line and column. Numbers are read and written in
// the "C" locale whatever the process locale is.
#ifndef MOCK_NNAPI_SRC_JSON_H_
#define MOCK_NNAPI_SRC_JSON_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mock_nnapi {

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  using Member = std::pair<std::string, JsonValue>;

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }

  bool bool_value() const { return bool_; }
  double number_value() const { return number_; }
  // True for a number written without fraction or exponent that fits an int64_t.
  bool is_integer() const { return kind_ == Kind::kNumber && integer_; }
  int64_t integer_value() const { return integer_value_; }
  const std::string& string_value() const { return string_; }
  const std::vector<JsonValue>& array_items() const { return array_; }
  // Object members in document order (keys are unique).
  const std::vector<Member>& object_members() const { return object_; }
  // The member named `key` of an object, or nullptr.
  const JsonValue* Find(const std::string& key) const;

  // Where the value starts in the document (1-based).
  int line() const { return line_; }
  int column() const { return column_; }

  // "null", "boolean", "number", "string", "array" or "object".
  static const char* KindName(Kind kind);

 private:
  friend class JsonParser;
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  bool integer_ = false;
  double number_ = 0;
  int64_t integer_value_ = 0;
  std::string string_;
  std::vector<JsonValue> array_;
  std::vector<Member> object_;
  int line_ = 0;
  int column_ = 0;
};

// Parses `text`. On failure returns false and sets `error` to "line L, column C: <what>".
bool ParseJson(const std::string& text, JsonValue* value, std::string* error);

// `text` as a JSON string literal, quotes included.
std::string JsonQuote(const std::string& text);
// A finite number in JSON syntax (non-finite values are written as 0); at most `precision`
// significant digits.
std::string JsonNumber(double value, int precision = 12);

}  // namespace mock_nnapi

#endif  // MOCK_NNAPI_SRC_JSON_H_
