//===- ViewLayout.cpp - analysis of #harp.view layouts --------------------===//

#include "harp/Dialect/Harp/IR/ViewLayout.h"
#include "harp/Dialect/Harp/IR/HarpDialect.h"

#include "mlir/Analysis/FlatLinearValueConstraints.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IntegerSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/MathExtras.h"

#include <limits>
#include <numeric>

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
// Linear forms over the result box (the solver's fast path)
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

namespace {
/// `expr` as `coeffs[0] * d0 + ... + coeffs[rank - 1] * d_{rank-1} +
/// coeffs[rank]`.
using LinearForm = SmallVector<int64_t, 8>;

/// The least and greatest value of a linear form on a non-empty box, with a
/// box point attaining each. Exact: a linear form takes its extremes at
/// corners of the box.
struct Extremes {
  __int128 lo, hi;
  SmallVector<int64_t> argLo, argHi;
};
} // namespace

/// `expr` as a linear form over `rank` dims, or std::nullopt where it is not
/// linear (floordiv, ceildiv, mod, a product of dims) or a coefficient
/// overflows int64.
static std::optional<LinearForm> linearForm(AffineExpr expr, unsigned rank) {
  if (auto c = dyn_cast<AffineConstantExpr>(expr)) {
    LinearForm form(rank + 1, 0);
    form[rank] = c.getValue();
    return form;
  }
  if (auto d = dyn_cast<AffineDimExpr>(expr)) {
    LinearForm form(rank + 1, 0);
    form[d.getPosition()] = 1;
    return form;
  }
  auto bin = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!bin || (expr.getKind() != AffineExprKind::Add &&
               expr.getKind() != AffineExprKind::Mul))
    return std::nullopt;
  std::optional<LinearForm> lhs = linearForm(bin.getLHS(), rank);
  std::optional<LinearForm> rhs = linearForm(bin.getRHS(), rank);
  if (!lhs || !rhs)
    return std::nullopt;
  if (expr.getKind() == AffineExprKind::Add) {
    for (unsigned i = 0; i <= rank; ++i)
      if (__builtin_add_overflow((*lhs)[i], (*rhs)[i], &(*lhs)[i]))
        return std::nullopt;
    return lhs;
  }
  // A product is linear when one side is a constant.
  auto isConstant = [&](const LinearForm &f) {
    return llvm::all_of(ArrayRef(f).drop_back(),
                        [](int64_t c) { return c == 0; });
  };
  if (!isConstant(*rhs)) {
    if (!isConstant(*lhs))
      return std::nullopt;
    std::swap(lhs, rhs);
  }
  int64_t k = (*rhs)[rank];
  for (int64_t &c : *lhs)
    if (__builtin_mul_overflow(c, k, &c))
      return std::nullopt;
  return lhs;
}

/// The extremes of `form` on the box `0 <= d_i < shape[i]` (every size
/// positive), or std::nullopt if they overflow 128 bits.
static std::optional<Extremes> extremesOnBox(const LinearForm &form,
                                             ArrayRef<int64_t> shape) {
  unsigned rank = shape.size();
  Extremes e{form[rank], form[rank], SmallVector<int64_t>(rank, 0),
             SmallVector<int64_t>(rank, 0)};
  for (unsigned i = 0; i < rank; ++i) {
    __int128 span;
    if (__builtin_mul_overflow(__int128(form[i]), __int128(shape[i] - 1),
                               &span))
      return std::nullopt;
    __int128 &grows = span > 0 ? e.hi : e.lo;
    if (__builtin_add_overflow(grows, span, &grows))
      return std::nullopt;
    (span > 0 ? e.argHi : e.argLo)[i] = shape[i] - 1;
  }
  return e;
}

/// Whether `a - b` (sign = -1) or `a + b` (sign = +1) is a constant, and
/// which: then `a = k -+ b`.
static std::optional<int64_t>
constantCombination(const LinearForm &a, const LinearForm &b, int sign) {
  unsigned rank = a.size() - 1;
  for (unsigned i = 0; i < rank; ++i)
    if (__int128(a[i]) + sign * __int128(b[i]) != 0)
      return std::nullopt;
  int64_t k;
  if (sign > 0 ? __builtin_add_overflow(a[rank], b[rank], &k)
               : __builtin_sub_overflow(a[rank], b[rank], &k))
    return std::nullopt;
  return k;
}

namespace {
/// Bounds of an expression on a box (`boundOnBox`), and for a linear one its
/// extremes on the whole box with the corners that attain them.
struct BoxBounds {
  __int128 lo, hi;
  std::optional<Extremes> extremes;
};
} // namespace

/// Bounds of `expr` at the unmasked points of the non-empty `shape` box:
/// exact for a linear expression without a mask, an over-approximation
/// otherwise (intervals; a mask constraint `c >= 0` or `c == 0` with
/// `c = expr - k` or `c = k - expr` bounds it directly).
static BoxBounds boundOnBox(AffineExpr expr, ArrayRef<int64_t> shape,
                            IntegerSet mask) {
  unsigned rank = shape.size();
  std::optional<LinearForm> form = linearForm(expr, rank);
  std::optional<Extremes> extremes;
  if (form)
    extremes = extremesOnBox(*form, shape);
  __int128 lo, hi;
  if (extremes) {
    lo = extremes->lo;
    hi = extremes->hi;
  } else {
    SmallVector<Interval> dims;
    for (int64_t size : shape)
      dims.push_back({0, size - 1});
    // A saturated end is unbounded: past any int64 that it is compared
    // with. (Not numeric_limits<__int128>, which only GNU modes define.)
    constexpr __int128 kUnbounded = __int128(1) << 100;
    Interval box = bound(expr, dims);
    lo = box.lo == std::numeric_limits<int64_t>::min() ? -kUnbounded : box.lo;
    hi = box.hi == std::numeric_limits<int64_t>::max() ? kUnbounded : box.hi;
  }
  if (!mask || !form)
    return {lo, hi, std::move(extremes)};
  for (auto [constraint, isEq] :
       llvm::zip(mask.getConstraints(), mask.getEqFlags())) {
    std::optional<LinearForm> c = linearForm(constraint, rank);
    if (!c)
      continue;
    // c = expr + k >= 0: expr >= -k.
    if (std::optional<int64_t> k = constantCombination(*c, *form, -1)) {
      lo = std::max(lo, -__int128(*k));
      if (isEq)
        hi = std::min(hi, -__int128(*k));
    }
    // c = k - expr >= 0: expr <= k.
    if (std::optional<int64_t> k = constantCombination(*c, *form, +1)) {
      hi = std::min(hi, __int128(*k));
      if (isEq)
        lo = std::max(lo, __int128(*k));
    }
  }
  return {lo, hi, std::move(extremes)};
}

/// Whether every unmasked read of `layout` on the `resultShape` box is
/// provably inside `sourceShape` without the integer solver. False means
/// "not proved", not "out of bounds".
static bool readsProvablyInBounds(ViewAttr layout,
                                  ArrayRef<int64_t> resultShape,
                                  ArrayRef<int64_t> sourceShape) {
  if (llvm::any_of(resultShape, [](int64_t size) { return size <= 0; }))
    return true;
  for (auto [dim, expr] : llvm::enumerate(layout.getMap().getResults())) {
    BoxBounds bounds = boundOnBox(expr, resultShape, layout.getMask());
    if (bounds.lo < 0 || bounds.hi >= sourceShape[dim])
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

namespace {
/// A constraint `expr >= 0`, or `expr == 0` where `isEq`, over box dims.
struct BoxConstraint {
  AffineExpr expr;
  bool isEq;
};
} // namespace

/// `expr` at `point` in int64 arithmetic, or std::nullopt on overflow or a
/// divisor that is not positive.
static std::optional<int64_t> evaluate64(AffineExpr expr,
                                         ArrayRef<int64_t> point) {
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return c.getValue();
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return point[d.getPosition()];
  auto bin = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!bin)
    return std::nullopt;
  std::optional<int64_t> l = evaluate64(bin.getLHS(), point);
  std::optional<int64_t> r = evaluate64(bin.getRHS(), point);
  if (!l || !r)
    return std::nullopt;
  int64_t v;
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    if (__builtin_add_overflow(*l, *r, &v))
      return std::nullopt;
    return v;
  case AffineExprKind::Mul:
    if (__builtin_mul_overflow(*l, *r, &v))
      return std::nullopt;
    return v;
  case AffineExprKind::FloorDiv:
    return *r > 0 ? std::optional(llvm::divideFloorSigned(*l, *r))
                  : std::nullopt;
  case AffineExprKind::CeilDiv:
    return *r > 0 ? std::optional(llvm::divideCeilSigned(*l, *r))
                  : std::nullopt;
  case AffineExprKind::Mod:
    return *r > 0 ? std::optional(llvm::mod(*l, *r)) : std::nullopt;
  default:
    return std::nullopt;
  }
}

/// At most this many constraint evaluations decide a group of constraints
/// by enumerating its box; larger groups go to the integer solver.
static constexpr int64_t kEnumerationBudget = 1 << 14;

/// Whether some point of the `shape` box satisfies every constraint in
/// `group` (over the dims `dims` only), by enumeration; std::nullopt where
/// the box is too large or the arithmetic overflows.
static std::optional<bool> enumerateGroup(ArrayRef<int64_t> shape,
                                          ArrayRef<unsigned> dims,
                                          ArrayRef<BoxConstraint> group) {
  int64_t points = 1, work;
  for (unsigned d : dims)
    if (__builtin_mul_overflow(points, shape[d], &points) ||
        __builtin_mul_overflow(points, int64_t(group.size()), &work) ||
        work > kEnumerationBudget)
      return std::nullopt;
  SmallVector<int64_t> point(shape.size(), 0);
  for (int64_t n = 0; n < points; ++n) {
    bool satisfied = true;
    for (const BoxConstraint &c : group) {
      std::optional<int64_t> v = evaluate64(c.expr, point);
      if (!v)
        return std::nullopt;
      if (c.isEq ? *v != 0 : *v < 0) {
        satisfied = false;
        break;
      }
    }
    if (satisfied)
      return true;
    // The next point, odometer order over `dims`.
    for (unsigned d : llvm::reverse(dims)) {
      if (++point[d] < shape[d])
        break;
      point[d] = 0;
    }
  }
  return false;
}

/// Whether some integer point of the `shape` box satisfies every constraint:
/// exact. The constraints fall into groups that share no dim, each decided
/// on its own: by enumerating its dims' box where that is small (a window,
/// a padding, a reshape of a few dims), by the integer solver over its dims
/// otherwise. Failure where the solver cannot take a constraint.
static FailureOr<bool> feasibleOnBox(ArrayRef<int64_t> shape,
                                     ArrayRef<BoxConstraint> constraints) {
  unsigned rank = shape.size();
  if (llvm::any_of(shape, [](int64_t size) { return size <= 0; }))
    return false;
  // Dims joined by the constraints that read them (union-find).
  SmallVector<unsigned> parent(rank);
  std::iota(parent.begin(), parent.end(), 0u);
  auto find = [&](unsigned d) {
    while (parent[d] != d)
      d = parent[d] = parent[parent[d]];
    return d;
  };
  SmallVector<SmallVector<unsigned, 4>> used(constraints.size());
  for (auto [i, c] : llvm::enumerate(constraints)) {
    llvm::SmallBitVector seen(rank);
    c.expr.walk([&](AffineExpr e) {
      if (auto d = dyn_cast<AffineDimExpr>(e))
        seen.set(d.getPosition());
    });
    for (unsigned d : seen.set_bits()) {
      used[i].push_back(d);
      parent[find(d)] = find(used[i].front());
    }
  }
  llvm::MapVector<unsigned, SmallVector<unsigned>> groups;
  for (auto [i, c] : llvm::enumerate(constraints)) {
    if (used[i].empty()) {
      // A constant constraint.
      std::optional<int64_t> v = evaluate64(c.expr, {});
      if (!v)
        return failure();
      if (c.isEq ? *v != 0 : *v < 0)
        return false;
      continue;
    }
    groups[find(used[i].front())].push_back(i);
  }
  MLIRContext *context =
      constraints.empty() ? nullptr : constraints.front().expr.getContext();
  for (auto &[root, members] : groups) {
    SmallVector<unsigned> dims;
    for (unsigned d = 0; d < rank; ++d)
      if (find(d) == root)
        dims.push_back(d);
    SmallVector<BoxConstraint> group;
    for (unsigned i : members)
      group.push_back(constraints[i]);
    if (std::optional<bool> found = enumerateGroup(shape, dims, group)) {
      if (!*found)
        return false;
      continue;
    }
    // The solver, over this group's dims alone.
    SmallVector<AffineExpr> renamed(rank, getAffineConstantExpr(0, context));
    SmallVector<int64_t> subShape;
    for (auto [k, d] : llvm::enumerate(dims)) {
      renamed[d] = getAffineDimExpr(k, context);
      subShape.push_back(shape[d]);
    }
    SmallVector<AffineExpr> exprs;
    SmallVector<bool> eqFlags;
    for (const BoxConstraint &c : group) {
      exprs.push_back(c.expr.replaceDimsAndSymbols(renamed, {}));
      eqFlags.push_back(c.isEq);
    }
    FailureOr<FlatLinearConstraints> domain =
        buildDomain(subShape, IntegerSet::get(dims.size(), 0, exprs, eqFlags));
    if (failed(domain))
      return failure();
    if (domain->isIntegerEmpty())
      return false;
  }
  return true;
}

/// The constraints of `mask` (none for a null mask).
static SmallVector<BoxConstraint> constraintsOf(IntegerSet mask) {
  SmallVector<BoxConstraint> result;
  if (mask)
    for (auto [expr, isEq] :
         llvm::zip(mask.getConstraints(), mask.getEqFlags()))
      result.push_back({expr, isEq});
  return result;
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
  if (readsProvablyInBounds(layout, resultShape, sourceShape))
    return std::optional<OutOfBoundsRead>();
  // Exactly, without a witness: no unmasked read below 0 or past the end.
  // Only a view that does read out of bounds goes on to the solver's
  // lexicographic search for the first offending index.
  SmallVector<BoxConstraint> reads = constraintsOf(layout.getMask());
  bool inBounds = true;
  for (auto [dim, expr] : llvm::enumerate(layout.getMap().getResults())) {
    for (AffineExpr outside : {-expr - 1, expr - sourceShape[dim]}) {
      reads.push_back({outside, false});
      FailureOr<bool> found = feasibleOnBox(resultShape, reads);
      reads.pop_back();
      inBounds &= succeeded(found) && !*found;
    }
    if (!inBounds)
      break;
  }
  if (inBounds)
    return std::optional<OutOfBoundsRead>();
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
  SmallVector<BoxConstraint> inBounds;
  for (auto [dim, expr] : llvm::enumerate(layout.getMap().getResults())) {
    inBounds.push_back({expr, false});
    inBounds.push_back({sourceShape[dim] - 1 - expr, false});
  }
  // ...all satisfy every mask constraint: none violates one.
  IntegerSet mask = layout.getMask();
  for (auto [expr, isEq] :
       llvm::zip(mask.getConstraints(), mask.getEqFlags())) {
    for (bool below : {true, false}) {
      if (!below && !isEq)
        continue;
      inBounds.push_back({below ? -expr - 1 : expr - 1, false});
      FailureOr<bool> violated = feasibleOnBox(resultShape, inBounds);
      inBounds.pop_back();
      if (failed(violated) || *violated)
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
                        FailureOr<bool> feasible = feasibleOnBox(
                            resultShape, constraintsOf(layout.getMask()));
                        return succeeded(feasible) && !*feasible;
                      });
}

/// Whether `expr >= 0` (or `expr == 0`) holds on every index of the `shape`
/// box that satisfies `given` (a null set for the whole box).
static bool holdsOn(AffineExpr expr, bool isEq, ArrayRef<int64_t> shape,
                    IntegerSet given) {
  if (llvm::any_of(shape, [](int64_t size) { return size <= 0; }))
    return true;
  // The fast path: bounds on the box prove it, or a corner of the box
  // where a linear `expr` takes its extreme refutes it (on the whole box,
  // or where that corner satisfies `given`). The solver decides the rest.
  BoxBounds bounds = boundOnBox(expr, shape, given);
  if (bounds.lo >= 0 && (!isEq || bounds.hi <= 0))
    return true;
  if (const std::optional<Extremes> &e = bounds.extremes) {
    if (e->lo < 0 && containsPoint(given, e->argLo))
      return false;
    if (isEq && e->hi > 0 && containsPoint(given, e->argHi))
      return false;
  }
  SmallVector<BoxConstraint> violated = constraintsOf(given);
  violated.push_back({-expr - 1, false});
  FailureOr<bool> below = feasibleOnBox(shape, violated);
  if (failed(below) || *below)
    return false;
  if (!isEq)
    return true;
  violated.back() = {expr - 1, false};
  FailureOr<bool> above = feasibleOnBox(shape, violated);
  return succeeded(above) && !*above;
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

std::optional<SteppedDim> mlir::harp::steppedDim(AffineExpr expr,
                                                 unsigned numDims) {
  std::optional<unsigned> dim;
  for (unsigned d = 0; d < numDims; ++d) {
    if (!expr.isFunctionOfDim(d))
      continue;
    if (dim)
      return std::nullopt;
    dim = d;
  }
  if (!dim)
    return std::nullopt;
  MLIRContext *ctx = expr.getContext();
  AffineExpr x = getAffineDimExpr(*dim, ctx);
  auto step = dyn_cast<AffineConstantExpr>(
      simplifyAffineExpr(expr.replace(x, x + 1) - expr, numDims, 0));
  auto offset = dyn_cast<AffineConstantExpr>(simplifyAffineExpr(
      expr.replace(x, getAffineConstantExpr(0, ctx)), numDims, 0));
  if (!step || !offset || step.getValue() == 0)
    return std::nullopt;
  // Linear in d: the same step from every point, not a floordiv or mod.
  AffineExpr linear = x * step.getValue() + offset.getValue();
  if (simplifyAffineExpr(expr - linear, numDims, 0) !=
      getAffineConstantExpr(0, ctx))
    return std::nullopt;
  return SteppedDim{*dim, step.getValue(), offset.getValue()};
}
