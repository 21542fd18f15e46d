// SPDX-License-Identifier: Apache-2.0
#include "operation.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace mock_nnapi {
namespace {

std::map<int32_t, OperationRegistration>& Registry() {
  static std::map<int32_t, OperationRegistration> registry;
  return registry;
}

std::string TypeList(std::initializer_list<int32_t> types) {
  std::string text;
  for (int32_t type : types) {
    if (!text.empty()) text += ", ";
    text += OperandTypeName(type);
  }
  return text;
}

}  // namespace

OperationRegistrar::OperationRegistrar(const OperationRegistration& registration) {
  Registry()[registration.type] = registration;
}

const OperationRegistration* FindOperation(int32_t type) {
  auto it = Registry().find(type);
  return it == Registry().end() ? nullptr : &it->second;
}

std::vector<const OperationRegistration*> AllOperations() {
  std::vector<const OperationRegistration*> all;
  for (const auto& [type, registration] : Registry()) all.push_back(&registration);
  return all;
}

int OperationContext::SetOutputShape(uint32_t i, const Dimensions& dimensions) {
  NN_CHECK(i < outputs_.size(), ANEURALNETWORKS_OP_FAILED) << name() << " output " << i;
  OperandInfo& output = *outputs_[i];
  // A declared dimension must agree with the computed one (CpuExecutor's rule: OP_FAILED).
  if (output.rank_known && !output.dimensions.empty()) {
    NN_CHECK_EQ(output.dimensions.size(), dimensions.size(), ANEURALNETWORKS_OP_FAILED)
        << name() << " output " << i << " declared rank differs from the computed shape "
        << DimensionsToString(dimensions);
    for (size_t d = 0; d < dimensions.size(); ++d) {
      NN_CHECK(output.dimensions[d] == 0 || output.dimensions[d] == dimensions[d],
               ANEURALNETWORKS_OP_FAILED)
          << name() << " output " << i << " declared " << DimensionsToString(output.dimensions)
          << " but the operation produces " << DimensionsToString(dimensions);
    }
  }
  output.dimensions = dimensions;
  output.rank_known = true;
  if (allocator_ == nullptr) return ANEURALNETWORKS_NO_ERROR;
  return allocator_->Allocate(i, &output);
}

int CheckOperandCounts(const OperationContext& context, std::initializer_list<uint32_t> allowed,
                       uint32_t outputs) {
  const bool inputs_ok =
      std::find(allowed.begin(), allowed.end(), context.InputCount()) != allowed.end();
  NN_CHECK(inputs_ok, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " got " << context.InputCount() << " inputs";
  NN_CHECK_EQ(context.OutputCount(), outputs, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " output count";
  return ANEURALNETWORKS_NO_ERROR;
}

int CheckInputType(const OperationContext& context, uint32_t i,
                   std::initializer_list<int32_t> allowed) {
  const int32_t type = context.InputType(i);
  const bool ok = std::find(allowed.begin(), allowed.end(), type) != allowed.end();
  NN_CHECK(ok, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " input " << i << " has type " << OperandTypeName(type)
      << "; expected one of " << TypeList(allowed);
  return ANEURALNETWORKS_NO_ERROR;
}

int CheckInputTypeLevel(OperationContext& context, uint32_t i,
                        std::initializer_list<TypeLevel> table) {
  const int32_t type = context.InputType(i);
  for (const TypeLevel& entry : table) {
    if (entry.type == type) {
      context.RequireFeatureLevel(entry.level);
      return ANEURALNETWORKS_NO_ERROR;
    }
  }
  std::string allowed;
  for (const TypeLevel& entry : table) {
    if (!allowed.empty()) allowed += ", ";
    allowed += OperandTypeName(entry.type);
  }
  NN_FAIL(ANEURALNETWORKS_BAD_DATA) << context.name() << " input " << i << " has type "
                                    << OperandTypeName(type) << "; expected one of " << allowed;
}

int CheckOutputTypeMatches(const OperationContext& context, uint32_t output, uint32_t input) {
  NN_CHECK_EQ(context.Output(output).type, context.Input(input).type, ANEURALNETWORKS_BAD_DATA)
      << context.name() << " output " << output << " type "
      << OperandTypeName(context.Output(output).type) << " differs from input " << input;
  return ANEURALNETWORKS_NO_ERROR;
}

int CheckRankAtMost(const OperationContext& context, const OperandInfo& operand, uint32_t rank,
                    const char* what) {
  if (!operand.rank_known) return ANEURALNETWORKS_NO_ERROR;
  NN_CHECK_LE(operand.rank(), rank, ANEURALNETWORKS_BAD_DATA) << context.name() << " " << what;
  return ANEURALNETWORKS_NO_ERROR;
}

int CheckFusedActivation(const OperationContext& context, uint32_t i) {
  NN_RETURN_IF_ERROR(CheckInputType(context, i, {ANEURALNETWORKS_INT32}));
  if (context.HasInputValue(i)) {
    const int32_t activation = context.InputScalar<int32_t>(i);
    NN_CHECK(activation >= ANEURALNETWORKS_FUSED_NONE && activation <= ANEURALNETWORKS_FUSED_RELU6,
             ANEURALNETWORKS_BAD_DATA)
        << context.name() << " fused activation " << activation;
  }
  return ANEURALNETWORKS_NO_ERROR;
}

}  // namespace mock_nnapi
