// SPDX-License-Identifier: Apache-2.0
#include "json.h"

#include <cmath>
#include <limits>
#include <locale>
#include <set>
#include <sstream>

namespace mock_nnapi {

const JsonValue* JsonValue::Find(const std::string& key) const {
  for (const Member& member : object_) {
    if (member.first == key) return &member.second;
  }
  return nullptr;
}

const char* JsonValue::KindName(Kind kind) {
  switch (kind) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return "boolean";
    case Kind::kNumber:
      return "number";
    case Kind::kString:
      return "string";
    case Kind::kArray:
      return "array";
    case Kind::kObject:
      return "object";
  }
  return "value";
}

// Recursive-descent reader over the whole text; the first error stops it.
class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : text_(text) {}

  bool Parse(JsonValue* value, std::string* error) {
    SkipWhitespace();
    bool ok = ParseValue(value, 0);
    if (ok) {
      SkipWhitespace();
      if (position_ != text_.size()) ok = Fail("unexpected text after the JSON value");
    }
    if (!ok) *error = error_;
    return ok;
  }

 private:
  static constexpr int kMaximumDepth = 64;

  bool Fail(const std::string& message) {
    if (error_.empty()) {
      error_ =
          "line " + std::to_string(line_) + ", column " + std::to_string(Column()) + ": " + message;
    }
    return false;
  }
  int Column() const { return static_cast<int>(position_ - line_start_) + 1; }
  bool AtEnd() const { return position_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[position_]; }

  void SkipWhitespace() {
    while (!AtEnd()) {
      const char c = text_[position_];
      if (c == '\n') {
        ++position_;
        ++line_;
        line_start_ = position_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++position_;
      } else {
        break;
      }
    }
  }

  bool ParseValue(JsonValue* value, int depth) {
    value->line_ = line_;
    value->column_ = Column();
    if (AtEnd()) return Fail("unexpected end of input, expected a value");
    const char c = Peek();
    if (c == '{') return ParseObject(value, depth + 1);
    if (c == '[') return ParseArray(value, depth + 1);
    if (c == '"') {
      value->kind_ = JsonValue::Kind::kString;
      return ParseString(&value->string_);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber(value);
    if (ConsumeLiteral("true")) {
      value->kind_ = JsonValue::Kind::kBool;
      value->bool_ = true;
      return true;
    }
    if (ConsumeLiteral("false")) {
      value->kind_ = JsonValue::Kind::kBool;
      value->bool_ = false;
      return true;
    }
    if (ConsumeLiteral("null")) {
      value->kind_ = JsonValue::Kind::kNull;
      return true;
    }
    return Fail(std::string("unexpected character '") + Printable(c) + "', expected a value");
  }

  static std::string Printable(char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) return std::string(1, c);
    std::ostringstream out;
    out << "\\x" << std::hex << static_cast<int>(u);
    return out.str();
  }

  bool ConsumeLiteral(const char* literal) {
    const std::string word(literal);
    if (text_.compare(position_, word.size(), word) != 0) return false;
    position_ += word.size();
    return true;
  }

  bool ParseObject(JsonValue* value, int depth) {
    if (depth > kMaximumDepth) return Fail("nesting deeper than 64 levels");
    value->kind_ = JsonValue::Kind::kObject;
    ++position_;  // '{'
    SkipWhitespace();
    if (Peek() == '}') {
      ++position_;
      return true;
    }
    std::set<std::string> keys;
    while (true) {
      SkipWhitespace();
      if (Peek() != '"') return Fail("expected a string key");
      std::string key;
      const int key_line = line_;
      const size_t key_position = position_;
      const size_t key_line_start = line_start_;
      if (!ParseString(&key)) return false;
      if (!keys.insert(key).second) {
        line_ = key_line;
        position_ = key_position;
        line_start_ = key_line_start;
        return Fail("duplicate key \"" + key + "\"");
      }
      SkipWhitespace();
      if (Peek() != ':') return Fail("expected ':' after an object key");
      ++position_;
      SkipWhitespace();
      JsonValue member;
      if (!ParseValue(&member, depth)) return false;
      value->object_.emplace_back(std::move(key), std::move(member));
      SkipWhitespace();
      if (Peek() == ',') {
        ++position_;
        continue;
      }
      if (Peek() == '}') {
        ++position_;
        return true;
      }
      return Fail("expected ',' or '}' in an object");
    }
  }

  bool ParseArray(JsonValue* value, int depth) {
    if (depth > kMaximumDepth) return Fail("nesting deeper than 64 levels");
    value->kind_ = JsonValue::Kind::kArray;
    ++position_;  // '['
    SkipWhitespace();
    if (Peek() == ']') {
      ++position_;
      return true;
    }
    while (true) {
      SkipWhitespace();
      JsonValue item;
      if (!ParseValue(&item, depth)) return false;
      value->array_.push_back(std::move(item));
      SkipWhitespace();
      if (Peek() == ',') {
        ++position_;
        continue;
      }
      if (Peek() == ']') {
        ++position_;
        return true;
      }
      return Fail("expected ',' or ']' in an array");
    }
  }

  bool ParseNumber(JsonValue* value) {
    const size_t start = position_;
    auto digits = [&] {
      const size_t first = position_;
      while (!AtEnd() && Peek() >= '0' && Peek() <= '9') ++position_;
      return position_ > first;
    };
    bool integer = true;
    if (Peek() == '-') ++position_;
    if (Peek() == '0') {
      ++position_;
      if (Peek() >= '0' && Peek() <= '9') return Fail("a number may not have leading zeros");
    } else if (!digits()) {
      return Fail("expected digits in a number");
    }
    if (Peek() == '.') {
      integer = false;
      ++position_;
      if (!digits()) return Fail("expected digits after the decimal point");
    }
    if (Peek() == 'e' || Peek() == 'E') {
      integer = false;
      ++position_;
      if (Peek() == '+' || Peek() == '-') ++position_;
      if (!digits()) return Fail("expected digits in the exponent");
    }
    const std::string literal = text_.substr(start, position_ - start);
    std::istringstream in(literal);
    in.imbue(std::locale::classic());
    double number = 0;
    in >> number;
    if (in.fail() || !std::isfinite(number)) {
      position_ = start;
      return Fail("number " + literal + " is out of range");
    }
    value->kind_ = JsonValue::Kind::kNumber;
    value->number_ = number;
    if (integer) {
      std::istringstream integer_in(literal);
      integer_in.imbue(std::locale::classic());
      int64_t integer_value = 0;
      integer_in >> integer_value;
      value->integer_ = !integer_in.fail();
      value->integer_value_ = integer_value;
    }
    return true;
  }

  bool ParseHex4(uint32_t* code) {
    *code = 0;
    for (int i = 0; i < 4; ++i) {
      if (AtEnd()) return Fail("unexpected end of input in a \\u escape");
      const char c = text_[position_++];
      uint32_t digit;
      if (c >= '0' && c <= '9') {
        digit = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        digit = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        digit = c - 'A' + 10;
      } else {
        --position_;
        return Fail("expected four hexadecimal digits after \\u");
      }
      *code = (*code << 4) | digit;
    }
    return true;
  }

  static void AppendUtf8(uint32_t code, std::string* out) {
    if (code < 0x80) {
      *out += static_cast<char>(code);
    } else if (code < 0x800) {
      *out += static_cast<char>(0xC0 | (code >> 6));
      *out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      *out += static_cast<char>(0xE0 | (code >> 12));
      *out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | (code >> 18));
      *out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      *out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  // Copies one UTF-8 encoded character (already known to start with a byte >= 0x80).
  bool CopyUtf8(std::string* out) {
    const unsigned char lead = static_cast<unsigned char>(text_[position_]);
    int length;
    uint32_t minimum;
    uint32_t code;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2, minimum = 0x80, code = lead & 0x1F;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3, minimum = 0x800, code = lead & 0x0F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4, minimum = 0x10000, code = lead & 0x07;
    } else {
      return Fail("invalid UTF-8 in a string");
    }
    if (position_ + length > text_.size()) return Fail("invalid UTF-8 in a string");
    for (int i = 1; i < length; ++i) {
      const unsigned char next = static_cast<unsigned char>(text_[position_ + i]);
      if ((next & 0xC0) != 0x80) return Fail("invalid UTF-8 in a string");
      code = (code << 6) | (next & 0x3F);
    }
    if (code < minimum || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return Fail("invalid UTF-8 in a string");
    }
    out->append(text_, position_, length);
    position_ += length;
    return true;
  }

  bool ParseString(std::string* out) {
    ++position_;  // opening quote
    while (true) {
      if (AtEnd()) return Fail("unterminated string");
      const char c = text_[position_];
      const unsigned char u = static_cast<unsigned char>(c);
      if (c == '"') {
        ++position_;
        return true;
      }
      if (u < 0x20) return Fail("control character in a string (escape it)");
      if (u >= 0x80) {
        if (!CopyUtf8(out)) return false;
        continue;
      }
      if (c != '\\') {
        *out += c;
        ++position_;
        continue;
      }
      ++position_;
      if (AtEnd()) return Fail("unterminated escape in a string");
      const char escape = text_[position_++];
      switch (escape) {
        case '"':
          *out += '"';
          break;
        case '\\':
          *out += '\\';
          break;
        case '/':
          *out += '/';
          break;
        case 'b':
          *out += '\b';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'n':
          *out += '\n';
          break;
        case 'r':
          *out += '\r';
          break;
        case 't':
          *out += '\t';
          break;
        case 'u': {
          uint32_t code;
          if (!ParseHex4(&code)) return false;
          if (code >= 0xDC00 && code <= 0xDFFF) return Fail("unpaired low surrogate in \\u escape");
          if (code >= 0xD800 && code <= 0xDBFF) {
            uint32_t low;
            if (!ConsumeLiteral("\\u") || !ParseHex4(&low) || low < 0xDC00 || low > 0xDFFF) {
              return Fail("unpaired high surrogate in \\u escape");
            }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(code, out);
          break;
        }
        default:
          --position_;
          return Fail(std::string("invalid escape '\\") + Printable(escape) + "' in a string");
      }
    }
  }

  const std::string& text_;
  size_t position_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
  std::string error_;
};

bool ParseJson(const std::string& text, JsonValue* value, std::string* error) {
  *value = JsonValue();
  JsonParser parser(text);
  return parser.Parse(value, error);
}

std::string JsonQuote(const std::string& text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (u < 0x20) {
          out += "\\u00";
          out += kHex[u >> 4];
          out += kHex[u & 15];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string JsonNumber(double value, int precision) {
  if (!std::isfinite(value)) return "0";
  if (value == 0) return "0";  // also turns -0 into 0
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out.precision(precision);
  out << value;
  return out.str();
}

}  // namespace mock_nnapi
