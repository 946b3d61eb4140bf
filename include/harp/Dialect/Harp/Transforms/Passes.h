//===- Passes.h - harp dialect transformations ------------------*- C++ -*-===//

#ifndef HARP_DIALECT_HARP_TRANSFORMS_PASSES_H
#define HARP_DIALECT_HARP_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace mlir::harp {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "harp/Dialect/Harp/Transforms/Passes.h.inc"

/// The producer-into-consumer fusion patterns of harp-fuse.
void populateHarpFusionPatterns(RewritePatternSet &patterns,
                                const HarpFusePassOptions &options);

} // namespace mlir::harp

#endif // HARP_DIALECT_HARP_TRANSFORMS_PASSES_H
