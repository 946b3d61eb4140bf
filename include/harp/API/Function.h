//===- Function.h - harp functions from Tensor API graphs -------*- C++ -*-===//
//
// For front ends that build harp IR through the Tensor API's graph (the
// graph DSL's importer): one func.func from placeholder arguments and any
// number of result nodes. Unlike Graph.h this header names MLIR types, so
// Tensor API users never include it.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_API_FUNCTION_H
#define HARP_API_FUNCTION_H

#include "harp/API/Graph.h"

#include "mlir/IR/Location.h"

namespace mlir {
class OpBuilder;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace harp::detail {

/// Builds `func.func @name(args...) -> (results...)` at `b`'s insertion
/// point. `args` are placeholder leaves (input()), in order; other leaves
/// the results read become constants of their values, and callFunction()
/// nodes become func.call ops. The builder must be in the shared JIT
/// context (Jit::sharedContext), whose mutex the caller holds. Throws
/// harp::Error for a placeholder read that is not among `args`.
mlir::func::FuncOp
buildGraphFunction(mlir::OpBuilder &b, const std::string &name,
                   mlir::Location loc, const std::vector<NodePtr> &args,
                   const std::vector<NodePtr> &results, bool isPrivate);

} // namespace harp::detail

#endif // HARP_API_FUNCTION_H
