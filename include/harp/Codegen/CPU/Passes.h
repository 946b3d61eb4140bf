//===- Passes.h - harp code generation for CPUs -----------------*- C++ -*-===//
//
// Passes on linalg, vector and scf that make CPU code: packing, window
// rewrites, tiling and vectorization, vector cleanup, threads; and the
// harp-vectorize pipeline that composes the first four.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_CODEGEN_CPU_PASSES_H
#define HARP_CODEGEN_CPU_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::harp {

/// harp-parallelize's default `min-work`: the lane operations a loop nest
/// must do to be worth a fork and join on threads (docs/Lowering.md,
/// "Threads").
inline constexpr int64_t kDefaultParallelMinWork = 262144;

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "harp/Codegen/CPU/Passes.h.inc"

/// The options of the harp-vectorize pipeline: the target's numbers
/// (docs/Lowering.md derives each one) and which rewrites run.
struct HarpVectorizeOptions : public PassPipelineOptions<HarpVectorizeOptions> {
  PassOptions::Option<unsigned> vectorBits{
      *this, "vector-bits",
      llvm::cl::desc("Width of the target's vector registers in bits"),
      llvm::cl::init(512)};
  PassOptions::Option<unsigned> registerRows{
      *this, "register-rows",
      llvm::cl::desc("Rows (m) of a contraction's register tile, and of a "
                     "convolution's output channels"),
      llvm::cl::init(8)};
  PassOptions::Option<unsigned> registerVectors{
      *this, "register-vectors",
      llvm::cl::desc("Vectors per row (n) of a contraction's register tile"),
      llvm::cl::init(2)};
  PassOptions::Option<unsigned> reductionVectors{
      *this, "reduction-vectors",
      llvm::cl::desc("Independent vector accumulators of a reduction"),
      llvm::cl::init(4)};
  PassOptions::Option<unsigned> cacheK{
      *this, "cache-k",
      llvm::cl::desc("k extent of a contraction's cache block, used where "
                     "it divides k (0: derived from l1-cache)"),
      llvm::cl::init(0)};
  PassOptions::Option<unsigned> cacheN{
      *this, "cache-n",
      llvm::cl::desc("n extent of a contraction's cache block, used where "
                     "it divides n (0: derived from l2-cache)"),
      llvm::cl::init(0)};
  PassOptions::Option<unsigned> l1Cache{
      *this, "l1-cache",
      llvm::cl::desc("L1 data cache in bytes (bounds k blocks)"),
      llvm::cl::init(48 * 1024)};
  PassOptions::Option<unsigned> l2Cache{
      *this, "l2-cache", llvm::cl::desc("L2 cache in bytes (bounds n blocks)"),
      llvm::cl::init(1024 * 1024)};
  PassOptions::Option<double> fmaPerCycle{
      *this, "fma-per-cycle",
      llvm::cl::desc("Vector FMAs the core starts per cycle "
                     "(harp-pack-contractions, harp-rewrite-windows)"),
      llvm::cl::init(2)};
  PassOptions::Option<bool> fma{
      *this, "fma",
      llvm::cl::desc("The target has fused multiply-add (harp-vector-cleanup: "
                     "without it the math approximations multiply and add "
                     "separately)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> pack{
      *this, "pack",
      llvm::cl::desc("Pack the right operand of matmuls wider than a cache "
                     "block into register-tile panels "
                     "(harp-pack-contractions)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> flattenWindows{
      *this, "flatten-windows",
      llvm::cl::desc("Rewrite convolution windows (harp-rewrite-windows): "
                     "strided ones de-interleaved, unit-stride ones "
                     "flattened onto the image's rows"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> splitChains{
      *this, "split-chains",
      llvm::cl::desc("Split element-wise kernels whose dependency chain is "
                     "long into two loops per L1 strip "
                     "(harp-split-chains)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> windowPlanes{
      *this, "window-planes",
      llvm::cl::desc("Flatten a window onto one copy of the image per tap "
                     "column where that costs less than a grid as wide as "
                     "the image (harp-rewrite-windows' planes)"),
      llvm::cl::init(true)};
};

/// Adds harp-pack-contractions (with `pack`), harp-rewrite-windows (with
/// `flatten-windows`), harp-split-chains (with `split-chains`),
/// harp-tile-and-vectorize and harp-vector-cleanup to
/// `pm`, a pass manager on func.func.
void buildHarpVectorizePipeline(OpPassManager &pm,
                                const HarpVectorizeOptions &options);

/// Registers `harp-vectorize` for --pass-pipeline (under func.func).
void registerHarpVectorizePipeline();

/// Memory effects for the mpi ops that call the MPI library (MLIR 22
/// declares none, and the buffer passes reject such ops): reads of the
/// buffers sent, writes of those received, and a write of the library's
/// state that keeps collectives alive and in order.
void registerMPIExternalModels(DialectRegistry &registry);

} // namespace mlir::harp

#endif // HARP_CODEGEN_CPU_PASSES_H
