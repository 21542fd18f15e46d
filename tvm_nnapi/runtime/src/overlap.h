// SPDX-License-Identifier: Apache-2.0
// Subgraph calls that overlap with the program after them (tvm_nnapi/compiler/overlap.py).
//
// A subgraph's "<symbol>_async" function takes the arguments of "<symbol>" (inputs, then the
// outputs it writes), starts the call on a thread of its own and returns. The global function
// tvm_nnapi.runtime.join(started outputs, kept arguments..., destinations...) waits for the
// call that writes those outputs, rethrows its error if it failed, and copies each started
// output into its destination. Until the join, the started call holds references to all of
// its arguments; the program must not read its outputs or write its inputs before the join
// (the compiler places the join before the first reader and passes the inputs to it).
#ifndef TVM_NNAPI_RUNTIME_OVERLAP_H_
#define TVM_NNAPI_RUNTIME_OVERLAP_H_

#include <tvm/ffi/function.h>

#include <cstddef>
#include <functional>

namespace tvm_nnapi {

// The name suffix of a subgraph's starting function.
inline constexpr const char* kAsyncSuffix = "_async";

// Runs `run(args)` on a new thread; the last `num_outputs` arguments are the tensors it writes,
// by which tvm_nnapi.runtime.join finds the call.
void StartOverlapped(tvm::ffi::PackedArgs args, size_t num_outputs,
                     std::function<void(tvm::ffi::PackedArgs)> run);

}  // namespace tvm_nnapi

#endif  // TVM_NNAPI_RUNTIME_OVERLAP_H_
