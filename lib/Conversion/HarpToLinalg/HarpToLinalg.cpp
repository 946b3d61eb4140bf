//===- HarpToLinalg.cpp - the convert-harp-to-linalg pass -----------------===//

#include "harp/Conversion/HarpToLinalg/HarpToLinalg.h"
#include "harp/Conversion/Passes.h"
#include "harp/Dialect/Harp/IR/HarpOps.h"

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
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
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
