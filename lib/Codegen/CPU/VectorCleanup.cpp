//===- VectorCleanup.cpp - harp-vector-cleanup ----------------------------===//
//
// Folds, hoists and finishes the vector code harp-tile-and-vectorize made
// (see the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "MathApproximations.h"

#include "harp/Codegen/CPU/Passes.h"
#include "harp/Codegen/Common/TilingUtils.h"
#include "harp/Support/Greedy.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPVECTORCLEANUPPASS
#include "harp/Codegen/CPU/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

namespace {
/// `insert_slice(transfer_write(v, extract_slice(t)[0...]), t)` with the
/// same offsets and sizes is `transfer_write(v, t)[offsets]`: the shape the
/// accumulator of a convolution tile takes once its unit dims are dropped,
/// and the form loop-invariant subset hoisting matches.
struct WriteThroughSlice : OpRewritePattern<tensor::InsertSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::InsertSliceOp insert,
                                PatternRewriter &rewriter) const override {
    auto write = insert.getSource().getDefiningOp<vector::TransferWriteOp>();
    if (!write || !write->hasOneUse() || write.getMask())
      return failure();
    auto slice = write.getBase().getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || slice.getSource() != insert.getDest() ||
        !slice.isSameAs(
            insert, [](OpFoldResult a, OpFoldResult b) { return a == b; }) ||
        slice.getSourceType().getRank() != slice.getType().getRank() ||
        !insert.hasUnitStride())
      return failure();
    if (!llvm::all_of(write.getIndices(),
                      [](Value v) { return isZeroInteger(v); }))
      return failure();
    SmallVector<Value> indices;
    for (OpFoldResult offset : insert.getMixedOffsets())
      indices.push_back(
          getValueOrCreateConstantIndexOp(rewriter, insert.getLoc(), offset));
    rewriter.replaceOpWithNewOp<vector::TransferWriteOp>(
        insert, write.getVector(), insert.getDest(), indices,
        write.getPermutationMapAttr(), write.getInBoundsAttr());
    return success();
  }
};

/// The largest value `index` takes, when it is a constant or the induction
/// variable of an `scf.for` with constant bounds whose step divides its
/// range (the tile loops tiling makes).
static std::optional<int64_t> largestIndex(Value index) {
  if (std::optional<int64_t> c = getConstantIntValue(index))
    return c;
  auto arg = dyn_cast<BlockArgument>(index);
  if (!arg)
    return std::nullopt;
  auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
  if (!loop || loop.getInductionVar() != arg)
    return std::nullopt;
  std::optional<harp::ConstantBounds> bounds = harp::constantBounds(loop);
  if (!bounds || bounds->ub <= bounds->lb ||
      (bounds->ub - bounds->lb) % bounds->step)
    return std::nullopt;
  return bounds->ub - bounds->step;
}

/// A transfer along a tile loop (`x[i : i + 16]` for i in 0..N step 16)
/// is in bounds; folding the tile's slices into it forgot so, and an
/// out-of-bounds transfer lowers to a masked access with a mask computed
/// per vector.
template <typename TransferOp>
struct InBoundsAlongTileLoops : OpRewritePattern<TransferOp> {
  using OpRewritePattern<TransferOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(TransferOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<ShapedType>(op.getBase().getType());
    AffineMap map = op.getPermutationMap();
    if (!type || !type.hasStaticShape() || op.getMask())
      return failure();
    SmallVector<bool> inBounds = op.getInBoundsValues();
    bool changed = false;
    for (auto [i, result] : llvm::enumerate(map.getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(result);
      if (inBounds[i] || !dim)
        continue;
      std::optional<int64_t> largest =
          largestIndex(op.getIndices()[dim.getPosition()]);
      if (largest && *largest >= 0 &&
          *largest + op.getVectorType().getDimSize(i) <=
              type.getDimSize(dim.getPosition())) {
        inBounds[i] = true;
        changed = true;
      }
    }
    if (!changed)
      return failure();
    rewriter.modifyOpInPlace(
        op, [&] { op.setInBoundsAttr(rewriter.getBoolArrayAttr(inBounds)); });
    return success();
  }
};

/// A 0-d read (`vector<f64>` from one element of a tensor or memref, what
/// the permutation-map lowering leaves of a broadcasting read) becomes that
/// element, extracted or loaded, and broadcast. Upstream's scalar transfer
/// patterns take only reads that extracts use, and the LLVM lowering of a
/// transfer needs a unit innermost stride: a 0-d read of a strided column
/// (an LSTM's step output in its concatenation) was left unconverted. A 0-d
/// read covers no vector dim, so its indices are in bounds by definition.
struct ScalarReadToElement : OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransferReadOp op,
                                PatternRewriter &rewriter) const override {
    VectorType type = op.getVectorType();
    if (type.getRank() != 0 || op.getMask())
      return failure();
    Value element;
    if (isa<RankedTensorType>(op.getBase().getType()))
      element = tensor::ExtractOp::create(rewriter, op.getLoc(), op.getBase(),
                                          op.getIndices());
    else if (isa<MemRefType>(op.getBase().getType()))
      element = memref::LoadOp::create(rewriter, op.getLoc(), op.getBase(),
                                       op.getIndices());
    else
      return failure();
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(op, type, element);
    return success();
  }
};

/// The constant upper bound of `loop` from 0 by 1.
static std::optional<int64_t> unitTripCount(scf::ForOp loop) {
  std::optional<harp::ConstantBounds> bounds = harp::constantBounds(loop);
  if (!bounds || bounds->lb != 0 || bounds->step != 1)
    return std::nullopt;
  return bounds->ub;
}

/// Whether an op of `block` (or nested in one) writes memory, or may.
static bool writesMemory(Block *block) {
  return block
      ->walk([](Operation *op) {
        return mightHaveEffect<MemoryEffects::Write>(op)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Whether every iteration of `loop` whose read `read` yields zeros
/// leaves the loop's values as they were: each value the loop carries is
/// passed through, or is its accumulator plus `read`'s value (broadcast,
/// transposed or reshaped) times another value, and nothing in the body
/// writes memory.
static bool onlyScalesAccumulation(scf::ForOp loop, Operation *read) {
  Value factor = read->getResult(0);
  while (factor.hasOneUse() &&
         isa<vector::BroadcastOp, vector::TransposeOp, vector::ShapeCastOp>(
             *factor.getUsers().begin()))
    factor = factor.getUsers().begin()->getResult(0);
  if (!factor.hasOneUse())
    return false;
  Operation *use = *factor.getUsers().begin();
  Value acc, sum;
  if (auto mul = dyn_cast<arith::MulFOp>(use)) {
    if (!mul->hasOneUse())
      return false;
    auto add = dyn_cast<arith::AddFOp>(*mul->getUsers().begin());
    if (!add)
      return false;
    acc = add.getLhs() == mul.getResult() ? add.getRhs() : add.getLhs();
    sum = add.getResult();
  } else if (auto fma = dyn_cast<math::FmaOp>(use)) {
    if (fma.getC() == factor)
      return false;
    acc = fma.getC();
    sum = fma.getResult();
  } else {
    return false;
  }
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  for (auto [arg, yielded] :
       llvm::zip_equal(loop.getRegionIterArgs(), yield.getOperands()))
    if (yielded != arg && !(arg == acc && yielded == sum && sum.hasOneUse()))
      return false;
  return !writesMemory(loop.getBody());
}

/// Whether the values `phases` carries change only in `taps`, a loop of its
/// body: each is passed through, or is the result of `taps` that starts
/// from it, and nothing else in the body writes memory. Then an iteration
/// of `phases` whose `taps` changes nothing changes nothing.
static bool onlyThroughLoop(scf::ForOp phases, scf::ForOp taps) {
  auto yield = cast<scf::YieldOp>(phases.getBody()->getTerminator());
  for (auto [arg, yielded] :
       llvm::zip_equal(phases.getRegionIterArgs(), yield.getOperands())) {
    if (yielded == arg)
      continue;
    auto result = dyn_cast<OpResult>(yielded);
    if (!result || result.getOwner() != taps.getOperation() ||
        taps.getInits()[result.getResultNumber()] != arg)
      return false;
  }
  return !writesMemory(phases.getBody());
}

/// Taps of a strided convolution that multiply a filter element padded
/// with zeros are not computed. harp-rewrite-windows sorts a stride-s
/// window's taps into phases, kw = s kq + r, and pads the filter's K taps
/// with zeros to whole phases, reshaped [KQ, s]: the kernel's reduction
/// loops over kq and r (tiled by one, r inside kq) reach K s-rounded-up
/// taps, and the last kq's r >= K mod s multiply zeros (a 7x7 stride-2
/// stem computes 8 filter columns for 7). Here a loop over kq whose body
/// is the loop over r reading `expand_shape(pad(W))` at [kq, r] in those
/// dims stops at the last whole phase group, and the last partial one is
/// peeled off with its r loop stopping at K mod s. Only where the element
/// read is the factor of a product added to the r loop's accumulator,
/// nothing else changes there (onlyScalesAccumulation) and the kq loop's
/// values change only in the r loop (onlyThroughLoop): an iteration
/// skipped would have added x * 0. That is x's sign of zero or, for an
/// infinite or NaN x, a NaN the reference convolution never computes.
static void skipPaddedTaps(RewriterBase &rewriter, func::FuncOp func) {
  struct Match {
    scf::ForOp phases, taps;
    int64_t whole, rest;
  };
  SmallVector<Match> matches;
  func.walk([&](vector::TransferReadOp read) {
    auto expand = read.getBase().getDefiningOp<tensor::ExpandShapeOp>();
    auto pad = expand ? expand.getSrc().getDefiningOp<tensor::PadOp>()
                      : tensor::PadOp();
    if (!pad || !pad.hasZeroLowPad() ||
        !matchPattern(pad.getConstantPaddingValue(), m_AnyZeroFloat()))
      return;
    RankedTensorType source = pad.getSourceType();
    ArrayRef<int64_t> high = pad.getStaticHigh();
    AffineMap map = read.getPermutationMap();
    for (auto [d, group] : llvm::enumerate(expand.getReassociationIndices())) {
      if (high[d] <= 0 || ShapedType::isDynamic(high[d]) || group.size() != 2 ||
          source.isDynamicDim(d))
        continue;
      int64_t outer = group[0], inner = group[1];
      if (map.isFunctionOfDim(outer) || map.isFunctionOfDim(inner))
        continue;
      auto kq = dyn_cast<BlockArgument>(read.getIndices()[outer]);
      auto r = dyn_cast<BlockArgument>(read.getIndices()[inner]);
      auto taps =
          r ? dyn_cast<scf::ForOp>(r.getOwner()->getParentOp()) : scf::ForOp();
      auto phases = kq ? dyn_cast<scf::ForOp>(kq.getOwner()->getParentOp())
                       : scf::ForOp();
      if (!taps || !phases || taps.getInductionVar() != r ||
          phases.getInductionVar() != kq ||
          taps->getParentOp() != phases.getOperation() ||
          read->getParentOp() != taps.getOperation())
        continue;
      int64_t stride = expand.getResultType().getDimSize(inner);
      std::optional<int64_t> groups = unitTripCount(phases);
      if (unitTripCount(taps) != stride ||
          groups != expand.getResultType().getDimSize(outer) ||
          !onlyScalesAccumulation(taps, read) || !onlyThroughLoop(phases, taps))
        continue;
      int64_t valid = source.getDimSize(d);
      if (valid / stride < *groups)
        matches.push_back({phases, taps, valid / stride, valid % stride});
      return;
    }
  });

  for (Match &m : matches) {
    scf::ForOp phases = m.phases;
    Location loc = phases.getLoc();
    rewriter.setInsertionPoint(phases);
    Value whole = arith::ConstantIndexOp::create(rewriter, loc, m.whole);
    rewriter.modifyOpInPlace(
        phases, [&] { phases.getUpperBoundMutable().assign(whole); });
    if (m.rest == 0)
      continue;
    // The partial group: the body once more, kq = whole, r < rest, taking
    // over the loop's uses.
    SmallVector<OpOperand *> uses;
    for (Value result : phases.getResults())
      for (OpOperand &use : result.getUses())
        uses.push_back(&use);
    rewriter.setInsertionPointAfter(phases);
    IRMapping mapping;
    mapping.map(phases.getInductionVar(), whole);
    for (auto [arg, result] :
         llvm::zip_equal(phases.getRegionIterArgs(), phases.getResults()))
      mapping.map(arg, result);
    for (Operation &op : phases.getBody()->without_terminator())
      rewriter.clone(op, mapping);
    auto taps = cast<scf::ForOp>(mapping.lookup(m.taps.getOperation()));
    Value rest = arith::ConstantIndexOp::create(rewriter, loc, m.rest);
    rewriter.modifyOpInPlace(taps,
                             [&] { taps.getUpperBoundMutable().assign(rest); });
    Operation *yield = phases.getBody()->getTerminator();
    for (OpOperand *use : uses) {
      unsigned number = cast<OpResult>(use->get()).getResultNumber();
      Value last = mapping.lookupOrDefault(yield->getOperand(number));
      rewriter.modifyOpInPlace(use->getOwner(), [&] { use->set(last); });
    }
  }
}

struct HarpVectorCleanupPass
    : harp::impl::HarpVectorCleanupPassBase<HarpVectorCleanupPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *context = &getContext();
    IRRewriter rewriter(context);

    // Fold slices into transfers, then hoist loop-invariant subsets (the
    // accumulator tiles) out of their loops, innermost loop first.
    RewritePatternSet cleanup(context);
    tensor::populateFoldTensorSubsetIntoVectorTransferPatterns(cleanup);
    vector::populateVectorTransferDropUnitDimsPatterns(cleanup);
    cleanup
        .add<WriteThroughSlice, InBoundsAlongTileLoops<vector::TransferReadOp>,
             InBoundsAlongTileLoops<vector::TransferWriteOp>>(context);
    vector::TransferReadOp::getCanonicalizationPatterns(cleanup, context);
    vector::TransferWriteOp::getCanonicalizationPatterns(cleanup, context);
    tensor::ExtractSliceOp::getCanonicalizationPatterns(cleanup, context);
    tensor::InsertSliceOp::getCanonicalizationPatterns(cleanup, context);
    scf::ForOp::getCanonicalizationPatterns(cleanup, context);
    affine::AffineApplyOp::getCanonicalizationPatterns(cleanup, context);
    affine::AffineMinOp::getCanonicalizationPatterns(cleanup, context);
    FrozenRewritePatternSet frozenCleanup(std::move(cleanup));
    if (failed(applyPatternsGreedily(func, frozenCleanup,
                                     harp::structuredGreedyConfig())))
      return signalPassFailure();
    SmallVector<LoopLikeOpInterface> loops;
    func.walk([&](LoopLikeOpInterface loop) { loops.push_back(loop); });
    for (LoopLikeOpInterface loop : loops)
      hoistLoopInvariantSubsets(rewriter, loop);
    // Loop-invariant scalar and vector values (a gather's row index and its
    // clamp, read once per row instead of once per vector) leave their
    // loops. Ops with tensor results stay: a tensor hoisted out of a tile
    // loop that later runs on threads could bufferize to one buffer every
    // thread writes. (Subset hoisting replaced loops: collect them again.)
    loops.clear();
    func.walk([&](LoopLikeOpInterface loop) { loops.push_back(loop); });
    for (LoopLikeOpInterface loop : loops)
      moveLoopInvariantCode(
          loop.getLoopRegions(),
          [&](Value value, Region *) {
            return loop.isDefinedOutsideOfLoop(value);
          },
          [&](Operation *op, Region *) {
            return op->getNumRegions() == 0 && isMemoryEffectFree(op) &&
                   isSpeculatable(op) &&
                   llvm::none_of(op->getResultTypes(),
                                 llvm::IsaPred<TensorType>);
          },
          [&](Operation *op, Region *) { loop.moveOutOfLoop(op); });

    skipPaddedTaps(rewriter, func);

    // Polynomial approximations of math functions on f32, so they stay
    // vectors (MathApproximations.h).
    RewritePatternSet math(context);
    // Transposed and broadcasting transfers become minor-identity ones and
    // vector.transpose (after hoisting, which matches transfers of equal
    // form).
    vector::populateVectorTransferPermutationMapLoweringPatterns(math);
    harp::cpu::populateMathApproximationPatterns(math, fma);
    // Single-element transfers become scalar tensor.extract / tensor.insert
    // (a row reduction's result element): their lowering to LLVM needs a
    // unit innermost stride, and a result written into a strided column (a
    // matmul's last column computed as dot products) has none.
    vector::populateScalarVectorTransferLoweringPatterns(
        math, /*benefit=*/1, /*allowMultipleUses=*/true);
    math.add<ScalarReadToElement>(context);
    if (!fma)
      harp::cpu::markExistingFmas(func);
    if (failed(applyPatternsGreedily(func, std::move(math),
                                     harp::structuredGreedyConfig())))
      return signalPassFailure();
    if (!fma)
      harp::cpu::splitApproximationFmas(func);

    // 16 x 16 register transposes of 32-bit elements (AVX-512 code's
    // transposing copies, a packed transposed operand) as the 64 shuffles
    // of Shuffle16x16, now: left to convert-vector-to-llvm, they are gone
    // before it runs, canonicalization having folded the rows inserted into
    // the transposed vector and extracted from it into vector.to_elements /
    // vector.from_elements, one scalar move per element (4096^2 transpose,
    // AVX-512 code on Zen 4: 28.7 ms, 16.3 ms as shuffles). Smaller tiles
    // (8 x 8 with AVX2 code, 4 x 4) are as fast either way: LLVM builds
    // those vectors with shuffles by itself.
    SmallVector<Operation *> transposes;
    func.walk([&](vector::TransposeOp op) {
      VectorType type = op.getSourceVectorType();
      if (type.getRank() == 2 && type.getShape() == ArrayRef<int64_t>{16, 16} &&
          !type.isScalable() && type.getElementTypeBitWidth() == 32)
        transposes.push_back(op);
    });
    RewritePatternSet shuffles(context);
    vector::populateVectorTransposeLoweringPatterns(
        shuffles, vector::VectorTransposeLowering::Shuffle16x16);
    if (!transposes.empty() &&
        failed(applyOpPatternsGreedily(transposes, std::move(shuffles))))
      return signalPassFailure();
  }
};
} // namespace
