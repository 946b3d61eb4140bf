//===- Vectorize.cpp - the harp-vectorize pass ----------------------------===//
//
// Tiles every linalg kernel on tensors to a vector-sized tile and vectorizes
// the tile (see the pass description in Passes.td for the three tile shapes).
//
//===----------------------------------------------------------------------===//

#include "harp/Dialect/Harp/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPVECTORIZEPASS
#include "harp/Dialect/Harp/Transforms/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

namespace {

/// How one kernel is tiled: a tile size per loop (0 = not tiled), the order
/// of the tile loops, and whether the tiled reduction dim keeps a vector of
/// partial accumulators.
struct TilePlan {
  SmallVector<int64_t> tileSizes;
  SmallVector<int64_t> interchange;
  std::optional<unsigned> partialReductionDim;
};

struct Config {
  unsigned vectorBits;
  unsigned registerRows;
  unsigned registerVectors;
  unsigned reductionVectors;
};

} // namespace

/// The widest element of the kernel in bits, or nullopt when an operand is
/// not an integer or float (complex, index) or narrower than a byte: `i1`
/// is a byte in memory but a bit in an LLVM vector, so a vector load of
/// booleans would read packed bits.
static std::optional<unsigned> widestElementBits(linalg::LinalgOp op) {
  unsigned widest = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    Type element = getElementTypeOrSelf(operand.get().getType());
    if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() < 8)
      return std::nullopt;
    widest = std::max(widest, element.getIntOrFloatBitWidth());
  }
  return widest;
}

/// Loop order with `inner` dims last, the others in their original order.
static SmallVector<int64_t> innermostLast(unsigned numLoops,
                                          ArrayRef<unsigned> inner) {
  SmallVector<int64_t> order;
  for (unsigned d = 0; d < numLoops; ++d)
    if (!llvm::is_contained(inner, d))
      order.push_back(d);
  llvm::append_range(order, inner);
  return order;
}

/// The loop dim an operand's map reads contiguously (its last result), if
/// that result is a plain dim.
static std::optional<unsigned> contiguousDim(AffineMap map) {
  if (map.getNumResults() == 0)
    return std::nullopt;
  if (auto dim = dyn_cast<AffineDimExpr>(map.getResults().back()))
    return dim.getPosition();
  return std::nullopt;
}

/// Whether every result of `map` grows with every dim: a sum of dims with
/// non-negative coefficients plus a constant. Tiling computes an operand's
/// slice from the images of a tile's first and last index, which is only
/// right for such maps (flips, floordiv and mod are not).
static bool isMonotone(AffineMap map) {
  for (AffineExpr result : map.getResults()) {
    bool monotone = true;
    result.walk([&](AffineExpr e) {
      if (auto bin = dyn_cast<AffineBinaryOpExpr>(e)) {
        if (e.getKind() == AffineExprKind::Add)
          return;
        if (e.getKind() == AffineExprKind::Mul) {
          auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
          if (c && c.getValue() >= 0)
            return;
        }
        monotone = false;
      }
    });
    if (!monotone)
      return false;
  }
  return true;
}

static std::optional<TilePlan> planTiles(linalg::LinalgOp op,
                                         const Config &config) {
  unsigned numLoops = op.getNumLoops();
  if (numLoops == 0 || !op.hasPureTensorSemantics() ||
      !llvm::all_of(op.getIndexingMapsArray(), isMonotone))
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, [](int64_t r) { return r <= 0; }))
    return std::nullopt;
  std::optional<unsigned> bits = widestElementBits(op);
  if (!bits)
    return std::nullopt;
  int64_t lanes = std::max<int64_t>(1, config.vectorBits / *bits);
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  auto clampTo = [&](unsigned dim, int64_t size) {
    return std::min<int64_t>(ranges[dim], size);
  };

  TilePlan plan;
  plan.tileSizes.assign(numLoops, 1);

  // Contractions: a register tile over (m, n), k innermost with step one.
  if (linalg::isaContractionOpInterface(op)) {
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (succeeded(dims) && !dims->m.empty() && !dims->n.empty() &&
        !dims->k.empty()) {
      unsigned m = dims->m.back(), n = dims->n.back();
      plan.tileSizes[m] = clampTo(m, config.registerRows);
      plan.tileSizes[n] = clampTo(n, config.registerVectors * lanes);
      SmallVector<unsigned> inner(dims->k.begin(), dims->k.end());
      plan.interchange = innermostLast(numLoops, inner);
      return plan;
    }
  }

  // Reductions along the contiguous dim of their largest input: a vector of
  // partial accumulators along that dim.
  bool hasReduction = op.getNumReductionLoops() > 0;
  if (hasReduction) {
    OpOperand *largest = nullptr;
    int64_t largestSize = -1;
    for (OpOperand *input : op.getDpsInputOperands()) {
      auto type = cast<RankedTensorType>(input->get().getType());
      if (type.getRank() > 0 && type.getNumElements() > largestSize) {
        largest = input;
        largestSize = type.getNumElements();
      }
    }
    std::optional<unsigned> dim;
    if (largest)
      dim = contiguousDim(op.getMatchingIndexingMap(largest));
    if (dim && linalg::isReductionIterator(iterators[*dim])) {
      int64_t width = config.reductionVectors * lanes;
      plan.interchange = innermostLast(numLoops, {*dim});
      if (ranges[*dim] > width && op.getNumDpsInits() == 1 &&
          op.getNumReductionLoops() == 1) {
        plan.tileSizes[*dim] = width;
        plan.partialReductionDim = *dim;
      } else {
        plan.tileSizes[*dim] = std::min(ranges[*dim], width);
      }
      return plan;
    }
  }

  // Everything else: vectors along the innermost dim of the result.
  std::optional<unsigned> dim =
      contiguousDim(op.getMatchingIndexingMap(op.getDpsInitOperand(0)));
  if (!dim || !linalg::isParallelIterator(iterators[*dim]))
    return std::nullopt;
  plan.tileSizes[*dim] = clampTo(*dim, lanes);
  SmallVector<unsigned> reductions;
  for (unsigned d = 0; d < numLoops; ++d)
    if (linalg::isReductionIterator(iterators[d]))
      reductions.push_back(d);
  plan.interchange = innermostLast(numLoops, reductions);
  return plan;
}

/// Marks the tiles `harp-vectorize` vectorizes once their shapes are static.
static constexpr llvm::StringLiteral kVectorTile = "harp.vector_tile";

/// Vectorizes one marked tile. A tile whose shape is still dynamic (the
/// peeled remainder at the edge of a dim its tile size does not divide) and
/// a tile the vectorizer rejects stay scalar.
static void vectorizeTile(RewriterBase &rewriter, linalg::LinalgOp op) {
  op->removeAttr(kVectorTile);
  if (op.hasDynamicShape() ||
      failed(linalg::vectorizeOpPrecondition(op, {}, {},
                                             /*vectorizeNDExtract=*/true)))
    return;
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::VectorizationResult> result =
      linalg::vectorize(rewriter, op, {}, {}, /*vectorizeNDExtract=*/true);
  if (failed(result))
    return;
  rewriter.replaceOp(op, result->replacements);
}

/// Tiles `op` and peels the tile loops whose step does not divide their
/// range, so the main loops carry tiles of a static shape; marks the tiles.
/// Linalg ops the tiling creates outside the loops (accumulator
/// initialisation, the merge of partial reductions) are appended to
/// `worklist`.
static void tileAndPeel(RewriterBase &rewriter, linalg::LinalgOp op,
                        const Config &config,
                        SmallVectorImpl<linalg::LinalgOp> &worklist) {
  std::optional<TilePlan> plan = planTiles(op, config);
  if (!plan)
    return;

  scf::SCFTilingOptions options;
  options.setTileSizes(
      getAsIndexOpFoldResult(rewriter.getContext(), plan->tileSizes));
  options.setInterchange(plan->interchange);
  if (plan->partialReductionDim) {
    options.setReductionTilingStrategy(
        ReductionTilingStrategy::PartialReductionOuterReduction);
    options.setReductionDims({*plan->partialReductionDim});
  }
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return;
  rewriter.replaceOp(op, tiled->replacements);

  for (Operation *tile : tiled->tiledOps)
    if (isa<linalg::LinalgOp>(tile))
      tile->setAttr(kVectorTile, rewriter.getUnitAttr());
  // Innermost first, so an outer loop's remainder copies the peeled inner
  // loops.
  for (LoopLikeOpInterface loop : llvm::reverse(tiled->loops)) {
    auto forOp = dyn_cast<scf::ForOp>(loop.getOperation());
    scf::ForOp remainder;
    if (forOp)
      (void)scf::peelForLoopAndSimplifyBounds(rewriter, forOp, remainder);
  }
  for (Operation *merge : tiled->mergeOps)
    if (auto linalgMerge = dyn_cast<linalg::LinalgOp>(merge))
      worklist.push_back(linalgMerge);
  for (Value init : tiled->initialValues)
    if (auto linalgInit = init.getDefiningOp<linalg::LinalgOp>())
      worklist.push_back(linalgInit);
}

namespace {
/// `addf(x, mulf(a, b))` on vectors, the product used once, becomes
/// `vector.fma(a, b, x)`: one rounding instead of two, and the multiply-add
/// the register tiles of contractions are made of.
struct FuseMultiplyAdd : OpRewritePattern<arith::AddFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::AddFOp add,
                                PatternRewriter &rewriter) const override {
    if (!isa<VectorType>(add.getType()))
      return failure();
    for (unsigned i = 0; i < 2; ++i) {
      auto mul = add->getOperand(i).getDefiningOp<arith::MulFOp>();
      if (!mul || !mul->hasOneUse())
        continue;
      rewriter.replaceOpWithNewOp<vector::FMAOp>(
          add, mul.getLhs(), mul.getRhs(), add->getOperand(1 - i));
      return success();
    }
    return failure();
  }
};

struct HarpVectorizePass
    : harp::impl::HarpVectorizePassBase<HarpVectorizePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *context = &getContext();
    Config config{vectorBits, std::max(1u, registerRows.getValue()),
                  std::max(1u, registerVectors.getValue()),
                  std::max(1u, reductionVectors.getValue())};
    if (config.vectorBits < 8) {
      func.emitError("harp-vectorize: vector-bits must be at least 8, got ")
          << config.vectorBits;
      return signalPassFailure();
    }

    // Ops already inside loops (the rows of harp-fuse-epilogues) are tiled
    // as well: their tile loops nest inside the existing ones.
    SmallVector<linalg::LinalgOp> worklist;
    func.walk([&](linalg::LinalgOp op) { worklist.push_back(op); });
    IRRewriter rewriter(context);
    // Each op is visited once; the ops tiling creates are smaller (merges
    // reduce one vector, inits fill one) and plan no further partial tiles.
    for (size_t i = 0; i < worklist.size() && i < 4096; ++i)
      tileAndPeel(rewriter, worklist[i], config, worklist);

    // Constant tile sizes become static shapes, then the tiles are
    // vectorized.
    RewritePatternSet staticShapes(context);
    linalg::populateLinalgTilingCanonicalizationPatterns(staticShapes);
    tensor::ExtractSliceOp::getCanonicalizationPatterns(staticShapes, context);
    tensor::InsertSliceOp::getCanonicalizationPatterns(staticShapes, context);
    tensor::CastOp::getCanonicalizationPatterns(staticShapes, context);
    if (failed(applyPatternsGreedily(func, std::move(staticShapes))))
      return signalPassFailure();
    SmallVector<linalg::LinalgOp> tiles;
    func.walk([&](linalg::LinalgOp op) {
      if (op->hasAttr(kVectorTile))
        tiles.push_back(op);
    });
    for (linalg::LinalgOp tile : tiles)
      vectorizeTile(rewriter, tile);

    // Fold slices into transfers, then hoist loop-invariant subsets (the
    // accumulator tiles) out of their loops, innermost loop first.
    RewritePatternSet cleanup(context);
    tensor::populateFoldTensorSubsetIntoVectorTransferPatterns(cleanup);
    vector::populateVectorTransferDropUnitDimsPatterns(cleanup);
    vector::populateCastAwayVectorLeadingOneDimPatterns(cleanup);
    vector::TransferReadOp::getCanonicalizationPatterns(cleanup, context);
    vector::TransferWriteOp::getCanonicalizationPatterns(cleanup, context);
    tensor::ExtractSliceOp::getCanonicalizationPatterns(cleanup, context);
    tensor::InsertSliceOp::getCanonicalizationPatterns(cleanup, context);
    scf::ForOp::getCanonicalizationPatterns(cleanup, context);
    affine::AffineApplyOp::getCanonicalizationPatterns(cleanup, context);
    affine::AffineMinOp::getCanonicalizationPatterns(cleanup, context);
    FrozenRewritePatternSet frozenCleanup(std::move(cleanup));
    if (failed(applyPatternsGreedily(func, frozenCleanup)))
      return signalPassFailure();
    SmallVector<LoopLikeOpInterface> loops;
    func.walk([&](LoopLikeOpInterface loop) { loops.push_back(loop); });
    for (LoopLikeOpInterface loop : loops)
      hoistLoopInvariantSubsets(rewriter, loop);

    // Polynomial approximations of math functions on f32, so they stay
    // vectors. Not rsqrt (its approximation needs AVX2 intrinsics and is
    // meant for vectors only), nor sin and cos (their range reduction loses
    // accuracy for large arguments): those stay libm calls or LLVM
    // intrinsics.
    RewritePatternSet math(context);
    populateMathPolynomialApproximationPatterns(math, [](StringRef name) {
      return llvm::is_contained(
          {"math.tanh", "math.exp", "math.exp2", "math.expm1", "math.log",
           "math.log2", "math.log1p", "math.erf", "math.erfc", "math.atan",
           "math.atan2", "math.asin", "math.acos", "math.cbrt"},
          name);
    });
    math.add<FuseMultiplyAdd>(context);
    if (failed(applyPatternsGreedily(func, std::move(math))))
      return signalPassFailure();
  }
};
} // namespace
