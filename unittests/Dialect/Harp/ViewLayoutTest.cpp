//===- ViewLayoutTest.cpp - view-layout analysis --------------------------===//

#include "harp/Dialect/Harp/IR/ViewLayout.h"
#include "harp/Dialect/Harp/IR/HarpDialect.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

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

} // namespace
