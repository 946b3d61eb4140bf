//===- ViewLayout.h - analysis of #harp.view layouts ------------*- C++ -*-===//
//
// Exact integer reasoning about view layouts over a static result box: where
// reads go out of bounds, which mask constraints always hold, and how two
// layouts compose. The verifier and the canonicalizer share these.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_DIALECT_HARP_IR_VIEWLAYOUT_H
#define HARP_DIALECT_HARP_IR_VIEWLAYOUT_H

#include "harp/Dialect/Harp/IR/HarpAttrs.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/DynamicAPInt.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::harp {

/// A witness that a view reads outside its source.
struct OutOfBoundsRead {
  /// An unmasked result index whose read is out of bounds.
  SmallVector<int64_t> resultIndex;
  /// The source dimension it reads out of, and the index it reads there.
  unsigned sourceDim;
  DynamicAPInt sourceIndex;
};

/// Looks for an unmasked index of the `resultShape` box whose read through
/// `layout` falls outside `sourceShape`. Returns std::nullopt when every read
/// is in bounds, and failure if the layout could not be analysed.
FailureOr<std::optional<OutOfBoundsRead>>
findOutOfBoundsRead(ViewAttr layout, ArrayRef<int64_t> resultShape,
                    ArrayRef<int64_t> sourceShape);

/// Whether the mask of `layout` holds exactly where its reads land inside
/// `sourceShape` (on the `resultShape` box): the view is then a padding of
/// its source, readable as a padded copy without a mask. False when there
/// is no mask or the layout could not be analysed.
bool isMaskExactlyInBounds(ViewAttr layout, ArrayRef<int64_t> resultShape,
                           ArrayRef<int64_t> sourceShape);

/// Whether the mask of `layout` excludes every index of the `resultShape`
/// box (the view then reads only its pad). False when there is no mask.
bool isMaskAlwaysFalse(ViewAttr layout, ArrayRef<int64_t> resultShape);

/// Simplifies `layout` for a result of `resultShape`: index arithmetic is
/// rewritten with the known index ranges (so a reshape followed by its
/// inverse becomes the identity), and mask constraints that hold on the
/// whole box are dropped, together with the mask and pad when none remain.
/// Returns `layout` itself when nothing changes.
ViewAttr simplifyLayout(ViewAttr layout, ArrayRef<int64_t> resultShape);

/// The layout of `view(view(x, inner), outer)` as a single view of `x`, or
/// null when the two cannot be one view (both masked with different pads).
ViewAttr composeLayouts(ViewAttr outer, ViewAttr inner);

/// Whether `a` and `b` (same dims and result count) give the same value at
/// every index of the `shape` box.
bool mapsAgreeOnBox(AffineMap a, AffineMap b, ArrayRef<int64_t> shape);

/// Evaluates a pure affine expression at integer dimension values, exactly
/// (no int64 overflow, whatever the constants).
DynamicAPInt evaluate(AffineExpr expr, ArrayRef<int64_t> dims);

/// Whether every constraint of `mask` holds at `dims` (true for a null mask).
bool containsPoint(IntegerSet mask, ArrayRef<int64_t> dims);

/// A single dim read with a step: `expr` as `step * d + offset` over
/// `numDims` dims, where it reads exactly one dim d linearly (no floordiv
/// or mod of it); nullopt otherwise. Returns (d, step, offset).
struct SteppedDim {
  unsigned dim;
  int64_t step;
  int64_t offset;
};
std::optional<SteppedDim> steppedDim(AffineExpr expr, unsigned numDims);

} // namespace mlir::harp

#endif // HARP_DIALECT_HARP_IR_VIEWLAYOUT_H
