//===- VectorCleanup.cpp - harp-vector-cleanup ----------------------------===//
//
// Folds, hoists and finishes the vector code harp-tile-and-vectorize made
// (see the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
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
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
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
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!lb || !ub || !step || *step <= 0 || *ub <= *lb || (*ub - *lb) % *step)
    return std::nullopt;
  return *ub - *step;
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
    if (failed(applyPatternsGreedily(func, frozenCleanup)))
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

    // Polynomial approximations of math functions on f32, so they stay
    // vectors. Not rsqrt (its approximation needs AVX2 intrinsics and is
    // meant for vectors only), nor sin and cos (their range reduction loses
    // accuracy for large arguments): those stay libm calls or LLVM
    // intrinsics.
    RewritePatternSet math(context);
    // Transposed and broadcasting transfers become minor-identity ones and
    // vector.transpose (after hoisting, which matches transfers of equal
    // form).
    vector::populateVectorTransferPermutationMapLoweringPatterns(math);
    populateMathPolynomialApproximationPatterns(math, [](StringRef name) {
      return llvm::is_contained(
          {"math.tanh", "math.exp", "math.exp2", "math.expm1", "math.log",
           "math.log2", "math.log1p", "math.erf", "math.erfc", "math.atan",
           "math.atan2", "math.asin", "math.acos", "math.cbrt"},
          name);
    });
    // Single-element transfers become scalar tensor.extract / tensor.insert
    // (a row reduction's result element): their lowering to LLVM needs a
    // unit innermost stride, and a result written into a strided column (a
    // matmul's last column computed as dot products) has none.
    vector::populateScalarVectorTransferLoweringPatterns(
        math, /*benefit=*/1, /*allowMultipleUses=*/true);
    if (failed(applyPatternsGreedily(func, std::move(math))))
      return signalPassFailure();

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
