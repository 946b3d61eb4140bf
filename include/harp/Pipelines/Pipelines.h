//===- Pipelines.h - harp's lowering pipelines ------------------*- C++ -*-===//
//
// Pipelines are functions shared by harp-opt and the JIT, so the two never
// drift.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_PIPELINES_PIPELINES_H
#define HARP_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::harp {

struct HarpToLLVMOptions : public PassPipelineOptions<HarpToLLVMOptions> {
  PassOptions::Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("Fuse map_reduce chains before lowering (harp-fuse)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> vectorize{
      *this, "vectorize",
      llvm::cl::desc("Tile and vectorize the linalg kernels (harp-vectorize)"),
      llvm::cl::init(true)};
  PassOptions::Option<unsigned> vectorBits{
      *this, "vector-bits",
      llvm::cl::desc("Vector register width for harp-vectorize (the JIT "
                     "passes the host's: 512 with AVX-512, else 256)"),
      llvm::cl::init(512)};
  PassOptions::Option<bool> threads{
      *this, "threads",
      llvm::cl::desc("Run the outermost parallel tile loops on OpenMP threads "
                     "(harp-parallelize; needs vectorize and, to run, "
                     "libomp)"),
      llvm::cl::init(false)};
};

/// harp on tensors to the LLVM dialect: harp-function-abi, harp-autodiff,
/// canonicalize,
/// convert-harp-to-linalg, one-shot bufferization with results turned into
/// out-parameters, buffer deallocation, loops, and the LLVM conversions (math
/// functions without an LLVM intrinsic become libm calls).
void buildHarpToLLVMPipeline(OpPassManager &pm,
                             const HarpToLLVMOptions &options);

/// Registers `harp-to-llvm` for harp-opt's --pass-pipeline and flags.
void registerHarpPipelines();

} // namespace mlir::harp

#endif // HARP_PIPELINES_PIPELINES_H
