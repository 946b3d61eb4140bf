//===- KernelBuilder.h - one linalg.generic per harp kernel -----*- C++ -*-===//
//
// Shared by the harp-to-linalg pattern families: builds the linalg.generic
// that evaluates a scalar body over an iteration domain, reading each tensor
// operand through the views that produce it without copying them.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_LIB_CONVERSION_HARPTOLINALG_KERNELBUILDER_H
#define HARP_LIB_CONVERSION_HARPTOLINALG_KERNELBUILDER_H

#include "harp/Dialect/Harp/IR/HarpOps.h"

#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::harp::lowering {

/// Computes the kernel's value at one point. `scalars` holds one element per
/// operand (read through its views), `indices` the domain indices.
using KernelBody = function_ref<Value(OpBuilder &b, Location loc,
                                      ValueRange scalars, ValueRange indices)>;

/// Builds one linalg.generic over `domain` that reads `operands` (each of the
/// domain's shape, possibly produced by harp.view chains, which become
/// indexing maps or masked in-body reads) and evaluates `body`. With a
/// reduction `kind`, the results are combined over `reduceDims`, which are
/// dropped from the returned tensor's shape.
Value buildKernel(OpBuilder &b, Location loc, ArrayRef<int64_t> domain,
                  ValueRange operands, ArrayRef<int64_t> reduceDims,
                  std::optional<ReductionKind> kind, Type elementType,
                  KernelBody body);

/// The region of `op` cloned at `b` with its block arguments as `scalars`
/// and harp.index as `indices` (the kernel's loop indices): the value it
/// yields.
Value cloneMapReduceBody(OpBuilder &b, MapReduceOp op, ValueRange scalars,
                         ValueRange indices);

/// Copies the value of `view` (a harp.view result) into a new tensor.
Value materializeView(OpBuilder &b, Location loc, Value view);

/// `expr` (over one dim per index) at `indices`, as an affine.apply.
Value applyExpr(OpBuilder &b, Location loc, AffineExpr expr,
                ValueRange indices);

/// Clamps an index value into [0, size - 1].
Value clampIndex(OpBuilder &b, Location loc, Value index, int64_t size);

} // namespace mlir::harp::lowering

#endif // HARP_LIB_CONVERSION_HARPTOLINALG_KERNELBUILDER_H
