//===- HarpToLinalg.h - harp to linalg patterns -----------------*- C++ -*-===//

#ifndef HARP_CONVERSION_HARPTOLINALG_HARPTOLINALG_H
#define HARP_CONVERSION_HARPTOLINALG_HARPTOLINALG_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace mlir::harp {

/// harp.map_reduce (with the views feeding it) to linalg.generic.
void populateMapReduceToLinalgPatterns(RewritePatternSet &patterns);
/// harp.view not consumed by map_reduce, and harp.contiguous.
void populateViewToLinalgPatterns(RewritePatternSet &patterns);
/// harp.concat, harp.gather, harp.scatter_add.
void populateDataMovementToLinalgPatterns(RewritePatternSet &patterns);
/// harp.rand, harp.arange.
void populateSourcesToLinalgPatterns(RewritePatternSet &patterns);

/// All of the above.
inline void populateHarpToLinalgPatterns(RewritePatternSet &patterns) {
  populateMapReduceToLinalgPatterns(patterns);
  populateViewToLinalgPatterns(patterns);
  populateDataMovementToLinalgPatterns(patterns);
  populateSourcesToLinalgPatterns(patterns);
}

} // namespace mlir::harp

#endif // HARP_CONVERSION_HARPTOLINALG_HARPTOLINALG_H
