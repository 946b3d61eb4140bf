//===- FullRankWrites.cpp - the harp-full-rank-writes pass ----------------===//
//
// Gives rank-reduced vector writes into tensors the tensor's rank, so that
// one-shot bufferization sees which elements they leave unwritten (see the
// pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/Common/Passes.h"
#include "harp/Support/Greedy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPFULLRANKWRITESPASS
#include "harp/Codegen/Common/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

namespace {
/// transfer_write of vector<4xT> into tensor<1x5xT> through a map whose
/// results are distinct dims (a projected permutation without broadcast)
/// becomes a write of vector<1x4xT> through the identity map: the vector is
/// transposed into the tensor's dim order, then unit dims are added.
struct FullRankWrite : OpRewritePattern<vector::TransferWriteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransferWriteOp write,
                                PatternRewriter &rewriter) const override {
    auto tensorType = dyn_cast<RankedTensorType>(write.getBase().getType());
    VectorType vectorType = write.getVectorType();
    if (!tensorType || write.getMask() ||
        vectorType.getRank() >= tensorType.getRank() || vectorType.isScalable())
      return failure();
    // (tensor dim, vector dim) per map result, sorted by tensor dim.
    SmallVector<std::pair<int64_t, int64_t>> dims;
    for (auto [i, result] :
         llvm::enumerate(write.getPermutationMap().getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(result);
      if (!dim)
        return failure();
      dims.push_back({dim.getPosition(), int64_t(i)});
    }
    llvm::sort(dims);
    for (size_t i = 1; i < dims.size(); ++i)
      if (dims[i].first == dims[i - 1].first)
        return failure();

    Location loc = write.getLoc();
    Value vector = write.getVector();
    SmallVector<int64_t> permutation;
    for (auto [tensorDim, vectorDim] : dims)
      permutation.push_back(vectorDim);
    if (!llvm::is_sorted(permutation))
      vector = vector::TransposeOp::create(rewriter, loc, vector, permutation);
    // A unit dim the vector did not have is written at its index, which a
    // write requires to be in bounds already.
    SmallVector<int64_t> shape(tensorType.getRank(), 1);
    SmallVector<bool> inBounds(tensorType.getRank(), true);
    for (auto [tensorDim, vectorDim] : dims) {
      shape[tensorDim] = vectorType.getDimSize(vectorDim);
      inBounds[tensorDim] = write.isDimInBounds(vectorDim);
    }
    Value full = vector::ShapeCastOp::create(
        rewriter, loc, VectorType::get(shape, vectorType.getElementType()),
        vector);
    rewriter.replaceOpWithNewOp<vector::TransferWriteOp>(
        write, full, write.getBase(), write.getIndices(),
        AffineMapAttr::get(rewriter.getMultiDimIdentityMap(shape.size())),
        rewriter.getBoolArrayAttr(inBounds));
    return success();
  }
};

struct HarpFullRankWritesPass
    : harp::impl::HarpFullRankWritesPassBase<HarpFullRankWritesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FullRankWrite>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     harp::structuredGreedyConfig())))
      signalPassFailure();
  }
};
} // namespace
