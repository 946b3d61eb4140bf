//===- Vectorize.cpp - the harp-vectorize pipeline ------------------------===//
//
// harp-pack-contractions, harp-rewrite-windows, harp-split-chains,
// harp-tile-and-vectorize and harp-vector-cleanup with one set of target
// numbers.
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/CPU/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void mlir::harp::buildHarpVectorizePipeline(
    OpPassManager &pm, const HarpVectorizeOptions &options) {
  if (options.pack) {
    HarpPackContractionsPassOptions pack;
    pack.vectorBits = options.vectorBits;
    pack.registerRows = options.registerRows;
    pack.registerVectors = options.registerVectors;
    pack.cacheK = options.cacheK;
    pack.cacheN = options.cacheN;
    pack.l1Cache = options.l1Cache;
    pack.l2Cache = options.l2Cache;
    pack.fmaPerCycle = options.fmaPerCycle;
    pm.addPass(createHarpPackContractionsPass(pack));
  }
  if (options.flattenWindows) {
    HarpRewriteWindowsPassOptions windows;
    windows.vectorBits = options.vectorBits;
    windows.registerVectors = options.registerVectors;
    windows.fmaPerCycle = options.fmaPerCycle;
    windows.planes = options.windowPlanes;
    pm.addPass(createHarpRewriteWindowsPass(windows));
  }
  if (options.splitChains) {
    HarpSplitChainsPassOptions chains;
    chains.vectorBits = options.vectorBits;
    chains.l1Cache = options.l1Cache;
    pm.addPass(createHarpSplitChainsPass(chains));
  }
  HarpTileAndVectorizePassOptions tile;
  tile.vectorBits = options.vectorBits;
  tile.registerRows = options.registerRows;
  tile.registerVectors = options.registerVectors;
  tile.reductionVectors = options.reductionVectors;
  tile.cacheK = options.cacheK;
  tile.cacheN = options.cacheN;
  tile.l1Cache = options.l1Cache;
  tile.l2Cache = options.l2Cache;
  pm.addPass(createHarpTileAndVectorizePass(tile));
  HarpVectorCleanupPassOptions cleanup;
  cleanup.fma = options.fma;
  pm.addPass(createHarpVectorCleanupPass(cleanup));
}

void mlir::harp::registerHarpVectorizePipeline() {
  PassPipelineRegistration<HarpVectorizeOptions>(
      "harp-vectorize",
      "Tile and vectorize linalg kernels on tensors for a CPU: "
      "harp-pack-contractions, harp-rewrite-windows, harp-split-chains, "
      "harp-tile-and-vectorize and harp-vector-cleanup (nest it under "
      "func.func)",
      buildHarpVectorizePipeline);
}
