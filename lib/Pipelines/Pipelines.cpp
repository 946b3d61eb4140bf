//===- Pipelines.cpp - harp's lowering pipelines --------------------------===//

#include "harp/Pipelines/Pipelines.h"
#include "harp/InitAllHarp.h"
#include "harp/Support/Greedy.h"
#include "harp/Target/CPU.h"

#include "harp/Codegen/Passes.h"
#include "harp/Conversion/Passes.h"
#include "harp/Dialect/Harp/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <algorithm>

using namespace mlir;

/// A canonicalizer for loops and single-block regions, before scf-to-cf
/// (mlir::harp::structuredGreedyConfig: no region simplification).
static std::unique_ptr<Pass> createStructuredCanonicalizerPass() {
  GreedyRewriteConfig config = mlir::harp::structuredGreedyConfig();
  // The canonicalize pass's own default (the driver's is bottom-up).
  config.setUseTopDownTraversal(true);
  return createCanonicalizerPass(config);
}

namespace {
/// Does nothing, but names as its dependencies every dialect and external
/// model (bufferization, tiling, value bounds) the pipelines rely on, so that
/// the pass manager adds them to the context before anything runs: a
/// pipeline built into a context that only knows the harp dialect (an
/// embedder's, through the C API or a plugin) then works instead of failing
/// on an interface the context lacks.
struct HarpPipelineDialectsPass
    : public PassWrapper<HarpPipelineDialectsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(HarpPipelineDialectsPass)
  StringRef getArgument() const override { return "harp-pipeline-dialects"; }
  StringRef getDescription() const override {
    return "Load the dialects and external models harp's pipelines need";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    mlir::harp::registerAllHarpDialects(registry);
  }
  void runOnOperation() override {}
};
} // namespace

/// harp-function-abi, harp-autodiff, harp-fuse, convert-harp-to-linalg and
/// harp-inline-single-calls: the steps every device shares.
static void addFrontEnd(OpPassManager &pm, bool fuse) {
  pm.addPass(std::make_unique<HarpPipelineDialectsPass>());
  pm.addPass(mlir::harp::createHarpFunctionABIPass());
  pm.addPass(mlir::harp::createHarpAutodiffPass());
  // With region simplification: its dead-code walk clears what the
  // derivatives left unused, which the greedy driver alone leaves (harp-fuse
  // then counts those readers).
  pm.addPass(createCanonicalizerPass());
  if (fuse)
    pm.addPass(mlir::harp::createHarpFusePass());
  pm.addPass(mlir::harp::createConvertHarpToLinalgPass());
  pm.addPass(createStructuredCanonicalizerPass());
  // After the kernels are formed: inlined before harp-fuse, the attention
  // step's gradient fused into other kernels, one of them a reduction
  // along a strided dim that made the step 3.5x slower (docs/Lowering.md).
  pm.addPass(mlir::harp::createHarpInlineSingleCallsPass());
}

/// One-shot bufferization with identity layouts at function boundaries,
/// results turned into out-parameters the caller allocates.
static void addBufferization(OpPassManager &pm) {
  // Works around MLIR 22's overwrite check of rank-reduced vector writes
  // (see harp-full-rank-writes).
  pm.addNestedPass<func::FuncOp>(mlir::harp::createHarpFullRankWritesPass());
  // Matmuls whose zero fills CSE merged would each copy the shared one.
  pm.addNestedPass<func::FuncOp>(mlir::harp::createHarpDuplicateFillsPass());
  // Register tiles start from their fill's value instead of reading it;
  // fills their kernel overwrites are dropped. (No canonicalizer after it:
  // that would fold a packed result's reshape into its empty tensor, which
  // then bufferizes apart from the caller's buffer.)
  pm.addNestedPass<func::FuncOp>(mlir::harp::createHarpForwardFillsPass());
  // A value returned twice would be one buffer for two out-parameters.
  pm.addNestedPass<func::FuncOp>(mlir::harp::createHarpDistinctResultsPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Tile loops yield the buffer they were given: folding those iter_args
  // lets a result's allocation reach the return, where it is hoisted.
  pm.addPass(createStructuredCanonicalizerPass());
  // Callers (the JIT) allocate results: no buffer crosses the boundary with
  // ownership attached.
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addPass(createStructuredCanonicalizerPass());
}

/// Upstream's buffer-deallocation-pipeline, its canonicalizers without
/// region simplification (the loops are still structured).
static void addBufferDeallocation(OpPassManager &pm) {
  OpPassManager &func = pm.nest<func::FuncOp>();
  memref::ExpandReallocPassOptions realloc;
  realloc.emitDeallocs = false;
  func.addPass(memref::createExpandReallocPass(realloc));
  func.addPass(createStructuredCanonicalizerPass());
  func.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
  func.addPass(createStructuredCanonicalizerPass());
  func.addPass(bufferization::createBufferDeallocationSimplificationPass());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  OpPassManager &after = pm.nest<func::FuncOp>();
  after.addPass(createCSEPass());
  after.addPass(createStructuredCanonicalizerPass());
}

/// Rows of a contraction's register tile (harp-vectorize's register-rows,
/// rows of two accumulator vectors): as many as leave registers for the
/// row of the right operand (two vectors) and the left operand's broadcast
/// element, so that the k loop spills nothing. 6 with 16 registers (AVX2,
/// SSE: 12 accumulators + 3), 8 with 32 (AVX-512, where more rows were
/// measured to gain nothing).
static unsigned registerRowsFor(unsigned registers) {
  constexpr unsigned vectors = 2, maxRows = 8;
  if (registers <= vectors + 1)
    return 1;
  return std::min(maxRows, (registers - vectors - 1) / vectors);
}

LogicalResult mlir::harp::buildHarpToLLVMPipeline(
    OpPassManager &pm, const HarpToLLVMOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  unsigned vectorBits = options.vectorBits;
  unsigned vectorRegisters = options.vectorRegisters;
  unsigned l1Cache = options.l1Cache, l2Cache = options.l2Cache;
  double fmaPerCycle = options.fmaPerCycle;
  bool fma = options.fma;
  if (!options.cpu.empty() &&
      (!options.vectorBits.hasValue() || !options.vectorRegisters.hasValue() ||
       !l1Cache || !l2Cache || fmaPerCycle <= 0 || !options.fma.hasValue())) {
    llvm::Expected<::harp::CpuTarget> target =
        ::harp::resolveCpuTarget(options.cpu);
    if (!target) {
      std::string message =
          "harp-to-llvm: " + llvm::toString(target.takeError());
      if (errorHandler)
        return errorHandler(message);
      llvm::errs() << message << "\n";
      return failure();
    }
    if (!options.vectorBits.hasValue())
      vectorBits = target->vectorBits;
    if (!options.vectorRegisters.hasValue())
      vectorRegisters = target->vectorRegisters;
    if (!l1Cache)
      l1Cache = target->l1Bytes;
    if (!l2Cache)
      l2Cache = target->l2Bytes;
    if (fmaPerCycle <= 0)
      fmaPerCycle = target->fmaPerCycle;
    if (!options.fma.hasValue())
      fma = target->fma;
  }
  addFrontEnd(pm, options.fuse);
  if (options.fuse) {
    // Vectorized matmuls keep their own kernel (see harp-fuse-epilogues).
    HarpFuseEpiloguesPassOptions epilogues;
    epilogues.contractions = !options.vectorize;
    pm.addNestedPass<func::FuncOp>(createHarpFuseEpiloguesPass(epilogues));
    pm.addPass(createStructuredCanonicalizerPass());
  }
  if (options.vectorize) {
    HarpVectorizeOptions vectorize;
    vectorize.vectorBits = vectorBits;
    vectorize.registerRows = registerRowsFor(vectorRegisters);
    if (l1Cache)
      vectorize.l1Cache = l1Cache;
    if (l2Cache)
      vectorize.l2Cache = l2Cache;
    if (fmaPerCycle > 0)
      vectorize.fmaPerCycle = fmaPerCycle;
    vectorize.fma = fma;
    // Windows onto planes only on one thread: with two (Zen 4, AVX-512
    // code) planes made a 96-channel 5x5 convolution over 17 x 17 8%
    // slower (0.74 -> 0.80 ms) and one of 64 channels over 56 x 56 35%
    // (1.28 -> 1.72 ms; its planes, 2.5 MB, outgrow L2), where on one they
    // made the first 9% faster and the second no slower.
    vectorize.windowPlanes = !options.threads;
    buildHarpVectorizePipeline(pm.nest<func::FuncOp>(), vectorize);
    pm.addPass(createStructuredCanonicalizerPass());
  }
  // CSE that compares two kernels' loop nests only where their value
  // numbers are equal (upstream's compared every pair with equal operands:
  // quadratic in the number of kernels).
  pm.addNestedPass<func::FuncOp>(createHarpKernelCSEPass());

  addBufferization(pm);
  bool threads = options.vectorize && options.threads;
  // The loops worth threads become scf.parallel first, so that the hoisting
  // below knows them.
  if (threads) {
    HarpParallelizePassOptions parallelize;
    parallelize.minWork = options.parallelMinWork;
    pm.addNestedPass<func::FuncOp>(createHarpParallelizePass(parallelize));
  }
  // Scratch buffers of a loop body (a row's partial sums) are allocated
  // once, outside the loop, instead of once per iteration. Never out of an
  // scf.parallel (its iterations may run at once: each keeps its own
  // buffer), so with threads the loops left sequential are hoisted too.
  pm.addNestedPass<func::FuncOp>(bufferization::createBufferLoopHoistingPass());
  addBufferDeallocation(pm);

  if (options.vectorize) {
    HarpLowerCopiesPassOptions copies;
    copies.vectorBits = vectorBits;
    pm.addNestedPass<func::FuncOp>(createHarpLowerCopiesPass(copies));
  }
  if (options.profile)
    pm.addPass(createHarpProfileKernelsPass());
  // One LLVM function per kernel: LLVM's loop passes are superlinear in
  // the size of a function.
  if (options.outline)
    pm.addPass(createHarpOutlineKernelsPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // n-D transfers become unrolled 1-D ones (register tiles are small).
  pm.addNestedPass<func::FuncOp>(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  // What is left of a reduction after tiling is a horizontal reduction of
  // the partial accumulators, along the innermost dim.
  pm.addNestedPass<func::FuncOp>(vector::createLowerVectorMultiReductionPass(
      vector::VectorMultiReductionLowering::InnerReduction));
  if (threads) {
    pm.addPass(createConvertSCFToOpenMPPass());
    // Inlines the memref.alloca_scope wrapped around each loop body (a
    // single-block region, which lowering the loops inside it to cf would
    // break): harp's kernels allocate on the heap, never with alloca.
    pm.addPass(createStructuredCanonicalizerPass());
  }
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertComplexToStandardPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.vectorContractLowering =
      vector::VectorContractLowering::OuterProduct;
  vectorToLLVM.reassociateFPReductions = true;
  vectorToLLVM.vectorTransposeLowering =
      vector::VectorTransposeLowering::Shuffle16x16;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  // Collectives (harp::distributed): calls into the MPI library, while
  // their buffers are still memrefs.
  pm.addPass(mlir::harp::createHarpMPIToLLVMPass());
  // The rest in one dialect conversion (the dialects' ConvertToLLVM
  // interfaces, registered in InitAllHarp.cpp): one walk of the module
  // instead of one per dialect, which were a quarter of the MLIR pipeline's
  // time on the OpInfo suite's modules (docs/Performance.md, compile time).
  ConvertToLLVMPassOptions toLLVM;
  toLLVM.filterDialects = {"memref", "arith", "complex", "index",
                           "func",   "cf",    "ub"};
  pm.addPass(createConvertToLLVMPass(toLLVM));
  if (threads)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  return success();
}

void mlir::harp::buildHarpToGPUPipeline(OpPassManager &pm,
                                        const HarpToGPUOptions &options) {
  addFrontEnd(pm, options.fuse);
  pm.addPass(createCSEPass());

  // The same buffer ABI as harp-to-llvm: results are written into buffers
  // the caller allocates (on the device).
  addBufferization(pm);
  bufferization::buildBufferDeallocationPipeline(pm);

  HarpGPUKernelsPassOptions kernels;
  kernels.blockSize = options.blockSize;
  kernels.blockReduceMaxOutputs = options.blockReduceMaxOutputs;
  kernels.elementsPerThread = options.elementsPerThread;
  pm.addNestedPass<func::FuncOp>(createHarpGPUKernelsPass(kernels));
  pm.addPass(createLowerAffinePass());
  // Complex arithmetic beyond add/mul (exp, conj, abs, ...) as real
  // arithmetic, as on the CPU.
  pm.addPass(createConvertComplexToStandardPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // After CSE, never before: a constant harp-gpu-host moves into a kernel
  // would otherwise be merged back with the host's own read of it (a host
  // global the kernel cannot read).
  pm.addNestedPass<func::FuncOp>(createHarpGPUHostPass());

  // Constants and index arithmetic move into the kernels (the outlined
  // kernels see sizes as constants, not as arguments).
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  // One gpu.module (one ptxas run, one module load) for all the kernels.
  pm.addPass(createHarpMergeGPUModulesPass());
  // Launches, copies and (de)allocations in order on a stream (the CUDA
  // runtime hands every call its one stream), synchronized once before the
  // function returns.
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createSCFToControlFlowPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  device.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());

  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  GpuToLLVMConversionPassOptions host;
  host.kernelBarePtrCallConv = true;
  pm.addPass(createGpuToLLVMConversionPass(host));
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());

  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = options.toolkit;
  // gpu-module-to-binary names them isa and bin; it rejects other names.
  std::string format = options.format;
  binary.compilationTarget = format == "ptx"     ? std::string("isa")
                             : format == "cubin" ? std::string("bin")
                                                 : format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void mlir::harp::registerHarpPipelines() {
  registerPassPipeline(
      "harp-to-llvm",
      "Lower harp on tensors to the LLVM dialect (see buildHarpToLLVMPipeline)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        HarpToLLVMOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        return buildHarpToLLVMPipeline(pm, options, errorHandler);
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(HarpToLLVMOptions());
      });
  PassPipelineRegistration<HarpToGPUOptions>(
      "harp-to-gpu",
      "Lower harp on tensors to host LLVM code launching NVVM kernels (see "
      "buildHarpToGPUPipeline)",
      buildHarpToGPUPipeline);
}
