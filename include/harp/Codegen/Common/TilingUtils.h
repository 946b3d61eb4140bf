//===- TilingUtils.h - what MLIR's tiling gets right ------------*- C++ -*-===//
//
// Shared by the passes that tile linalg kernels (harp-tile-and-vectorize,
// harp-fuse-epilogues).
//
//===----------------------------------------------------------------------===//

#ifndef HARP_CODEGEN_COMMON_TILINGUTILS_H
#define HARP_CODEGEN_COMMON_TILINGUTILS_H

namespace mlir {
class AffineMap;
class Operation;
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

} // namespace mlir::harp

#endif // HARP_CODEGEN_COMMON_TILINGUTILS_H
