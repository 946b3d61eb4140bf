//===- KernelBuilder.cpp - one linalg.generic per harp kernel -------------===//

#include "KernelBuilder.h"

#include "harp/Dialect/Harp/IR/ViewLayout.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

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

/// Whether `expr` divides (floordiv, ceildiv or mod).
static bool hasDivision(AffineExpr expr) {
  bool found = false;
  expr.walk([&](AffineExpr e) {
    found |= e.getKind() == AffineExprKind::FloorDiv ||
             e.getKind() == AffineExprKind::CeilDiv ||
             e.getKind() == AffineExprKind::Mod;
  });
  return found;
}

/// The constant and per-dim coefficients of a linear `expr`.
static std::pair<int64_t, SmallVector<int64_t>> linearForm(AffineExpr expr,
                                                           unsigned rank) {
  SmallVector<int64_t> point(rank, 0), coefficients(rank);
  int64_t constant = int64_t(evaluate(expr, point));
  for (unsigned d = 0; d < rank; ++d) {
    point[d] = 1;
    coefficients[d] = int64_t(evaluate(expr, point)) - constant;
    point[d] = 0;
  }
  return {constant, coefficients};
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
    if (hasDivision(expr))
      return std::nullopt; // not a plain shift of the source
    auto [offset, coefficients] = linearForm(expr, rank);
    int64_t lo = offset, hi = offset;
    for (unsigned d = 0; d < rank; ++d) {
      int64_t reach = coefficients[d] * (domain[d] - 1);
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

/// A source dim read at a constant plus non-negative multiples of loop
/// indices, over part of the dim (a slice of a view: the keys' rows of a
/// fused q/k/v projection weight, read at `h * 16 + d + 64`), is cut to
/// the part the kernel reads (a free tensor.extract_slice) and read
/// without the constant. linalg then sees a bare index where the read was a
/// shifted one (a contraction stays a contraction: the gradient of attention's
/// input through the key projection took a matrix-vector product per row)
/// and expandMergedDims a sum that covers the sliced dim. Returns the
/// source and map unchanged otherwise.
static std::pair<Value, AffineMap> sliceShiftedReads(OpBuilder &b, Location loc,
                                                     Value source,
                                                     AffineMap map,
                                                     ArrayRef<int64_t> domain) {
  auto type = dyn_cast<RankedTensorType>(source.getType());
  if (!type || !type.hasStaticShape() ||
      llvm::any_of(domain, [](int64_t size) { return size <= 0; }))
    return {source, map};
  unsigned rank = map.getNumDims();
  SmallVector<OpFoldResult> offsets, sizes;
  SmallVector<AffineExpr> exprs;
  bool changed = false;
  for (auto [j, expr] : llvm::enumerate(map.getResults())) {
    int64_t size = type.getDimSize(j);
    int64_t offset = 0, last = 0;
    bool shifted = !isa<AffineConstantExpr>(expr) && !hasDivision(expr);
    if (shifted) {
      SmallVector<int64_t> coefficients;
      std::tie(offset, coefficients) = linearForm(expr, rank);
      last = offset;
      for (unsigned d = 0; d < rank; ++d) {
        shifted &= coefficients[d] >= 0;
        last += coefficients[d] * (domain[d] - 1);
      }
      shifted &= (offset > 0 || last + 1 < size) && last < size;
    }
    if (shifted) {
      offsets.push_back(b.getIndexAttr(offset));
      sizes.push_back(b.getIndexAttr(last - offset + 1));
      exprs.push_back(simplifyAffineExpr(expr - offset, rank, 0));
      changed = true;
    } else {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(size));
      exprs.push_back(expr);
    }
  }
  if (!changed)
    return {source, map};
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  Value slice =
      tensor::ExtractSliceOp::create(b, loc, source, offsets, sizes, strides);
  return {slice, AffineMap::get(rank, 0, exprs, b.getContext())};
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
    bool linear =
        !isa<AffineDimExpr, AffineConstantExpr>(expr) && !hasDivision(expr);
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
///
/// Where a kernel computes the bool tensor element-wise (a comparison, the
/// mask of a causal softmax, the one-hot rows of a loss), the copy is that
/// kernel again yielding its bool as an `i8` (widenedKernel): the bools are
/// never stored, and the kernel is vectorized as well. (Stored, the
/// comparison and each reader's copy were two scalar kernels: a one-hot
/// 1024 x 256 target took 0.5 ms per kernel in a GPT step.)
static Value widenedKernel(OpBuilder &b, Location loc, Value source);

static Value widenBooleans(OpBuilder &b, Location loc, Value source) {
  if (Value wide = widenedKernel(b, loc, source))
    return wide;
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

/// The `i8` twin of `source`, a bool tensor an element-wise map_reduce
/// computes, or a reshape or slice of one: that map_reduce's kernel built
/// yielding its bool extended to `i8`, and the reshape or slice applied to
/// it; null otherwise. The conversion rewrites readers before their
/// producers (the greedy driver works bottom-up), so the producer is still
/// a map_reduce here; it becomes its own kernel for its other readers (and
/// is erased as dead where it has none).
static Value widenedKernel(OpBuilder &b, Location loc, Value source) {
  auto i8Of = [&](Type type) {
    return cast<RankedTensorType>(type).clone(b.getI8Type());
  };
  if (auto expand = source.getDefiningOp<tensor::ExpandShapeOp>()) {
    Value wide = widenedKernel(b, loc, expand.getSrc());
    return wide
               ? tensor::ExpandShapeOp::create(b, loc, i8Of(expand.getType()),
                                               wide,
                                               expand.getReassociationIndices())
                     .getResult()
               : Value();
  }
  if (auto collapse = source.getDefiningOp<tensor::CollapseShapeOp>()) {
    Value wide = widenedKernel(b, loc, collapse.getSrc());
    return wide ? tensor::CollapseShapeOp::create(
                      b, loc, i8Of(collapse.getType()), wide,
                      collapse.getReassociationIndices())
                      .getResult()
                : Value();
  }
  if (auto slice = source.getDefiningOp<tensor::ExtractSliceOp>()) {
    Value wide = widenedKernel(b, loc, slice.getSource());
    return wide ? tensor::ExtractSliceOp::create(b, loc, i8Of(slice.getType()),
                                                 wide, slice.getMixedOffsets(),
                                                 slice.getMixedSizes(),
                                                 slice.getMixedStrides())
                      .getResult()
                : Value();
  }
  if (auto producer = source.getDefiningOp<MapReduceOp>()) {
    if (!producer.getDims().empty() || !producer.getType().hasStaticShape())
      return {};
    return buildKernel(
        b, loc, producer.getDomainShape(), producer.getInputs(), {},
        std::nullopt, b.getI8Type(),
        [&](OpBuilder &nb, Location nloc, ValueRange scalars,
            ValueRange indices) -> Value {
          Value bit = cloneMapReduceBody(nb, producer, scalars, indices);
          return arith::ExtUIOp::create(nb, nloc, nb.getI8Type(), bit);
        });
  }
  return {};
}

/// Whether compactSteppedDims copies an operand of `elements` elements in a
/// kernel over `domain`: when it is small against the work (a filter).
static bool copiedWhenStepped(int64_t elements, ArrayRef<int64_t> domain) {
  int64_t work = 1;
  for (int64_t n : domain)
    work *= n;
  return elements * 4 <= work;
}

/// A reduction kernel reads a small operand many times (a filter, broadcast
/// over a convolution's images); read with a step along some dims (reversed,
/// or every second element), every read of it is a reversed or strided
/// vector, which harp-vectorize leaves scalar, and its packing does not
/// take it. Such an operand is read from a compact copy (one pass over it):
/// a dim read at `f * d + c` becomes a dim of d's extent holding those
/// elements, read at `d`. (Every point of a linalg kernel's domain reads in
/// bounds, so every element of the copy exists.)
static std::pair<Value, AffineMap>
compactSteppedDims(OpBuilder &b, Location loc, Value source, AffineMap map,
                   ArrayRef<int64_t> loops) {
  auto type = cast<RankedTensorType>(source.getType());
  if (!type.hasStaticShape())
    return {source, map};
  if (!copiedWhenStepped(type.getNumElements(), loops))
    return {source, map};
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineExpr> readExprs, mapExprs;
  SmallVector<int64_t> shape;
  bool any = false;
  for (auto [k, e] : llvm::enumerate(map.getResults())) {
    AffineExpr index = getAffineDimExpr(k, ctx);
    std::optional<SteppedDim> step = steppedDim(e, map.getNumDims());
    // Read with a step other than 1: reversed (`c - d`, the filter after
    // reverseBackwardWindows) or every f-th element (`2 - 2 d`).
    if (!step || step->step == 1) {
      readExprs.push_back(index);
      mapExprs.push_back(e);
      shape.push_back(type.getDimSize(k));
      continue;
    }
    any = true;
    readExprs.push_back(index * step->step + step->offset);
    mapExprs.push_back(getAffineDimExpr(step->dim, ctx));
    shape.push_back(loops[step->dim]);
  }
  if (!any)
    return {source, map};
  unsigned rank = type.getRank();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  Value init = tensor::EmptyOp::create(b, loc, shape, type.getElementType());
  SmallVector<utils::IteratorType> parallel(rank,
                                            utils::IteratorType::parallel);
  Value compact = linalg::GenericOp::create(
                      b, loc, init.getType(), source, init,
                      ArrayRef<AffineMap>{
                          AffineMap::get(rank, 0, readExprs, ctx), identity},
                      parallel,
                      [](OpBuilder &nb, Location nloc, ValueRange args) {
                        linalg::YieldOp::create(nb, nloc, args[0]);
                      })
                      .getResult(0);
  return {compact, AffineMap::get(map.getNumDims(), 0, mapExprs, ctx)};
}

/// The coefficient of dim `d` in the linear expression `e`.
static std::optional<int64_t> coefficientOf(AffineExpr e, unsigned d,
                                            unsigned numDims) {
  AffineExpr dim = getAffineDimExpr(d, e.getContext());
  AffineExpr step = simplifyAffineExpr(e.replace(dim, dim + 1) - e, numDims, 0);
  if (auto c = dyn_cast<AffineConstantExpr>(step))
    return c.getValue();
  return std::nullopt;
}

/// A reduced dim read backwards inside a window (`y - ky`: a convolution's
/// input gradient reading the output gradient) and forwards only bare
/// (`ky`, by operands small enough to be copied: the filter) runs
/// backwards: `d` becomes `size - 1 - d` in every map, so the window reads
/// forwards (`y + ky'`) and the bare reads become flips (`2 - ky'`), which
/// compactSteppedDims copies once. A reduction's order does not matter.
/// Returns the reversed dims.
static SmallVector<bool> reverseBackwardWindows(ArrayRef<int64_t> domain,
                                                ArrayRef<int64_t> reduceDims,
                                                SmallVector<AffineMap> &maps,
                                                ArrayRef<int64_t> elements) {
  SmallVector<bool> reversed(domain.size(), false);
  unsigned rank = domain.size();
  for (int64_t d : reduceDims) {
    bool backwardWindow = false, blocked = false;
    for (auto [i, map] : llvm::enumerate(maps))
      for (AffineExpr e : map.getResults()) {
        if (!e.isFunctionOfDim(d))
          continue;
        std::optional<int64_t> c = coefficientOf(e, d, rank);
        bool window = false;
        for (unsigned other = 0; other < rank; ++other)
          window |= other != unsigned(d) && e.isFunctionOfDim(other);
        if (!c || (window && *c > 0) ||
            (!window && *c > 0 && !copiedWhenStepped(elements[i], domain)))
          blocked = true;
        backwardWindow |= window && c && *c < 0;
      }
    if (!backwardWindow || blocked)
      continue;
    MLIRContext *ctx = maps.front().getContext();
    AffineExpr dim = getAffineDimExpr(d, ctx);
    for (AffineMap &map : maps)
      map = simplifyAffineMap(map.replace(dim, (domain[d] - 1) - dim, rank, 0));
    reversed[d] = true;
  }
  return reversed;
}

namespace {
/// A kernel's loops after splitting some of them: each original loop index
/// is `origin[d]` over the new loops, which are `parts[d]` (consecutive).
struct LoopSplit {
  SmallVector<int64_t> domain;
  SmallVector<AffineExpr> origin;
  SmallVector<SmallVector<unsigned>> parts;
  SmallVector<AffineMap> maps;
};
} // namespace

/// `expr` with each `e floordiv c` and `e mod c` of a linear `e` resolved
/// where the loop ranges allow: the terms of `e` whose coefficients are
/// multiples of c make the quotient, and when the others (and the
/// constant's remainder) stay within [0, c) on the whole domain they are the
/// remainder. Exact on the domain; anything else is kept.
static AffineExpr simplifyOnDomain(AffineExpr expr, ArrayRef<int64_t> domain) {
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return expr;
  AffineExpr lhs = simplifyOnDomain(binary.getLHS(), domain);
  AffineExpr rhs = simplifyOnDomain(binary.getRHS(), domain);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return lhs + rhs;
  case AffineExprKind::Mul:
    return lhs * rhs;
  case AffineExprKind::CeilDiv:
    return lhs.ceilDiv(rhs);
  case AffineExprKind::FloorDiv:
  case AffineExprKind::Mod:
    break;
  default:
    return expr;
  }
  bool floorDiv = expr.getKind() == AffineExprKind::FloorDiv;
  auto keep = [&] { return floorDiv ? lhs.floorDiv(rhs) : lhs % rhs; };
  auto divisor = dyn_cast<AffineConstantExpr>(rhs);
  if (!divisor || divisor.getValue() <= 0 || hasDivision(lhs))
    return keep();
  int64_t c = divisor.getValue();
  unsigned rank = domain.size();
  auto [constant, coefficients] = linearForm(lhs, rank);
  MLIRContext *ctx = expr.getContext();
  int64_t remainderConstant = ((constant % c) + c) % c;
  AffineExpr quotient =
      getAffineConstantExpr((constant - remainderConstant) / c, ctx);
  AffineExpr remainder = getAffineConstantExpr(remainderConstant, ctx);
  int64_t low = remainderConstant, high = remainderConstant;
  for (unsigned d = 0; d < rank; ++d) {
    int64_t a = coefficients[d];
    if (a == 0)
      continue;
    AffineExpr dim = getAffineDimExpr(d, ctx);
    if (a % c == 0) {
      quotient = quotient + dim * (a / c);
      continue;
    }
    remainder = remainder + dim * a;
    int64_t reach = a * (domain[d] - 1);
    (reach < 0 ? low : high) += reach;
  }
  if (low < 0 || high >= c)
    return keep();
  return floorDiv ? quotient : remainder;
}

/// Splits loops of `domain` so that the maps read no `floordiv` or `mod`:
/// a loop d read as `e floordiv c` or `e mod c`, with coefficient a in e and
/// c / a dividing its range, becomes (d_hi, d_lo) with d = d_hi (c / a) +
/// d_lo. A view that merges dims (the [N H, L, D] gradient of attention
/// heads read as [N, L, H D]) then reads bare loop indices, and a
/// contraction through it stays a contraction. Returns nullopt unless every
/// division is gone.
static std::optional<LoopSplit> splitLoops(ArrayRef<int64_t> domain,
                                           ArrayRef<AffineMap> maps,
                                           MLIRContext *ctx) {
  auto divides = [](AffineMap map) {
    return llvm::any_of(map.getResults(), hasDivision);
  };
  if (!llvm::any_of(maps, divides) ||
      llvm::any_of(domain, [](int64_t n) { return n <= 0; }))
    return std::nullopt;
  LoopSplit split;
  split.domain.assign(domain.begin(), domain.end());
  for (unsigned d = 0; d < domain.size(); ++d) {
    split.origin.push_back(getAffineDimExpr(d, ctx));
    split.parts.push_back({d});
  }
  split.maps.assign(maps.begin(), maps.end());
  for (int round = 0; round < 16; ++round) {
    for (AffineMap &map : split.maps) {
      SmallVector<AffineExpr> exprs;
      for (AffineExpr e : map.getResults())
        exprs.push_back(simplifyOnDomain(e, split.domain));
      map = AffineMap::get(split.domain.size(), 0, exprs, ctx);
    }
    if (!llvm::any_of(split.maps, divides))
      return split;
    // The first division a split resolves: loop d by factor f.
    std::optional<std::pair<unsigned, int64_t>> found;
    for (AffineMap map : split.maps)
      for (AffineExpr e : map.getResults())
        e.walk([&](AffineExpr sub) {
          auto div = dyn_cast<AffineBinaryOpExpr>(sub);
          if (found || !div ||
              (sub.getKind() != AffineExprKind::FloorDiv &&
               sub.getKind() != AffineExprKind::Mod))
            return;
          auto c = dyn_cast<AffineConstantExpr>(div.getRHS());
          if (!c || c.getValue() <= 0 || hasDivision(div.getLHS()))
            return;
          auto [constant, coefficients] =
              linearForm(div.getLHS(), split.domain.size());
          (void)constant;
          for (unsigned d = 0; d < coefficients.size() && !found; ++d) {
            int64_t a = std::abs(coefficients[d]);
            if (a == 0 || c.getValue() % a)
              continue;
            int64_t f = c.getValue() / a, n = split.domain[d];
            if (f > 1 && f < n && n % f == 0)
              found = std::make_pair(d, f);
          }
        });
    if (!found)
      return std::nullopt;
    auto [d, f] = *found;
    // New loops: ..., d_hi (n / f), d_lo (f), ...; later loops shift by one.
    unsigned rank = split.domain.size();
    SmallVector<AffineExpr> substitution;
    for (unsigned i = 0; i < rank; ++i) {
      if (i < d)
        substitution.push_back(getAffineDimExpr(i, ctx));
      else if (i == d)
        substitution.push_back(getAffineDimExpr(d, ctx) * f +
                               getAffineDimExpr(d + 1, ctx));
      else
        substitution.push_back(getAffineDimExpr(i + 1, ctx));
    }
    int64_t n = split.domain[d];
    split.domain[d] = n / f;
    split.domain.insert(split.domain.begin() + d + 1, f);
    for (AffineMap &map : split.maps)
      map = map.replaceDimsAndSymbols(substitution, {}, rank + 1, 0);
    for (AffineExpr &e : split.origin)
      e = e.replaceDimsAndSymbols(substitution, {});
    for (SmallVector<unsigned> &loops : split.parts) {
      SmallVector<unsigned> next;
      for (unsigned i : loops) {
        if (i == d)
          next.append({d, d + 1});
        else
          next.push_back(i < d ? i : i + 1);
      }
      loops = next;
    }
  }
  return std::nullopt;
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

  // How each operand is read: a linalg input with an indexing map, or a
  // masked read in the body.
  struct Read {
    std::optional<unsigned> input;
    Value source;
    ViewAttr layout;
  };
  SmallVector<Read> reads;
  SmallVector<Value> sources;
  SmallVector<AffineMap> maps;
  for (Value operand : operands) {
    auto [source, layout] = stripViews(operand);
    AffineMap map = layout
                        ? layout.getMap()
                        : AffineMap::getMultiDimIdentityMap(domain.size(), ctx);
    if (layout && layout.hasMask()) {
      auto padded = padMaskedRead(b, loc, source, layout, domain);
      if (!padded) {
        reads.push_back({std::nullopt, source, layout});
        continue;
      }
      std::tie(source, map) = *padded;
    }
    reads.push_back({static_cast<unsigned>(sources.size()), {}, {}});
    sources.push_back(source);
    maps.push_back(map);
  }

  // Reduced dims read backwards through windows run backwards.
  SmallVector<int64_t> elementCounts;
  for (Value source : sources) {
    auto type = cast<RankedTensorType>(source.getType());
    elementCounts.push_back(type.hasStaticShape() ? type.getNumElements()
                                                  : INT64_MAX / 8);
  }
  SmallVector<bool> reversed =
      kind && llvm::all_of(reads, [](const Read &r) { return r.input; })
          ? reverseBackwardWindows(domain, reduceDims, maps, elementCounts)
          : SmallVector<bool>(domain.size(), false);

  // The loops: the domain's, or split where that removes every division
  // from the maps.
  std::optional<LoopSplit> split = splitLoops(domain, maps, ctx);
  ArrayRef<int64_t> loops = split ? ArrayRef<int64_t>(split->domain) : domain;
  if (split)
    maps = split->maps;
  unsigned rank = loops.size();
  auto partsOf = [&](unsigned d) -> SmallVector<unsigned> {
    return split ? split->parts[d] : SmallVector<unsigned>{d};
  };

  SmallVector<Value> inputs;
  SmallVector<bool> widened; // input i is an i8 copy of a bool tensor
  for (unsigned i = 0; i < sources.size(); ++i) {
    Value source;
    std::tie(source, maps[i]) =
        sliceShiftedReads(b, loc, sources[i], maps[i], loops);
    std::tie(source, maps[i]) =
        expandMergedDims(b, loc, source, maps[i], loops);
    auto sourceType = cast<RankedTensorType>(source.getType());
    bool widen =
        sourceType.getElementType().isInteger(1) && sourceType.hasStaticShape();
    if (widen)
      source = widenBooleans(b, loc, source);
    if (kind)
      std::tie(source, maps[i]) =
          compactSteppedDims(b, loc, source, maps[i], loops);
    inputs.push_back(sliceForBareDims(b, loc, source, maps[i], loops));
    widened.push_back(widen);
  }

  // The result has the original parallel dims; with split loops the kernel
  // writes their parts and the result is collapsed back.
  SmallVector<int64_t> outShape, resultShape;
  SmallVector<AffineExpr> outExprs;
  SmallVector<ReassociationIndices> collapse;
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  for (unsigned d = 0; d < domain.size(); ++d) {
    bool reduced = llvm::is_contained(reduceDims, static_cast<int64_t>(d));
    ReassociationIndices group;
    for (unsigned loop : partsOf(d)) {
      if (reduced) {
        iterators[loop] = utils::IteratorType::reduction;
        continue;
      }
      group.push_back(outShape.size());
      outShape.push_back(loops[loop]);
      outExprs.push_back(getAffineDimExpr(loop, ctx));
    }
    if (!reduced) {
      resultShape.push_back(domain[d]);
      collapse.push_back(group);
    }
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
        b, loc, ArrayRef<int64_t>{loops[d]}, b.getI8Type()));
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
        // The body sees the original loop indices.
        SmallVector<Value> loopIndices, indices;
        for (unsigned d = 0; d < rank; ++d)
          loopIndices.push_back(linalg::IndexOp::create(nb, nloc, d));
        for (unsigned d = 0; d < domain.size(); ++d)
          indices.push_back(
              split ? applyExpr(nb, nloc, split->origin[d], loopIndices)
                    : loopIndices[d]);
        // A reversed loop runs size - 1 - d.
        for (unsigned d = 0; d < domain.size(); ++d)
          if (reversed[d])
            indices[d] = arith::SubIOp::create(
                nb, nloc,
                arith::ConstantIndexOp::create(nb, nloc, domain[d] - 1),
                indices[d]);
        SmallVector<Value> scalars;
        for (const Read &read : reads) {
          if (!read.input)
            scalars.push_back(
                readMasked(nb, nloc, read.source, read.layout, indices));
          else if (widened[*read.input])
            scalars.push_back(arith::TruncIOp::create(nb, nloc, nb.getI1Type(),
                                                      args[*read.input]));
          else
            scalars.push_back(args[*read.input]);
        }
        Value value = body(nb, nloc, scalars, indices);
        if (kind)
          value = combine(nb, nloc, *kind, args.back(), value);
        linalg::YieldOp::create(nb, nloc, value);
      });
  Value result = generic.getResult(0);
  if (outShape != resultShape)
    result = tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get(resultShape, elementType), result,
        collapse);
  return result;
}

Value lowering::cloneMapReduceBody(OpBuilder &b, MapReduceOp op,
                                   ValueRange scalars, ValueRange indices) {
  Block &block = op.getBody().front();
  IRMapping mapping;
  mapping.map(block.getArguments(), scalars);
  for (Operation &inner : block.without_terminator()) {
    if (auto index = dyn_cast<IndexOp>(inner)) {
      mapping.map(index.getResult(), indices[index.getDim()]);
      continue;
    }
    b.clone(inner, mapping);
  }
  return mapping.lookupOrDefault(
      cast<YieldOp>(block.getTerminator()).getValues().front());
}

Value lowering::materializeView(OpBuilder &b, Location loc, Value view) {
  auto type = cast<RankedTensorType>(view.getType());
  return buildKernel(b, loc, type.getShape(), view, {}, std::nullopt,
                     type.getElementType(),
                     [](OpBuilder &, Location, ValueRange scalars, ValueRange) {
                       return scalars.front();
                     });
}
