//===- MapReduce.cpp - harp.map_reduce to linalg.generic ------------------===//

#include "KernelBuilder.h"

#include "harp/Conversion/HarpToLinalg/HarpToLinalg.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::harp;

/// Groups the dims of a keepdim result around the dims the kernel kept, for
/// tensor.expand_shape: unit dims join the kept dim before them (leading
/// ones the first kept dim).
static SmallVector<ReassociationIndices>
keepdimReassociation(unsigned rank, ArrayRef<int64_t> reduced) {
  SmallVector<ReassociationIndices> groups;
  unsigned kept = rank - reduced.size();
  if (kept == 0)
    return groups;
  groups.resize(kept);
  unsigned seen = 0;
  for (unsigned d = 0; d < rank; ++d) {
    bool isReduced = llvm::is_contained(reduced, static_cast<int64_t>(d));
    unsigned group = isReduced ? (seen == 0 ? 0 : seen - 1) : seen++;
    groups[group].push_back(d);
  }
  return groups;
}

namespace {
struct MapReduceToGeneric : OpRewritePattern<MapReduceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MapReduceOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType resultType = op.getType();
    Value result = lowering::buildKernel(
        rewriter, op.getLoc(), op.getDomainShape(), op.getInputs(),
        op.getDims(), op.getKind(), resultType.getElementType(),
        [&](OpBuilder &b, Location, ValueRange scalars, ValueRange indices) {
          return lowering::cloneMapReduceBody(b, op, scalars, indices);
        });
    if (op.getKeepdim())
      result = tensor::ExpandShapeOp::create(
          rewriter, op.getLoc(), resultType, result,
          keepdimReassociation(op.getDomainShape().size(), op.getDims()));
    rewriter.replaceOp(op, result);
    return success();
  }
};
} // namespace

void mlir::harp::populateMapReduceToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<MapReduceToGeneric>(patterns.getContext());
}
