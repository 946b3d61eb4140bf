//===- TilingUtils.h - what MLIR's tiling gets right ------------*- C++ -*-===//
//
// Shared by the passes that tile linalg kernels (harp-tile-and-vectorize,
// harp-fuse-epilogues) and those that read the loops tiling makes.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_CODEGEN_COMMON_TILINGUTILS_H
#define HARP_CODEGEN_COMMON_TILINGUTILS_H

#include <cstdint>
#include <optional>

namespace mlir {
class AffineExpr;
class AffineMap;
class Operation;
class Value;
namespace scf {
class ForOp;
} // namespace scf
} // namespace mlir

namespace mlir::harp {

/// Whether every result of `map` grows with every dim: a sum of dims with
/// non-negative coefficients plus a non-negative constant. Tiling computes
/// an operand's slice from the images of a tile's first and last index,
/// which is only right for such maps (flips, floordiv and mod are not; a
/// negative constant would start a tile's slice before its operand).
bool isMonotone(AffineMap map);

/// Whether `op` is a linalg op all of whose indexing maps are monotone.
bool hasMonotoneMaps(Operation *op);

/// A map result that reads one dim with a stride: `dim * stride + offset`.
struct StridedRead {
  unsigned dim;
  int64_t stride, offset;
};
/// `expr` as `d * s + c` with constants s > 1 and c >= 0, else nullopt.
std::optional<StridedRead> stridedRead(AffineExpr expr);

/// A loop's bounds, where all three are constants and the step positive.
struct ConstantBounds {
  int64_t lb, ub, step;
  /// Iterations the loop runs (0 when ub <= lb).
  int64_t tripCount() const;
  /// The induction variable's last value; only where tripCount() > 0.
  int64_t last() const { return lb + (tripCount() - 1) * step; }
};
std::optional<ConstantBounds> constantBounds(Value lb, Value ub, Value step);
std::optional<ConstantBounds> constantBounds(scf::ForOp loop);

} // namespace mlir::harp

#endif // HARP_CODEGEN_COMMON_TILINGUTILS_H
