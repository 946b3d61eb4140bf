//===- HarpBuildersTest.cpp - shared layouts and the gradient wrapper -----===//
//
// Each layout is checked by evaluating it on every index of a small box
// against the index arithmetic it stands for, and by the verifier's own
// bounds analysis.
//
//===----------------------------------------------------------------------===//

#include "harp/Dialect/Harp/IR/HarpBuilders.h"
#include "harp/Dialect/Harp/IR/HarpDialect.h"
#include "harp/Dialect/Harp/IR/HarpOps.h"
#include "harp/Dialect/Harp/IR/ViewLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::harp;

namespace {

class HarpBuildersTest : public ::testing::Test {
protected:
  HarpBuildersTest() {
    ctx.loadDialect<HarpDialect, func::FuncDialect, arith::ArithDialect>();
  }

  /// Source index `layout` reads at result index `at`.
  static SmallVector<int64_t> read(ViewAttr layout, ArrayRef<int64_t> at) {
    SmallVector<int64_t> out;
    for (AffineExpr e : layout.getMap().getResults())
      out.push_back(int64_t(evaluate(e, at)));
    return out;
  }

  /// Every index of `shape`, row-major.
  static std::vector<SmallVector<int64_t>> box(ArrayRef<int64_t> shape) {
    std::vector<SmallVector<int64_t>> all;
    int64_t count = 1;
    for (int64_t s : shape)
      count *= s;
    for (int64_t linear = 0; linear < count; ++linear) {
      SmallVector<int64_t> index(shape.size());
      int64_t rest = linear;
      for (int i = int(shape.size()) - 1; i >= 0; --i) {
        index[i] = rest % shape[i];
        rest /= shape[i];
      }
      all.push_back(index);
    }
    return all;
  }

  MLIRContext ctx;
};

TEST_F(HarpBuildersTest, ReshapeIsRowMajor) {
  ViewAttr layout = reshapeLayout(&ctx, {4, 6}, {2, 3, 4});
  for (const auto &i : box({2, 3, 4})) {
    int64_t linear = (i[0] * 3 + i[1]) * 4 + i[2];
    EXPECT_EQ(read(layout, i), (SmallVector<int64_t>{linear / 6, linear % 6}));
  }
  // A box with a zero-size dim builds (no division by zero).
  ViewAttr empty = reshapeLayout(&ctx, {0, 4, 16}, {0, 64});
  EXPECT_EQ(empty.getSourceRank(), 3u);
  EXPECT_EQ(empty.getResultRank(), 2u);
}

TEST_F(HarpBuildersTest, BroadcastPermuteSliceFlip) {
  ViewAttr b = broadcastLayout(&ctx, {3, 1}, {2, 3, 5});
  EXPECT_EQ(read(b, {1, 2, 4}), (SmallVector<int64_t>{2, 0}));
  ViewAttr p = permuteLayout(&ctx, {2, 0, 1}); // result dim k = source perm[k]
  EXPECT_EQ(read(p, {7, 8, 9}), (SmallVector<int64_t>{8, 9, 7}));
  ViewAttr s = sliceLayout(&ctx, 2, 1, 3, 2);
  EXPECT_EQ(read(s, {1, 4}), (SmallVector<int64_t>{1, 11}));
  ViewAttr f = flipLayout(&ctx, {4, 5}, {false, true});
  EXPECT_EQ(read(f, {2, 0}), (SmallVector<int64_t>{2, 4}));
}

TEST_F(HarpBuildersTest, PadKindsAndBounds) {
  Builder b(&ctx);
  ViewAttr zero = padLayout(&ctx, {4}, {1}, {2}, b.getF64FloatAttr(0.0));
  EXPECT_EQ(zero.getPadKind(), PadKind::Zero);
  EXPECT_TRUE(isMaskExactlyInBounds(zero, {7}, {4}));
  EXPECT_EQ(padLayout(&ctx, {4}, {1}, {0}, b.getF64FloatAttr(1.0)).getPadKind(),
            PadKind::One);
  EXPECT_EQ(
      padLayout(&ctx, {4}, {1}, {0}, b.getF64FloatAttr(-INFINITY)).getPadKind(),
      PadKind::NegInf);
  ViewAttr value = padLayout(&ctx, {4}, {0}, {1}, b.getI64IntegerAttr(7));
  EXPECT_EQ(value.getPadKind(), PadKind::Value);
  EXPECT_EQ(cast<IntegerAttr>(value.getPadValue()).getInt(), 7);
  // No padding: no mask.
  EXPECT_FALSE(
      padLayout(&ctx, {4}, {0}, {0}, b.getF64FloatAttr(2.0)).hasMask());
}

TEST_F(HarpBuildersTest, WindowsAndTheirAdjointAgree) {
  // 1-D: 9 elements, kernel 3, stride 2, dilation 1: 4 windows.
  ViewAttr windows = windowLayout(&ctx, 1, {2}, {1});
  auto oob = findOutOfBoundsRead(windows, {4, 3}, {9});
  ASSERT_TRUE(succeeded(oob));
  EXPECT_FALSE(oob->has_value());
  // fold reads window w at position s when s = w * 2 + k: exactly the
  // (position, k) pairs that unfold wrote.
  ViewAttr fold = foldLayout(&ctx, 0, {4}, {2}, {1});
  for (const auto &i : box({9, 3})) {
    int64_t s = i[0], k = i[1];
    bool written = (s - k) >= 0 && (s - k) % 2 == 0 && (s - k) / 2 < 4;
    EXPECT_EQ(containsPoint(fold.getMask(), i), written) << s << "," << k;
    if (written) {
      EXPECT_EQ(read(fold, i)[0], (s - k) / 2);
    }
  }
}

TEST_F(HarpBuildersTest, MapReduceBodyAndGradientFunction) {
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto type = RankedTensorType::get({4}, b.getF32Type());
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  auto f = func::FuncOp::create(b, loc, "loss",
                                b.getFunctionType({type, type}, scalar));
  f.setPrivate();
  {
    OpBuilder::InsertionGuard guard(b);
    Block *entry = f.addEntryBlock();
    b.setInsertionPointToStart(entry);
    auto product = MapReduceOp::create(
        b, loc, scalar, entry->getArguments(),
        [](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
          return arith::MulFOp::create(nb, nloc, args[0], args[1]);
        },
        ReductionKind::Sum, ArrayRef<int64_t>{0});
    func::ReturnOp::create(b, loc, product.getResult());
  }
  func::FuncOp grad = buildGradientFunction(b, loc, "main", f, {1}, false);
  ASSERT_TRUE(succeeded(verify(*module)));
  EXPECT_EQ(grad.getFunctionType().getNumInputs(), 2u);
  EXPECT_EQ(SmallVector<Type>(grad.getFunctionType().getResults()),
            (SmallVector<Type>{scalar, type}));
  func::FuncOp seeded =
      buildGradientFunction(b, loc, "seeded", f, {0, 1}, true);
  ASSERT_TRUE(succeeded(verify(*module)));
  EXPECT_EQ(seeded.getFunctionType().getNumInputs(), 3u);
  EXPECT_EQ(seeded.getFunctionType().getNumResults(), 3u);
}

} // namespace
