//===- Passes.h - harp code generation shared by targets --------*- C++ -*-===//
//
// Passes on linalg, tensor and func that CPU and GPU code generation share:
// the function ABI, epilogue fusion, full-rank vector writes, distinct
// results.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_CODEGEN_COMMON_PASSES_H
#define HARP_CODEGEN_COMMON_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::harp {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "harp/Codegen/Common/Passes.h.inc"

/// The unit attribute harp-tile-and-vectorize and harp-fuse-epilogues put
/// on tile loops over parallel dims, and harp-parallelize reads (and
/// removes).
inline constexpr llvm::StringLiteral kParallelLoopAttr = "harp.parallel";

} // namespace mlir::harp

#endif // HARP_CODEGEN_COMMON_PASSES_H
