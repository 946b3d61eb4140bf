//===- HarpToLinalg.cpp - the convert-harp-to-linalg pass -----------------===//

#include "harp/Conversion/HarpToLinalg/HarpToLinalg.h"
#include "harp/Conversion/Passes.h"
#include "harp/Dialect/Harp/IR/HarpOps.h"
#include "harp/Support/Greedy.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::harp {
#define GEN_PASS_DEF_CONVERTHARPTOLINALGPASS
#include "harp/Conversion/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;
using namespace mlir::harp;

namespace {
/// A kernel whose iteration domain is empty (a dim of extent 0: an empty
/// tensor, or a sum over an empty dim) runs no iteration: its results are
/// its inits (an empty tensor, or the reduction's identity). Replacing it
/// keeps empty loop nests out of tiling and fusion, which assume at least
/// one iteration.
struct EmptyDomainKernel : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;
  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() ||
        !llvm::is_contained(op.getStaticLoopRanges(), 0))
      return failure();
    SmallVector<Value> inits;
    for (OpOperand &init : op.getDpsInitsMutable())
      inits.push_back(init.get());
    rewriter.replaceOp(op, inits);
    return success();
  }
};

struct ConvertHarpToLinalgPass
    : harp::impl::ConvertHarpToLinalgPassBase<ConvertHarpToLinalgPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Autodiff requests need their own pass; say so instead of leaving them.
    WalkResult autodiff = module.walk([](AutodiffOp op) {
      op.emitOpError("must be replaced by the harp-autodiff pass before "
                     "lowering");
      return WalkResult::interrupt();
    });
    if (autodiff.wasInterrupted())
      return signalPassFailure();

    RewritePatternSet patterns(&getContext());
    populateHarpToLinalgPatterns(patterns);
    patterns.add<EmptyDomainKernel>(&getContext());
    if (failed(applyPatternsGreedily(module, std::move(patterns),
                                     harp::structuredGreedyConfig())))
      return signalPassFailure();

    WalkResult left = module.walk([](Operation *op) {
      if (!isa<HarpDialect>(op->getDialect()))
        return WalkResult::advance();
      op->emitOpError("could not be lowered to linalg");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
