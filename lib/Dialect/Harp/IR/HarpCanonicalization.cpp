//===- HarpCanonicalization.cpp - folders and canonical patterns ----------===//
//
// Views: compose chains into one view, simplify index arithmetic and masks
// with the known result box, drop identity views and fold views of
// constants. Map_reduce: drop and merge operands, read splat constants as
// constants in the body, strength-reduce powers with a constant exponent.
// Contiguous: fold repeated materialisation.
//
//===----------------------------------------------------------------------===//

#include "harp/Dialect/Harp/IR/HarpOps.h"
#include "harp/Dialect/Harp/IR/ViewLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::harp;

/// Views of constants with more elements than this stay views: folding them
/// would copy the data into the IR.
static constexpr int64_t kMaxFoldedElements = 1 << 16;

/// A constant of `type` with every element equal to `value`.
static DenseElementsAttr splat(ShapedType type, TypedAttr value) {
  if (auto number = dyn_cast<complex::NumberAttr>(value))
    return DenseElementsAttr::get(type, {number.getValue()});
  return DenseElementsAttr::get(type, value);
}

/// Reads `source` through `layout` element by element.
static DenseElementsAttr foldConstantView(DenseElementsAttr source,
                                          ViewAttr layout,
                                          RankedTensorType resultType) {
  Type elementType = resultType.getElementType();
  TypedAttr pad = layout.hasMask() ? layout.getPadAttr(elementType) : nullptr;
  if (source.isSplat() &&
      (!layout.hasMask() || (!isa<ComplexType>(elementType) &&
                             pad == source.getSplatValue<Attribute>())))
    return source.resizeSplat(resultType);
  if (isa<ComplexType>(elementType) ||
      resultType.getNumElements() > kMaxFoldedElements)
    return {};

  SmallVector<Attribute> values(source.getValues<Attribute>());
  ArrayRef<int64_t> sourceShape = source.getType().getShape();
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<Attribute> folded;
  folded.reserve(resultType.getNumElements());
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t n = 0, e = resultType.getNumElements(); n < e; ++n) {
    if (!containsPoint(layout.getMask(), index)) {
      folded.push_back(pad);
    } else {
      // In bounds (the view verified), so each index fits int64.
      int64_t linear = 0;
      for (auto [expr, size] :
           llvm::zip(layout.getMap().getResults(), sourceShape))
        linear = linear * size + static_cast<int64_t>(evaluate(expr, index));
      folded.push_back(values[linear]);
    }
    // Advance the row-major index.
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return DenseElementsAttr::get(resultType, folded);
}

OpFoldResult ViewOp::fold(FoldAdaptor adaptor) {
  ViewAttr layout = getLayout();
  RankedTensorType resultType = getType();
  if (layout.isIdentity() && getSource().getType() == resultType)
    return getSource();
  if (isMaskAlwaysFalse(layout, resultType.getShape()))
    if (TypedAttr pad = layout.getPadAttr(resultType.getElementType()))
      return splat(resultType, pad);
  if (auto source = dyn_cast_or_null<DenseElementsAttr>(adaptor.getSource()))
    return foldConstantView(source, layout, resultType);
  return {};
}

namespace {
/// view(view(x, inner), outer) -> view(x, outer . inner).
struct ComposeViews : OpRewritePattern<ViewOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ViewOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getSource().getDefiningOp<ViewOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "source is not a view");
    ViewAttr composed = composeLayouts(op.getLayout(), inner.getLayout());
    if (!composed)
      return rewriter.notifyMatchFailure(op, "masks with different pads");
    composed = simplifyLayout(composed, op.getType().getShape());
    rewriter.replaceOpWithNewOp<ViewOp>(op, op.getType(), inner.getSource(),
                                        composed);
    return success();
  }
};

/// Simplifies the layout with the known result box.
struct SimplifyLayout : OpRewritePattern<ViewOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ViewOp op,
                                PatternRewriter &rewriter) const override {
    ViewAttr simplified =
        simplifyLayout(op.getLayout(), op.getType().getShape());
    if (simplified == op.getLayout())
      return rewriter.notifyMatchFailure(op, "layout already simple");
    rewriter.modifyOpInPlace(op, [&] { op.setLayoutAttr(simplified); });
    return success();
  }
};
} // namespace

namespace {
/// view(map_reduce(...), permutation) -> map_reduce'(...), where the view
/// is the map_reduce's only use: the map_reduce computes its result in the
/// permuted order (its domain's parallel dims permuted, each operand read
/// through the same permutation) instead of computing it in its own order
/// and the view copying it into the other (a view a function returns or a
/// kernel reads is materialized). A linear layer's weight gradient is one:
/// the derivative of x @ W^T with respect to W is (x^T @ dY)^T; computed as
/// x^T @ dY and transposed, the matmul first copied x transposed (its
/// left operand read along m) and then the result was copied transposed,
/// one pass over x and two over the result (1.3 ms of a 1024 x 1024 layer's
/// step at batch 256); as dY^T @ x, only dY is copied.
struct ComputeThroughPermutation : OpRewritePattern<ViewOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ViewOp op,
                                PatternRewriter &rewriter) const override {
    auto producer = op.getSource().getDefiningOp<MapReduceOp>();
    ViewAttr layout = op.getLayout();
    AffineMap perm = layout.getMap();
    if (!producer || !producer->hasOneUse() || layout.hasMask() ||
        !perm.isPermutation() || perm.isIdentity() ||
        producer.getInputs().empty())
      return rewriter.notifyMatchFailure(op, "not a permuted map_reduce");
    // Only products of transposed and broadcast operands (matmuls): the
    // code a window or a gather gets depends on the order its result is
    // computed in (a convolution's input gradient over a transposed
    // embedding, computed channels-last, read its window along an outer
    // dim: 8.7 ms where computing it and copying it transposed took 2.3).
    for (Value input : producer.getInputs())
      if (auto view = input.getDefiningOp<ViewOp>())
        if (view.getLayout().hasMask() ||
            !view.getLayout().getMap().isProjectedPermutation(
                /*allowZeroInResults=*/true))
          return rewriter.notifyMatchFailure(op, "reads through a window");
    auto domainType =
        cast<RankedTensorType>(producer.getInputs().front().getType());
    ArrayRef<int64_t> domain = domainType.getShape();
    unsigned rank = domain.size();
    ArrayRef<int64_t> dims = producer.getDims();
    bool keep = producer.getKeepdim() || dims.empty();
    // Domain dim d of the old map_reduce is dim `position[d]` of the new
    // one. Kept dims (all of them under keepdim) move as the view moves the
    // result's: result dim j (domain dim `kept[j]`) is the view's dim
    // perm(j); reduced dims without keepdim follow, in their order.
    SmallVector<int64_t> kept;
    for (unsigned d = 0; d < rank; ++d)
      if (keep || !llvm::is_contained(dims, int64_t(d)))
        kept.push_back(d);
    if (kept.size() != perm.getNumResults())
      return rewriter.notifyMatchFailure(op, "result rank mismatch");
    SmallVector<unsigned> position(rank);
    for (auto [j, d] : llvm::enumerate(kept))
      position[d] = perm.getDimPosition(j);
    unsigned next = kept.size();
    if (!keep)
      for (int64_t d : dims)
        position[d] = next++;
    SmallVector<int64_t> newDomain(rank);
    SmallVector<AffineExpr> read;
    for (unsigned d = 0; d < rank; ++d) {
      newDomain[position[d]] = domain[d];
      read.push_back(rewriter.getAffineDimExpr(position[d]));
    }
    SmallVector<int64_t> newDims;
    for (int64_t d : dims)
      newDims.push_back(position[d]);
    llvm::sort(newDims);

    Location loc = producer.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto readLayout = ViewAttr::get(ctx, AffineMap::get(rank, 0, read, ctx));
    SmallVector<Value> inputs;
    for (Value input : producer.getInputs()) {
      auto type = cast<RankedTensorType>(input.getType());
      inputs.push_back(ViewOp::create(
          rewriter, loc,
          RankedTensorType::get(newDomain, type.getElementType()), input,
          readLayout));
    }
    auto permuted = MapReduceOp::create(
        rewriter, loc, op.getType(), inputs, producer.getKindAttr(),
        rewriter.getDenseI64ArrayAttr(newDims), producer.getKeepdimAttr());
    // The body moves as it is; its index ops name the permuted dims.
    rewriter.inlineRegionBefore(producer.getBody(), permuted.getBody(),
                                permuted.getBody().end());
    for (IndexOp index : permuted.getBody().front().getOps<IndexOp>())
      rewriter.modifyOpInPlace(index,
                               [&] { index.setDim(position[index.getDim()]); });
    rewriter.replaceOp(op, permuted.getResult());
    rewriter.eraseOp(producer);
    return success();
  }
};
} // namespace

void ViewOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  results.add<ComposeViews, SimplifyLayout, ComputeThroughPermutation>(context);
}

namespace {
/// Drops operands the region never reads and merges repeated ones. The first
/// operand stays when a reduction needs it to define the domain.
struct SimplifyMapReduceOperands : OpRewritePattern<MapReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MapReduceOp op,
                                PatternRewriter &rewriter) const override {
    Block &body = op.getBody().front();
    OperandRange inputs = op.getInputs();
    SmallVector<int> keptAs(inputs.size(), -1); // new position, or -1
    SmallVector<Value> kept;
    for (auto [i, input] : llvm::enumerate(inputs)) {
      bool used = !body.getArgument(i).use_empty();
      bool needed = used || (i == 0 && op.hasReduction());
      if (!needed)
        continue;
      auto first = llvm::find(kept, input);
      if (first != kept.end()) {
        keptAs[i] = first - kept.begin();
        continue;
      }
      keptAs[i] = kept.size();
      kept.push_back(input);
    }
    if (kept.size() == inputs.size())
      return rewriter.notifyMatchFailure(op, "operands already minimal");

    auto simplified = MapReduceOp::create(
        rewriter, op.getLoc(), op.getType(), kept, op.getKindAttr(),
        op.getDimsAttr(), op.getKeepdimAttr());
    Block *block = createBodyBlock(rewriter, simplified);
    IRMapping mapping;
    for (auto [i, arg] : llvm::enumerate(body.getArguments()))
      if (keptAs[i] >= 0)
        mapping.map(arg, block->getArgument(keptAs[i]));
    for (Operation &inner : body)
      rewriter.clone(inner, mapping);
    rewriter.replaceOp(op, simplified.getResult());
    return success();
  }
};

/// A splat constant operand becomes a constant in the body: the kernel reads
/// no buffer for it, and the ops that use it can simplify (below). The
/// operand itself is then dropped by SimplifyMapReduceOperands. A reduction
/// keeps reading at least one operand: a reduced value that reads none is
/// the same for every reduced element, and linalg's vectorizer combined it
/// once instead of once per element (the sum of ones(4, 5) over dim 1 gave
/// 1, not 5).
struct InlineSplatOperands : OpRewritePattern<MapReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MapReduceOp op,
                                PatternRewriter &rewriter) const override {
    Block &body = op.getBody().front();
    bool changed = false;
    unsigned read = llvm::count_if(body.getArguments(), [](BlockArgument arg) {
      return !arg.use_empty();
    });
    for (auto [i, input] : llvm::enumerate(op.getInputs())) {
      BlockArgument arg = body.getArgument(i);
      DenseElementsAttr value;
      if (arg.use_empty() || isa<ComplexType>(arg.getType()) ||
          !matchPattern(input, m_Constant(&value)) || !value.isSplat())
        continue;
      if (op.hasReduction() && read == 1)
        continue;
      auto scalar = dyn_cast<TypedAttr>(value.getSplatValue<Attribute>());
      if (!scalar || scalar.getType() != arg.getType())
        continue;
      rewriter.setInsertionPointToStart(&body);
      Value constant = arith::ConstantOp::create(rewriter, input.getLoc(),
                                                 arg.getType(), scalar);
      rewriter.replaceAllUsesWith(arg, constant);
      --read;
      changed = true;
    }
    return success(changed);
  }
};

/// `powf(x, c)` in a map_reduce body, for a constant exponent that is an
/// integer or half-integer of magnitude at most 4 (the exponents the Python
/// API compiles as constants): multiplications by squaring, a square root
/// for the half, one division for a negative exponent. Each keeps C's pow
/// at every special input (signed zeros, infinities, NaN); 0, 1, 2 and -1
/// are bitwise pow's, the others within three ulps where the result is a
/// normal number. A libm call per element becomes a few vector
/// instructions.
struct ReducePowerWithConstantExponent : OpRewritePattern<math::PowFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::PowFOp op,
                                PatternRewriter &rewriter) const override {
    FloatAttr exponent;
    if (!op->getParentOfType<MapReduceOp>() ||
        !matchPattern(op.getRhs(), m_Constant(&exponent)))
      return failure();
    double e = exponent.getValueAsDouble();
    double twice = 2 * e;
    if (!(std::abs(e) <= 4) || twice != std::trunc(twice))
      return rewriter.notifyMatchFailure(op, "no cheaper form");
    if (e == 0) { // pow(x, +-0) is 1 for every x, NaN too
      rewriter.replaceOpWithNewOp<arith::ConstantOp>(
          op, rewriter.getFloatAttr(op.getType(), 1.0));
      return success();
    }
    Location loc = op.getLoc();
    Value x = op.getLhs();
    Type type = x.getType();
    auto number = [&](double v) -> Value {
      return arith::ConstantOp::create(rewriter, loc, type,
                                       rewriter.getFloatAttr(type, v));
    };
    auto mul = [&](Value a, Value b) -> Value {
      return arith::MulFOp::create(rewriter, loc, a, b);
    };
    // b^n for 1 <= n <= 4 by squaring.
    auto power = [&](Value b, int n) -> Value {
      Value square = n >= 2 ? mul(b, b) : Value();
      switch (n) {
      case 1:
        return b;
      case 2:
        return square;
      case 3:
        return mul(square, b);
      default:
        return mul(square, square);
      }
    };
    int n = static_cast<int>(std::trunc(std::abs(e)));
    Value result;
    if (e == std::trunc(e)) {
      result = power(x, n);
    } else {
      // x^(n + 1/2) = |x|^n sqrt(x). sqrt gives -0 at -0 and NaN at -inf
      // where pow gives +0 and +inf: adding +0 turns -0 into +0 and
      // changes nothing else, and -inf selects +inf. |x| keeps the sign of
      // x^n from these two (pow is NaN for every other negative x, as sqrt).
      Value root = arith::AddFOp::create(
          rewriter, loc, math::SqrtOp::create(rewriter, loc, x), number(0.0));
      Value atMinusInf = arith::CmpFOp::create(
          rewriter, loc, arith::CmpFPredicate::OEQ, x,
          number(-std::numeric_limits<double>::infinity()));
      root = arith::SelectOp::create(
          rewriter, loc, atMinusInf,
          number(std::numeric_limits<double>::infinity()), root);
      result =
          n == 0 ? root
                 : mul(power(math::AbsFOp::create(rewriter, loc, x), n), root);
    }
    if (e < 0)
      result = arith::DivFOp::create(rewriter, loc, number(1.0), result);
    rewriter.replaceOp(op, result);
    return success();
  }
};
} // namespace

/// A map_reduce that yields its one operand unchanged and reduces nothing
/// is that operand.
OpFoldResult MapReduceOp::fold(FoldAdaptor) {
  if (hasReduction() || getInputs().size() != 1 ||
      getInputs().front().getType() != getType())
    return {};
  Block &body = getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().front() != body.getArgument(0))
    return {};
  return getInputs().front();
}

void MapReduceOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<SimplifyMapReduceOperands, InlineSplatOperands,
              ReducePowerWithConstantExponent>(context);
}

OpFoldResult ContiguousOp::fold(FoldAdaptor adaptor) {
  if (Attribute constant = adaptor.getInput())
    return constant;
  if (getInput().getDefiningOp<ContiguousOp>())
    return getInput();
  return {};
}
