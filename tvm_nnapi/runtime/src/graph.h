// SPDX-License-Identifier: Apache-2.0
// The graph JSON that relax.ext.nnapi emits and this runtime consumes (docs/graph-json.md).
//
// Parsing validates the whole graph up front and throws a tvm::ffi::Error whose message names
// the offending operand or operation, so a malformed module fails at load, never mid-run.
#ifndef TVM_NNAPI_RUNTIME_GRAPH_H_
#define TVM_NNAPI_RUNTIME_GRAPH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tvm_nnapi {

constexpr const char* kGraphFormat = "tvm-nnapi-graph";
constexpr int kGraphVersion = 1;

// A dimension: an integer, or an integer expression over the graph's symbolic variables
// ("n", "n * 32", "(n + 1) // 2", "max(n, 1)").
class DimExpr {
 public:
  static DimExpr Constant(int64_t value);
  // Parses `text`; symbols are resolved against `symbols` (their index is the variable id).
  // Throws a ValueError naming `context` on a syntax error or an unknown symbol.
  static DimExpr Parse(const std::string& text, const std::vector<std::string>& symbols,
                       const std::string& context);

  bool is_constant() const;
  // The symbol id when the expression is a single symbol, else -1.
  int symbol() const;
  // Value under the given symbol binding (all symbols bound). Throws on division by zero.
  int64_t Evaluate(const std::vector<int64_t>& values) const;
  std::string ToString(const std::vector<std::string>& symbols) const;

  struct Node;

 private:
  std::shared_ptr<const Node> root_;
};

struct GraphOperand {
  enum class Kind {
    kTemporary,  // produced by an operation, consumed by others
    kInput,      // a subgraph input (listed in "inputs")
    kOutput,     // a subgraph output (listed in "outputs")
    kConstant,   // tensor data in the module's constant blob
    kValue,      // inline value: a scalar, or a small tensor (e.g. shape, axes, paddings)
    kOmitted,    // optional operand without a value
  };
  std::string name;  // for messages, e.g. "operand 3"
  int32_t type = 0;  // NNAPI OperandCode
  bool is_scalar = false;
  std::vector<DimExpr> shape;
  float scale = 0.f;
  int32_t zero_point = 0;
  Kind kind = Kind::kTemporary;
  // kConstant.
  uint64_t offset = 0;
  uint64_t nbytes = 0;
  // kValue: scalar or tensor elements; integer entries may be expressions.
  std::vector<DimExpr> int_values;
  std::vector<double> float_values;
  // Per-channel quantisation (TENSOR_QUANT8_SYMM_PER_CHANNEL).
  std::optional<uint32_t> channel_dim;
  std::vector<float> channel_scales;
};

struct GraphOperation {
  int32_t type = 0;    // NNAPI OperationCode
  std::string op;      // NNAPI operation name, e.g. "ADD"
  std::string source;  // the Relax operator it came from (for messages)
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
};

struct Graph {
  int version = 0;
  std::string symbol;
  std::vector<std::string> symbols;
  std::vector<GraphOperand> operands;
  std::vector<GraphOperation> operations;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  // Positions among the function's parameters that are not tensors (shape values the VM
  // passes); the runtime skips them. Sorted.
  std::vector<uint32_t> skip_arguments;
  // Relaxed fp32 computation allowed (ANeuralNetworksModel_relaxComputationFloat32toFloat16).
  bool relax_fp32_to_fp16 = false;

  // Parses and validates; `constants_size` is the size of the accompanying constant blob.
  static Graph Parse(const std::string& json, uint64_t constants_size);

  // Binds symbols from concrete input shapes; throws (naming the input) on a mismatch. A
  // rank-0 shape is taken for an input declared [1] (a rank-0 value, declared as one element).
  std::vector<int64_t> BindSymbols(const std::vector<std::vector<int64_t>>& input_shapes) const;
  // Concrete shape of an operand under a binding.
  std::vector<int64_t> ConcreteShape(uint32_t operand, const std::vector<int64_t>& binding) const;
  std::string Describe(const GraphOperation& operation) const;
  // `expr` under a binding; an overflow or a division by zero throws a ValueError naming the
  // subgraph and `where` (e.g. "operand 4").
  int64_t EvaluateFor(const DimExpr& expr, const std::vector<int64_t>& binding,
                      const std::string& where) const;
};

// How runtime messages name a subgraph: "NNAPI subgraph 'main_0'". Every error about one
// subgraph starts with SubgraphPrefix: "NNAPI subgraph 'main_0': ".
std::string SubgraphName(const std::string& symbol);
std::string SubgraphPrefix(const std::string& symbol);

// `text` with every byte outside printable ASCII written as \xNN: untrusted names (from a graph or
// module bytes) can be quoted in error messages, which must stay valid UTF-8.
std::string Printable(const std::string& text);

// NNAPI code for an operand type name ("TENSOR_FLOAT32") or operation name ("ADD"); -1 if unknown.
int32_t OperandTypeCode(const std::string& name);
int32_t OperationCode(const std::string& name);
// Bytes per element of an operand type (0 if unknown).
size_t OperandElementSize(int32_t type);

}  // namespace tvm_nnapi

#endif  // TVM_NNAPI_RUNTIME_GRAPH_H_
