//===- Pipelines.h - harp's lowering pipelines ------------------*- C++ -*-===//
//
// Pipelines are functions shared by harp-opt and the JIT, so the two never
// drift.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_PIPELINES_PIPELINES_H
#define HARP_PIPELINES_PIPELINES_H

#include "harp/Codegen/CPU/Passes.h"

#include "mlir/Pass/PassOptions.h"
#include "mlir/Support/LLVM.h"

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
  PassOptions::Option<std::string> cpu{
      *this, "cpu",
      llvm::cl::desc("The CPU to generate code for: native, x86-64-v2, "
                     "x86-64-v3, x86-64-v4 or an LLVM CPU name; harp-vectorize "
                     "takes its vector width and register count from it "
                     "unless vector-bits / vector-registers are given, and "
                     "whether it has FMA unless fma is (empty: those options "
                     "alone)"),
      llvm::cl::init("")};
  PassOptions::Option<unsigned> vectorBits{
      *this, "vector-bits",
      llvm::cl::desc("Vector register width for harp-vectorize (overrides "
                     "cpu's; the JIT passes its target's: 512 with AVX-512, "
                     "256 with AVX, else 128)"),
      llvm::cl::init(512)};
  PassOptions::Option<unsigned> vectorRegisters{
      *this, "vector-registers",
      llvm::cl::desc("Architectural vector registers, which bound "
                     "harp-vectorize's register tiles (overrides cpu's; the "
                     "JIT passes its target's: 32 with AVX-512, else 16)"),
      llvm::cl::init(32)};
  PassOptions::Option<unsigned> l1Cache{
      *this, "l1-cache",
      llvm::cl::desc("L1 data cache in bytes, which bounds harp-vectorize's "
                     "k blocks (overrides cpu's, which are this machine's; "
                     "without either harp-vectorize's default, 48 KiB)"),
      llvm::cl::init(0)};
  PassOptions::Option<unsigned> l2Cache{
      *this, "l2-cache",
      llvm::cl::desc("L2 cache in bytes, which bounds harp-vectorize's n "
                     "blocks (overrides cpu's; without either "
                     "harp-vectorize's default, 1 MiB)"),
      llvm::cl::init(0)};
  PassOptions::Option<double> fmaPerCycle{
      *this, "fma-per-cycle",
      llvm::cl::desc("Vector FMAs the core starts per cycle, for "
                     "harp-vectorize (overrides cpu's, from LLVM's scheduling "
                     "model; 0: cpu's, else harp-vectorize's default, 2)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> fma{
      *this, "fma",
      llvm::cl::desc("The target has fused multiply-add, for harp-vectorize's "
                     "math approximations (overrides cpu's; the JIT passes "
                     "its target's; without either, true)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> threads{
      *this, "threads",
      llvm::cl::desc("Run the outermost parallel tile loops on OpenMP threads "
                     "(harp-parallelize; needs vectorize and, to run, "
                     "libomp)"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> parallelMinWork{
      *this, "parallel-min-work",
      llvm::cl::desc("With threads: the lane operations a loop nest must do "
                     "to run on threads (harp-parallelize's min-work)"),
      llvm::cl::init(kDefaultParallelMinWork)};
  PassOptions::Option<bool> profile{
      *this, "profile",
      llvm::cl::desc("Time every kernel into harp's runtime profile "
                     "(harp-profile-kernels; HARP_PROFILE)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> outline{
      *this, "outline",
      llvm::cl::desc("Move each kernel into a function of its own and merge "
                     "equal ones (harp-outline-kernels), so LLVM compiles "
                     "small functions"),
      llvm::cl::init(true)};
};

/// harp on tensors to the LLVM dialect: harp-function-abi, harp-autodiff,
/// canonicalize, harp-fuse, convert-harp-to-linalg, harp-inline-single-calls,
/// harp-fuse-epilogues, harp-vectorize, harp-full-rank-writes,
/// harp-duplicate-fills and harp-distinct-results, one-shot
/// bufferization with results turned into out-parameters, harp-parallelize
/// (with threads), scratch buffers hoisted out of the loops left sequential,
/// buffer deallocation, harp-profile-kernels (with profile),
/// harp-outline-kernels (with outline), loops, and the LLVM conversions (math
/// functions without an LLVM intrinsic become libm calls). Fails only for an
/// unknown `cpu`, saying why through `errorHandler` (default: on llvm::errs()).
LogicalResult buildHarpToLLVMPipeline(
    OpPassManager &pm, const HarpToLLVMOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler = nullptr);

struct HarpToGPUOptions : public PassPipelineOptions<HarpToGPUOptions> {
  PassOptions::Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("Fuse map_reduce chains before lowering (harp-fuse)"),
      llvm::cl::init(true)};
  PassOptions::Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("The GPU to compile for (sm_80, sm_90, ...)"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features, e.g. +ptx80 (empty: the chip's default)"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("What the kernels are embedded as: ptx (compiled by the "
                     "driver when loaded), cubin (compiled now by ptxas) or "
                     "fatbin"),
      llvm::cl::init("ptx")};
  PassOptions::Option<unsigned> optLevel{
      *this, "opt-level",
      llvm::cl::desc("Optimisation level of the device code (0-3)"),
      llvm::cl::init(3)};
  PassOptions::Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit path (libdevice for math functions, ptxas "
                     "for cubin)"),
      llvm::cl::init("/usr/local/cuda")};
  PassOptions::Option<int64_t> blockSize{
      *this, "block-size",
      llvm::cl::desc("Threads per block (harp-gpu-kernels)"),
      llvm::cl::init(256)};
  PassOptions::Option<int64_t> blockReduceMaxOutputs{
      *this, "block-reduce-max-outputs",
      llvm::cl::desc("Reductions with at most this many outputs get a block "
                     "per output (harp-gpu-kernels)"),
      llvm::cl::init(16384)};
  PassOptions::Option<int64_t> elementsPerThread{
      *this, "elements-per-thread",
      llvm::cl::desc("Outputs per thread of large element-wise kernels and "
                     "accumulators per thread of block reductions "
                     "(harp-gpu-kernels)"),
      llvm::cl::init(4)};
};

/// harp on tensors to host code in the LLVM dialect plus device code
/// embedded as a `gpu.binary`: harp-function-abi, harp-autodiff, harp-fuse,
/// convert-harp-to-linalg, harp-inline-single-calls, harp-full-rank-writes,
/// harp-duplicate-fills, harp-distinct-results, bufferization with
/// results as out-parameters,
/// harp-gpu-kernels (gpu.launch per kernel), harp-gpu-host (device buffers),
/// complex to standard, gpu-launch-sink-index-computations,
/// gpu-kernel-outlining, gpu-async-region (work in order on a stream: the
/// runtime's one stream),
/// nvvm-attach-target, convert-gpu-to-nvvm (kernels take bare pointers),
/// gpu-to-llvm and gpu-module-to-binary. The host
/// functions keep harp's C interface (`_mlir_ciface_`), with device
/// pointers in the descriptors.
void buildHarpToGPUPipeline(OpPassManager &pm, const HarpToGPUOptions &options);

/// Registers `harp-to-llvm` and `harp-to-gpu` for harp-opt's --pass-pipeline
/// and flags.
void registerHarpPipelines();

} // namespace mlir::harp

#endif // HARP_PIPELINES_PIPELINES_H
