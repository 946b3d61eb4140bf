//===- ViewLayoutTest.cpp - view-layout analysis --------------------------===//

#include "harp/Dialect/Harp/IR/ViewLayout.h"
#include "harp/Dialect/Harp/IR/HarpDialect.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <random>

using namespace mlir;
using namespace mlir::harp;

namespace {

class ViewLayoutTest : public ::testing::Test {
protected:
  ViewLayoutTest() { ctx.loadDialect<HarpDialect>(); }

  ViewAttr view(unsigned rank, ArrayRef<AffineExpr> results,
                ArrayRef<AffineExpr> maskGe = {}, PadKind pad = PadKind::Zero) {
    AffineMap map = AffineMap::get(rank, 0, results, &ctx);
    IntegerSet mask;
    if (!maskGe.empty())
      mask = IntegerSet::get(rank, 0, maskGe,
                             SmallVector<bool>(maskGe.size(), false));
    return ViewAttr::get(&ctx, map, mask, pad, Attribute());
  }

  MLIRContext ctx;
  AffineExpr d0 = getAffineDimExpr(0, &ctx);
  AffineExpr d1 = getAffineDimExpr(1, &ctx);
};

TEST_F(ViewLayoutTest, EvaluateIsExact) {
  AffineExpr e = (d0 * 6 + d1).floorDiv(4);
  EXPECT_EQ(evaluate(e, {1, 3}), DynamicAPInt(2));
  EXPECT_EQ(evaluate((d0 - 5) % 3, {0, 0}), DynamicAPInt(1));
  EXPECT_EQ(evaluate((d0 - 5).ceilDiv(2), {0, 0}), DynamicAPInt(-2));
  // 2^62 * 4 does not fit int64; the exact value does.
  DynamicAPInt big = evaluate(d0 * (int64_t(1) << 62), {4, 0});
  EXPECT_EQ(big, DynamicAPInt(int64_t(1) << 62) * DynamicAPInt(4));
}

TEST_F(ViewLayoutTest, OutOfBoundsWitnessIsLexMin) {
  // An unfold with stride 2 and window 3 over 10 elements, one window too
  // many: the first bad index is [4, 2].
  auto read = findOutOfBoundsRead(view(2, {d0 * 2 + d1}), {5, 3}, {10});
  ASSERT_TRUE(succeeded(read));
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ((*read)->resultIndex, (SmallVector<int64_t>{4, 2}));
  EXPECT_EQ((*read)->sourceIndex, DynamicAPInt(10));
  // The right number of windows reads in bounds.
  read = findOutOfBoundsRead(view(2, {d0 * 2 + d1}), {4, 3}, {10});
  ASSERT_TRUE(succeeded(read));
  EXPECT_FALSE(read->has_value());
}

TEST_F(ViewLayoutTest, MaskMakesPaddingInBounds) {
  ViewAttr pad = view(1, {d0 - 1}, {d0 - 1, 4 - d0});
  auto read = findOutOfBoundsRead(pad, {6}, {4});
  ASSERT_TRUE(succeeded(read));
  EXPECT_FALSE(read->has_value());
  EXPECT_FALSE(isMaskAlwaysFalse(pad, {6}));
  EXPECT_TRUE(isMaskAlwaysFalse(view(1, {d0}, {d0 - 9}), {6}));
}

TEST_F(ViewLayoutTest, MaskExactlyInBoundsIsAPadding) {
  // A pad of one on each side: the mask is exactly "the read is inside".
  EXPECT_TRUE(
      isMaskExactlyInBounds(view(1, {d0 - 1}, {d0 - 1, 4 - d0}), {6}, {4}));
  // Only the implied constraint kept (the upper one holds on the box).
  EXPECT_TRUE(isMaskExactlyInBounds(view(1, {d0 - 1}, {d0 - 1}), {5}, {4}));
  // A 2-D window over a padded source, as a convolution reads it.
  EXPECT_TRUE(isMaskExactlyInBounds(
      view(2, {d0 + d1 - 1}, {d0 + d1 - 1, 4 - d0 - d1}), {4, 3}, {4}));
  // A causal mask hides elements that are in bounds.
  EXPECT_FALSE(
      isMaskExactlyInBounds(view(2, {d0, d1}, {d0 - d1}), {3, 3}, {3, 3}));
  // A mask hiding in-bounds reads of a padding.
  EXPECT_FALSE(
      isMaskExactlyInBounds(view(1, {d0 - 1}, {d0 - 2, 4 - d0}), {6}, {4}));
  // No mask: nothing to replace.
  EXPECT_FALSE(isMaskExactlyInBounds(view(1, {d0}), {4}, {4}));
}

TEST_F(ViewLayoutTest, ComposeKeepsDifferentPadsApart) {
  ViewAttr zero = view(1, {d0 - 1}, {d0 - 1});
  ViewAttr negInf = view(1, {d0}, {3 - d0}, PadKind::NegInf);
  EXPECT_FALSE(composeLayouts(negInf, zero));
  ViewAttr composed = composeLayouts(view(1, {d0 + 1}), zero);
  ASSERT_TRUE(composed);
  EXPECT_EQ(composed.getMap(), AffineMap::get(1, 0, {d0}, &ctx));
  EXPECT_EQ(composed.getMask().getConstraint(0), d0);
}

TEST_F(ViewLayoutTest, SimplifyReshapeRoundTrip) {
  // (d0 * 6 + d1) floordiv 4 and mod 4 read back through the inverse.
  ViewAttr there = view(2, {(d0 * 6 + d1).floorDiv(4), (d0 * 6 + d1) % 4});
  ViewAttr back = view(2, {(d0 * 4 + d1).floorDiv(6), (d0 * 4 + d1) % 6});
  ViewAttr composed = composeLayouts(back, there);
  ASSERT_TRUE(composed);
  EXPECT_TRUE(simplifyLayout(composed, {3, 4}).isIdentity());
}

TEST_F(ViewLayoutTest, SimplifyDropsImpliedConstraints) {
  ViewAttr layout = view(1, {d0 - 2}, {d0 - 1, d0 - 2, 5 - d0, 6 - d0});
  ViewAttr simplified = simplifyLayout(layout, {8});
  ASSERT_TRUE(simplified.hasMask());
  EXPECT_EQ(simplified.getMask().getNumConstraints(), 2u);
  ViewAttr always =
      simplifyLayout(view(1, {d0}, {d0, 7 - d0}, PadKind::One), {8});
  EXPECT_TRUE(always.isIdentity());
  EXPECT_EQ(always.getPadKind(), PadKind::Zero);
}

//===----------------------------------------------------------------------===//
// The analyses against brute force on random layouts
//===----------------------------------------------------------------------===//

/// Random layouts with masks, over boxes small enough to enumerate and over
/// boxes past the analysis's enumeration budget (its integer solver path):
/// every answer is checked point by point.
class RandomLayoutTest : public ViewLayoutTest {
protected:
  std::mt19937 rng{20261130};

  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }

  AffineExpr randomExpr(unsigned rank, int depth) {
    int64_t pick = uniform(0, depth <= 0 ? 1 : 6);
    switch (pick) {
    case 0:
      return getAffineDimExpr(uniform(0, rank - 1), &ctx);
    case 1:
      return getAffineDimExpr(uniform(0, rank - 1), &ctx) * uniform(-3, 3) +
             uniform(-4, 4);
    case 2:
    case 3:
      return randomExpr(rank, depth - 1) + randomExpr(rank, depth - 1);
    case 4:
      return randomExpr(rank, depth - 1).floorDiv(uniform(1, 4));
    case 5:
      return randomExpr(rank, depth - 1) % uniform(1, 4);
    default:
      return randomExpr(rank, depth - 1).ceilDiv(uniform(1, 4));
    }
  }

  ViewAttr randomView(unsigned rank, unsigned results) {
    SmallVector<AffineExpr> exprs, mask;
    for (unsigned i = 0; i < results; ++i)
      exprs.push_back(randomExpr(rank, 2));
    for (int64_t i = 0, n = uniform(0, 3); i < n; ++i)
      mask.push_back(randomExpr(rank, 2));
    return view(rank, exprs, mask);
  }

  /// Every point of the box, in lexicographic order.
  static SmallVector<SmallVector<int64_t>> points(ArrayRef<int64_t> shape) {
    SmallVector<SmallVector<int64_t>> all;
    SmallVector<int64_t> p(shape.size(), 0);
    while (true) {
      all.push_back(p);
      int i = static_cast<int>(shape.size()) - 1;
      for (; i >= 0; --i) {
        if (++p[i] < shape[i])
          break;
        p[i] = 0;
      }
      if (i < 0)
        return all;
    }
  }

  static int64_t at(AffineExpr e, ArrayRef<int64_t> p) {
    return static_cast<int64_t>(evaluate(e, p));
  }

  /// Checks every analysis of `layout` on `shape` against enumeration.
  void check(ViewAttr layout, ArrayRef<int64_t> shape) {
    std::string trace;
    llvm::raw_string_ostream os(trace);
    os << layout << " on box";
    for (int64_t size : shape)
      os << " " << size;
    SCOPED_TRACE(trace);
    AffineMap map = layout.getMap();
    IntegerSet mask = layout.getMask();
    SmallVector<SmallVector<int64_t>> box = points(shape);
    SmallVector<SmallVector<int64_t>> unmasked;
    for (auto &p : box)
      if (containsPoint(mask, p))
        unmasked.push_back(p);
    EXPECT_EQ(isMaskAlwaysFalse(layout, shape),
              layout.hasMask() && unmasked.empty());

    // A source that some reads leave, chosen around the reads' range.
    SmallVector<int64_t> source;
    for (AffineExpr e : map.getResults()) {
      int64_t hi = 0;
      for (auto &p : unmasked)
        hi = std::max(hi, at(e, p));
      source.push_back(std::max<int64_t>(1, hi + uniform(-1, 1)));
    }
    // The expected witness: the first dim, below before above, and the
    // lexicographically first index there.
    std::optional<std::pair<SmallVector<int64_t>, unsigned>> expected;
    for (auto [dim, e] : llvm::enumerate(map.getResults())) {
      for (bool below : {true, false}) {
        for (auto &p : unmasked) {
          int64_t v = at(e, p);
          if (below ? v < 0 : v >= source[dim]) {
            expected = {p, static_cast<unsigned>(dim)};
            break;
          }
        }
        if (expected)
          break;
      }
      if (expected)
        break;
    }
    auto read = findOutOfBoundsRead(layout, shape, source);
    ASSERT_TRUE(succeeded(read));
    ASSERT_EQ(read->has_value(), expected.has_value());
    if (expected) {
      EXPECT_EQ((*read)->resultIndex, expected->first);
      EXPECT_EQ((*read)->sourceDim, expected->second);
    }

    // Exactly in bounds: the mask holds exactly where every read is inside.
    if (layout.hasMask()) {
      bool exact = true;
      for (auto &p : box) {
        bool inside = true;
        for (auto [dim, e] : llvm::enumerate(map.getResults())) {
          int64_t v = at(e, p);
          inside &= v >= 0 && v < source[dim];
        }
        exact &= !inside || containsPoint(mask, p);
      }
      EXPECT_EQ(isMaskExactlyInBounds(layout, shape, source), exact);
    }

    // Simplification keeps the meaning: the same points masked, the same
    // reads at the others.
    ViewAttr simple = simplifyLayout(layout, shape);
    for (auto &p : box) {
      bool kept = containsPoint(mask, p);
      ASSERT_EQ(containsPoint(simple.getMask(), p), kept);
      if (!kept)
        continue;
      for (auto [a, b] :
           llvm::zip(map.getResults(), simple.getMap().getResults()))
        ASSERT_EQ(at(a, p), at(b, p));
    }

    // Maps agree on the box exactly where every result agrees at every
    // point.
    AffineMap other =
        AffineMap::get(shape.size(), 0, randomExpr(shape.size(), 2), &ctx);
    AffineMap first = AffineMap::get(shape.size(), 0, map.getResult(0), &ctx);
    bool agree = llvm::all_of(box, [&](auto &p) {
      return at(first.getResult(0), p) == at(other.getResult(0), p);
    });
    EXPECT_EQ(mapsAgreeOnBox(first, other, shape), agree);
    EXPECT_TRUE(mapsAgreeOnBox(first, first, shape));
  }
};

TEST_F(RandomLayoutTest, SmallBoxesMatchEnumeration) {
  for (int trial = 0; trial < 300; ++trial) {
    unsigned rank = uniform(1, 3);
    SmallVector<int64_t> shape;
    for (unsigned i = 0; i < rank; ++i)
      shape.push_back(uniform(1, 6));
    check(randomView(rank, uniform(1, 2)), shape);
    if (HasFatalFailure())
      return;
  }
}

TEST_F(RandomLayoutTest, LargeBoxesMatchEnumeration) {
  // Past the enumeration budget: the constraints that join both dims go to
  // the integer solver.
  for (int trial = 0; trial < 25; ++trial) {
    SmallVector<int64_t> shape = {uniform(130, 160), uniform(130, 160)};
    check(randomView(2, 1), shape);
    if (HasFatalFailure())
      return;
  }
}

} // namespace
