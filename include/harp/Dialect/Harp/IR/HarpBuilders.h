//===- HarpBuilders.h - layouts and wrappers shared by IR builders -*- C++
//-*-===//
//
// The #harp.view layouts of the common views (reshape, broadcast, permute,
// slice, flip, pad, sliding windows and their adjoint) and the function that
// wraps harp.autodiff, built from shapes. The Tensor API, harp-run's gradient
// check and the derivative rules build IR through these, so each layout is
// written once.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_DIALECT_HARP_IR_HARPBUILDERS_H
#define HARP_DIALECT_HARP_IR_HARPBUILDERS_H

#include "harp/Dialect/Harp/IR/HarpAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Builders.h"

namespace mlir::harp {

/// Row-major linearisation of index expressions `dims` over `shape`.
AffineExpr linearize(ArrayRef<AffineExpr> dims, ArrayRef<int64_t> shape,
                     MLIRContext *ctx);

/// The indices of row-major position `linear` in `shape`.
SmallVector<AffineExpr> delinearize(AffineExpr linear, ArrayRef<int64_t> shape);

/// A view reading source index `exprs(d0, ..., d{resultRank-1})`.
ViewAttr indexLayout(MLIRContext *ctx, unsigned resultRank,
                     ArrayRef<AffineExpr> exprs);

/// `source` reshaped to `result` (same element count), row-major.
ViewAttr reshapeLayout(MLIRContext *ctx, ArrayRef<int64_t> source,
                       ArrayRef<int64_t> result);

/// `source` broadcast to `result` with NumPy's rules: trailing dims align
/// and a size-1 dim is read at index 0.
ViewAttr broadcastLayout(MLIRContext *ctx, ArrayRef<int64_t> source,
                         ArrayRef<int64_t> result);

/// Result dim k is source dim `perm[k]` (a permutation of 0..rank-1).
ViewAttr permuteLayout(MLIRContext *ctx, ArrayRef<int64_t> perm);

/// Dim `dim` of a rank-`rank` source read from `start` in steps of `step`.
ViewAttr sliceLayout(MLIRContext *ctx, unsigned rank, unsigned dim,
                     int64_t start, int64_t step);

/// `shape` with the dims where `flipped` is true read backwards.
ViewAttr flipLayout(MLIRContext *ctx, ArrayRef<int64_t> shape,
                    ArrayRef<bool> flipped);

/// `source` with `before[i]` and `after[i]` elements of pad around dim i
/// (a masked view reading `pad` outside the source). `pad` is a FloatAttr
/// or IntegerAttr; 0, 1 and infinities become the named pad kinds.
ViewAttr padLayout(MLIRContext *ctx, ArrayRef<int64_t> source,
                   ArrayRef<int64_t> before, ArrayRef<int64_t> after,
                   TypedAttr pad);

/// Sliding windows over the trailing `stride.size()` dims of a rank-`rank`
/// source: result [lead..., out..., kernel...] reads
/// out * stride + kernel * dilation.
ViewAttr windowLayout(MLIRContext *ctx, unsigned rank, ArrayRef<int64_t> stride,
                      ArrayRef<int64_t> dilation);

/// The adjoint of windowLayout as a masked read of the windows: over a
/// domain [lead..., size..., kernel...] it reads window
/// (s - k * dilation) / stride where that is an integer in 0..outs-1, and
/// zero elsewhere. Summing over the kernel dims gives col2im.
ViewAttr foldLayout(MLIRContext *ctx, unsigned lead, ArrayRef<int64_t> outs,
                    ArrayRef<int64_t> stride, ArrayRef<int64_t> dilation);

/// Builds `func.func @name` at `b`'s insertion point taking `callee`'s
/// arguments (then, with `seeded`, one cotangent per callee result) and
/// returning `callee`'s results followed by the gradients with respect to
/// the arguments in `wrt`, through one harp.autodiff op.
func::FuncOp buildGradientFunction(OpBuilder &b, Location loc, StringRef name,
                                   func::FuncOp callee, ArrayRef<int64_t> wrt,
                                   bool seeded);

} // namespace mlir::harp

#endif // HARP_DIALECT_HARP_IR_HARPBUILDERS_H
