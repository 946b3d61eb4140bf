//===- ViewLayout.cpp - analysis of #harp.view layouts --------------------===//

#include "harp/Dialect/Harp/IR/ViewLayout.h"
#include "harp/Dialect/Harp/IR/HarpDialect.h"

#include "mlir/Analysis/FlatLinearValueConstraints.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IntegerSet.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::harp;
using presburger::BoundType;

//===----------------------------------------------------------------------===//
// The memo (HarpDialect::lookupLayoutAnalysis)
//===----------------------------------------------------------------------===//

namespace {
/// The analyses whose answers are kept.
enum class Analysis : unsigned {
  InBounds,
  MaskExactlyInBounds,
  MaskAlwaysFalse,
  Simplified,
};
} // namespace

/// One or two static shapes as one uniqued attribute (a -1 between them).
static Attribute shapesKey(MLIRContext *context, ArrayRef<int64_t> first,
                           std::optional<ArrayRef<int64_t>> second = {}) {
  SmallVector<int64_t> sizes(first);
  if (second) {
    sizes.push_back(-1);
    llvm::append_range(sizes, *second);
  }
  return DenseI64ArrayAttr::get(context, sizes);
}

/// The dialect that keeps the answers (loaded wherever a #harp.view is).
static HarpDialect &dialectOf(ViewAttr layout) {
  return *layout.getContext()->getLoadedDialect<HarpDialect>();
}

/// The kept answer of `compute` (layout, shapes) -> Attribute, computing
/// and keeping it on the first question.
static Attribute memoized(Analysis analysis, ViewAttr layout, Attribute shapes,
                          function_ref<Attribute()> compute) {
  HarpDialect &dialect = dialectOf(layout);
  auto key = static_cast<unsigned>(analysis);
  if (Attribute known = dialect.lookupLayoutAnalysis(key, layout, shapes))
    return known;
  Attribute result = compute();
  dialect.recordLayoutAnalysis(key, layout, shapes, result);
  return result;
}

static bool memoizedBool(Analysis analysis, ViewAttr layout, Attribute shapes,
                         function_ref<bool()> compute) {
  MLIRContext *context = layout.getContext();
  Attribute answer = memoized(analysis, layout, shapes, [&]() -> Attribute {
    return BoolAttr::get(context, compute());
  });
  return cast<BoolAttr>(answer).getValue();
}

//===----------------------------------------------------------------------===//
// Point evaluation
//===----------------------------------------------------------------------===//

DynamicAPInt mlir::harp::evaluate(AffineExpr expr, ArrayRef<int64_t> dims) {
  switch (expr.getKind()) {
  case AffineExprKind::Constant:
    return DynamicAPInt(cast<AffineConstantExpr>(expr).getValue());
  case AffineExprKind::DimId:
    return DynamicAPInt(dims[cast<AffineDimExpr>(expr).getPosition()]);
  case AffineExprKind::SymbolId:
    llvm_unreachable("view layouts have no symbols");
  default:
    break;
  }
  auto bin = cast<AffineBinaryOpExpr>(expr);
  DynamicAPInt lhs = evaluate(bin.getLHS(), dims);
  DynamicAPInt rhs = evaluate(bin.getRHS(), dims);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return lhs + rhs;
  case AffineExprKind::Mul:
    return lhs * rhs;
  case AffineExprKind::FloorDiv:
    return floorDiv(lhs, rhs);
  case AffineExprKind::CeilDiv:
    return ceilDiv(lhs, rhs);
  case AffineExprKind::Mod:
    return mod(lhs, rhs);
  default:
    llvm_unreachable("unexpected affine expression kind");
  }
}

bool mlir::harp::containsPoint(IntegerSet mask, ArrayRef<int64_t> dims) {
  if (!mask)
    return true;
  for (auto [expr, isEq] :
       llvm::zip(mask.getConstraints(), mask.getEqFlags())) {
    DynamicAPInt v = evaluate(expr, dims);
    if (isEq ? v != 0 : v < 0)
      return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Integer constraint systems over the result box
//===----------------------------------------------------------------------===//

/// Appends a variable equal to `expr` (over the first dims of `cst`) and
/// returns its position; floordiv and mod become local variables.
static FailureOr<unsigned> appendExprVar(FlatLinearConstraints &cst,
                                         AffineExpr expr) {
  unsigned pos = cst.appendDimVar();
  AffineMap map = AffineMap::get(cst.getNumDimVars(), 0, expr);
  if (failed(cst.addBound(BoundType::EQ, pos, map)))
    return failure();
  return pos;
}

/// The result box `0 <= d_i < shape[i]`, intersected with `mask` if given.
static FailureOr<FlatLinearConstraints> buildDomain(ArrayRef<int64_t> shape,
                                                    IntegerSet mask) {
  FlatLinearConstraints cst(shape.size());
  for (auto [i, size] : llvm::enumerate(shape)) {
    cst.addBound(BoundType::LB, i, 0);
    cst.addBound(BoundType::UB, i, size - 1);
  }
  if (!mask)
    return cst;
  for (auto [expr, isEq] :
       llvm::zip(mask.getConstraints(), mask.getEqFlags())) {
    FailureOr<unsigned> pos = appendExprVar(cst, expr);
    if (failed(pos))
      return failure();
    cst.addBound(isEq ? BoundType::EQ : BoundType::LB, *pos, 0);
  }
  return cst;
}

/// The lexicographically smallest point of `cst`, restricted to its first
/// `rank` variables, if `cst` has any point. Lexmin keeps witnesses stable
/// and tells the user the first offending index.
static std::optional<SmallVector<int64_t>>
samplePoint(const FlatLinearConstraints &cst, unsigned rank) {
  presburger::MaybeOptimum<SmallVector<DynamicAPInt, 8>> lexMin =
      cst.findIntegerLexMin();
  std::optional<SmallVector<DynamicAPInt, 8>> point;
  if (lexMin.isBounded())
    point = lexMin.getBoundedOptimum();
  else
    point = cst.findIntegerSample();
  if (!point)
    return std::nullopt;
  SmallVector<int64_t> result;
  for (unsigned i = 0; i < rank; ++i)
    result.push_back(static_cast<int64_t>((*point)[i]));
  return result;
}

static FailureOr<std::optional<OutOfBoundsRead>>
searchOutOfBoundsRead(ViewAttr layout, ArrayRef<int64_t> resultShape,
                      ArrayRef<int64_t> sourceShape);

FailureOr<std::optional<OutOfBoundsRead>>
mlir::harp::findOutOfBoundsRead(ViewAttr layout, ArrayRef<int64_t> resultShape,
                                ArrayRef<int64_t> sourceShape) {
  // Only proofs are kept: a view that reads out of bounds fails to verify,
  // and its witness is searched again for the next diagnostic.
  HarpDialect &dialect = dialectOf(layout);
  Attribute shapes = shapesKey(layout.getContext(), resultShape, sourceShape);
  auto key = static_cast<unsigned>(Analysis::InBounds);
  if (dialect.lookupLayoutAnalysis(key, layout, shapes))
    return std::optional<OutOfBoundsRead>();
  FailureOr<std::optional<OutOfBoundsRead>> read =
      searchOutOfBoundsRead(layout, resultShape, sourceShape);
  if (succeeded(read) && !*read)
    dialect.recordLayoutAnalysis(key, layout, shapes,
                                 UnitAttr::get(layout.getContext()));
  return read;
}

static FailureOr<std::optional<OutOfBoundsRead>>
searchOutOfBoundsRead(ViewAttr layout, ArrayRef<int64_t> resultShape,
                      ArrayRef<int64_t> sourceShape) {
  AffineMap map = layout.getMap();
  FailureOr<FlatLinearConstraints> domain =
      buildDomain(resultShape, layout.getMask());
  if (failed(domain))
    return failure();
  if (domain->isIntegerEmpty())
    return std::optional<OutOfBoundsRead>();

  for (auto [dim, expr] : llvm::enumerate(map.getResults())) {
    FlatLinearConstraints reads = *domain;
    FailureOr<unsigned> pos = appendExprVar(reads, expr);
    if (failed(pos))
      return failure();
    for (bool below : {true, false}) {
      FlatLinearConstraints outside = reads;
      if (below)
        outside.addBound(BoundType::UB, *pos, -1);
      else
        outside.addBound(BoundType::LB, *pos, sourceShape[dim]);
      std::optional<SmallVector<int64_t>> point =
          samplePoint(outside, resultShape.size());
      if (!point)
        continue;
      OutOfBoundsRead witness;
      witness.resultIndex = *point;
      witness.sourceDim = dim;
      witness.sourceIndex = evaluate(expr, *point);
      return std::optional<OutOfBoundsRead>(std::move(witness));
    }
  }
  return std::optional<OutOfBoundsRead>();
}

static bool computeMaskExactlyInBounds(ViewAttr layout,
                                       ArrayRef<int64_t> resultShape,
                                       ArrayRef<int64_t> sourceShape);

bool mlir::harp::isMaskExactlyInBounds(ViewAttr layout,
                                       ArrayRef<int64_t> resultShape,
                                       ArrayRef<int64_t> sourceShape) {
  if (!layout.hasMask())
    return false;
  return memoizedBool(
      Analysis::MaskExactlyInBounds, layout,
      shapesKey(layout.getContext(), resultShape, sourceShape), [&] {
        return computeMaskExactlyInBounds(layout, resultShape, sourceShape);
      });
}

static bool computeMaskExactlyInBounds(ViewAttr layout,
                                       ArrayRef<int64_t> resultShape,
                                       ArrayRef<int64_t> sourceShape) {
  // The box points whose reads land inside the source...
  FailureOr<FlatLinearConstraints> inBounds = buildDomain(resultShape, {});
  if (failed(inBounds))
    return false;
  for (auto [dim, expr] : llvm::enumerate(layout.getMap().getResults())) {
    FailureOr<unsigned> pos = appendExprVar(*inBounds, expr);
    if (failed(pos))
      return false;
    inBounds->addBound(BoundType::LB, *pos, 0);
    inBounds->addBound(BoundType::UB, *pos, sourceShape[dim] - 1);
  }
  // ...all satisfy every mask constraint: none violates one.
  IntegerSet mask = layout.getMask();
  for (auto [expr, isEq] :
       llvm::zip(mask.getConstraints(), mask.getEqFlags())) {
    for (bool below : {true, false}) {
      if (!below && !isEq)
        continue;
      FlatLinearConstraints violated = *inBounds;
      FailureOr<unsigned> pos = appendExprVar(violated, expr);
      if (failed(pos))
        return false;
      if (below)
        violated.addBound(BoundType::UB, *pos, -1);
      else
        violated.addBound(BoundType::LB, *pos, 1);
      if (!violated.isIntegerEmpty())
        return false;
    }
  }
  // The converse (masked points read in bounds) is what the verifier checks.
  return true;
}

bool mlir::harp::isMaskAlwaysFalse(ViewAttr layout,
                                   ArrayRef<int64_t> resultShape) {
  if (!layout.hasMask())
    return false;
  return memoizedBool(Analysis::MaskAlwaysFalse, layout,
                      shapesKey(layout.getContext(), resultShape), [&] {
                        FailureOr<FlatLinearConstraints> domain =
                            buildDomain(resultShape, layout.getMask());
                        return succeeded(domain) && domain->isIntegerEmpty();
                      });
}

/// Whether `expr >= 0` (or `expr == 0`) holds on every index of the `shape`
/// box that satisfies `given` (a null set for the whole box).
static bool holdsOn(AffineExpr expr, bool isEq, ArrayRef<int64_t> shape,
                    IntegerSet given) {
  FailureOr<FlatLinearConstraints> domain = buildDomain(shape, given);
  if (failed(domain))
    return false;
  FailureOr<unsigned> pos = appendExprVar(*domain, expr);
  if (failed(pos))
    return false;
  FlatLinearConstraints below = *domain;
  below.addBound(BoundType::UB, *pos, -1);
  if (!below.isIntegerEmpty())
    return false;
  if (!isEq)
    return true;
  FlatLinearConstraints above = *domain;
  above.addBound(BoundType::LB, *pos, 1);
  return above.isIntegerEmpty();
}

bool mlir::harp::mapsAgreeOnBox(AffineMap a, AffineMap b,
                                ArrayRef<int64_t> shape) {
  if (a.getNumResults() != b.getNumResults())
    return false;
  for (auto [ea, eb] : llvm::zip(a.getResults(), b.getResults()))
    if (!holdsOn(ea - eb, /*isEq=*/true, shape, IntegerSet()))
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Range-aware simplification
//===----------------------------------------------------------------------===//

namespace {
/// A closed integer interval, saturated to int64.
struct Interval {
  int64_t lo, hi;
};
} // namespace

static int64_t saturate(__int128 v) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  return v > kMax ? kMax : v < kMin ? kMin : static_cast<int64_t>(v);
}

/// Bounds `expr` given bounds of its dims (interval arithmetic).
static Interval bound(AffineExpr expr, ArrayRef<Interval> dims) {
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return {c.getValue(), c.getValue()};
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return dims[d.getPosition()];
  auto bin = cast<AffineBinaryOpExpr>(expr);
  Interval l = bound(bin.getLHS(), dims);
  auto rhsConst = dyn_cast<AffineConstantExpr>(bin.getRHS());
  switch (expr.getKind()) {
  case AffineExprKind::Add: {
    Interval r = bound(bin.getRHS(), dims);
    return {saturate(__int128(l.lo) + r.lo), saturate(__int128(l.hi) + r.hi)};
  }
  case AffineExprKind::Mul: {
    if (!rhsConst)
      break;
    int64_t k = rhsConst.getValue();
    int64_t a = saturate(__int128(l.lo) * k), b = saturate(__int128(l.hi) * k);
    return {std::min(a, b), std::max(a, b)};
  }
  case AffineExprKind::FloorDiv:
    if (!rhsConst || rhsConst.getValue() <= 0)
      break;
    return {llvm::divideFloorSigned(l.lo, rhsConst.getValue()),
            llvm::divideFloorSigned(l.hi, rhsConst.getValue())};
  case AffineExprKind::CeilDiv:
    if (!rhsConst || rhsConst.getValue() <= 0)
      break;
    return {llvm::divideCeilSigned(l.lo, rhsConst.getValue()),
            llvm::divideCeilSigned(l.hi, rhsConst.getValue())};
  case AffineExprKind::Mod: {
    if (!rhsConst || rhsConst.getValue() <= 0)
      break;
    int64_t c = rhsConst.getValue();
    if (llvm::divideFloorSigned(l.lo, c) == llvm::divideFloorSigned(l.hi, c))
      return {llvm::mod(l.lo, c), llvm::mod(l.hi, c)};
    return {0, c - 1};
  }
  default:
    break;
  }
  return {std::numeric_limits<int64_t>::min(),
          std::numeric_limits<int64_t>::max()};
}

static void collectTerms(AffineExpr expr, SmallVectorImpl<AffineExpr> &terms) {
  if (expr.getKind() == AffineExprKind::Add) {
    auto bin = cast<AffineBinaryOpExpr>(expr);
    collectTerms(bin.getLHS(), terms);
    collectTerms(bin.getRHS(), terms);
    return;
  }
  terms.push_back(expr);
}

/// Rewrites `e floordiv c`, `e ceildiv c` and `e mod c` where `e = c * q + r`
/// with `r` provably in `[0, c)`: the quotient is `q` and the remainder `r`.
static AffineExpr simplifyWithRanges(AffineExpr expr, ArrayRef<Interval> dims) {
  auto bin = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!bin)
    return expr;
  AffineExpr lhs = simplifyWithRanges(bin.getLHS(), dims);
  AffineExpr rhs = simplifyWithRanges(bin.getRHS(), dims);
  AffineExprKind kind = expr.getKind();
  auto rebuild = [&] { return getAffineBinaryOpExpr(kind, lhs, rhs); };
  if (kind == AffineExprKind::Add || kind == AffineExprKind::Mul)
    return rebuild();
  auto divisor = dyn_cast<AffineConstantExpr>(rhs);
  if (!divisor || divisor.getValue() <= 0)
    return rebuild();
  int64_t c = divisor.getValue();

  MLIRContext *ctx = expr.getContext();
  AffineExpr quotient = getAffineConstantExpr(0, ctx);
  AffineExpr remainder = getAffineConstantExpr(0, ctx);
  SmallVector<AffineExpr> terms;
  collectTerms(lhs, terms);
  for (AffineExpr term : terms) {
    if (auto k = dyn_cast<AffineConstantExpr>(term)) {
      quotient = quotient + llvm::divideFloorSigned(k.getValue(), c);
      remainder = remainder + llvm::mod(k.getValue(), c);
      continue;
    }
    if (term.getKind() == AffineExprKind::Mul) {
      auto mul = cast<AffineBinaryOpExpr>(term);
      auto k = dyn_cast<AffineConstantExpr>(mul.getRHS());
      if (k && k.getValue() % c == 0) {
        quotient = quotient + mul.getLHS() * (k.getValue() / c);
        continue;
      }
    }
    remainder = remainder + term;
  }
  Interval r = bound(remainder, dims);
  if (r.lo < 0 || r.hi >= c)
    return rebuild();
  switch (kind) {
  case AffineExprKind::FloorDiv:
    return quotient;
  case AffineExprKind::Mod:
    return remainder;
  case AffineExprKind::CeilDiv:
    return r.hi == 0 ? quotient : rebuild();
  default:
    return rebuild();
  }
}

static ViewAttr computeSimplifiedLayout(ViewAttr layout,
                                        ArrayRef<int64_t> resultShape);

ViewAttr mlir::harp::simplifyLayout(ViewAttr layout,
                                    ArrayRef<int64_t> resultShape) {
  // An empty box has nothing to read; keep the layout as written.
  if (llvm::is_contained(resultShape, 0))
    return layout;
  return cast<ViewAttr>(
      memoized(Analysis::Simplified, layout,
               shapesKey(layout.getContext(), resultShape), [&]() -> Attribute {
                 return computeSimplifiedLayout(layout, resultShape);
               }));
}

static ViewAttr computeSimplifiedLayout(ViewAttr layout,
                                        ArrayRef<int64_t> resultShape) {
  unsigned rank = resultShape.size();
  SmallVector<Interval> dims;
  for (int64_t size : resultShape)
    dims.push_back({0, size - 1});
  // Range rewriting exposes terms that the affine simplifier merges and vice
  // versa; iterate to a fixed point (a few rounds suffice in practice).
  auto simplify = [&](AffineExpr e) {
    for (int round = 0; round < 8; ++round) {
      AffineExpr next =
          simplifyAffineExpr(simplifyWithRanges(e, dims), rank, 0);
      if (next == e)
        break;
      e = next;
    }
    return e;
  };

  AffineMap oldMap = layout.getMap();
  SmallVector<AffineExpr> results =
      llvm::map_to_vector(oldMap.getResults(), simplify);
  AffineMap map = AffineMap::get(rank, 0, results, layout.getContext());

  IntegerSet mask = layout.getMask();
  PadKind padKind = layout.getPadKind();
  Attribute padValue = layout.getPadValue();
  if (mask) {
    SmallVector<AffineExpr> constraints;
    SmallVector<bool> eqFlags;
    for (auto [expr, isEq] :
         llvm::zip(mask.getConstraints(), mask.getEqFlags())) {
      AffineExpr c = simplify(expr);
      bool duplicate = false;
      for (auto [prev, prevEq] : llvm::zip(constraints, eqFlags))
        duplicate |= prev == c && prevEq == isEq;
      if (!duplicate) {
        constraints.push_back(c);
        eqFlags.push_back(isEq);
      }
    }
    // Drop each constraint implied by the box and the constraints still
    // kept. Greedy removal is sound: every dropped constraint follows from
    // the final set, by induction from the last one dropped.
    for (size_t k = 0; k < constraints.size();) {
      SmallVector<AffineExpr> others(constraints);
      SmallVector<bool> otherFlags(eqFlags);
      others.erase(others.begin() + k);
      otherFlags.erase(otherFlags.begin() + k);
      IntegerSet given = others.empty()
                             ? IntegerSet()
                             : IntegerSet::get(rank, 0, others, otherFlags);
      if (holdsOn(constraints[k], eqFlags[k], resultShape, given)) {
        constraints.erase(constraints.begin() + k);
        eqFlags.erase(eqFlags.begin() + k);
      } else {
        ++k;
      }
    }
    if (constraints.empty()) {
      mask = IntegerSet();
      padKind = PadKind::Zero;
      padValue = Attribute();
    } else {
      mask = IntegerSet::get(rank, 0, constraints, eqFlags);
    }
  }
  if (map == oldMap && mask == layout.getMask())
    return layout;
  return ViewAttr::get(layout.getContext(), map, mask, padKind, padValue);
}

ViewAttr mlir::harp::composeLayouts(ViewAttr outer, ViewAttr inner) {
  if (outer.hasMask() && inner.hasMask() &&
      (outer.getPadKind() != inner.getPadKind() ||
       outer.getPadValue() != inner.getPadValue()))
    return ViewAttr();
  AffineMap outerMap = outer.getMap();
  unsigned rank = outerMap.getNumDims();
  AffineMap map = inner.getMap().compose(outerMap);

  SmallVector<AffineExpr> constraints;
  SmallVector<bool> eqFlags;
  if (IntegerSet m = outer.getMask()) {
    llvm::append_range(constraints, m.getConstraints());
    llvm::append_range(eqFlags, m.getEqFlags());
  }
  if (IntegerSet m = inner.getMask()) {
    // The inner mask is over the middle indices: read it through outer's map.
    for (auto [expr, isEq] : llvm::zip(m.getConstraints(), m.getEqFlags())) {
      AffineExpr pulled = expr.replaceDimsAndSymbols(outerMap.getResults(), {});
      constraints.push_back(simplifyAffineExpr(pulled, rank, 0));
      eqFlags.push_back(isEq);
    }
  }
  ViewAttr padFrom = outer.hasMask() ? outer : inner;
  IntegerSet mask = constraints.empty()
                        ? IntegerSet()
                        : IntegerSet::get(rank, 0, constraints, eqFlags);
  return ViewAttr::get(outer.getContext(), map, mask, padFrom.getPadKind(),
                       padFrom.getPadValue());
}
