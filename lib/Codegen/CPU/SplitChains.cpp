//===- SplitChains.cpp - long element-wise chains split into two loops ----===//
//
// harp-split-chains: loop fission of element-wise kernels whose dependency
// chain per element is long. The kernel runs one strip of its iteration
// space at a time; each strip computes the first part of the chain into a
// buffer that stays in the L1 cache, then the rest from that buffer (and
// the inputs again, read from L1 now).
//
// Why: an element-wise kernel's iterations are independent, but each is
// one long chain of dependent operations (the GELU chain's is 18 steps: a
// cube, a scaling, a tanh's two polynomials and a division, two
// multiplications). The core's out-of-order window covers only a few such
// chains at once, so the loop runs far below the core's throughput: on a
// Zen 4 core the GELU chain took as long with its data in L1 as streamed
// from memory, 1.25 times a plain copy. Two loops of half the chain each
// keep more iterations in flight (docs/Lowering.md gives the numbers).
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/CPU/Passes.h"

#include "CodegenConfig.h"
#include "harp/Codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPSPLITCHAINSPASS
#include "harp/Codegen/CPU/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;
using namespace mlir::harp::cpu;

/// Dependent steps (each about one multiply-add's latency) an op adds to a
/// chain once it is code: the math functions harp-vector-cleanup expands
/// into polynomials count the longest chain of their expansion (tanh:
/// clamp, square, four multiply-adds, multiply, divide), a division or
/// square root about three multiply-adds' latency; constants and loop
/// indices nothing.
static int64_t stepsOf(Operation *op) {
  if (op->hasTrait<OpTrait::ConstantLike>() || isa<linalg::IndexOp>(op))
    return 0;
  if (isa<math::TanhOp>(op))
    return 11;
  if (isa<math::ExpOp, math::Exp2Op, math::ExpM1Op>(op))
    return 10;
  if (isa<math::LogOp, math::Log2Op, math::Log1pOp, math::ErfOp, math::ErfcOp>(
          op))
    return 12;
  if (isa<arith::DivFOp, math::SqrtOp, math::RsqrtOp>(op))
    return 3;
  return 1;
}

/// Vectors a strip must have to be split.
static constexpr int64_t kMinVectors = 8;

/// Ops that either part may recompute for free.
static bool isFree(Operation *op) {
  return op->hasTrait<OpTrait::ConstantLike>() || isa<linalg::IndexOp>(op);
}

namespace {
/// Where a kernel's body is cut: `first` (the ops of the first loop, in
/// body order) computes `value`, the only value of theirs the rest reads.
struct Cut {
  SmallVector<Operation *> first;
  Value value;
  int64_t firstSteps = 0, restSteps = 0;
};
} // namespace

/// Where each op of `body` ends its longest chain (in body order), counting
/// the ops in `zero` as ending no chain of their own: they start the chains
/// that read them.
static DenseMap<Operation *, int64_t>
chainDepths(Block &body, const llvm::SmallPtrSetImpl<Operation *> &zero) {
  DenseMap<Operation *, int64_t> depth;
  for (Operation &op : body.without_terminator()) {
    int64_t start = 0;
    for (Value operand : op.getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && def->getBlock() == &body)
        start = std::max(start, depth.lookup(def));
    depth[&op] = zero.contains(&op) ? 0 : start + stepsOf(&op);
  }
  return depth;
}

/// The longest of those chains.
static int64_t longestChain(const DenseMap<Operation *, int64_t> &depths) {
  int64_t longest = 0;
  for (auto [op, depth] : depths)
    longest = std::max(longest, depth);
  return longest;
}

/// The best cut of `op`'s body, or nullopt when its chain is shorter than
/// `minSteps` or no cut shortens it by a quarter. A cut value v qualifies
/// when its backward slice in the body (the first part) has no other value
/// read outside it, and reads no output element; the best balances the two
/// parts' chains.
static std::optional<Cut> findCut(linalg::GenericOp op, int64_t minSteps) {
  Block &body = *op.getBody();
  llvm::SmallPtrSet<Operation *, 1> none;
  DenseMap<Operation *, int64_t> depths = chainDepths(body, none);
  int64_t total = longestChain(depths);
  if (total < minSteps)
    return std::nullopt;
  llvm::SmallPtrSet<Value, 4> outputs;
  for (OpOperand &init : op.getDpsInitsMutable())
    outputs.insert(op.getMatchingBlockArgument(&init));

  std::optional<Cut> best;
  for (Operation &candidate : body.without_terminator()) {
    // A cut value is stored: a byte at least (an i1 vector is packed bits).
    if (isFree(&candidate) || candidate.getNumResults() != 1 ||
        !candidate.getResult(0).getType().isIntOrFloat() ||
        candidate.getResult(0).getType().getIntOrFloatBitWidth() < 8)
      continue;
    // The backward slice within the body.
    llvm::SetVector<Operation *> slice;
    SmallVector<Operation *> stack{&candidate};
    bool readsOutput = false;
    while (!stack.empty()) {
      Operation *current = stack.pop_back_val();
      if (!slice.insert(current))
        continue;
      for (Value operand : current->getOperands()) {
        if (outputs.contains(operand))
          readsOutput = true;
        if (Operation *def = operand.getDefiningOp();
            def && def->getBlock() == &body)
          stack.push_back(def);
      }
    }
    if (readsOutput)
      continue;
    bool exclusive = llvm::all_of(slice, [&](Operation *member) {
      if (member == &candidate || isFree(member))
        return true;
      return llvm::all_of(member->getUsers(), [&](Operation *user) {
        return slice.contains(user);
      });
    });
    if (!exclusive)
      continue;
    llvm::SmallPtrSet<Operation *, 16> first(slice.begin(), slice.end());
    Cut cut;
    cut.value = candidate.getResult(0);
    // The first part's chain is the candidate's in the whole body: it
    // depends on the candidate's backward slice only.
    cut.firstSteps = depths.lookup(&candidate);
    // The rest's chain, the cut value read from the buffer. The first
    // part's other ops end no chain there (nothing else reads them).
    cut.restSteps = longestChain(chainDepths(body, first));
    if (cut.firstSteps < 2 || cut.restSteps < 2)
      continue;
    for (Operation &member : body.without_terminator())
      if (first.contains(&member))
        cut.first.push_back(&member);
    if (!best || std::max(cut.firstSteps, cut.restSteps) <
                     std::max(best->firstSteps, best->restSteps))
      best = std::move(cut);
  }
  if (!best || 4 * std::max(best->firstSteps, best->restSteps) > 3 * total)
    return std::nullopt;
  return best;
}

/// Whether `op` is a kernel this pass splits, before the cut is sought: a
/// generic on tensors of static shape whose loops are all parallel, whose
/// results share one permutation map, whose inputs' maps are projected
/// permutations (broadcasts included), and whose body is plain computation
/// (no regions, no memory effects).
static bool isElementwiseKernel(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.hasDynamicShape() ||
      op.getNumLoops() == 0 || op.getNumReductionLoops() != 0)
    return false;
  AffineMap written = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!written.isPermutation())
    return false;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (op.getMatchingIndexingMap(&init) != written)
      return false;
  for (OpOperand *input : op.getDpsInputOperands())
    if (!op.getMatchingIndexingMap(input).isProjectedPermutation())
      return false;
  for (Operation &member : op.getBody()->without_terminator())
    if (member.getNumRegions() != 0 || !isMemoryEffectFree(&member))
      return false;
  return true;
}

/// Replaces `op` (a kernel of at most a strip) by two kernels: the first
/// computes `cut.value` into a new tensor laid out as the results, the
/// second the rest from it.
static void splitBody(RewriterBase &rewriter, linalg::GenericOp op,
                      const Cut &cut, ArrayRef<Operation *> firstOps) {
  Location loc = op.getLoc();
  Block &body = *op.getBody();
  llvm::SmallPtrSet<Operation *, 16> first(firstOps.begin(), firstOps.end());
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap written = op.getMatchingIndexingMap(init);
  auto resultType = cast<RankedTensorType>(init->get().getType());
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();

  auto readsArg = [&](auto &&ops, BlockArgument arg) {
    return llvm::any_of(arg.getUsers(), [&](Operation *user) {
      return llvm::is_contained(ops, user);
    });
  };
  SmallVector<Operation *> rest;
  for (Operation &member : body.without_terminator())
    if (!first.contains(&member) || isFree(&member))
      rest.push_back(&member);
  rest.push_back(body.getTerminator());

  // The inputs `ops` read: their values, maps and block arguments.
  struct Inputs {
    SmallVector<Value> values;
    SmallVector<AffineMap> maps;
    SmallVector<BlockArgument> args;
  };
  auto inputsReadBy = [&](ArrayRef<Operation *> ops) {
    Inputs inputs;
    for (OpOperand *input : op.getDpsInputOperands()) {
      BlockArgument arg = op.getMatchingBlockArgument(input);
      if (!readsArg(ops, arg))
        continue;
      inputs.values.push_back(input->get());
      inputs.maps.push_back(op.getMatchingIndexingMap(input));
      inputs.args.push_back(arg);
    }
    return inputs;
  };

  rewriter.setInsertionPoint(op);
  // The first kernel: the inputs its ops read, the cut value written.
  Inputs firstReads = inputsReadBy(firstOps);
  // The cut value gets a tensor of its own (bufferized to one buffer
  // hoisted out of the strip loops). Written into the result's strip and
  // overwritten there by the second kernel, once both are vector loops,
  // bufferization saw one loop read a tensor that another wrote and copied
  // each strip twice.
  Type cutType = cut.value.getType();
  Value buffer =
      tensor::EmptyOp::create(rewriter, loc, resultType.getShape(), cutType);
  firstReads.maps.push_back(written);
  auto firstKernel = linalg::GenericOp::create(
      rewriter, loc, TypeRange{buffer.getType()}, firstReads.values,
      ValueRange{buffer}, firstReads.maps, iterators,
      [&](OpBuilder &b, Location, ValueRange args) {
        IRMapping map;
        for (auto [arg, value] : llvm::zip(firstReads.args, args))
          map.map(arg, value);
        for (Operation *member : firstOps)
          b.clone(*member, map);
        linalg::YieldOp::create(b, loc, map.lookup(cut.value));
      });

  // The second: the inputs the rest reads, then the cut value.
  Inputs restReads = inputsReadBy(rest);
  restReads.values.push_back(firstKernel.getResult(0));
  restReads.maps.push_back(written);
  SmallVector<Value> inits = op.getDpsInits();
  for (OpOperand &output : op.getDpsInitsMutable())
    restReads.maps.push_back(op.getMatchingIndexingMap(&output));
  size_t read = restReads.args.size();
  auto restKernel = linalg::GenericOp::create(
      rewriter, loc, op.getResultTypes(), restReads.values, inits,
      restReads.maps, iterators, [&](OpBuilder &b, Location, ValueRange args) {
        IRMapping map;
        for (auto [arg, value] : llvm::zip(restReads.args, args))
          map.map(arg, value);
        map.map(cut.value, args[read]);
        for (auto [index, output] : llvm::enumerate(op.getDpsInitsMutable()))
          map.map(op.getMatchingBlockArgument(&output), args[read + 1 + index]);
        for (Operation *member : rest)
          b.clone(*member, map);
      });
  restKernel->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rewriter.replaceOp(op, restKernel.getResults());
}

/// The elements of a strip: the largest power of two whose strips of the
/// kernel's operands (each input the body reads, the cut value, each result)
/// take at most half of the L1 cache, and at least one vector.
static int64_t stripElements(linalg::GenericOp op, const Config &config,
                             int64_t lanes) {
  int64_t arrays = 1 + op.getNumDpsInits();
  for (OpOperand *input : op.getDpsInputOperands())
    if (!op.getMatchingBlockArgument(input).use_empty())
      ++arrays;
  int64_t bytes = arrays * elementBytes(op);
  int64_t elements = int64_t(config.l1Bytes / 2) / std::max<int64_t>(1, bytes);
  return std::max<int64_t>(
      lanes,
      int64_t(llvm::bit_floor(uint64_t(std::max<int64_t>(1, elements)))));
}

/// The strip of `piece` (tile sizes, 0 for a dim taken whole): at most
/// `strip` elements along `dim`, and where the piece's rows along it are
/// shorter, as many whole rows as fit, a number that divides the dims
/// outside (so every strip has the same static shape), innermost of the
/// result's dims first; nothing tiled where the piece fits one strip.
static SmallVector<int64_t> stripSizes(linalg::GenericOp piece, unsigned dim,
                                       int64_t strip) {
  SmallVector<int64_t> ranges = piece.getStaticLoopRanges();
  SmallVector<int64_t> sizes(ranges.size(), 0);
  int64_t elements = 1;
  for (int64_t r : ranges)
    elements *= r;
  if (elements <= strip)
    return sizes;
  for (auto [d, r] : llvm::enumerate(ranges))
    if (r != 1)
      sizes[d] = 1;
  int64_t along = std::min(ranges[dim], strip);
  int64_t budget = strip / along;
  sizes[dim] = along == ranges[dim] ? 0 : along;
  AffineMap written = piece.getMatchingIndexingMap(piece.getDpsInitOperand(0));
  for (int64_t r = int64_t(written.getNumResults()) - 2; r >= 0 && budget > 1;
       --r) {
    unsigned d = written.getDimPosition(r);
    int64_t rows = std::min(budget, ranges[d]);
    while (ranges[d] % rows)
      --rows;
    sizes[d] = rows == ranges[d] ? 0 : rows;
    budget /= rows;
    if (rows != ranges[d])
      break;
  }
  return sizes;
}

/// Splits `op` (see the file comment): a remainder along the contiguous dim
/// of its results split off first, each piece tiled into strips
/// (`stripSizes`) and each strip's kernel cut in two. A piece whose strip
/// has fewer than `kMinVectors` vectors (a remainder, rows that no number
/// divides) stays as it is: its chains all fit the core's window at once.
static void splitKernel(RewriterBase &rewriter, linalg::GenericOp op,
                        int64_t strip, int64_t lanes) {
  std::optional<unsigned> dim =
      contiguousDim(op.getMatchingIndexingMap(op.getDpsInitOperand(0)));
  if (!dim)
    return;
  int64_t range = op.getStaticLoopRanges()[*dim];
  int64_t size = std::min(range, strip);
  SmallVector<linalg::GenericOp> pieces{op};
  if (range % size) {
    rewriter.setInsertionPoint(op);
    auto [head, tail] =
        linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()),
                        *dim, rewriter.getIndexAttr(range - range % size));
    pieces.clear();
    for (TilingInterface piece : {head, tail})
      if (auto generic = dyn_cast_or_null<linalg::GenericOp>(
              piece ? piece.getOperation() : nullptr))
        pieces.push_back(generic);
  }
  for (linalg::GenericOp piece : pieces) {
    SmallVector<int64_t> ranges = piece.getStaticLoopRanges();
    if (ShapedType::isDynamicShape(ranges))
      continue;
    SmallVector<int64_t> sizes = stripSizes(piece, *dim, strip);
    int64_t tileElements = 1;
    for (auto [tileSize, r] : llvm::zip(sizes, ranges))
      tileElements *= tileSize ? tileSize : r;
    if (tileElements < kMinVectors * lanes)
      continue;
    linalg::GenericOp tile = piece;
    if (llvm::any_of(sizes, [](int64_t t) { return t != 0; })) {
      scf::SCFTilingOptions options;
      options.setTileSizes(
          getAsIndexOpFoldResult(rewriter.getContext(), sizes));
      rewriter.setInsertionPoint(piece);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(piece.getOperation()), options);
      if (failed(tiled) || tiled->tiledOps.size() != 1)
        continue;
      rewriter.replaceOp(piece, tiled->replacements);
      for (LoopLikeOpInterface loop : tiled->loops)
        loop->setAttr(harp::kParallelLoopAttr, rewriter.getUnitAttr());
      tile = dyn_cast<linalg::GenericOp>(tiled->tiledOps.front());
      if (!tile)
        continue;
    }
    if (std::optional<Cut> cut = findCut(tile, /*minSteps=*/0))
      splitBody(rewriter, tile, *cut, cut->first);
  }
}

namespace {
struct HarpSplitChainsPass
    : harp::impl::HarpSplitChainsPassBase<HarpSplitChainsPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<Config> options =
        makeConfig(getOperation(), getArgument(), vectorBits, 1);
    if (failed(options))
      return signalPassFailure();
    Config config = *options;
    config.l1Bytes = l1Cache;

    SmallVector<linalg::GenericOp> kernels;
    getOperation().walk([&](linalg::GenericOp op) {
      if (isElementwiseKernel(op) && findCut(op, minSteps))
        kernels.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : kernels) {
      std::optional<int64_t> lanes = laneCount(op, config);
      if (!lanes)
        continue;
      splitKernel(rewriter, op, stripElements(op, config, *lanes), *lanes);
    }
  }
};
} // namespace
