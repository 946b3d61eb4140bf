//===- Parallelize.cpp - the harp-parallelize pass ------------------------===//
//
// Turns the outermost tile loops over parallel dims (marked by
// harp-vectorize) into scf.parallel, which convert-scf-to-openmp runs on
// threads.
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/CPU/Passes.h"
#include "harp/Codegen/Common/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPPARALLELIZEPASS
#include "harp/Codegen/CPU/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

/// A loop that carries nothing (on buffers a tile loop does not; one that
/// still does was not bufferized in place) and is worth a fork, which costs
/// microseconds: two iterations if each runs a loop nest (the cache blocks
/// of a matmul), else eight (not the 4-vector initialisation of a
/// reduction's accumulators).
static bool worthThreads(scf::ForOp loop) {
  if (loop.getNumResults() != 0)
    return false;
  std::optional<APInt> trips = loop.getStaticTripCount();
  if (!trips)
    return true;
  bool nested = false;
  loop.getBody()->walk([&](scf::ForOp) { nested = true; });
  return trips->getZExtValue() >= (nested ? 2u : 8u);
}

namespace {
struct HarpParallelizePass
    : harp::impl::HarpParallelizePassBase<HarpParallelizePass> {
  void runOnOperation() override {
    // Only marked loops that head a loop nest (not inside another loop):
    // one fork per kernel, never one per iteration of a sequential loop,
    // never nested parallel regions. A marked loop inside an unmarked one
    // (a reduction's block loop) stays sequential.
    SmallVector<scf::ForOp> loops;
    getOperation().walk<WalkOrder::PreOrder>([&](scf::ForOp loop) {
      if (loop->hasAttr(harp::kParallelLoopAttr) && worthThreads(loop))
        loops.push_back(loop);
      return WalkResult::skip();
    });
    IRRewriter rewriter(&getContext());
    for (scf::ForOp loop : loops) {
      rewriter.setInsertionPoint(loop);
      auto parallel = scf::ParallelOp::create(
          rewriter, loop.getLoc(), ValueRange{loop.getLowerBound()},
          ValueRange{loop.getUpperBound()}, ValueRange{loop.getStep()},
          /*bodyBuilderFn=*/nullptr);
      Block *body = parallel.getBody();
      // The for body, minus its scf.yield, goes before scf.reduce.
      Block &old = loop.getRegion().front();
      rewriter.eraseOp(old.getTerminator());
      rewriter.inlineBlockBefore(&old, body->getTerminator(),
                                 body->getArguments());
      rewriter.eraseOp(loop);
    }
    // The marks have done their job.
    getOperation().walk(
        [](scf::ForOp loop) { loop->removeAttr(harp::kParallelLoopAttr); });
  }
};
} // namespace
