// SPDX-License-Identifier: Apache-2.0
#include "graph.h"

#include <android/NeuralNetworksTypes.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/json.h>
#include <tvm/ffi/string.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <deque>
#include <limits>
#include <sstream>

#include "nnapi_facts.h"

namespace tvm_nnapi {

namespace ffi = tvm::ffi;

// ---- Names
// ---------------------------------------------------------------------------------------

namespace {
bool IsScalarCode(int32_t type) {
  const nnapi_common::OperandTypeFacts* facts = nnapi_common::FindOperandTypeFacts(type);
  return facts != nullptr && facts->kind == nnapi_common::OperandKind::kScalar;
}
}  // namespace

std::string Printable(const std::string& text) {
  static const char kHex[] = "0123456789abcdef";
  std::string result;
  result.reserve(text.size());
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      result += static_cast<char>(c);
    } else {
      result += "\\x";
      result += kHex[c >> 4];
      result += kHex[c & 15];
    }
  }
  return result;
}

// Names, codes and element sizes are the rows of common/nnapi_operand_types.inc and
// nnapi_operations.inc, shared with the mock.
int32_t OperandTypeCode(const std::string& name) {
  const nnapi_common::OperandTypeFacts* facts = nnapi_common::FindOperandTypeFacts(name);
  // A graph has no control flow, so no MODEL operand.
  return facts != nullptr && facts->code != ANEURALNETWORKS_MODEL ? facts->code : -1;
}
int32_t OperationCode(const std::string& name) {
  const nnapi_common::OperationFacts* facts = nnapi_common::FindOperationFacts(name);
  return facts != nullptr ? facts->code : -1;
}
size_t OperandElementSize(int32_t type) {
  const nnapi_common::OperandTypeFacts* facts = nnapi_common::FindOperandTypeFacts(type);
  return facts != nullptr ? facts->element_bytes : 0;
}

// ---- Dimension expressions -------------------------------------------------------------------

struct DimExpr::Node {
  enum class Op { kConstant, kSymbol, kAdd, kSub, kMul, kFloorDiv, kFloorMod, kMin, kMax };
  Op op = Op::kConstant;
  int64_t value = 0;  // constant value or symbol id
  std::shared_ptr<const Node> lhs;
  std::shared_ptr<const Node> rhs;
};

namespace {

using Node = DimExpr::Node;
using NodePtr = std::shared_ptr<const Node>;

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

[[noreturn]] void Overflow(int64_t a, const char* op, int64_t b) {
  TVM_FFI_THROW(ValueError) << "integer overflow in a shape expression: " << a << " " << op << " "
                            << b;
}

int64_t EvaluateNode(const Node& node, const std::vector<int64_t>& values) {
  switch (node.op) {
    case Node::Op::kConstant:
      return node.value;
    case Node::Op::kSymbol:
      return values.at(static_cast<size_t>(node.value));
    default:
      break;
  }
  const int64_t a = EvaluateNode(*node.lhs, values);
  const int64_t b = EvaluateNode(*node.rhs, values);
  // Hostile graphs can ask for any arithmetic: every operation is checked, never wraps.
  int64_t result = 0;
  switch (node.op) {
    case Node::Op::kAdd:
      if (__builtin_add_overflow(a, b, &result)) Overflow(a, "+", b);
      return result;
    case Node::Op::kSub:
      if (__builtin_sub_overflow(a, b, &result)) Overflow(a, "-", b);
      return result;
    case Node::Op::kMul:
      if (__builtin_mul_overflow(a, b, &result)) Overflow(a, "*", b);
      return result;
    case Node::Op::kFloorDiv:
    case Node::Op::kFloorMod:
      if (b == 0) TVM_FFI_THROW(ValueError) << "division by zero in a shape expression";
      if (a == std::numeric_limits<int64_t>::min() && b == -1) Overflow(a, "//", b);
      return node.op == Node::Op::kFloorDiv ? FloorDiv(a, b) : a - FloorDiv(a, b) * b;
    case Node::Op::kMin:
      return std::min(a, b);
    default:
      return std::max(a, b);
  }
}

std::string NodeToString(const Node& node, const std::vector<std::string>& symbols) {
  switch (node.op) {
    case Node::Op::kConstant:
      return std::to_string(node.value);
    case Node::Op::kSymbol:
      return symbols.at(static_cast<size_t>(node.value));
    case Node::Op::kMin:
    case Node::Op::kMax:
      return std::string(node.op == Node::Op::kMin ? "min(" : "max(") +
             NodeToString(*node.lhs, symbols) + ", " + NodeToString(*node.rhs, symbols) + ")";
    default:
      break;
  }
  const char* op = node.op == Node::Op::kAdd        ? " + "
                   : node.op == Node::Op::kSub      ? " - "
                   : node.op == Node::Op::kMul      ? " * "
                   : node.op == Node::Op::kFloorDiv ? " // "
                                                    : " % ";
  return "(" + NodeToString(*node.lhs, symbols) + op + NodeToString(*node.rhs, symbols) + ")";
}

// Recursive-descent parser for: expr := term (('+'|'-') term)*
//                               term := factor (('*'|'//'|'%') factor)*
//                               factor := INT | NAME | '(' expr ')' | ('min'|'max') '(' expr ','
//                               expr ')'
class ExprParser {
 public:
  ExprParser(const std::string& text, const std::vector<std::string>& symbols,
             const std::string& context)
      : text_(text), symbols_(symbols), context_(context) {}

  NodePtr Parse() {
    NodePtr node = ParseExpr();
    SkipSpace();
    if (pos_ != text_.size()) Fail("unexpected '" + text_.substr(pos_) + "'");
    return node;
  }

 private:
  [[noreturn]] void Fail(const std::string& why) {
    TVM_FFI_THROW(ValueError) << "malformed NNAPI graph JSON: " << Printable(context_)
                              << ": bad shape expression '" << Printable(text_)
                              << "': " << Printable(why);
  }
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Accept(const std::string& token) {
    SkipSpace();
    if (text_.compare(pos_, token.size(), token) == 0) {
      pos_ += token.size();
      return true;
    }
    return false;
  }
  NodePtr Binary(Node::Op op, NodePtr lhs, NodePtr rhs) {
    // Evaluation, printing and destruction recurse over the tree: bound its size (a chain of a
    // hundred thousand "+ 0" overflowed the stack).
    if (++operators_ > kMaxOperators) {
      Fail("more than " + std::to_string(kMaxOperators) + " operators");
    }
    auto node = std::make_shared<Node>();
    node->op = op;
    node->lhs = std::move(lhs);
    node->rhs = std::move(rhs);
    return node;
  }
  NodePtr ParseExpr() {
    NodePtr node = ParseTerm();
    while (true) {
      if (Accept("+")) {
        node = Binary(Node::Op::kAdd, node, ParseTerm());
      } else if (Accept("-")) {
        node = Binary(Node::Op::kSub, node, ParseTerm());
      } else {
        return node;
      }
    }
  }
  NodePtr ParseTerm() {
    NodePtr node = ParseFactor();
    while (true) {
      if (Accept("//")) {
        node = Binary(Node::Op::kFloorDiv, node, ParseFactor());
      } else if (Accept("*")) {
        node = Binary(Node::Op::kMul, node, ParseFactor());
      } else if (Accept("%")) {
        node = Binary(Node::Op::kFloorMod, node, ParseFactor());
      } else {
        return node;
      }
    }
  }
  NodePtr ParseFactor() {
    if (++depth_ > 64) Fail("nested too deeply");
    SkipSpace();
    if (pos_ >= text_.size()) Fail("unexpected end");
    NodePtr result;
    const char c = text_[pos_];
    if (Accept("(")) {
      result = ParseExpr();
      if (!Accept(")")) Fail("missing ')'");
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t end = pos_;
      while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
      auto node = std::make_shared<Node>();
      try {
        node->value = std::stoll(text_.substr(pos_, end - pos_));
      } catch (const std::exception&) {
        Fail("integer out of range");
      }
      pos_ = end;
      result = node;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = pos_;
      while (end < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_')) {
        ++end;
      }
      const std::string name = text_.substr(pos_, end - pos_);
      pos_ = end;
      if ((name == "min" || name == "max") && Accept("(")) {
        NodePtr lhs = ParseExpr();
        if (!Accept(",")) Fail("expected ','");
        NodePtr rhs = ParseExpr();
        if (!Accept(")")) Fail("missing ')'");
        result = Binary(name == "min" ? Node::Op::kMin : Node::Op::kMax, lhs, rhs);
      } else {
        auto it = std::find(symbols_.begin(), symbols_.end(), name);
        if (it == symbols_.end()) Fail("unknown symbol '" + name + "' (not in \"symbols\")");
        auto node = std::make_shared<Node>();
        node->op = Node::Op::kSymbol;
        node->value = it - symbols_.begin();
        result = node;
      }
    } else {
      Fail(std::string("unexpected '") + c + "'");
    }
    --depth_;
    return result;
  }

  static constexpr int kMaxOperators = 256;

  const std::string& text_;
  const std::vector<std::string>& symbols_;
  const std::string& context_;
  size_t pos_ = 0;
  int depth_ = 0;
  int operators_ = 0;
};

}  // namespace

DimExpr DimExpr::Constant(int64_t value) {
  auto node = std::make_shared<Node>();
  node->value = value;
  DimExpr expr;
  expr.root_ = node;
  return expr;
}

DimExpr DimExpr::Parse(const std::string& text, const std::vector<std::string>& symbols,
                       const std::string& context) {
  DimExpr expr;
  expr.root_ = ExprParser(text, symbols, context).Parse();
  return expr;
}

bool DimExpr::is_constant() const { return root_->op == Node::Op::kConstant; }
int DimExpr::symbol() const {
  return root_->op == Node::Op::kSymbol ? static_cast<int>(root_->value) : -1;
}
int64_t DimExpr::Evaluate(const std::vector<int64_t>& values) const {
  return EvaluateNode(*root_, values);
}
std::string DimExpr::ToString(const std::vector<std::string>& symbols) const {
  return NodeToString(*root_, symbols);
}

// ---- JSON reading helpers ----------------------------------------------------------------------

namespace {

using JsonObject = ffi::Map<ffi::Any, ffi::Any>;
using JsonArray = ffi::Array<ffi::Any>;

[[noreturn]] void Malformed(const std::string& where, const std::string& why) {
  TVM_FFI_THROW(ValueError) << "malformed NNAPI graph JSON: " << Printable(where) << ": "
                            << Printable(why);
}

std::optional<ffi::Any> Field(const JsonObject& object, const char* key) {
  auto it = object.find(ffi::String(key));
  if (it == object.end()) return std::nullopt;
  return (*it).second;
}

ffi::Any RequiredField(const JsonObject& object, const char* key, const std::string& where) {
  std::optional<ffi::Any> value = Field(object, key);
  if (!value.has_value()) Malformed(where, std::string("missing field \"") + key + "\"");
  return *value;
}

JsonObject AsObject(const ffi::Any& value, const std::string& where) {
  auto object = value.try_cast<JsonObject>();
  if (!object.has_value()) Malformed(where, "expected an object");
  return *object;
}

JsonArray AsArray(const ffi::Any& value, const std::string& where) {
  auto array = value.try_cast<JsonArray>();
  if (!array.has_value()) Malformed(where, "expected an array");
  return *array;
}

std::string AsString(const ffi::Any& value, const std::string& where) {
  auto text = value.try_cast<ffi::String>();
  if (!text.has_value()) Malformed(where, "expected a string");
  return std::string(*text);
}

bool IsInteger(const ffi::Any& value) { return value.type_index() == ffi::TypeIndex::kTVMFFIInt; }

int64_t AsInteger(const ffi::Any& value, const std::string& where) {
  if (!IsInteger(value)) Malformed(where, "expected an integer");
  return value.cast<int64_t>();
}

double AsNumber(const ffi::Any& value, const std::string& where) {
  if (IsInteger(value)) return static_cast<double>(value.cast<int64_t>());
  if (value.type_index() == ffi::TypeIndex::kTVMFFIFloat) return value.cast<double>();
  if (value.type_index() == ffi::TypeIndex::kTVMFFIBool) return value.cast<bool>() ? 1.0 : 0.0;
  Malformed(where, "expected a number");
}

uint32_t AsOperandId(const ffi::Any& value, size_t operand_count, const std::string& where) {
  const int64_t id = AsInteger(value, where);
  if (id < 0 || static_cast<uint64_t>(id) >= operand_count) {
    Malformed(where, "operand id " + std::to_string(id) + " does not exist (the graph has " +
                         std::to_string(operand_count) + " operands)");
  }
  return static_cast<uint32_t>(id);
}

DimExpr AsDimExpr(const ffi::Any& value, const std::vector<std::string>& symbols,
                  const std::string& where) {
  if (IsInteger(value)) return DimExpr::Constant(value.cast<int64_t>());
  if (auto text = value.try_cast<ffi::String>()) {
    return DimExpr::Parse(std::string(*text), symbols, where);
  }
  Malformed(where, "expected an integer or a shape expression string");
}

std::vector<uint32_t> AsOperandIdList(const ffi::Any& value, size_t operand_count,
                                      const std::string& where) {
  std::vector<uint32_t> ids;
  JsonArray array = AsArray(value, where);
  for (size_t i = 0; i < array.size(); ++i) {
    ids.push_back(AsOperandId(array[i], operand_count, where + "[" + std::to_string(i) + "]"));
  }
  return ids;
}

// Largest element count we accept for one operand (2^40 elements); guards overflow.
constexpr int64_t kMaxElements = int64_t{1} << 40;

}  // namespace

// ---- Graph
// ---------------------------------------------------------------------------------------
//
// Graph::Parse reads the document in the order of docs/graph-json.md: the header, the operands,
// the operations, the subgraph interface (inputs, outputs, skipped arguments), then checks the
// graph as a whole (roles, single writers, no cycle, bindable symbols). Each step names the node
// or field at fault in its message, and the first failing check wins: the order is part of the
// contract the hostile-graph tests pin.

namespace {
// Deepest array/object nesting accepted (a graph needs 4). tvm-ffi's JSON parser recurses per
// level, so a hostile document of a million '[' would exhaust the stack: refuse it up front.
constexpr int kMaxJsonDepth = 32;
// NNAPI's largest tensor rank the runtime accepts.
constexpr size_t kMaxRank = 6;

void CheckJsonDepth(const std::string& json) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        Malformed("document", "nested deeper than " + std::to_string(kMaxJsonDepth) +
                                  " levels at byte " + std::to_string(i));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

// The document's top-level object.
JsonObject ParseDocument(const std::string& json) {
  CheckJsonDepth(json);
  ffi::String error;
  ffi::Any root_value = ffi::json::Parse(ffi::String(json), &error);
  if (!error.empty()) Malformed("document", std::string(error));
  return AsObject(root_value, "document");
}

// ---- Header: format, version, symbol, symbols, relax_fp32_to_fp16.

bool IsIdentifier(const std::string& name) {
  return !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
         });
}

std::vector<std::string> ParseSymbols(const ffi::Any& value) {
  std::vector<std::string> symbols;
  JsonArray array = AsArray(value, "\"symbols\"");
  for (size_t i = 0; i < array.size(); ++i) {
    const std::string where = "symbols[" + std::to_string(i) + "]";
    std::string name = AsString(array[i], where);
    if (!IsIdentifier(name)) Malformed(where, "'" + name + "' is not an identifier");
    if (std::find(symbols.begin(), symbols.end(), name) != symbols.end()) {
      Malformed(where, "'" + name + "' is declared twice");
    }
    symbols.push_back(name);
  }
  return symbols;
}

void ParseHeader(const JsonObject& root, Graph* graph) {
  const std::string format = AsString(RequiredField(root, "format", "document"), "\"format\"");
  if (format != kGraphFormat) {
    Malformed("\"format\"", "is '" + format + "', expected '" + kGraphFormat + "'");
  }
  const int64_t version = AsInteger(RequiredField(root, "version", "document"), "version");
  if (version != kGraphVersion) {
    Malformed("\"version\"", "graph version " + std::to_string(version) +
                                 " is not supported by this runtime (it reads version " +
                                 std::to_string(kGraphVersion) + ")");
  }
  graph->version = kGraphVersion;
  graph->symbol = AsString(RequiredField(root, "symbol", "document"), "\"symbol\"");
  if (graph->symbol.empty() || Printable(graph->symbol) != graph->symbol) {
    Malformed("\"symbol\"", "'" + graph->symbol + "' is not a printable ASCII function name");
  }
  if (auto symbols = Field(root, "symbols")) graph->symbols = ParseSymbols(*symbols);
  if (auto relax = Field(root, "relax_fp32_to_fp16")) {
    graph->relax_fp32_to_fp16 = AsNumber(*relax, "\"relax_fp32_to_fp16\"") != 0;
  }
}

// ---- Operands: type, shape, quantisation, then the value (constant, inline value or omitted).

// NNAPI types whose inline values are floating point (the rest hold integers or booleans).
bool IsFloatCode(int32_t type) {
  return type == ANEURALNETWORKS_FLOAT32 || type == ANEURALNETWORKS_TENSOR_FLOAT32 ||
         type == ANEURALNETWORKS_TENSOR_FLOAT16 || type == ANEURALNETWORKS_FLOAT16;
}

void ParseOperandType(const JsonObject& object, const std::string& where, GraphOperand* operand) {
  const std::string type_name = AsString(RequiredField(object, "type", where), where + " type");
  operand->type = OperandTypeCode(type_name);
  if (operand->type < 0) Malformed(where, "unknown operand type '" + type_name + "'");
  operand->is_scalar = IsScalarCode(operand->type);
}

void ParseShape(const JsonObject& object, const std::string& where,
                const std::vector<std::string>& symbols, GraphOperand* operand) {
  auto shape = Field(object, "shape");
  if (!shape.has_value()) {
    if (!operand->is_scalar) Malformed(where, "a tensor needs a \"shape\"");
    return;
  }
  JsonArray dims = AsArray(*shape, where + " shape");
  if (operand->is_scalar && !dims.empty()) Malformed(where, "a scalar has no shape");
  if (dims.size() > kMaxRank) {
    Malformed(where, "rank " + std::to_string(dims.size()) + " > " + std::to_string(kMaxRank));
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    DimExpr dim = AsDimExpr(dims[d], symbols, where + " shape[" + std::to_string(d) + "]");
    if (dim.is_constant() && (dim.Evaluate({}) < 0 || dim.Evaluate({}) > kMaxElements)) {
      Malformed(where, "dimension " + std::to_string(d) + " is out of range");
    }
    operand->shape.push_back(dim);
  }
}

// "scale", "zero_point" and "channel_quant" (per-channel scales along channel_dim).
void ParseQuantisation(const JsonObject& object, const std::string& where, GraphOperand* operand) {
  if (auto scale = Field(object, "scale")) operand->scale = AsNumber(*scale, where + " scale");
  if (auto zero_point = Field(object, "zero_point")) {
    const int64_t value = AsInteger(*zero_point, where + " zero_point");
    if (value < std::numeric_limits<int32_t>::min() ||
        value > std::numeric_limits<int32_t>::max()) {
      Malformed(where, "zero_point " + std::to_string(value) + " does not fit in int32");
    }
    operand->zero_point = static_cast<int32_t>(value);
  }
  if (auto channel = Field(object, "channel_quant")) {
    JsonObject quant = AsObject(*channel, where + " channel_quant");
    const int64_t channel_dim =
        AsInteger(RequiredField(quant, "channel_dim", where), where + " channel_dim");
    if (channel_dim < 0 || static_cast<size_t>(channel_dim) >= operand->shape.size()) {
      Malformed(where, "channel_dim " + std::to_string(channel_dim) + " is not an axis of its " +
                           std::to_string(operand->shape.size()) + "-D shape");
    }
    operand->channel_dim = static_cast<uint32_t>(channel_dim);
    JsonArray scales = AsArray(RequiredField(quant, "scales", where), where + " scales");
    for (size_t s = 0; s < scales.size(); ++s) {
      operand->channel_scales.push_back(static_cast<float>(AsNumber(scales[s], where)));
    }
  }
}

// "constant": {"offset", "nbytes"}, a range of the constant blob that must hold exactly the
// bytes the operand's type and static shape need.
void ParseConstant(const ffi::Any& value, const std::string& where, uint64_t constants_size,
                   GraphOperand* operand) {
  operand->kind = GraphOperand::Kind::kConstant;
  JsonObject constant = AsObject(value, where + " constant");
  const int64_t offset = AsInteger(RequiredField(constant, "offset", where), where + " offset");
  const int64_t nbytes = AsInteger(RequiredField(constant, "nbytes", where), where + " nbytes");
  if (offset < 0 || nbytes < 0 || static_cast<uint64_t>(offset) > constants_size ||
      static_cast<uint64_t>(nbytes) > constants_size - static_cast<uint64_t>(offset)) {
    Malformed(where, "constant range [" + std::to_string(offset) + ", +" + std::to_string(nbytes) +
                         ") lies outside the " + std::to_string(constants_size) +
                         "-byte constant blob");
  }
  operand->offset = static_cast<uint64_t>(offset);
  operand->nbytes = static_cast<uint64_t>(nbytes);
  int64_t elements = 1;
  for (const DimExpr& dim : operand->shape) {
    if (!dim.is_constant()) Malformed(where, "a constant needs a static shape");
    // Each dimension is <= kMaxElements (checked above), so this product cannot overflow.
    const int64_t extent = dim.Evaluate({});
    if (extent != 0 && elements > kMaxElements / extent) Malformed(where, "constant is too large");
    elements *= extent;
  }
  const uint64_t expected = static_cast<uint64_t>(elements) * OperandElementSize(operand->type);
  if (expected != operand->nbytes) {
    Malformed(where, "constant has " + std::to_string(operand->nbytes) +
                         " bytes, its type and shape need " + std::to_string(expected));
  }
}

// "value": a scalar, or for a tensor a 1-D array; integer entries may be shape expressions.
void ParseInlineValue(const ffi::Any& value, const std::string& where,
                      const std::vector<std::string>& symbols, GraphOperand* operand) {
  operand->kind = GraphOperand::Kind::kValue;
  std::vector<ffi::Any> items;
  if (auto array = value.try_cast<JsonArray>()) {
    if (operand->is_scalar) Malformed(where, "a scalar value cannot be an array");
    for (size_t k = 0; k < array->size(); ++k) items.push_back((*array)[k]);
  } else {
    if (!operand->is_scalar) Malformed(where, "a tensor value must be an array");
    items.push_back(value);
  }
  const bool is_float = IsFloatCode(operand->type);
  for (size_t k = 0; k < items.size(); ++k) {
    const std::string item_where = where + " value[" + std::to_string(k) + "]";
    if (is_float) {
      operand->float_values.push_back(AsNumber(items[k], item_where));
    } else if (items[k].type_index() == ffi::TypeIndex::kTVMFFIBool) {
      operand->int_values.push_back(DimExpr::Constant(items[k].cast<bool>() ? 1 : 0));
    } else {
      operand->int_values.push_back(AsDimExpr(items[k], symbols, item_where));
    }
  }
  if (!operand->is_scalar) {
    if (operand->shape.size() != 1 || !operand->shape[0].is_constant() ||
        operand->shape[0].Evaluate({}) != static_cast<int64_t>(items.size())) {
      Malformed(where, "an inline tensor value must be 1-D with as many entries as values");
    }
  }
}

GraphOperand ParseOperand(const ffi::Any& value, size_t index,
                          const std::vector<std::string>& symbols, uint64_t constants_size) {
  const std::string where = "operand " + std::to_string(index);
  JsonObject object = AsObject(value, where);
  GraphOperand operand;
  operand.name = where;
  ParseOperandType(object, where, &operand);
  ParseShape(object, where, symbols, &operand);
  ParseQuantisation(object, where, &operand);
  const std::optional<ffi::Any> constant = Field(object, "constant");
  const std::optional<ffi::Any> inline_value = Field(object, "value");
  const bool omitted = Field(object, "omitted").has_value();
  if (int(constant.has_value()) + int(inline_value.has_value()) + int(omitted) > 1) {
    Malformed(where, "at most one of \"constant\", \"value\" and \"omitted\" may be given");
  }
  if (constant.has_value()) {
    ParseConstant(*constant, where, constants_size, &operand);
  } else if (inline_value.has_value()) {
    ParseInlineValue(*inline_value, where, symbols, &operand);
  } else if (omitted) {
    operand.kind = GraphOperand::Kind::kOmitted;
  }
  return operand;
}

// ---- Operations.

GraphOperation ParseOperation(const ffi::Any& value, size_t index, size_t operand_count) {
  std::string where = "operation " + std::to_string(index);
  JsonObject object = AsObject(value, where);
  GraphOperation operation;
  operation.op = AsString(RequiredField(object, "op", where), where + " op");
  if (auto source = Field(object, "source")) operation.source = AsString(*source, where);
  // From here on the operation is named as Graph::Describe names it.
  where +=
      " (" + operation.op + (operation.source.empty() ? "" : " from " + operation.source) + ")";
  operation.type = OperationCode(operation.op);
  if (operation.type < 0) Malformed(where, "unknown NNAPI operation '" + operation.op + "'");
  operation.inputs =
      AsOperandIdList(RequiredField(object, "inputs", where), operand_count, where + " inputs");
  operation.outputs =
      AsOperandIdList(RequiredField(object, "outputs", where), operand_count, where + " outputs");
  if (operation.outputs.empty()) Malformed(where, "an operation needs outputs");
  return operation;
}

// ---- Interface: "inputs", "outputs", "skip_arguments".

void ParseInterface(const JsonObject& root, Graph* graph) {
  const size_t operand_count = graph->operands.size();
  graph->inputs =
      AsOperandIdList(RequiredField(root, "inputs", "document"), operand_count, "\"inputs\"");
  graph->outputs =
      AsOperandIdList(RequiredField(root, "outputs", "document"), operand_count, "\"outputs\"");
  if (graph->outputs.empty()) Malformed("\"outputs\"", "the graph has no outputs");
  if (auto skip = Field(root, "skip_arguments")) {
    JsonArray positions = AsArray(*skip, "\"skip_arguments\"");
    const size_t parameters = graph->inputs.size() + positions.size();
    for (size_t i = 0; i < positions.size(); ++i) {
      const std::string where = "skip_arguments[" + std::to_string(i) + "]";
      const int64_t position = AsInteger(positions[i], where);
      if (position < 0 || static_cast<size_t>(position) >= parameters ||
          (i > 0 && position <= static_cast<int64_t>(graph->skip_arguments.back()))) {
        Malformed(where, "positions must be increasing and below the parameter count " +
                             std::to_string(parameters));
      }
      graph->skip_arguments.push_back(static_cast<uint32_t>(position));
    }
  }
}

// ---- Whole-graph checks.

// Marks the listed inputs and outputs; each must be a plain tensor listed once.
void AssignInterfaceRoles(Graph* graph) {
  for (uint32_t id : graph->inputs) {
    GraphOperand& operand = graph->operands[id];
    if (operand.kind != GraphOperand::Kind::kTemporary) {
      Malformed(operand.name, "listed as an input but is a constant, a value or listed twice");
    }
    if (operand.is_scalar) Malformed(operand.name, "scalar graph inputs are not supported");
    operand.kind = GraphOperand::Kind::kInput;
  }
  for (uint32_t id : graph->outputs) {
    GraphOperand& operand = graph->operands[id];
    if (operand.kind != GraphOperand::Kind::kTemporary) {
      Malformed(operand.name, "listed as an output but is an input, a constant or listed twice");
    }
    operand.kind = GraphOperand::Kind::kOutput;
  }
}

bool IsWritten(GraphOperand::Kind kind) {
  return kind == GraphOperand::Kind::kTemporary || kind == GraphOperand::Kind::kOutput;
}

// Every temporary and output is written by exactly one operation; returns the writer count of
// every operand (0 for inputs, constants, values and omitted operands).
std::vector<int> CheckSingleWriters(const Graph& graph) {
  std::vector<int> writers(graph.operands.size(), 0);
  for (const GraphOperation& operation : graph.operations) {
    for (uint32_t id : operation.outputs) {
      const GraphOperand& operand = graph.operands[id];
      if (!IsWritten(operand.kind)) {
        Malformed(graph.Describe(operation),
                  "writes " + operand.name + ", which is an input, a constant or a value");
      }
      if (++writers[id] > 1)
        Malformed(graph.Describe(operation), operand.name + " is written twice");
    }
  }
  for (size_t id = 0; id < graph.operands.size(); ++id) {
    const GraphOperand& operand = graph.operands[id];
    if (IsWritten(operand.kind) && writers[id] == 0) {
      Malformed(operand.name, "is never written by an operation (dangling operand)");
    }
  }
  return writers;
}

// The operations can run in some order: repeatedly run every operation whose inputs are ready;
// those never run are on a cycle.
void CheckAcyclic(const Graph& graph, const std::vector<int>& writers) {
  std::vector<bool> ready(graph.operands.size());
  for (size_t id = 0; id < graph.operands.size(); ++id) ready[id] = writers[id] == 0;
  std::vector<bool> done(graph.operations.size(), false);
  size_t remaining = graph.operations.size();
  bool progress = true;
  while (remaining > 0 && progress) {
    progress = false;
    for (size_t i = 0; i < graph.operations.size(); ++i) {
      if (done[i]) continue;
      const auto& inputs = graph.operations[i].inputs;
      if (std::all_of(inputs.begin(), inputs.end(), [&](uint32_t id) { return ready[id]; })) {
        done[i] = true;
        --remaining;
        progress = true;
        for (uint32_t id : graph.operations[i].outputs) ready[id] = true;
      }
    }
  }
  for (size_t i = 0; i < graph.operations.size() && remaining > 0; ++i) {
    if (!done[i]) Malformed(graph.Describe(graph.operations[i]), "is part of a cycle");
  }
}

// Every symbol must be bindable: it appears as a whole dimension of some input.
void CheckSymbolsBindable(const Graph& graph) {
  for (size_t s = 0; s < graph.symbols.size(); ++s) {
    bool bound = false;
    for (uint32_t id : graph.inputs) {
      for (const DimExpr& dim : graph.operands[id].shape) bound = bound || dim.symbol() == int(s);
    }
    if (!bound) {
      Malformed("symbol '" + graph.symbols[s] + "'",
                "does not appear as a dimension of any input, so it cannot be bound at run time");
    }
  }
}
}  // namespace

Graph Graph::Parse(const std::string& json, uint64_t constants_size) {
  const JsonObject root = ParseDocument(json);
  Graph graph;
  ParseHeader(root, &graph);
  JsonArray operands = AsArray(RequiredField(root, "operands", "document"), "\"operands\"");
  for (size_t i = 0; i < operands.size(); ++i) {
    graph.operands.push_back(ParseOperand(operands[i], i, graph.symbols, constants_size));
  }
  JsonArray operations = AsArray(RequiredField(root, "operations", "document"), "\"operations\"");
  if (operations.empty()) Malformed("\"operations\"", "the graph has no operations");
  for (size_t i = 0; i < operations.size(); ++i) {
    graph.operations.push_back(ParseOperation(operations[i], i, graph.operands.size()));
  }
  ParseInterface(root, &graph);
  AssignInterfaceRoles(&graph);
  CheckAcyclic(graph, CheckSingleWriters(graph));
  CheckSymbolsBindable(graph);
  return graph;
}

std::string SubgraphName(const std::string& symbol) { return "NNAPI subgraph '" + symbol + "'"; }
std::string SubgraphPrefix(const std::string& symbol) { return SubgraphName(symbol) + ": "; }

int64_t Graph::EvaluateFor(const DimExpr& expr, const std::vector<int64_t>& binding,
                           const std::string& where) const {
  try {
    return expr.Evaluate(binding);
  } catch (const ffi::Error& error) {
    TVM_FFI_THROW(ValueError) << SubgraphPrefix(symbol) << where << ": " << error.message()
                              << " in " << expr.ToString(symbols);
  }
}

std::string Graph::Describe(const GraphOperation& operation) const {
  const size_t index = static_cast<size_t>(&operation - operations.data());
  std::string text = "operation " + std::to_string(index) + " (" + operation.op;
  if (!operation.source.empty()) text += " from " + operation.source;
  return text + ")";
}

std::vector<int64_t> Graph::BindSymbols(
    const std::vector<std::vector<int64_t>>& given_shapes) const {
  // A rank-0 host value is declared to NNAPI as a [1] tensor (the codegen's add_input): the
  // same one element, so a rank-0 tensor is taken for an input of shape [1].
  std::vector<std::vector<int64_t>> input_shapes = given_shapes;
  for (size_t i = 0; i < inputs.size() && i < input_shapes.size(); ++i) {
    const std::vector<DimExpr>& declared = operands[inputs[i]].shape;
    if (input_shapes[i].empty() && declared.size() == 1 && declared[0].is_constant() &&
        declared[0].Evaluate({}) == 1) {
      input_shapes[i] = {1};
    }
  }
  std::vector<int64_t> binding(symbols.size(), -1);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const GraphOperand& operand = operands[inputs[i]];
    const std::vector<int64_t>& shape = input_shapes[i];
    if (shape.size() != operand.shape.size()) {
      TVM_FFI_THROW(ValueError) << SubgraphPrefix(symbol) << "input " << i << " has rank "
                                << shape.size() << ", the graph expects " << operand.shape.size();
    }
    for (size_t d = 0; d < shape.size(); ++d) {
      const int s = operand.shape[d].symbol();
      if (s < 0) continue;
      if (binding[s] >= 0 && binding[s] != shape[d]) {
        TVM_FFI_THROW(ValueError) << SubgraphPrefix(symbol) << "symbol '" << symbols[s] << "' is "
                                  << binding[s] << " from an earlier input but " << shape[d]
                                  << " in input " << i << " dimension " << d;
      }
      binding[s] = shape[d];
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<int64_t> expected = ConcreteShape(inputs[i], binding);
    if (expected != input_shapes[i]) {
      std::ostringstream message;
      message << SubgraphPrefix(symbol) << "input " << i << " has shape (";
      for (size_t d = 0; d < input_shapes[i].size(); ++d) {
        message << (d ? ", " : "") << input_shapes[i][d];
      }
      message << "), which does not match the graph's (";
      for (size_t d = 0; d < expected.size(); ++d) {
        message << (d ? ", " : "") << operands[inputs[i]].shape[d].ToString(symbols);
      }
      message << ")";
      TVM_FFI_THROW(ValueError) << message.str();
    }
  }
  return binding;
}

std::vector<int64_t> Graph::ConcreteShape(uint32_t operand,
                                          const std::vector<int64_t>& binding) const {
  std::vector<int64_t> shape;
  for (const DimExpr& dim : operands[operand].shape) {
    const int64_t value = EvaluateFor(dim, binding, operands[operand].name);
    if (value < 0 || value > kMaxElements) {
      TVM_FFI_THROW(ValueError) << SubgraphPrefix(symbol) << operands[operand].name
                                << " gets dimension " << value << " from " << dim.ToString(symbols);
    }
    shape.push_back(value);
  }
  return shape;
}

}  // namespace tvm_nnapi
