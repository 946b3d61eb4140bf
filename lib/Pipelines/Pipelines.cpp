//===- Pipelines.cpp - harp's lowering pipelines --------------------------===//

#include "harp/Pipelines/Pipelines.h"

#include "harp/Conversion/Passes.h"
#include "harp/Dialect/Harp/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::harp::buildHarpToLLVMPipeline(OpPassManager &pm,
                                         const HarpToLLVMOptions &options) {
  pm.addPass(createHarpFunctionABIPass());
  pm.addPass(createHarpAutodiffPass());
  pm.addPass(createCanonicalizerPass());
  if (options.fuse)
    pm.addPass(createHarpFusePass());
  pm.addPass(createConvertHarpToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  if (options.fuse) {
    // Vectorized matmuls keep their own kernel (see harp-fuse-epilogues).
    HarpFuseEpiloguesPassOptions epilogues;
    epilogues.contractions = !options.vectorize;
    pm.addNestedPass<func::FuncOp>(createHarpFuseEpiloguesPass(epilogues));
    pm.addPass(createCanonicalizerPass());
  }
  if (options.vectorize) {
    HarpVectorizePassOptions vectorize;
    vectorize.vectorBits = options.vectorBits;
    pm.addNestedPass<func::FuncOp>(createHarpVectorizePass(vectorize));
    pm.addPass(createCanonicalizerPass());
  }
  pm.addPass(createCSEPass());

  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Tile loops yield the buffer they were given: folding those iter_args
  // lets a result's allocation reach the return, where it is hoisted.
  pm.addPass(createCanonicalizerPass());
  // Callers (the JIT) allocate results: no buffer crosses the boundary with
  // ownership attached.
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addPass(createCanonicalizerPass());
  bufferization::buildBufferDeallocationPipeline(pm);

  bool threads = options.vectorize && options.threads;
  if (threads)
    pm.addNestedPass<func::FuncOp>(createHarpParallelizePass());
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
    pm.addPass(createCanonicalizerPass());
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
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertComplexToLLVMPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  if (threads)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::harp::registerHarpPipelines() {
  PassPipelineRegistration<HarpToLLVMOptions>(
      "harp-to-llvm",
      "Lower harp on tensors to the LLVM dialect (see buildHarpToLLVMPipeline)",
      buildHarpToLLVMPipeline);
}
