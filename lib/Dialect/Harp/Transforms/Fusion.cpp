//===- Fusion.cpp - the harp-fuse pass ------------------------------------===//
//
// Producer-into-consumer fusion of map_reduce ops (the seed's eager fusion
// rules: element-wise into element-wise or reducing consumers; reductions
// never into their consumers), done as IR rewrites whose decisions show in
// the IR.
//
//===----------------------------------------------------------------------===//

#include "harp/Dialect/Harp/IR/HarpOps.h"
#include "harp/Dialect/Harp/IR/ViewLayout.h"
#include "harp/Dialect/Harp/Transforms/Passes.h"
#include "harp/Support/Greedy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPFUSEPASS
#include "harp/Dialect/Harp/Transforms/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;
using namespace mlir::harp;

/// Whether `value` is read only along one chain of views ending at
/// `consumer`, once: then fusing moves the work instead of copying it.
static bool readOnlyBy(Value value, Operation *consumer) {
  while (value.hasOneUse()) {
    Operation *user = *value.getUsers().begin();
    if (user == consumer)
      return true;
    auto view = dyn_cast<ViewOp>(user);
    if (!view)
      return false;
    value = view.getResult();
  }
  return false;
}

/// Whether `layout` reads some source element for several result indices
/// (a broadcast): a producer fused through it is computed once per copy.
static bool broadcasts(ViewAttr layout, ArrayRef<int64_t> domain) {
  if (!layout)
    return false;
  for (auto [d, size] : llvm::enumerate(domain))
    if (size > 1 && !layout.getMap().isFunctionOfDim(d))
      return true;
  return false;
}

/// How much `e` grows when dim `d` grows by one, where `e` is a sum of
/// constant multiples of dims, symbols and constants (a view's usual
/// index, parts that do not read `d` aside); nullopt for anything else (a
/// floordiv or mod of `d`, a product of dims), which the caller simplifies
/// instead. Exact, and without creating
/// expressions: harp-fuse asks this for every operand of every consumer it
/// visits, and simplifyAffineExpr was half of the pass's time on an
/// unrolled recurrence.
static std::optional<int64_t> linearStep(AffineExpr e, unsigned d) {
  switch (e.getKind()) {
  case AffineExprKind::Constant:
  case AffineExprKind::SymbolId:
    return 0;
  case AffineExprKind::DimId:
    return cast<AffineDimExpr>(e).getPosition() == d ? 1 : 0;
  case AffineExprKind::Add: {
    auto add = cast<AffineBinaryOpExpr>(e);
    std::optional<int64_t> lhs = linearStep(add.getLHS(), d);
    std::optional<int64_t> rhs = linearStep(add.getRHS(), d);
    if (!lhs || !rhs)
      return std::nullopt;
    return *lhs + *rhs;
  }
  case AffineExprKind::Mul: {
    auto mul = cast<AffineBinaryOpExpr>(e);
    auto c = dyn_cast<AffineConstantExpr>(mul.getRHS());
    AffineExpr other = mul.getLHS();
    if (!c) {
      c = dyn_cast<AffineConstantExpr>(mul.getLHS());
      other = mul.getRHS();
    }
    if (!c)
      return std::nullopt;
    std::optional<int64_t> step = linearStep(other, d);
    if (!step)
      return std::nullopt;
    return *step * c.getValue();
  }
  default:
    // A floordiv or mod of other dims only does not move with `d`.
    if (!e.isFunctionOfDim(d))
      return 0;
    return std::nullopt;
  }
}

/// Whether every dim of `map` can be solved for from its results, one at a
/// time, each from a result where it is the only unsolved dim, with a
/// constant nonzero coefficient (`y - ky` once `ky` is read bare, `2 t + 1`),
/// starting from the dims `solved` marks: then `map` reads a distinct
/// source index at every point of its domain. A pooling window `2 y + ky`
/// is not solved: its reads may overlap.
static bool solvesEveryDim(AffineMap map, SmallVector<bool> solved) {
  unsigned rank = map.getNumDims();
  for (bool progress = true; progress;) {
    progress = false;
    for (AffineExpr e : map.getResults()) {
      std::optional<unsigned> only;
      unsigned unsolved = 0;
      for (unsigned d = 0; d < rank; ++d)
        if (!solved[d] && e.isFunctionOfDim(d)) {
          ++unsolved;
          only = d;
        }
      if (unsolved != 1)
        continue;
      std::optional<int64_t> step = linearStep(e, *only);
      if (!step) {
        AffineExpr dim = getAffineDimExpr(*only, map.getContext());
        auto c = dyn_cast<AffineConstantExpr>(
            simplifyAffineExpr(e.replace(dim, dim + 1) - e, rank, 0));
        if (c)
          step = c.getValue();
      }
      if (!step || *step == 0)
        continue;
      solved[*only] = true;
      progress = true;
    }
  }
  return llvm::all_of(solved, [](bool s) { return s; });
}

/// Whether `layout` reads some source element at several points of
/// `domain`: a broadcast, or windows that overlap (a convolution's `h + kh`,
/// its input gradient's `h - kh`). A producer fused through it is computed
/// once per read. Dims of extent one read nothing twice.
static bool readsRepeatedly(ViewAttr layout, ArrayRef<int64_t> domain) {
  if (!layout)
    return false;
  SmallVector<bool> solved;
  for (int64_t size : domain)
    solved.push_back(size == 1);
  return !solvesEveryDim(layout.getMap(), std::move(solved));
}

/// The work a producer's region does per element (constants are free).
static unsigned regionCost(MapReduceOp op) {
  unsigned cost = 0;
  for (Operation &inner : op.getBody().front().without_terminator())
    if (!inner.hasTrait<OpTrait::ConstantLike>())
      ++cost;
  return cost;
}

/// Whether `value` is read, through views, by an op other than `consumer`
/// that will not take it in by fusion: a reduction, another op, a return.
/// Such a value is computed by a kernel of its own whatever `consumer` does.
static bool materializedAnyway(Value value, Operation *consumer) {
  SmallVector<Value> worklist{value};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (user == consumer)
        continue;
      if (auto view = dyn_cast<ViewOp>(user)) {
        worklist.push_back(view.getResult());
        continue;
      }
      auto reader = dyn_cast<MapReduceOp>(user);
      if (!reader || reader.hasReduction())
        return true;
    }
  }
  return false;
}

/// Elements of a static tensor, or nullopt.
static std::optional<int64_t> elementCount(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  return type.getNumElements();
}

/// Whether computing `producer` inside a consumer over `domain` reads more
/// than reading its result would: the elements of its operands' sources
/// (each read once at most per point of the domain) against its result's,
/// with `slackPercent` of a result of slack for small operands (a row's
/// statistics, a bias; recompute-read-slack, 50 by default). Where the producer
/// is computed anyway for another reader, that is all fusing changes, besides
/// the recomputation.
static bool readsMoreThanItsResult(MapReduceOp producer,
                                   ArrayRef<int64_t> domain,
                                   unsigned slackPercent) {
  int64_t points = 1;
  for (int64_t size : domain)
    points *= size;
  std::optional<int64_t> result = elementCount(producer.getResult());
  if (!result)
    return false;
  int64_t saved = std::min(*result, points);
  int64_t read = 0;
  llvm::SmallPtrSet<Value, 8> sources;
  for (Value input : producer.getInputs()) {
    Value source = stripViews(input).first;
    if (!sources.insert(source).second)
      continue;
    std::optional<int64_t> count = elementCount(source);
    if (!count)
      return false;
    read += std::min(*count, points);
  }
  return read > saved + saved * int64_t(slackPercent) / 100;
}

/// Whether `op` is a contraction: the sum of the product of its two
/// operands (a matmul, a batched matmul, a convolution). harp-vectorize
/// gives those register tiles; a producer fused into one through a
/// broadcast would be recomputed once per output column and would hide the
/// contraction from the tiling (a matmul reading relu(x + b) fused became
/// one strided gather per output).
static bool isContraction(MapReduceOp op) {
  std::optional<ReductionKind> kind = op.getKind();
  if (!op.hasReduction() || !kind || *kind != ReductionKind::Sum)
    return false;
  Block &body = op.getBody().front();
  if (body.getNumArguments() != 2 || body.getOperations().size() != 2)
    return false;
  Operation *product = &body.front();
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  return yield && isa<arith::MulFOp, arith::MulIOp>(product) &&
         yield.getValues().front() == product->getResult(0) &&
         product->getOperand(0) != product->getOperand(1) &&
         llvm::all_of(product->getOperands(), [&](Value v) {
           return v.getParentBlock() == &body && isa<BlockArgument>(v);
         });
}

/// The residue class `f * d + c` reads (|f| > 1: every |f|-th element,
/// from c mod |f|), as (|f|, c mod |f|).
static std::optional<std::pair<int64_t, int64_t>> residueOf(AffineExpr e,
                                                            unsigned numDims) {
  std::optional<SteppedDim> stepped = steppedDim(e, numDims);
  if (!stepped)
    return std::nullopt;
  int64_t f = stepped->step < 0 ? -stepped->step : stepped->step;
  if (f <= 1)
    return std::nullopt;
  return std::make_pair(f, ((stepped->offset % f) + f) % f);
}

/// Whether two reads of one tensor (maps into its index space) never meet:
/// along some dim both read every f-th element, from different residues
/// (the phases of a strided window's gradient read the taps `2 t` and
/// `2 t + 1`).
static bool disjointReads(AffineMap a, AffineMap b) {
  for (auto [ea, eb] : llvm::zip(a.getResults(), b.getResults())) {
    auto ra = residueOf(ea, a.getNumDims());
    auto rb = residueOf(eb, b.getNumDims());
    if (ra && rb && ra->first == rb->first && ra->second != rb->second)
      return true;
  }
  return false;
}

/// Whether the readers of `value` (through views) share its elements out
/// among them: each a map_reduce that `accepts`, reading it through one
/// chain of views that reads a distinct element at every point of its
/// domain, none of two reading an element the other reads. Fused into
/// each, its producer is computed once over all (plus the masked border
/// of each reader's domain, bounded here by 4 times its elements), as in
/// a kernel of its own. The phases of a strided window's gradient are such
/// readers (HarpDerivatives.cpp, phaseAdjoint).
static bool readersPartition(Value value,
                             llvm::function_ref<bool(MapReduceOp)> accepts) {
  std::optional<int64_t> count = elementCount(value);
  if (!count)
    return false;
  int64_t points = 0;
  SmallVector<AffineMap> reads;
  SmallVector<Value> work{value};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (auto view = dyn_cast<ViewOp>(user)) {
        work.push_back(view.getResult());
        continue;
      }
      auto reader = dyn_cast<MapReduceOp>(user);
      if (!reader || !accepts(reader))
        return false;
      ViewAttr layout;
      unsigned paths = 0;
      for (Value input : reader.getInputs()) {
        auto [source, inputLayout] = stripViews(input);
        if (source == value) {
          layout = inputLayout;
          ++paths;
        }
      }
      ArrayRef<int64_t> domain = reader.getDomainShape();
      if (paths != 1 || !layout || readsRepeatedly(layout, domain))
        return false;
      points += ShapedType::getNumElements(domain);
      reads.push_back(layout.getMap());
    }
  }
  for (unsigned i = 0; i < reads.size(); ++i)
    for (unsigned j = i + 1; j < reads.size(); ++j)
      if (!disjointReads(reads[i], reads[j]))
        return false;
  return reads.size() > 1 && points <= 4 * *count;
}

namespace {
struct FuseProducer : OpRewritePattern<MapReduceOp> {
  FuseProducer(MLIRContext *ctx, const HarpFusePassOptions &options)
      : OpRewritePattern(ctx), options(options) {}

  LogicalResult matchAndRewrite(MapReduceOp consumer,
                                PatternRewriter &rewriter) const override {
    for (auto [i, operand] : llvm::enumerate(consumer.getInputs())) {
      auto [source, layout] = stripViews(operand);
      auto producer = source.getDefiningOp<MapReduceOp>();
      if (!producer || producer.hasReduction())
        continue;
      // Fusing a producer that has other readers, or that is read through a
      // broadcast or overlapping windows, recomputes it: only if it is
      // cheap, and never into a reduction, whose loop would compute it once
      // per output column or window tap. Fused one by one, each producer
      // under the bound, a chain adds up there: a batch norm's backward
      // (16 operands) fused into a depthwise convolution's input gradient
      // (the fold `h - kh`) was computed 9 times per element, in one scalar
      // kernel of masked gathers that took 28 of a MobileNet step's 99 ms;
      // into a contraction it would also hide the product that
      // harp-vectorize tiles.
      bool repeated = readsRepeatedly(layout, consumer.getDomainShape());
      if (repeated && consumer.hasReduction())
        continue;
      // Walked only where the producer has other readers: the common
      // single reader needs no partition test.
      bool single = readOnlyBy(producer.getResult(), consumer);
      bool partitioned = !repeated && !single &&
                         readersPartition(producer.getResult(),
                                          [](MapReduceOp) { return true; });
      bool moves = (single || partitioned) && !repeated;
      if (!moves && regionCost(producer) > options.recomputeBound)
        continue;
      // A producer that another reader keeps a kernel of its own saves
      // nothing fused but the one read of its result, and costs the reads
      // of its operands: not where those are more. Fused one step at a
      // time, a layer norm's input gradient (a chain over a dozen operands,
      // kept for the next layer's gradient) was recomputed in the weight
      // gradient's transposed layout (128 x 16 x 64 for a 16 x 64 x 128
      // activation): a transposing kernel of its own and, downstream, sums
      // of strided gathers (1.1 ms of a 34 ms transformer step).
      if (!moves && !consumer.hasReduction() &&
          materializedAnyway(producer.getResult(), consumer) &&
          readsMoreThanItsResult(producer, consumer.getDomainShape(),
                                 options.recomputeReadSlack))
        continue;
      llvm::SetVector<Value> distinct(consumer.getInputs().begin(),
                                      consumer.getInputs().end());
      distinct.remove(operand);
      size_t kept = distinct.size();
      for (Value input : producer.getInputs())
        distinct.insert(input);
      if (distinct.size() > options.maxOperands)
        continue;
      // A producer other kernels read too is computed for them anyway: a
      // reduction recomputing it from more than one operand of its own
      // reads more than the one value it would read. The gradient of
      // attention's q, k, v split (a concatenation: three masked views
      // selected) is read by the weight gradient's matmul and by the bias
      // gradient's sum over tokens; recomputed in the sum, the sum was a
      // scalar loop of three masked gathers per element (2.2 ms of a GPT
      // step, 384 outputs over 1024 tokens, where a column sum of the
      // concatenation takes 0.05).
      if (consumer.hasReduction() && !partitioned && !single &&
          distinct.size() > kept + 1)
        continue;
      // A reduction needs an operand to carry its domain; a producer with
      // none (an iota, a fill) stays.
      if (distinct.empty() && consumer.hasReduction())
        continue;
      fuse(consumer, i, producer, layout, rewriter);
      return success();
    }
    return rewriter.notifyMatchFailure(consumer, "no fusible producer");
  }

  /// Replaces `consumer` by a map_reduce computing `producer`'s value for
  /// operand `index` in its own region, reading `producer`'s operands
  /// through `layout` (null: the identity).
  static void fuse(MapReduceOp consumer, unsigned index, MapReduceOp producer,
                   ViewAttr layout, PatternRewriter &rewriter) {
    Location loc = consumer.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    ArrayRef<int64_t> domain = consumer.getDomainShape();

    SmallVector<Value> inputs;
    for (auto [j, input] : llvm::enumerate(consumer.getInputs()))
      if (j != index)
        inputs.push_back(input);
    unsigned firstProducerArg = inputs.size();
    // The producer's operands are read where it was: through the layout's
    // map and mask. Their pad is never observed (the select below decides),
    // but the producer's ops still run on it: it is one, which every element
    // type has and no op traps or turns into NaN on (zero would make an
    // integer division trap, and a float 0 / 0 that LLVM 22's x86 backend
    // takes for zero: it then drops the select's mask and the NaN leaks).
    ViewAttr operandLayout =
        layout ? ViewAttr::get(ctx, layout.getMap(), layout.getMask(),
                               layout.hasMask() ? PadKind::One : PadKind::Zero,
                               Attribute())
               : ViewAttr();
    for (Value input : producer.getInputs()) {
      if (!operandLayout) {
        inputs.push_back(input);
        continue;
      }
      auto type = RankedTensorType::get(
          domain, cast<RankedTensorType>(input.getType()).getElementType());
      inputs.push_back(
          ViewOp::create(rewriter, loc, type, input, operandLayout));
    }

    auto fused = MapReduceOp::create(
        rewriter, loc, consumer.getType(), inputs, consumer.getKindAttr(),
        consumer.getDimsAttr(), consumer.getKeepdimAttr());
    Block *block = createBodyBlock(rewriter, fused);

    SmallVector<Value> indices;
    auto consumerIndices = [&]() -> ArrayRef<Value> {
      if (indices.empty())
        for (unsigned d = 0; d < domain.size(); ++d)
          indices.push_back(IndexOp::create(rewriter, loc, d));
      return indices;
    };

    // The producer's value at this point of the consumer's domain.
    Block &producerBody = producer.getBody().front();
    IRMapping pmap;
    pmap.map(producerBody.getArguments(),
             block->getArguments().drop_front(firstProducerArg));
    for (Operation &op : producerBody.without_terminator()) {
      if (auto idx = dyn_cast<IndexOp>(op)) {
        Value at = layout
                       ? buildIndexExpr(rewriter, loc,
                                        layout.getMap().getResult(idx.getDim()),
                                        consumerIndices())
                       : consumerIndices()[idx.getDim()];
        pmap.map(idx.getResult(), at);
        continue;
      }
      rewriter.clone(op, pmap);
    }
    Value value = pmap.lookupOrDefault(
        cast<YieldOp>(producerBody.getTerminator()).getValues().front());
    if (layout && layout.hasMask()) {
      // Where the mask is false the consumer read the pad, not the producer.
      Value inside = buildMaskCondition(rewriter, loc, layout.getMask(),
                                        consumerIndices());
      Value pad = buildScalarConstant(rewriter, loc,
                                      layout.getPadAttr(value.getType()));
      value = arith::SelectOp::create(rewriter, loc, inside, value, pad);
    }

    // The consumer's region, reading that value for operand `index`.
    Block &consumerBody = consumer.getBody().front();
    IRMapping cmap;
    for (auto [j, arg] : llvm::enumerate(consumerBody.getArguments())) {
      if (j == index)
        cmap.map(arg, value);
      else
        cmap.map(arg, block->getArgument(j < index ? j : j - 1));
    }
    for (Operation &op : consumerBody)
      rewriter.clone(op, cmap);
    rewriter.replaceOp(consumer, fused.getResult());
  }

  HarpFusePassOptions options;
};

/// Whether `op`'s region yields its only argument unchanged (a plain
/// reduction of its operand).
static bool yieldsItsArgument(MapReduceOp op) {
  Block &body = op.getBody().front();
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  return op.getInputs().size() == 1 && body.getOperations().size() == 1 &&
         yield && yield.getValues().front() == body.getArgument(0);
}

/// Whether `map` reads a distinct source index at every point of its
/// domain (solvesEveryDim).
static bool readsEachPointOnce(AffineMap map) {
  return solvesEveryDim(map, SmallVector<bool>(map.getNumDims(), false));
}

/// The view through which the sum `consumer` folds the contraction
/// `producer`, where fusing them makes one contraction: `consumer` reads
/// only `producer`, through an index mixing dims (`y - ky`: a plain sum over
/// a contraction's result dim, the row sum of a matmul, keeps the
/// contraction's register tiles), each element once, zero outside its mask.
/// Null otherwise.
static ViewAttr foldLayout(MapReduceOp consumer, MapReduceOp producer) {
  std::optional<ReductionKind> kind = consumer.getKind();
  if (!kind || *kind != ReductionKind::Sum || !yieldsItsArgument(consumer))
    return ViewAttr();
  auto [source, layout] = stripViews(consumer.getInputs().front());
  if (source != producer.getResult() || !layout ||
      broadcasts(layout, consumer.getDomainShape()))
    return ViewAttr();
  auto mixes = [](AffineExpr e) {
    unsigned dims = 0;
    e.walk([&](AffineExpr sub) { dims += isa<AffineDimExpr>(sub); });
    return dims > 1;
  };
  if (llvm::none_of(layout.getMap().getResults(), mixes) ||
      !readsEachPointOnce(layout.getMap()))
    return ViewAttr();
  if (layout.hasMask()) {
    Type element = cast<RankedTensorType>(source.getType()).getElementType();
    TypedAttr pad = layout.getPadAttr(element);
    auto f = dyn_cast_or_null<FloatAttr>(pad);
    auto i = dyn_cast_or_null<IntegerAttr>(pad);
    if (!(f && f.getValue().isZero()) && !(i && i.getValue().isZero()))
      return ViewAttr();
  }
  return layout;
}

/// Whether the readers of `producer` are sums folding it (foldLayout)
/// that share its elements out (readersPartition): the phases of a strided
/// window's gradient each read their own taps, so fused into each the
/// contraction is computed once over all.
static bool foldedOnlyBySums(MapReduceOp producer) {
  return readersPartition(producer.getResult(), [&](MapReduceOp sum) {
    return bool(foldLayout(sum, producer));
  });
}

/// A sum over a fold of a contraction read only by it (a view whose index
/// mixes dims, reading each element of the contraction once) is one
/// contraction over both sets of reduced dims:
/// sum_c (sum_r a * b) = sum_(c, r) a * b.
/// The gradient of a convolution's input is such a pair (a product summed
/// over the output channels, then folded back onto the image by a sum over
/// the window); fused, it is a convolution of the output gradient with the
/// filter, and no column tensor is materialized. A sum over windows that
/// may overlap (pooling a convolution's output) is left alone: fused, the
/// contraction would be recomputed for every window that reads it.
struct FuseSumOfContraction : OpRewritePattern<MapReduceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MapReduceOp consumer,
                                PatternRewriter &rewriter) const override {
    std::optional<ReductionKind> kind = consumer.getKind();
    if (!kind || *kind != ReductionKind::Sum || !yieldsItsArgument(consumer))
      return failure();
    auto producer = stripViews(consumer.getInputs().front())
                        .first.getDefiningOp<MapReduceOp>();
    if (!producer || !isContraction(producer))
      return failure();
    ViewAttr layout = foldLayout(consumer, producer);
    if (!layout || (!readOnlyBy(producer.getResult(), consumer) &&
                    !foldedOnlyBySums(producer)))
      return failure();
    ArrayRef<int64_t> domain = consumer.getDomainShape();
    MLIRContext *ctx = rewriter.getContext();

    // The fused domain: the consumer's dims, then the producer's reduced
    // ones; producer dim q is read at expr[q].
    ArrayRef<int64_t> inner = producer.getDomainShape();
    ArrayRef<int64_t> innerReduced = producer.getDims();
    unsigned outer = domain.size();
    SmallVector<int64_t> fusedDomain(domain);
    SmallVector<AffineExpr> expr(inner.size());
    unsigned resultDim = 0;
    for (unsigned q = 0; q < inner.size(); ++q) {
      bool reduced = llvm::is_contained(innerReduced, int64_t(q));
      if (reduced) {
        expr[q] = getAffineDimExpr(fusedDomain.size(), ctx);
        fusedDomain.push_back(inner[q]);
        if (producer.getKeepdim())
          ++resultDim;
        continue;
      }
      expr[q] = layout.getMap().getResult(resultDim);
      ++resultDim;
    }
    unsigned rank = fusedDomain.size();
    AffineMap toInner = AffineMap::get(rank, 0, expr, ctx);
    IntegerSet mask;
    if (layout.hasMask()) {
      IntegerSet m = layout.getMask();
      mask = IntegerSet::get(rank, m.getNumSymbols(), m.getConstraints(),
                             m.getEqFlags());
    }
    // The mask goes on the factors that read every dim it tests (the one
    // read out of bounds there: a convolution's output gradient), or on
    // both when neither does; a masked term is then 0 times the other
    // factor, as in PyTorch's convolution gradients.
    Location loc = consumer.getLoc();
    SmallVector<Value> inputs;
    SmallVector<bool> masked;
    for (Value input : producer.getInputs()) {
      bool covers = false;
      if (mask) {
        auto [inputSource, inputLayout] = stripViews(input);
        (void)inputSource;
        AffineMap inputMap =
            inputLayout ? inputLayout.getMap()
                        : AffineMap::getMultiDimIdentityMap(inner.size(), ctx);
        AffineMap reads = inputMap.compose(toInner);
        covers = llvm::all_of(mask.getConstraints(), [&](AffineExpr c) {
          for (unsigned d = 0; d < rank; ++d)
            if (c.isFunctionOfDim(d) && !reads.isFunctionOfDim(d))
              return false;
          return true;
        });
      }
      masked.push_back(covers);
    }
    if (mask && llvm::none_of(masked, [](bool m) { return m; }))
      masked.assign(masked.size(), true);
    for (auto [k, input] : llvm::enumerate(producer.getInputs())) {
      auto type = RankedTensorType::get(
          fusedDomain,
          cast<RankedTensorType>(input.getType()).getElementType());
      ViewAttr readLayout =
          ViewAttr::get(ctx, toInner, masked[k] ? mask : IntegerSet(),
                        PadKind::Zero, Attribute());
      inputs.push_back(ViewOp::create(rewriter, loc, type, input, readLayout));
    }
    SmallVector<int64_t> reduced(consumer.getDims());
    for (unsigned d = outer; d < rank; ++d)
      reduced.push_back(d);
    auto fused = MapReduceOp::create(
        rewriter, loc, consumer.getType(), inputs, consumer.getKindAttr(),
        rewriter.getDenseI64ArrayAttr(reduced), consumer.getKeepdimAttr());
    Block *block = createBodyBlock(rewriter, fused);
    IRMapping map;
    Block &producerBody = producer.getBody().front();
    map.map(producerBody.getArguments(), block->getArguments());
    for (Operation &op : producerBody)
      rewriter.clone(op, map);
    rewriter.replaceOp(consumer, fused.getResult());
    return success();
  }
};

/// A map_reduce read only through a unit-stride slice (a view whose index
/// i is `i + offset`, same rank, no mask) computes just the slice: its
/// domain shrinks to the slice and every operand is read at the offsets.
/// A convolution's input gradient, computed on the padded image and then
/// cropped, is then computed on the image.
struct ComputeOnlyTheSlice : OpRewritePattern<ViewOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ViewOp view,
                                PatternRewriter &rewriter) const override {
    auto producer = view.getSource().getDefiningOp<MapReduceOp>();
    ViewAttr layout = view.getLayout();
    if (!producer || !producer.getResult().hasOneUse() || layout.hasMask() ||
        producer.getKeepdim() || producer.getInputs().empty())
      return failure();
    AffineMap map = layout.getMap();
    auto resultType = cast<RankedTensorType>(view.getType());
    if (map.getNumDims() != map.getNumResults())
      return failure();
    SmallVector<int64_t> offsets;
    bool shrinks = false;
    for (auto [i, e] : llvm::enumerate(map.getResults())) {
      AffineExpr rest = e - getAffineDimExpr(i, e.getContext());
      auto c = dyn_cast<AffineConstantExpr>(rest);
      if (!c)
        return failure();
      offsets.push_back(c.getValue());
      shrinks |= resultType.getDimSize(i) !=
                 cast<RankedTensorType>(producer.getType()).getDimSize(i);
    }
    if (!shrinks)
      return failure();
    // The producer's domain dims that are result dims, in order.
    ArrayRef<int64_t> domain = producer.getDomainShape();
    ArrayRef<int64_t> reducedDims = producer.getDims();
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<int64_t> newDomain(domain);
    SmallVector<AffineExpr> shift;
    unsigned r = 0;
    for (unsigned d = 0; d < domain.size(); ++d) {
      AffineExpr dim = getAffineDimExpr(d, ctx);
      if (llvm::is_contained(reducedDims, int64_t(d))) {
        shift.push_back(dim);
        continue;
      }
      newDomain[d] = resultType.getDimSize(r);
      shift.push_back(dim + offsets[r]);
      ++r;
    }
    // Index ops in the region would need the shift too.
    if (!producer.getBody().front().getOps<IndexOp>().empty())
      return failure();
    AffineMap shiftMap = AffineMap::get(domain.size(), 0, shift, ctx);
    Location loc = view.getLoc();
    SmallVector<Value> inputs;
    for (Value input : producer.getInputs()) {
      auto type = RankedTensorType::get(
          newDomain, cast<RankedTensorType>(input.getType()).getElementType());
      inputs.push_back(ViewOp::create(rewriter, loc, type, input,
                                      ViewAttr::get(ctx, shiftMap)));
    }
    auto sliced = MapReduceOp::create(
        rewriter, loc, resultType, inputs, producer.getKindAttr(),
        producer.getDimsAttr(), producer.getKeepdimAttr());
    rewriter.inlineRegionBefore(producer.getBody(), sliced.getBody(),
                                sliced.getBody().end());
    rewriter.replaceOp(view, sliced.getResult());
    rewriter.eraseOp(producer);
    return success();
  }
};

struct HarpFusePass : harp::impl::HarpFusePassBase<HarpFusePass> {
  using HarpFusePassBase::HarpFusePassBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    HarpFusePassOptions options;
    options.recomputeBound = recomputeBound;
    options.maxOperands = maxOperands;
    options.recomputeReadSlack = recomputeReadSlack;
    populateHarpFusionPatterns(patterns, options);
    // Views composed, duplicate operands merged, dead producers erased.
    ViewOp::getCanonicalizationPatterns(patterns, ctx);
    MapReduceOp::getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     harp::structuredGreedyConfig())))
      signalPassFailure();
  }
};
} // namespace

void mlir::harp::populateHarpFusionPatterns(
    RewritePatternSet &patterns, const HarpFusePassOptions &options) {
  patterns.add<FuseProducer>(patterns.getContext(), options);
  patterns.add<FuseSumOfContraction, ComputeOnlyTheSlice>(
      patterns.getContext());
}
