//===- Views.cpp - materialising harp.view and harp.contiguous ------------===//

#include "KernelBuilder.h"

#include "harp/Conversion/HarpToLinalg/HarpToLinalg.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::harp;

namespace {
/// A view read by anything but map_reduce (which folds it into its kernel)
/// is copied out once. Views read by map_reduce wait for those readers to be
/// lowered first.
struct MaterializeView : OpRewritePattern<ViewOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ViewOp op,
                                PatternRewriter &rewriter) const override {
    if (llvm::any_of(op->getUsers(),
                     [](Operation *user) { return isa<MapReduceOp>(user); }))
      return rewriter.notifyMatchFailure(op, "read by a map_reduce");
    rewriter.replaceOp(op,
                       lowering::materializeView(rewriter, op.getLoc(), op));
    return success();
  }
};

/// The fusion barrier has done its job by now: a view operand is copied out
/// here so no kernel reads through it; anything else is already a value.
struct LowerContiguous : OpRewritePattern<ContiguousOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ContiguousOp op,
                                PatternRewriter &rewriter) const override {
    Value input = op.getInput();
    if (input.getDefiningOp<ViewOp>())
      input = lowering::materializeView(rewriter, op.getLoc(), input);
    rewriter.replaceOp(op, input);
    return success();
  }
};
} // namespace

void mlir::harp::populateViewToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<MaterializeView, LowerContiguous>(patterns.getContext());
}
