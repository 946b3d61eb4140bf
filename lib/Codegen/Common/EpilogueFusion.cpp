//===- EpilogueFusion.cpp - the harp-fuse-epilogues pass ------------------===//

#include "harp/Codegen/Common/Passes.h"

#include "harp/Codegen/Common/TilingUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPFUSEEPILOGUESPASS
#include "harp/Codegen/Common/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

static bool isReduction(linalg::GenericOp op) {
  return op.getNumReductionLoops() > 0;
}

/// Whether `op` sums the products of its two inputs, whatever its indexing
/// maps: a matmul, and also a convolution, whose windows (`oh + kh`) are
/// no projected permutation, so that linalg's contraction interface does
/// not see it. harp-vectorize gives the whole kernel register tiles over
/// its output channels and rows; fused into an epilogue's rows, a
/// convolution was computed one output row at a time, on scalars where
/// the row is narrower than a register tile: conv -> batch norm -> ReLU
/// over 32 x 16 x 32 x 32 took 1.1 s a call with AVX2 code, its
/// convolution alone 2 ms.
static bool isProductSum(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() == 0 || op->getNumRegions() != 1)
    return false;
  return linalg::detail::isContractionBody(
      *op.getBlock(), [](Operation *mul, Operation *add) {
        return (isa<arith::MulFOp>(mul) && isa<arith::AddFOp>(add)) ||
               (isa<arith::MulIOp>(mul) && isa<arith::AddIOp>(add));
      });
}

/// Whether an epilogue tiled into rows (every loop but the innermost by
/// one) reads each element of an input through `map` in one row tile only:
/// `map` reads every outer loop that has more than one iteration. Fused
/// through a map that broadcasts along an outer loop (a batch norm's
/// per-channel statistics read by its (n, c, h, w) normalization), the
/// reduction would be computed again in every row that reads its element:
/// N x H times the whole reduction over (n, h, w) for each channel, which
/// made conv -> batch norm -> ReLU kernels thousands of times slower than
/// the reduction and the epilogue as two kernels.
static bool readOncePerRow(AffineMap map, ArrayRef<int64_t> ranges) {
  for (unsigned d = 0; d + 1 < ranges.size(); ++d)
    if (ranges[d] != 1 && !map.isFunctionOfDim(d))
      return false;
  return true;
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
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t row = ranges.back();
  if (!ShapedType::isDynamic(row) && row < minRow)
    return false;
  return llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *input) {
    auto producer = input->get().getDefiningOp<linalg::GenericOp>();
    AffineMap map = op.getMatchingIndexingMap(input);
    return producer && isReduction(producer) && input->get().hasOneUse() &&
           map.isProjectedPermutation() && readOncePerRow(map, ranges) &&
           (contractions || !isProductSum(producer));
  });
}

/// Whether `a` (in `r`'s region) and `b` (in `e`'s) compute the same value:
/// the same ops over the same constants and the same input elements (block
/// arguments of inputs that are one value read through one map). `same`
/// holds the pairs already matched, so a value read twice (`t * t`) is
/// compared once: a chain of such ops is not compared 2^n times.
static bool sameValue(Value a, linalg::GenericOp r, Value b,
                      linalg::GenericOp e,
                      DenseSet<std::pair<Value, Value>> &same) {
  if (same.contains({a, b}))
    return true;
  auto argA = dyn_cast<BlockArgument>(a), argB = dyn_cast<BlockArgument>(b);
  if (argA || argB) {
    if (!argA || !argB || argA.getOwner() != r.getBody() ||
        argB.getOwner() != e.getBody())
      return false;
    OpOperand *inA = r.getMatchingOpOperand(argA);
    OpOperand *inB = e.getMatchingOpOperand(argB);
    if (!r.isDpsInput(inA) || !e.isDpsInput(inB) ||
        r.getMatchingIndexingMap(inA) != e.getMatchingIndexingMap(inB))
      return false;
    if (inA->get() != inB->get()) {
      // Tiling slices each kernel's operands on its own: equal slices of
      // one tensor are the same input.
      Operation *sliceA = inA->get().getDefiningOp();
      Operation *sliceB = inB->get().getDefiningOp();
      if (!sliceA || !sliceB || !isa<tensor::ExtractSliceOp>(sliceA) ||
          !OperationEquivalence::isEquivalentTo(
              sliceA, sliceB, OperationEquivalence::IgnoreLocations))
        return false;
    }
    same.insert({a, b});
    return true;
  }
  Operation *opA = a.getDefiningOp(), *opB = b.getDefiningOp();
  if (!opA || !opB || opA->getName() != opB->getName() ||
      opA->getAttrDictionary() != opB->getAttrDictionary() ||
      opA->getNumOperands() != opB->getNumOperands() || opA->getNumRegions() ||
      opB->getNumRegions() ||
      cast<OpResult>(a).getResultNumber() !=
          cast<OpResult>(b).getResultNumber())
    return false;
  for (auto [x, y] : llvm::zip(opA->getOperands(), opB->getOperands()))
    if (!sameValue(x, r, y, e, same))
      return false;
  same.insert({a, b});
  return true;
}

/// Whether computing `v` costs more than storing and reloading it: it
/// reaches a transcendental (a `math` op) or a division.
static bool costly(Value v) {
  SmallVector<Operation *> work;
  SmallPtrSet<Operation *, 16> seen;
  auto push = [&](Value x) {
    if (Operation *op = x.getDefiningOp(); op && seen.insert(op).second)
      work.push_back(op);
  };
  push(v);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (isa<math::MathDialect>(op->getDialect()) ||
        isa<arith::DivFOp, arith::DivSIOp, arith::DivUIOp, arith::RemFOp>(op))
      return true;
    llvm::for_each(op->getOperands(), push);
  }
  return false;
}

/// In a row tile, a reduction `r` accumulating a costly value `v` (a
/// softmax's exp(x - max)) and the epilogue `e` reading its result and
/// computing `v` again (exp(x - max) / sum): `v` is computed once, into
/// the epilogue's output row, the reduction sums that row and the
/// epilogue finishes it in place. The row is in L1; a second exp per
/// element was the cost of a softmax on 8-lane vectors. Returns whether
/// it rewrote.
static bool storeSharedValue(RewriterBase &rewriter, linalg::GenericOp r,
                             linalg::GenericOp e) {
  if (r.getNumDpsInits() != 1 || e.getNumDpsInits() != 1 ||
      r.getNumLoops() != e.getNumLoops() ||
      r.getStaticLoopRanges() != e.getStaticLoopRanges() ||
      !r.hasPureTensorSemantics() || !e.hasPureTensorSemantics())
    return false;
  AffineMap outMap = e.getMatchingIndexingMap(e.getDpsInitOperand(0));
  if (!outMap.isPermutation())
    return false;
  // r yields combine(out, v), combine read by nothing else.
  Block *rBody = r.getBody();
  auto rYield = cast<linalg::YieldOp>(rBody->getTerminator());
  Operation *combine = rYield.getValues()[0].getDefiningOp();
  BlockArgument acc = r.getMatchingBlockArgument(r.getDpsInitOperand(0));
  if (!combine || combine->getBlock() != rBody ||
      combine->getNumOperands() != 2 || combine->getNumResults() != 1 ||
      !combine->hasOneUse() || !llvm::is_contained(combine->getOperands(), acc))
    return false;
  Value v = combine->getOperand(0) == acc ? combine->getOperand(1)
                                          : combine->getOperand(0);
  // v is stored in e's output, whose old contents e must not read; only
  // combine reads the accumulator (p computes v without it).
  BlockArgument eOut = e.getMatchingBlockArgument(e.getDpsInitOperand(0));
  if (v == acc || !acc.hasOneUse() || !eOut.use_empty() ||
      v.getType() != eOut.getType() || !costly(v) ||
      llvm::any_of(v.getUsers(), [&](Operation *u) { return u != combine; }))
    return false;
  // The same value in e.
  Value w;
  DenseSet<std::pair<Value, Value>> same;
  e.getBody()->walk([&](Operation *op) {
    for (Value res : op->getResults())
      if (!w && sameValue(v, r, res, e, same))
        w = res;
  });
  if (!w)
    return false;

  // p writes into e's output slice, which tiling made after r: it moves up
  // where its operands allow.
  Value eInit = e.getDpsInitOperand(0)->get();
  if (Operation *def = eInit.getDefiningOp();
      def && def->getBlock() == r->getBlock() && r->isBeforeInBlock(def)) {
    if (def->getNumRegions() || !isMemoryEffectFree(def) ||
        llvm::any_of(def->getOperands(), [&](Value x) {
          Operation *d = x.getDefiningOp();
          return d && d->getBlock() == r->getBlock() && !d->isBeforeInBlock(r);
        }))
      return false;
    rewriter.moveOpBefore(def, r);
  }
  Location loc = r.getLoc();
  using It = utils::IteratorType;
  rewriter.setInsertionPoint(r);
  // p = v over the whole tile, written where e writes.
  SmallVector<AffineMap> pMaps;
  for (OpOperand *input : r.getDpsInputOperands())
    pMaps.push_back(r.getMatchingIndexingMap(input));
  pMaps.push_back(outMap);
  auto p = linalg::GenericOp::create(
      rewriter, loc, eInit.getType(), r.getDpsInputs(), ValueRange{eInit},
      pMaps, SmallVector<It>(r.getNumLoops(), It::parallel),
      [&](OpBuilder &b, Location nloc, ValueRange args) {
        IRMapping map;
        for (auto [i, input] : llvm::enumerate(r.getDpsInputOperands()))
          map.map(r.getMatchingBlockArgument(input), args[i]);
        for (Operation &op : rBody->without_terminator()) {
          if (&op == combine)
            continue;
          b.clone(op, map);
        }
        linalg::YieldOp::create(b, nloc, map.lookup(v));
      });
  // r' accumulates p.
  auto reduced = linalg::GenericOp::create(
      rewriter, loc, r.getResultTypes(), ValueRange{p.getResult(0)},
      r.getDpsInits(),
      SmallVector<AffineMap>{outMap,
                             r.getMatchingIndexingMap(r.getDpsInitOperand(0))},
      r.getIteratorTypesArray(),
      [&](OpBuilder &b, Location nloc, ValueRange args) {
        IRMapping map;
        map.map(v, args[0]);
        map.map(acc, args[1]);
        Operation *c = b.clone(*combine, map);
        linalg::YieldOp::create(b, nloc, c->getResult(0));
      });
  rewriter.replaceOp(r, reduced.getResults());
  // e finishes p in place: its w is its output element.
  rewriter.modifyOpInPlace(e, [&] {
    e.getDpsInitOperand(0)->set(p.getResult(0));
    w.replaceAllUsesWith(eOut);
  });
  // What computed w is dead now.
  for (Operation &op :
       llvm::make_early_inc_range(llvm::reverse(e.getBody()->getOperations())))
    if (isOpTriviallyDead(&op))
      rewriter.eraseOp(&op);
  return true;
}

/// storeSharedValue on each reduction of the tile that `e` reads.
static void storeSharedValues(RewriterBase &rewriter, linalg::GenericOp e) {
  for (Value input : e.getDpsInputs())
    if (auto r = input.getDefiningOp<linalg::GenericOp>();
        r && isReduction(r) && input.hasOneUse() &&
        storeSharedValue(rewriter, r, e))
      return;
}

/// Replaces each slice of an empty tensor inside `loop` (a fused fill's
/// tile, whose empty tensor tiling sliced) by an empty tensor of the
/// slice's shape (upstream's tensor.empty folds, on those slices only).
/// Bufferized, the slice allocated the whole tensor in every row: a 2 MB
/// buffer per row of a 32 x 16 x 32 x 32 epilogue, which took 2.7 ms a
/// call on one thread and 11.8 ms on two (the allocator's lock).
static void shrinkEmptySlices(const FrozenRewritePatternSet &foldEmpty,
                              Operation *loop) {
  SmallVector<Operation *> slices;
  loop->walk([&](tensor::ExtractSliceOp slice) {
    if (slice.getSource().getDefiningOp<tensor::EmptyOp>())
      slices.push_back(slice);
  });
  if (slices.empty())
    return;
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingOps);
  (void)applyOpPatternsGreedily(slices, foldEmpty, config);
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
    RewritePatternSet foldEmptyPatterns(&getContext());
    tensor::populateFoldTensorEmptyPatterns(foldEmptyPatterns);
    FrozenRewritePatternSet foldEmpty(std::move(foldEmptyPatterns));
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
      // Nor, without `contractions`, a contraction beside the reduction
      // that made this an epilogue (a sum of three projections' gradients).
      // Nor a kernel the epilogue reads through a map that broadcasts along
      // its rows (readOncePerRow): every row would compute it again.
      Operation *original = op;
      bool fuseContractions = contractions;
      llvm::SmallPtrSet<Operation *, 4> recomputed;
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      for (OpOperand *input : op.getDpsInputOperands())
        if (Operation *def = input->get().getDefiningOp();
            def && !readOncePerRow(op.getMatchingIndexingMap(input), ranges))
          recomputed.insert(def);
      options.setFusionControlFn(
          [original, fuseContractions, recomputed](tensor::ExtractSliceOp,
                                                   OpResult producer, bool)
              -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
            if (recomputed.contains(producer.getOwner()))
              return std::nullopt;
            // A fill (a reduction's zero accumulator, which CSE may have
            // merged with another reduction's) is filled again per tile,
            // however many read it: left outside, the tile's slice of it
            // was a whole-tensor copy per row after bufferization (a fold
            // of a convolution's input gradient with a batch norm's
            // backward as its epilogue: 1.1 s a call, for 2 ms of work).
            if (isa<linalg::FillOp>(producer.getOwner()))
              return scf::SCFTileAndFuseOptions::ControlFnResult{};
            unsigned readers =
                llvm::count_if(producer.getUses(), [&](OpOperand &use) {
                  return use.getOwner() != original;
                });
            auto linalgOp = dyn_cast<linalg::LinalgOp>(producer.getOwner());
            if (readers > 1 || (linalgOp && !harp::hasMonotoneMaps(linalgOp)) ||
                (linalgOp && !fuseContractions && isProductSum(linalgOp)))
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
      if (!result->loops.empty())
        shrinkEmptySlices(foldEmpty, result->loops.front());
      // (The reductions it rewrites are erased: the epilogues first.)
      SmallVector<linalg::GenericOp> tiledEpilogues;
      for (Operation *tiled : result->tiledAndFusedOps)
        if (auto generic = dyn_cast<linalg::GenericOp>(tiled);
            generic && !isReduction(generic))
          tiledEpilogues.push_back(generic);
      for (linalg::GenericOp generic : tiledEpilogues)
        storeSharedValues(rewriter, generic);
      for (OpResult res : op->getResults())
        if (Value replacement = result->replacements.lookup(res))
          rewriter.replaceAllUsesWith(res, replacement);
      rewriter.eraseOp(op);
    }
  }
};
} // namespace
