//===- GPUKernels.cpp - linalg kernels on buffers to gpu.launch -----------===//
//
// Every linalg.generic becomes a gpu.launch whose body computes one output
// element per thread (several, `block-size` apart, for large element-wise
// kernels), or, for reductions with few outputs, one output per block
// (strided per-thread partials in independent accumulators, gpu.all_reduce,
// and a second launch combining per-block totals when one block per output
// is too few).
//
//===----------------------------------------------------------------------===//

#include "BufferEffects.h"

#include "harp/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/MathExtras.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPGPUKERNELSPASS
#include "harp/Codegen/GPU/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

namespace {

/// The loop structure of one kernel: its parallel and reduction dims and
/// their static sizes.
struct LoopPlan {
  SmallVector<unsigned> parallelDims, reductionDims;
  SmallVector<int64_t> parallelSizes, reductionSizes;
  int64_t outputs = 1; // product of the parallel sizes
  int64_t reduced = 1; // product of the reduction sizes
  unsigned numLoops = 0;
};

/// A reduction whose body ends in `acc = combiner(acc, value)`.
struct Combiner {
  Operation *op;
  gpu::AllReduceOperation kind;
  TypedAttr neutral;
};

} // namespace

static Value cst(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// `linear` split into row-major coordinates of `sizes`.
static SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                                      ArrayRef<int64_t> sizes) {
  if (sizes.size() <= 1)
    return SmallVector<Value>(sizes.size(), linear);
  auto op = affine::AffineDelinearizeIndexOp::create(b, loc, linear, sizes,
                                                     /*hasOuterBound=*/true);
  return SmallVector<Value>(op.getResults());
}

/// The element of `buffer` that `map` reads at the loop point `ivs`.
static SmallVector<Value> indicesAt(OpBuilder &b, Location loc, AffineMap map,
                                    ValueRange ivs) {
  SmallVector<Value> indices;
  for (unsigned r = 0; r < map.getNumResults(); ++r)
    indices.push_back(
        affine::AffineApplyOp::create(b, loc, map.getSubMap({r}), ivs));
  return indices;
}

/// The values of `op`'s block arguments at the loop point `ivs`: the inputs
/// the body reads, loaded (inputs it does not read are not), and scalars.
/// Loading every point of a thread first and computing after keeps the loads
/// independent of the stores (which may alias them), so they are in flight
/// together.
static IRMapping loadInputs(OpBuilder &b, linalg::GenericOp op,
                            ValueRange ivs) {
  Location loc = op.getLoc();
  IRMapping map;
  for (OpOperand *input : op.getDpsInputOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(input);
    if (arg.use_empty())
      continue;
    Value value = input->get();
    if (!isa<MemRefType>(value.getType())) {
      map.map(arg, value);
      continue;
    }
    map.map(arg, memref::LoadOp::create(
                     b, loc, value,
                     indicesAt(b, loc, op.getMatchingIndexingMap(input), ivs)));
  }
  return map;
}

/// Emits the body of `op` at the loop point `ivs` with its inputs in `map`
/// (from loadInputs) and `accs` standing for the output block arguments;
/// returns the values it yields.
static SmallVector<Value> computeBody(OpBuilder &b, linalg::GenericOp op,
                                      IRMapping &map, ValueRange ivs,
                                      ValueRange accs) {
  for (auto [arg, acc] : llvm::zip(op.getRegionOutputArgs(), accs))
    if (acc)
      map.map(arg, acc);
  Block *body = op.getBody();
  for (Operation &inner : body->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      map.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(inner, map);
  }
  SmallVector<Value> yielded;
  for (Value value : body->getTerminator()->getOperands())
    yielded.push_back(map.lookupOrDefault(value));
  return yielded;
}

/// Emits the body of `op` at the loop point `ivs`, with `accs` standing for
/// the output block arguments; returns the values it yields.
static SmallVector<Value> emitBody(OpBuilder &b, linalg::GenericOp op,
                                   ValueRange ivs, ValueRange accs) {
  IRMapping map = loadInputs(b, op, ivs);
  return computeBody(b, op, map, ivs, accs);
}

/// The full loop point from the parallel and reduction coordinates.
static SmallVector<Value> loopPoint(const LoopPlan &plan, ValueRange parallel,
                                    ValueRange reduction, Value zero) {
  SmallVector<Value> ivs(plan.numLoops, zero);
  for (auto [dim, iv] : llvm::zip(plan.parallelDims, parallel))
    ivs[dim] = iv;
  for (auto [dim, iv] : llvm::zip(plan.reductionDims, reduction))
    ivs[dim] = iv;
  return ivs;
}

/// The accumulator kinds gpu.all_reduce combines, by the op that combines.
static std::optional<gpu::AllReduceOperation> allReduceKind(Operation *op) {
  using K = gpu::AllReduceOperation;
  return llvm::TypeSwitch<Operation *, std::optional<K>>(op)
      .Case([](arith::AddFOp) { return K::ADD; })
      .Case([](arith::AddIOp) { return K::ADD; })
      .Case([](arith::MulFOp) { return K::MUL; })
      .Case([](arith::MulIOp) { return K::MUL; })
      .Case([](arith::MinUIOp) { return K::MINUI; })
      .Case([](arith::MinSIOp) { return K::MINSI; })
      .Case([](arith::MinNumFOp) { return K::MINNUMF; })
      .Case([](arith::MaxUIOp) { return K::MAXUI; })
      .Case([](arith::MaxSIOp) { return K::MAXSI; })
      .Case([](arith::MaxNumFOp) { return K::MAXNUMF; })
      .Case([](arith::MinimumFOp) { return K::MINIMUMF; })
      .Case([](arith::MaximumFOp) { return K::MAXIMUMF; })
      .Case([](arith::AndIOp) { return K::AND; })
      .Case([](arith::OrIOp) { return K::OR; })
      .Case([](arith::XOrIOp) { return K::XOR; })
      .Default([](Operation *) { return std::nullopt; });
}

/// The combiner of a single-output reduction whose accumulator is used once,
/// by an associative op that yields, on a type warp shuffles move.
static std::optional<Combiner> matchCombiner(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1)
    return std::nullopt;
  BlockArgument acc = op.getRegionOutputArgs()[0];
  Type type = acc.getType();
  if (!type.isF32() && !type.isF64() && !type.isInteger(32) &&
      !type.isInteger(64))
    return std::nullopt;
  Value yielded = op.getBody()->getTerminator()->getOperand(0);
  Operation *combiner = yielded.getDefiningOp();
  if (!combiner || combiner->getBlock() != op.getBody() ||
      combiner->getNumOperands() != 2 || !acc.hasOneUse() ||
      !yielded.hasOneUse() ||
      (combiner->getOperand(0) != acc && combiner->getOperand(1) != acc))
    return std::nullopt;
  std::optional<gpu::AllReduceOperation> kind = allReduceKind(combiner);
  std::optional<TypedAttr> neutral = arith::getNeutralElement(combiner);
  if (!kind || !neutral)
    return std::nullopt;
  return Combiner{combiner, *kind, *neutral};
}

/// `combiner(a, b)`: a copy of the reduction's combining op.
static Value combine(OpBuilder &b, const Combiner &combiner, Value a,
                     Value other) {
  IRMapping map;
  map.map(combiner.op->getOperand(0), a);
  map.map(combiner.op->getOperand(1), other);
  return b.clone(*combiner.op, map)->getResult(0);
}

static gpu::LaunchOp createLaunch(OpBuilder &b, Location loc, int64_t blocks,
                                  int64_t threads) {
  Value one = cst(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, cst(b, loc, blocks), one, one,
                                      cst(b, loc, threads), one, one);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(&launch.getBody().front());
  gpu::TerminatorOp::create(b, loc);
  return launch;
}

/// Loads the outputs at the loop point `ivs` that the body reads (all of
/// them when `reduction`: accumulators start from the outputs' values), and
/// appends their indices to `indices`; a null value for the others.
static SmallVector<Value>
loadOutputs(OpBuilder &b, linalg::GenericOp op, ValueRange ivs, bool reduction,
            SmallVector<SmallVector<Value>> &indices) {
  Location loc = op.getLoc();
  SmallVector<Value> accs;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    indices.push_back(indicesAt(b, loc, op.getMatchingIndexingMap(&init), ivs));
    BlockArgument arg = op.getMatchingBlockArgument(&init);
    if (arg.use_empty() && !reduction)
      accs.push_back(Value());
    else
      accs.push_back(
          memref::LoadOp::create(b, loc, init.get(), indices.back()));
  }
  return accs;
}

static void storeOutputs(OpBuilder &b, linalg::GenericOp op, ValueRange results,
                         ArrayRef<SmallVector<Value>> indices) {
  for (auto [init, value, at] :
       llvm::zip(op.getDpsInitsMutable(), results, indices))
    memref::StoreOp::create(b, op.getLoc(), value, init.get(), at);
}

/// A thread per output: parallel dims flattened over the grid, the reduction
/// (if any) a sequential loop with the accumulators in registers.
static void emitThreadPerOutput(OpBuilder &b, linalg::GenericOp op,
                                const LoopPlan &plan, int64_t blockSize) {
  Location loc = op.getLoc();
  int64_t threads = std::min<int64_t>(
      blockSize, llvm::alignTo(std::max<int64_t>(plan.outputs, 1), 32));
  int64_t blocks = llvm::divideCeil(plan.outputs, threads);
  gpu::LaunchOp launch = createLaunch(b, loc, blocks, threads);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value id = arith::AddIOp::create(b, loc,
                                   arith::MulIOp::create(b, loc,
                                                         launch.getBlockIds().x,
                                                         cst(b, loc, threads)),
                                   launch.getThreadIds().x);
  if (blocks * threads != plan.outputs) {
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, id,
                                         cst(b, loc, plan.outputs));
    auto guardIf = scf::IfOp::create(b, loc, inside, /*withElse=*/false);
    b.setInsertionPointToStart(&guardIf.getThenRegion().front());
  }
  Value zero = cst(b, loc, 0);
  SmallVector<Value> parallel = delinearize(b, loc, id, plan.parallelSizes);
  SmallVector<Value> outIvs = loopPoint(plan, parallel, {}, zero);

  // Accumulators start from what the outputs hold (their initial values);
  // outputs the body never reads are not loaded.
  SmallVector<SmallVector<Value>> outIndices;
  SmallVector<Value> accs =
      loadOutputs(b, op, outIvs, !plan.reductionDims.empty(), outIndices);
  SmallVector<Value> results;
  if (plan.reductionDims.empty()) {
    results = emitBody(b, op, outIvs, accs);
  } else {
    auto loop = scf::ForOp::create(
        b, loc, zero, cst(b, loc, plan.reduced), cst(b, loc, 1), accs,
        [&](OpBuilder &nb, Location nloc, Value r, ValueRange iterArgs) {
          SmallVector<Value> reduction =
              delinearize(nb, nloc, r, plan.reductionSizes);
          SmallVector<Value> ivs = loopPoint(plan, parallel, reduction, zero);
          scf::YieldOp::create(nb, nloc, emitBody(nb, op, ivs, iterArgs));
        });
    results = SmallVector<Value>(loop.getResults());
  }
  storeOutputs(b, op, results, outIndices);
}

/// An element-wise kernel with many outputs: each block computes a chunk of
/// `threads * perThread` outputs, each thread `perThread` of them `threads`
/// apart (every access coalesced across a warp). A thread loads all its
/// points' inputs before computing any, so that `perThread` loads per input
/// are in flight at once: one 4-byte load per thread leaves too few bytes in
/// flight to cover the memory's latency. When the last block is partial, it
/// guards each of its points.
static void emitElementwise(OpBuilder &b, linalg::GenericOp op,
                            const LoopPlan &plan, int64_t threads,
                            int64_t perThread) {
  Location loc = op.getLoc();
  int64_t chunk = threads * perThread;
  int64_t blocks = llvm::divideCeil(plan.outputs, chunk);
  int64_t fullBlocks = plan.outputs / chunk;
  gpu::LaunchOp launch = createLaunch(b, loc, blocks, threads);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value blockId = launch.getBlockIds().x;
  Value base = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, blockId, cst(b, loc, chunk)),
      launch.getThreadIds().x);
  auto idOf = [&](OpBuilder &nb, int64_t k) -> Value {
    return k ? arith::AddIOp::create(nb, loc, base, cst(nb, loc, k * threads))
                   .getResult()
             : base;
  };
  auto pointOf = [&](OpBuilder &nb, Value id) {
    return loopPoint(plan, delinearize(nb, loc, id, plan.parallelSizes), {},
                     cst(nb, loc, 0));
  };
  auto emitFull = [&](OpBuilder &nb) {
    SmallVector<SmallVector<Value>> ivs, accs;
    SmallVector<SmallVector<SmallVector<Value>>> outIndices(perThread);
    SmallVector<IRMapping> maps;
    for (int64_t k = 0; k < perThread; ++k) {
      ivs.push_back(pointOf(nb, idOf(nb, k)));
      maps.push_back(loadInputs(nb, op, ivs.back()));
      accs.push_back(
          loadOutputs(nb, op, ivs.back(), /*reduction=*/false, outIndices[k]));
    }
    SmallVector<SmallVector<Value>> results;
    for (int64_t k = 0; k < perThread; ++k)
      results.push_back(computeBody(nb, op, maps[k], ivs[k], accs[k]));
    for (int64_t k = 0; k < perThread; ++k)
      storeOutputs(nb, op, results[k], outIndices[k]);
  };
  auto emitGuarded = [&](OpBuilder &nb) {
    for (int64_t k = 0; k < perThread; ++k) {
      Value id = idOf(nb, k);
      Value inside = arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ult,
                                           id, cst(nb, loc, plan.outputs));
      auto ifOp = scf::IfOp::create(nb, loc, inside, /*withElse=*/false);
      OpBuilder::InsertionGuard inner(nb);
      nb.setInsertionPointToStart(&ifOp.getThenRegion().front());
      SmallVector<Value> ivs = pointOf(nb, id);
      SmallVector<SmallVector<Value>> outIndices;
      SmallVector<Value> accs =
          loadOutputs(nb, op, ivs, /*reduction=*/false, outIndices);
      storeOutputs(nb, op, emitBody(nb, op, ivs, accs), outIndices);
    }
  };
  if (fullBlocks == blocks)
    return emitFull(b);
  Value full = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, blockId,
                                     cst(b, loc, fullBlocks));
  auto ifOp = scf::IfOp::create(b, loc, full, /*withElse=*/true);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  emitFull(b);
  b.setInsertionPointToStart(&ifOp.getElseRegion().front());
  emitGuarded(b);
}

/// One block per output (or `groups` blocks per output): strided partials
/// per thread, a block-wide gpu.all_reduce, thread 0 writes. With several
/// groups, their totals go to `partials` and a second launch combines them.
static void emitBlockPerOutput(OpBuilder &b, linalg::GenericOp op,
                               const LoopPlan &plan, const Combiner &combiner,
                               int64_t blockSize, int64_t reduceBlocks,
                               int64_t perThread) {
  Location loc = op.getLoc();
  Type type = combiner.neutral.getType();
  int64_t threads = std::min<int64_t>(
      blockSize, std::max<int64_t>(32, llvm::PowerOf2Ceil(plan.reduced)));
  int64_t groups = 1;
  if (plan.outputs < reduceBlocks)
    groups = std::max<int64_t>(
        1, std::min<int64_t>(llvm::divideCeil(reduceBlocks, plan.outputs),
                             llvm::divideCeil(plan.reduced, threads * 4)));
  OpOperand &init = op.getDpsInitsMutable()[0];
  AffineMap outMap = op.getMatchingIndexingMap(&init);

  Value partials;
  if (groups > 1)
    partials = memref::AllocOp::create(
        b, loc, MemRefType::get({plan.outputs * groups}, type));

  // Folds `total` into the output at `output` (thread 0 only).
  auto writeOutput = [&](OpBuilder &nb, Value output, Value total) {
    Value zero = cst(nb, loc, 0);
    SmallVector<Value> parallel =
        delinearize(nb, loc, output, plan.parallelSizes);
    SmallVector<Value> indices =
        indicesAt(nb, loc, outMap, loopPoint(plan, parallel, {}, zero));
    Value old = memref::LoadOp::create(nb, loc, init.get(), indices);
    memref::StoreOp::create(nb, loc, combine(nb, combiner, old, total),
                            init.get(), indices);
  };
  auto ifThreadZero = [&](OpBuilder &nb, gpu::LaunchOp launch) {
    Value first =
        arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::eq,
                              launch.getThreadIds().x, cst(nb, loc, 0));
    auto ifOp = scf::IfOp::create(nb, loc, first, /*withElse=*/false);
    nb.setInsertionPointToStart(&ifOp.getThenRegion().front());
  };

  {
    gpu::LaunchOp launch = createLaunch(b, loc, plan.outputs * groups, threads);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    Value blockId = launch.getBlockIds().x;
    Value output = blockId, group = cst(b, loc, 0);
    if (groups > 1) {
      output = arith::DivUIOp::create(b, loc, blockId, cst(b, loc, groups));
      group = arith::RemUIOp::create(b, loc, blockId, cst(b, loc, groups));
    }
    Value zero = cst(b, loc, 0);
    SmallVector<Value> parallel =
        delinearize(b, loc, output, plan.parallelSizes);
    Value start = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, group, cst(b, loc, threads)),
        launch.getThreadIds().x);
    Value neutral = arith::ConstantOp::create(b, loc, combiner.neutral);
    int64_t stride = threads * groups;
    // Folds the elements from `from` to the end, `stride` apart, into `acc`.
    auto foldFrom = [&](Value from, Value acc) -> Value {
      auto loop = scf::ForOp::create(
          b, loc, from, cst(b, loc, plan.reduced), cst(b, loc, stride),
          ValueRange{acc},
          [&](OpBuilder &nb, Location nloc, Value r, ValueRange iterArgs) {
            SmallVector<Value> reduction =
                delinearize(nb, nloc, r, plan.reductionSizes);
            SmallVector<Value> ivs = loopPoint(plan, parallel, reduction, zero);
            scf::YieldOp::create(nb, nloc, emitBody(nb, op, ivs, iterArgs));
          });
      return loop.getResult(0);
    };
    Value partial;
    int64_t unroll = perThread;
    if (unroll <= 1 || plan.reduced < unroll * stride) {
      partial = foldFrom(start, neutral);
    } else {
      // `unroll` independent accumulators, each step loading `unroll`
      // elements `stride` apart before folding any, while a whole step
      // fits (every thread's start is below `stride`, so at least one does);
      // then the rest into the first accumulator, and the accumulators
      // combined.
      int64_t step = unroll * stride;
      Value mainEnd = cst(b, loc, plan.reduced - (unroll - 1) * stride);
      auto main = scf::ForOp::create(
          b, loc, start, mainEnd, cst(b, loc, step),
          SmallVector<Value>(unroll, neutral),
          [&](OpBuilder &nb, Location nloc, Value r, ValueRange iterArgs) {
            SmallVector<SmallVector<Value>> ivs;
            SmallVector<IRMapping> maps;
            for (int64_t u = 0; u < unroll; ++u) {
              Value at = u ? arith::AddIOp::create(nb, nloc, r,
                                                   cst(nb, nloc, u * stride))
                                 .getResult()
                           : r;
              SmallVector<Value> reduction =
                  delinearize(nb, nloc, at, plan.reductionSizes);
              ivs.push_back(loopPoint(plan, parallel, reduction, zero));
              maps.push_back(loadInputs(nb, op, ivs.back()));
            }
            SmallVector<Value> next;
            for (int64_t u = 0; u < unroll; ++u)
              next.push_back(
                  computeBody(nb, op, maps[u], ivs[u], iterArgs[u])[0]);
            scf::YieldOp::create(nb, nloc, next);
          });
      // The first element the main loop did not reach.
      Value steps = arith::CeilDivUIOp::create(
          b, loc, arith::SubIOp::create(b, loc, mainEnd, start),
          cst(b, loc, step));
      Value rest = arith::AddIOp::create(
          b, loc, start,
          arith::MulIOp::create(b, loc, steps, cst(b, loc, step)));
      SmallVector<Value> accs(main.getResults());
      accs[0] = foldFrom(rest, accs[0]);
      // A balanced tree: (a0 . a1) . (a2 . a3).
      while (accs.size() > 1) {
        SmallVector<Value> pairs;
        for (size_t i = 0; i + 1 < accs.size(); i += 2)
          pairs.push_back(combine(b, combiner, accs[i], accs[i + 1]));
        if (accs.size() % 2)
          pairs.push_back(accs.back());
        accs = pairs;
      }
      partial = accs[0];
    }
    Value total = gpu::AllReduceOp::create(
        b, loc, partial,
        gpu::AllReduceOperationAttr::get(b.getContext(), combiner.kind),
        /*uniform=*/true);
    ifThreadZero(b, launch);
    if (groups > 1)
      memref::StoreOp::create(b, loc, total, partials, blockId);
    else
      writeOutput(b, output, total);
  }
  if (groups == 1)
    return;

  int64_t combineThreads = std::min<int64_t>(
      blockSize, std::max<int64_t>(32, llvm::PowerOf2Ceil(groups)));
  {
    gpu::LaunchOp launch = createLaunch(b, loc, plan.outputs, combineThreads);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    Value output = launch.getBlockIds().x;
    Value base = arith::MulIOp::create(b, loc, output, cst(b, loc, groups));
    Value neutral = arith::ConstantOp::create(b, loc, combiner.neutral);
    auto loop = scf::ForOp::create(
        b, loc, launch.getThreadIds().x, cst(b, loc, groups),
        cst(b, loc, combineThreads), ValueRange{neutral},
        [&](OpBuilder &nb, Location nloc, Value g, ValueRange iterArgs) {
          Value at = arith::AddIOp::create(nb, nloc, base, g);
          Value part = memref::LoadOp::create(nb, nloc, partials, at);
          scf::YieldOp::create(nb, nloc,
                               combine(nb, combiner, iterArgs[0], part));
        });
    Value total = gpu::AllReduceOp::create(
        b, loc, loop.getResult(0),
        gpu::AllReduceOperationAttr::get(b.getContext(), combiner.kind),
        /*uniform=*/true);
    ifThreadZero(b, launch);
    writeOutput(b, output, total);
  }
  memref::DeallocOp::create(b, loc, partials);
}

namespace {
struct HarpGPUKernelsPass
    : public harp::impl::HarpGPUKernelsPassBase<HarpGPUKernelsPass> {
  using HarpGPUKernelsPassBase::HarpGPUKernelsPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (blockSize < 32 || blockSize > 1024) {
      func.emitError("harp-gpu-kernels: block-size must be in [32, 1024], "
                     "got ")
          << static_cast<int64_t>(blockSize);
      return signalPassFailure();
    }
    if (elementsPerThread < 1 || elementsPerThread > 16) {
      func.emitError("harp-gpu-kernels: elements-per-thread must be in "
                     "[1, 16], got ")
          << static_cast<int64_t>(elementsPerThread);
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());

    // One form for everything: copies and named ops become linalg.generic.
    func.walk([&](memref::CopyOp copy) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    });
    SmallVector<linalg::LinalgOp> named;
    func.walk([&](linalg::LinalgOp op) {
      if (!isa<linalg::GenericOp>(op))
        named.push_back(op);
    });
    for (linalg::LinalgOp op : named) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op))) {
        op.emitError("harp-gpu-kernels: cannot generalize this op");
        return signalPassFailure();
      }
    }

    SmallVector<linalg::GenericOp> kernels;
    func.walk([&](linalg::GenericOp op) { kernels.push_back(op); });
    for (linalg::GenericOp op : kernels)
      if (failed(convert(rewriter, op)))
        return signalPassFailure();

    // What still touches buffers on the host runs on one GPU thread.
    for (Operation &op : llvm::make_early_inc_range(func.getOps())) {
      if (isa<gpu::LaunchOp>(op) || !harp::firstBufferAccess(&op))
        continue;
      if (!op.use_empty()) {
        op.emitError("harp-gpu-kernels: cannot run this op on the device: "
                     "its results are used on the host");
        return signalPassFailure();
      }
      rewriter.setInsertionPoint(&op);
      gpu::LaunchOp launch = createLaunch(rewriter, op.getLoc(), 1, 1);
      op.moveBefore(launch.getBody().front().getTerminator());
    }
  }

  LogicalResult convert(IRRewriter &rewriter, linalg::GenericOp op) {
    if (!op.hasPureBufferSemantics())
      return op.emitError("harp-gpu-kernels: expects a kernel on buffers "
                          "(run after bufferization)");
    LoopPlan plan;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    plan.numLoops = ranges.size();
    for (auto [dim, iterator] : llvm::enumerate(op.getIteratorTypesArray())) {
      if (ShapedType::isDynamic(ranges[dim]))
        return op.emitError("harp-gpu-kernels: dynamic loop ranges are not "
                            "supported on the GPU");
      if (iterator == utils::IteratorType::parallel) {
        plan.parallelDims.push_back(dim);
        plan.parallelSizes.push_back(ranges[dim]);
        plan.outputs *= ranges[dim];
      } else {
        plan.reductionDims.push_back(dim);
        plan.reductionSizes.push_back(ranges[dim]);
        plan.reduced *= ranges[dim];
      }
    }
    rewriter.setInsertionPoint(op);
    if (plan.outputs == 0) {
      rewriter.eraseOp(op);
      return success();
    }
    std::optional<Combiner> combiner;
    if (!plan.reductionDims.empty() && plan.reduced > 1 &&
        plan.outputs <= blockReduceMaxOutputs)
      combiner = matchCombiner(op);
    if (combiner)
      emitBlockPerOutput(rewriter, op, plan, *combiner, blockSize, reduceBlocks,
                         elementsPerThread);
    else if (plan.reductionDims.empty() && elementsPerThread > 1 &&
             plan.outputs / (blockSize * elementsPerThread) >= minBlocks)
      emitElementwise(rewriter, op, plan, blockSize, elementsPerThread);
    else
      emitThreadPerOutput(rewriter, op, plan, blockSize);
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace
