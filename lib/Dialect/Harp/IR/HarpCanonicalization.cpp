//===- HarpCanonicalization.cpp - folders and canonical patterns ----------===//
//
// Views: compose chains into one view, simplify index arithmetic and masks
// with the known result box, drop identity views and fold views of
// constants. Contiguous: fold repeated materialisation.
//
//===----------------------------------------------------------------------===//

#include "harp/Dialect/Harp/IR/HarpOps.h"
#include "harp/Dialect/Harp/IR/ViewLayout.h"

#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

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

void ViewOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  results.add<ComposeViews, SimplifyLayout>(context);
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
  results.add<SimplifyMapReduceOperands>(context);
}

OpFoldResult ContiguousOp::fold(FoldAdaptor adaptor) {
  if (Attribute constant = adaptor.getInput())
    return constant;
  if (getInput().getDefiningOp<ContiguousOp>())
    return getInput();
  return {};
}
