//===- Fusion.cpp - the harp-fuse pass ------------------------------------===//
//
// Producer-into-consumer fusion of map_reduce ops (the seed's eager fusion
// rules: element-wise into element-wise or reducing consumers; reductions
// never into their consumers), done as IR rewrites whose decisions show in
// the IR.
//
//===----------------------------------------------------------------------===//

#include "harp/Dialect/Harp/IR/HarpOps.h"
#include "harp/Dialect/Harp/Transforms/Passes.h"

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

/// The work a producer's region does per element (constants are free).
static unsigned regionCost(MapReduceOp op) {
  unsigned cost = 0;
  for (Operation &inner : op.getBody().front().without_terminator())
    if (!inner.hasTrait<OpTrait::ConstantLike>())
      ++cost;
  return cost;
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
      // broadcast, recomputes it: only if it is cheap.
      bool broadcast = broadcasts(layout, consumer.getDomainShape());
      if (broadcast && isContraction(consumer))
        continue;
      bool moves = readOnlyBy(producer.getResult(), consumer) && !broadcast;
      if (!moves && regionCost(producer) > options.recomputeBound)
        continue;
      llvm::SetVector<Value> distinct(consumer.getInputs().begin(),
                                      consumer.getInputs().end());
      distinct.remove(operand);
      for (Value input : producer.getInputs())
        distinct.insert(input);
      if (distinct.size() > options.maxOperands)
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

struct HarpFusePass : harp::impl::HarpFusePassBase<HarpFusePass> {
  using HarpFusePassBase::HarpFusePassBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    HarpFusePassOptions options;
    options.recomputeBound = recomputeBound;
    options.maxOperands = maxOperands;
    populateHarpFusionPatterns(patterns, options);
    // Views composed, duplicate operands merged, dead producers erased.
    ViewOp::getCanonicalizationPatterns(patterns, ctx);
    MapReduceOp::getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void mlir::harp::populateHarpFusionPatterns(
    RewritePatternSet &patterns, const HarpFusePassOptions &options) {
  patterns.add<FuseProducer>(patterns.getContext(), options);
}
