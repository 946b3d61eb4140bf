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
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/CallInterfaces.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPPARALLELIZEPASS
#include "harp/Codegen/CPU/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

/// The lane operations `op` does, with the ops nested in it, each counted
/// once per iteration of the loops around it inside `op`: a vector op its
/// lanes, a scalar op 1, a linalg op on buffers its iterations, a copy its
/// elements. nullopt where that is unknown (a dynamic trip count or shape,
/// a call) or over `limit`: both count as enough work.
static std::optional<int64_t> laneWork(Operation *op, int64_t limit);

/// The sum of laneWork over `block`'s ops, nullopt as there.
static std::optional<int64_t> blockWork(Block &block, int64_t limit) {
  int64_t work = 0;
  for (Operation &op : block) {
    std::optional<int64_t> w = laneWork(&op, limit - work);
    if (!w)
      return std::nullopt;
    work += *w;
    if (work > limit)
      return std::nullopt;
  }
  return work;
}

static std::optional<int64_t> laneWork(Operation *op, int64_t limit) {
  if (isa<CallOpInterface>(op))
    return std::nullopt;
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    std::optional<APInt> trips = loop.getStaticTripCount();
    if (!trips)
      return std::nullopt;
    int64_t n = static_cast<int64_t>(trips->getZExtValue());
    if (n == 0)
      return 0;
    std::optional<int64_t> body = blockWork(*loop.getBody(), limit / n + 1);
    if (!body || *body > limit / n)
      return std::nullopt;
    return n * *body;
  }
  if (op->getNumRegions() != 0 && !isa<linalg::LinalgOp>(op)) {
    // scf.if, alloca scopes...: the costliest region, once.
    int64_t most = 0;
    for (Region &region : op->getRegions())
      for (Block &block : region) {
        std::optional<int64_t> w = blockWork(block, limit);
        if (!w)
          return std::nullopt;
        most = std::max(most, *w);
      }
    return most;
  }
  // A linalg op on buffers: its iterations; a copy: its elements.
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    int64_t iterations = 1;
    for (int64_t range : linalgOp.getStaticLoopRanges()) {
      if (ShapedType::isDynamic(range) || range > limit)
        return std::nullopt;
      iterations *= range;
      if (iterations > limit)
        return std::nullopt;
    }
    return iterations;
  }
  if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    auto type = cast<MemRefType>(copy.getSource().getType());
    if (!type.hasStaticShape())
      return std::nullopt;
    return type.getNumElements();
  }
  // Anything else (arithmetic, loads and stores, vector ops): the lanes of
  // its widest vector operand or result, 1 for scalars (a buffer operand
  // is what a load or store indexes, not what it moves).
  int64_t lanes = 1;
  for (Type type :
       llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes()))
    if (auto vector = dyn_cast<VectorType>(type))
      lanes = std::max(lanes, vector.getNumElements());
  return lanes;
}

/// A loop that carries nothing (on buffers a tile loop does not; one that
/// still does was not bufferized in place) and is worth a fork, which costs
/// microseconds: its nest does at least `minWork` lane operations, in two
/// iterations if each runs a loop nest (the cache blocks of a matmul), else
/// eight (not the 4-vector initialisation of a reduction's accumulators).
static bool worthThreads(scf::ForOp loop, int64_t minWork) {
  if (loop.getNumResults() != 0)
    return false;
  std::optional<APInt> trips = loop.getStaticTripCount();
  if (!trips)
    return true;
  bool nested = false;
  loop.getBody()->walk([&](scf::ForOp) { nested = true; });
  if (trips->getZExtValue() < (nested ? 2u : 8u))
    return false;
  std::optional<int64_t> work = laneWork(loop, minWork);
  return !work || *work >= minWork;
}

namespace {
struct HarpParallelizePass
    : harp::impl::HarpParallelizePassBase<HarpParallelizePass> {
  using Base::Base;
  void runOnOperation() override {
    // Only marked loops that head a loop nest (not inside another loop):
    // one fork per kernel, never one per iteration of a sequential loop,
    // never nested parallel regions. A marked loop inside an unmarked one
    // (a reduction's block loop) stays sequential.
    SmallVector<scf::ForOp> loops;
    getOperation().walk<WalkOrder::PreOrder>([&](scf::ForOp loop) {
      if (loop->hasAttr(harp::kParallelLoopAttr) && worthThreads(loop, minWork))
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
