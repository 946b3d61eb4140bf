//===- KernelBuilder.cpp - one linalg.generic per harp kernel -------------===//

#include "KernelBuilder.h"

#include "harp/Dialect/Harp/IR/ViewLayout.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::harp;
using namespace mlir::harp::lowering;

Value lowering::applyExpr(OpBuilder &b, Location loc, AffineExpr expr,
                          ValueRange indices) {
  return affine::AffineApplyOp::create(
      b, loc, AffineMap::get(indices.size(), 0, expr, b.getContext()), indices);
}

Value lowering::clampIndex(OpBuilder &b, Location loc, Value index,
                           int64_t size) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value last = arith::ConstantIndexOp::create(b, loc, size - 1);
  Value low = arith::MaxSIOp::create(b, loc, index, zero);
  return arith::MinSIOp::create(b, loc, low, last);
}

/// linalg checks that a source dim read by a bare loop index has exactly the
/// loop's size. A view that reads a prefix (a slice starting at 0) reads a
/// larger dim that way; cut the source to the loop's size, which is free.
static Value sliceForBareDims(OpBuilder &b, Location loc, Value source,
                              AffineMap map, ArrayRef<int64_t> domain) {
  auto type = cast<RankedTensorType>(source.getType());
  SmallVector<int64_t> sizes(type.getShape());
  bool changed = false;
  for (auto [j, expr] : llvm::enumerate(map.getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (dim && sizes[j] != domain[dim.getPosition()]) {
      sizes[j] = domain[dim.getPosition()];
      changed = true;
    }
  }
  if (!changed)
    return source;
  SmallVector<OpFoldResult> offsets(sizes.size(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(sizes.size(), b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizeAttrs = llvm::map_to_vector(
      sizes, [&](int64_t s) -> OpFoldResult { return b.getIndexAttr(s); });
  return tensor::ExtractSliceOp::create(b, loc, source, offsets, sizeAttrs,
                                        strides);
}

/// Reads `source` through a masked `layout` at domain point `indices`: the
/// source index is clamped so the load is always in bounds, and the pad is
/// selected where the mask is false.
static Value readMasked(OpBuilder &b, Location loc, Value source,
                        ViewAttr layout, ValueRange indices) {
  auto type = cast<RankedTensorType>(source.getType());
  Type elementType = type.getElementType();
  Value pad = buildScalarConstant(b, loc, layout.getPadAttr(elementType));
  if (llvm::is_contained(type.getShape(), 0))
    return pad;
  auto apply = [&](AffineExpr expr) {
    return applyExpr(b, loc, expr, indices);
  };
  SmallVector<Value> sourceIndices;
  for (auto [j, expr] : llvm::enumerate(layout.getMap().getResults()))
    sourceIndices.push_back(
        clampIndex(b, loc, apply(expr), type.getDimSize(j)));
  Value element = tensor::ExtractOp::create(b, loc, source, sourceIndices);

  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value inside;
  IntegerSet mask = layout.getMask();
  for (auto [expr, isEq] :
       llvm::zip(mask.getConstraints(), mask.getEqFlags())) {
    Value holds = arith::CmpIOp::create(
        b, loc, isEq ? arith::CmpIPredicate::eq : arith::CmpIPredicate::sge,
        apply(expr), zero);
    inside = inside ? arith::AndIOp::create(b, loc, inside, holds) : holds;
  }
  return arith::SelectOp::create(b, loc, inside, element, pad);
}

/// A masked view whose mask holds exactly where its reads land in the
/// source (a pad: the zero border of a convolution) is read from a padded
/// copy of the source through the shifted map: no clamped index and no
/// select per element, and an indexing map the kernel can be tiled and
/// vectorized along. Only for linear maps, and when the copy stays within a
/// few times the source. Returns the padded source and its map.
static std::optional<std::pair<Value, AffineMap>>
padMaskedRead(OpBuilder &b, Location loc, Value source, ViewAttr layout,
              ArrayRef<int64_t> domain) {
  auto type = cast<RankedTensorType>(source.getType());
  if (!type.hasStaticShape() || type.getNumElements() == 0 ||
      !type.getElementType().isIntOrFloat() || llvm::is_contained(domain, 0))
    return std::nullopt;
  AffineMap map = layout.getMap();
  unsigned rank = map.getNumDims();
  SmallVector<int64_t> low, high;
  SmallVector<AffineExpr> shifted;
  int64_t paddedElements = 1;
  for (auto [j, expr] : llvm::enumerate(map.getResults())) {
    bool linear = true;
    expr.walk([&](AffineExpr e) {
      linear &= e.getKind() != AffineExprKind::FloorDiv &&
                e.getKind() != AffineExprKind::CeilDiv &&
                e.getKind() != AffineExprKind::Mod;
    });
    if (!linear)
      return std::nullopt; // not a plain shift of the source
    // Coefficients from the values at the origin and the unit points.
    SmallVector<int64_t> point(rank, 0);
    std::optional<int64_t> offset = int64_t(evaluate(expr, point));
    int64_t lo = *offset, hi = *offset;
    for (unsigned d = 0; d < rank; ++d) {
      point[d] = 1;
      int64_t coefficient = int64_t(evaluate(expr, point)) - *offset;
      point[d] = 0;
      int64_t reach = coefficient * (domain[d] - 1);
      (reach < 0 ? lo : hi) += reach;
    }
    int64_t size = type.getDimSize(j);
    low.push_back(std::max<int64_t>(0, -lo));
    high.push_back(std::max<int64_t>(0, hi - (size - 1)));
    shifted.push_back(expr + low.back());
    paddedElements *= size + low.back() + high.back();
    if (paddedElements > 4 * type.getNumElements() + 65536)
      return std::nullopt;
  }
  if (!isMaskExactlyInBounds(layout, domain, type.getShape()))
    return std::nullopt;
  Value padValue =
      buildScalarConstant(b, loc, layout.getPadAttr(type.getElementType()));
  SmallVector<OpFoldResult> lowAttrs, highAttrs;
  SmallVector<int64_t> paddedShape;
  for (auto [j, size] : llvm::enumerate(type.getShape())) {
    lowAttrs.push_back(b.getIndexAttr(low[j]));
    highAttrs.push_back(b.getIndexAttr(high[j]));
    paddedShape.push_back(size + low[j] + high[j]);
  }
  Value padded = tensor::PadOp::create(
      b, loc, RankedTensorType::get(paddedShape, type.getElementType()), source,
      lowAttrs, highAttrs, padValue);
  return std::make_pair(padded,
                        AffineMap::get(rank, 0, shifted, b.getContext()));
}

/// A source dim read at a mixed-radix sum of loop indices (i * 16 + j with
/// j < 16, as a reshape of [.., 64] to [.., 4, 16] reads) is expanded into
/// one dim per index (a free tensor.expand_shape), so the map reads it by
/// bare indices. linalg then sees a projected permutation: a contraction
/// stays a contraction (the q k^T of attention heads split from one dim),
/// and tiling and vectorization see unit-stride dims. The sum must cover
/// the dim exactly (innermost coefficient 1, each next one the product of
/// the loop sizes inside it). Returns the source and map unchanged
/// otherwise.
static std::pair<Value, AffineMap> expandMergedDims(OpBuilder &b, Location loc,
                                                    Value source, AffineMap map,
                                                    ArrayRef<int64_t> domain) {
  auto type = dyn_cast<RankedTensorType>(source.getType());
  if (!type || !type.hasStaticShape())
    return {source, map};
  unsigned rank = map.getNumDims();
  MLIRContext *ctx = b.getContext();
  SmallVector<int64_t> shape;
  SmallVector<ReassociationIndices> groups;
  SmallVector<AffineExpr> exprs;
  bool changed = false;
  for (auto [j, expr] : llvm::enumerate(map.getResults())) {
    int64_t size = type.getDimSize(j);
    // The loop indices of a mixed-radix sum, outermost first.
    SmallVector<unsigned> terms;
    bool linear = !isa<AffineDimExpr, AffineConstantExpr>(expr);
    expr.walk([&](AffineExpr e) {
      linear &= e.getKind() != AffineExprKind::FloorDiv &&
                e.getKind() != AffineExprKind::CeilDiv &&
                e.getKind() != AffineExprKind::Mod;
    });
    if (linear) {
      SmallVector<int64_t> point(rank, 0);
      linear = evaluate(expr, point) == 0;
      SmallVector<std::pair<int64_t, unsigned>> coefficients;
      for (unsigned d = 0; linear && d < rank; ++d) {
        point[d] = 1;
        int64_t c = int64_t(evaluate(expr, point));
        point[d] = 0;
        if (c < 0 || (c > 0 && domain[d] <= 0))
          linear = false;
        else if (c > 0)
          coefficients.push_back({c, d});
      }
      llvm::sort(coefficients);
      int64_t radix = 1;
      for (auto [c, d] : coefficients) {
        linear &= c == radix;
        radix *= domain[d];
      }
      linear &= coefficients.size() >= 2 && radix == size;
      for (auto it = coefficients.rbegin(); linear && it != coefficients.rend();
           ++it)
        terms.push_back(it->second);
    }
    ReassociationIndices group;
    if (!linear) {
      group.push_back(shape.size());
      shape.push_back(size);
      exprs.push_back(expr);
    } else {
      for (unsigned d : terms) {
        group.push_back(shape.size());
        shape.push_back(domain[d]);
        exprs.push_back(getAffineDimExpr(d, ctx));
      }
      changed = true;
    }
    groups.push_back(group);
  }
  if (!changed)
    return {source, map};
  auto expandedType = RankedTensorType::get(shape, type.getElementType());
  Value expanded =
      tensor::ExpandShapeOp::create(b, loc, expandedType, source, groups);
  return {expanded, AffineMap::get(rank, 0, exprs, ctx)};
}

/// Booleans are a byte each in memory but a bit each in an LLVM vector, so
/// harp-vectorize leaves kernels with `i1` operands scalar. A kernel that
/// reads a bool tensor (a mask) reads an `i8` copy of it instead, made by a
/// kernel of its own over the source (often much smaller than the domain:
/// a [L, S] mask broadcast over heads), and narrows each element back in
/// the body; the kernel doing the work is then vectorized.
static Value widenBooleans(OpBuilder &b, Location loc, Value source) {
  auto type = cast<RankedTensorType>(source.getType());
  MLIRContext *ctx = b.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(type.getRank(), ctx);
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), b.getI8Type());
  SmallVector<utils::IteratorType> parallel(type.getRank(),
                                            utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, init.getType(), source, init,
             ArrayRef<AffineMap>{identity, identity}, parallel,
             [](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(
                   nb, nloc,
                   arith::ExtUIOp::create(nb, nloc, nb.getI8Type(), args[0])
                       .getResult());
             })
      .getResult(0);
}

/// The value a reduction starts from.
static TypedAttr reductionIdentity(OpBuilder &b, ReductionKind kind,
                                   Type type) {
  if (auto complexType = dyn_cast<ComplexType>(type))
    return complex::NumberAttr::get(
        complexType, kind == ReductionKind::Prod ? 1.0 : 0.0, 0.0);
  if (auto floatType = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &sem = floatType.getFloatSemantics();
    switch (kind) {
    case ReductionKind::Sum:
      return b.getFloatAttr(type, 0.0);
    case ReductionKind::Prod:
      return b.getFloatAttr(type, 1.0);
    case ReductionKind::Max:
      return FloatAttr::get(type, APFloat::getInf(sem, /*Negative=*/true));
    case ReductionKind::Min:
      return FloatAttr::get(type, APFloat::getInf(sem, /*Negative=*/false));
    default:
      llvm_unreachable("verifier allows only integer umax/umin");
    }
  }
  unsigned width = type.getIntOrFloatBitWidth();
  APInt value;
  switch (kind) {
  case ReductionKind::Sum:
  case ReductionKind::UMax:
    value = APInt(width, 0);
    break;
  case ReductionKind::Prod:
    value = APInt(width, 1);
    break;
  case ReductionKind::Max: // i1: or, starting from false
    value = width == 1 ? APInt(1, 0) : APInt::getSignedMinValue(width);
    break;
  case ReductionKind::Min: // i1: and, starting from true
    value = width == 1 ? APInt(1, 1) : APInt::getSignedMaxValue(width);
    break;
  case ReductionKind::UMin:
    value = APInt::getAllOnes(width);
    break;
  }
  return IntegerAttr::get(type, value);
}

/// Combines the accumulator with a new value.
static Value combine(OpBuilder &b, Location loc, ReductionKind kind, Value acc,
                     Value value) {
  Type type = value.getType();
  bool isFloat = isa<FloatType>(type);
  bool isComplex = isa<ComplexType>(type);
  bool isBool = type.isInteger(1);
  switch (kind) {
  case ReductionKind::Sum:
    if (isComplex)
      return complex::AddOp::create(b, loc, acc, value);
    if (isFloat)
      return arith::AddFOp::create(b, loc, acc, value);
    return arith::AddIOp::create(b, loc, acc, value);
  case ReductionKind::Prod:
    if (isComplex)
      return complex::MulOp::create(b, loc, acc, value);
    if (isFloat)
      return arith::MulFOp::create(b, loc, acc, value);
    return arith::MulIOp::create(b, loc, acc, value);
  case ReductionKind::Max:
    if (isFloat)
      return arith::MaximumFOp::create(b, loc, acc, value);
    if (isBool)
      return arith::OrIOp::create(b, loc, acc, value);
    return arith::MaxSIOp::create(b, loc, acc, value);
  case ReductionKind::Min:
    if (isFloat)
      return arith::MinimumFOp::create(b, loc, acc, value);
    if (isBool)
      return arith::AndIOp::create(b, loc, acc, value);
    return arith::MinSIOp::create(b, loc, acc, value);
  case ReductionKind::UMax:
    return arith::MaxUIOp::create(b, loc, acc, value);
  case ReductionKind::UMin:
    return arith::MinUIOp::create(b, loc, acc, value);
  }
  llvm_unreachable("unknown reduction kind");
}

Value lowering::buildKernel(OpBuilder &b, Location loc,
                            ArrayRef<int64_t> domain, ValueRange operands,
                            ArrayRef<int64_t> reduceDims,
                            std::optional<ReductionKind> kind, Type elementType,
                            KernelBody body) {
  MLIRContext *ctx = b.getContext();
  unsigned rank = domain.size();

  // How each operand is read: a linalg input with an indexing map, or a
  // masked read in the body.
  struct Read {
    std::optional<unsigned> input;
    Value source;
    ViewAttr layout;
    /// The input is an i8 copy of a bool tensor.
    bool widened = false;
  };
  SmallVector<Read> reads;
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (Value operand : operands) {
    auto [source, layout] = stripViews(operand);
    AffineMap map =
        layout ? layout.getMap() : AffineMap::getMultiDimIdentityMap(rank, ctx);
    if (layout && layout.hasMask()) {
      auto padded = padMaskedRead(b, loc, source, layout, domain);
      if (!padded) {
        reads.push_back({std::nullopt, source, layout});
        continue;
      }
      std::tie(source, map) = *padded;
    }
    std::tie(source, map) = expandMergedDims(b, loc, source, map, domain);
    auto sourceType = cast<RankedTensorType>(source.getType());
    bool widen =
        sourceType.getElementType().isInteger(1) && sourceType.hasStaticShape();
    if (widen)
      source = widenBooleans(b, loc, source);
    reads.push_back({static_cast<unsigned>(inputs.size()), {}, {}, widen});
    inputs.push_back(sliceForBareDims(b, loc, source, map, domain));
    maps.push_back(map);
  }

  SmallVector<int64_t> outShape;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators;
  for (unsigned d = 0; d < rank; ++d) {
    if (llvm::is_contained(reduceDims, static_cast<int64_t>(d))) {
      iterators.push_back(utils::IteratorType::reduction);
      continue;
    }
    iterators.push_back(utils::IteratorType::parallel);
    outShape.push_back(domain[d]);
    outExprs.push_back(getAffineDimExpr(d, ctx));
  }
  AffineMap outMap = AffineMap::get(rank, 0, outExprs, ctx);

  // linalg derives each loop's range from an operand dim read by that bare
  // loop index. A loop read only through compound indices (the kh of an
  // unfold, say) gets a tiny carrier operand that states its range.
  for (unsigned d = 0; d < rank; ++d) {
    auto bare = [&](AffineMap m) {
      return llvm::is_contained(m.getResults(), getAffineDimExpr(d, ctx));
    };
    if (bare(outMap) || llvm::any_of(maps, bare))
      continue;
    inputs.push_back(tensor::EmptyOp::create(
        b, loc, ArrayRef<int64_t>{domain[d]}, b.getI8Type()));
    maps.push_back(AffineMap::get(rank, 0, getAffineDimExpr(d, ctx)));
  }
  maps.push_back(outMap);

  Value init = tensor::EmptyOp::create(b, loc, outShape, elementType);
  if (kind) {
    Value identity =
        buildScalarConstant(b, loc, reductionIdentity(b, *kind, elementType));
    init = linalg::FillOp::create(b, loc, identity, init).getResult(0);
  }
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), inputs, init, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> indices;
        for (unsigned d = 0; d < rank; ++d)
          indices.push_back(linalg::IndexOp::create(nb, nloc, d));
        SmallVector<Value> scalars;
        for (const Read &read : reads)
          if (!read.input)
            scalars.push_back(
                readMasked(nb, nloc, read.source, read.layout, indices));
          else if (read.widened)
            scalars.push_back(arith::TruncIOp::create(nb, nloc, nb.getI1Type(),
                                                      args[*read.input]));
          else
            scalars.push_back(args[*read.input]);
        Value value = body(nb, nloc, scalars, indices);
        if (kind)
          value = combine(nb, nloc, *kind, args.back(), value);
        linalg::YieldOp::create(nb, nloc, value);
      });
  return generic.getResult(0);
}

Value lowering::materializeView(OpBuilder &b, Location loc, Value view) {
  auto type = cast<RankedTensorType>(view.getType());
  return buildKernel(b, loc, type.getShape(), view, {}, std::nullopt,
                     type.getElementType(),
                     [](OpBuilder &, Location, ValueRange scalars, ValueRange) {
                       return scalars.front();
                     });
}
