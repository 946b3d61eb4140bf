//===- EpilogueFusion.cpp - the harp-fuse-epilogues pass ------------------===//

#include "harp/Codegen/Common/Passes.h"

#include "harp/Codegen/Common/TilingUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPFUSEEPILOGUESPASS
#include "harp/Codegen/Common/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

static bool isReduction(linalg::GenericOp op) {
  return op.getNumReductionLoops() > 0;
}

/// An all-parallel generic reading a reduction that only it reads (not a
/// contraction unless `contractions`), element by element or broadcast (a
/// projected permutation: a softmax's row maximum; through windows the
/// slices of neighbouring rows would overlap and be computed again), with
/// rows of at least `minRow` elements: a row costs a loop iteration, slices
/// and a kernel of its own, which a short row does not repay (the 2-element
/// rows of a 2x2 max pool's derivative made 131072 scalar kernels: 90 ms
/// for what takes 5 as separate kernels).
static bool isEpilogue(linalg::GenericOp op, bool contractions,
                       int64_t minRow) {
  if (op.getNumReductionLoops() != 0 || op.getNumLoops() < 2 ||
      op.getNumDpsInits() != 1 || !harp::hasMonotoneMaps(op))
    return false;
  int64_t row = op.getStaticLoopRanges().back();
  if (!ShapedType::isDynamic(row) && row < minRow)
    return false;
  return llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *input) {
    auto producer = input->get().getDefiningOp<linalg::GenericOp>();
    return producer && isReduction(producer) && input->get().hasOneUse() &&
           op.getMatchingIndexingMap(input).isProjectedPermutation() &&
           (contractions || !linalg::isaContractionOpInterface(producer));
  });
}

namespace {
struct HarpFuseEpiloguesPass
    : harp::impl::HarpFuseEpiloguesPassBase<HarpFuseEpiloguesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> epilogues;
    getOperation().walk([&](linalg::GenericOp op) {
      if (isEpilogue(op, contractions, minRow))
        epilogues.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : epilogues) {
      // Rows: every loop but the innermost one is tiled by one.
      SmallVector<OpFoldResult> tiles(op.getNumLoops(),
                                      rewriter.getIndexAttr(1));
      tiles.back() = rewriter.getIndexAttr(0);
      scf::SCFTileAndFuseOptions options;
      options.tilingOptions.setTileSizes(tiles);
      // Fuse what only this kernel reads: the reduction, its fill, empty
      // tensors. Anything read elsewhere would be computed twice. (The
      // untiled epilogue is still in the IR while fusion runs.) Not a
      // kernel that reads through a flip: its tile's slices would be wrong
      // (see isMonotone).
      Operation *original = op;
      options.setFusionControlFn(
          [original](tensor::ExtractSliceOp, OpResult producer, bool)
              -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
            unsigned readers =
                llvm::count_if(producer.getUses(), [&](OpOperand &use) {
                  return use.getOwner() != original;
                });
            if (readers > 1 || (isa<linalg::LinalgOp>(producer.getOwner()) &&
                                !harp::hasMonotoneMaps(producer.getOwner())))
              return std::nullopt;
            return scf::SCFTileAndFuseOptions::ControlFnResult{};
          });
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTileAndFuseResult> result =
          scf::tileConsumerAndFuseProducersUsingSCF(
              rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(result))
        continue; // Not tileable: the two kernels stay, still correct.
      // The row loops run over the epilogue's parallel dims: harp-parallelize
      // may run them on threads.
      for (LoopLikeOpInterface loop : result->loops)
        loop->setAttr(harp::kParallelLoopAttr, rewriter.getUnitAttr());
      for (OpResult res : op->getResults())
        if (Value replacement = result->replacements.lookup(res))
          rewriter.replaceAllUsesWith(res, replacement);
      rewriter.eraseOp(op);
    }
  }
};
} // namespace
