//===- ViewAttrTest.cpp - #harp.view invariants from C++ ------------------===//
//
// The parser rejects these layouts before the attribute verifier sees them;
// C++ builders go straight to the verifier, which must say the same.
//
//===----------------------------------------------------------------------===//

#include "harp/Dialect/Harp/IR/HarpAttrs.h"
#include "harp/Dialect/Harp/IR/HarpDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::harp;

namespace {

class ViewAttrTest : public ::testing::Test {
protected:
  ViewAttrTest() { ctx.loadDialect<HarpDialect>(); }

  /// Builds a layout through the verifier and returns its diagnostic, or ""
  /// if it verified.
  std::string verify(AffineMap map, IntegerSet mask, PadKind kind,
                     Attribute value) {
    std::string message;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      message = diag.str();
      return success();
    });
    ViewAttr attr =
        ViewAttr::getChecked([&] { return emitError(UnknownLoc::get(&ctx)); },
                             &ctx, map, mask, kind, value);
    EXPECT_EQ(static_cast<bool>(attr), message.empty());
    return message;
  }

  MLIRContext ctx;
  Builder b{&ctx};
  AffineExpr d0 = getAffineDimExpr(0, &ctx);
  AffineExpr d1 = getAffineDimExpr(1, &ctx);
  AffineMap identity1 = AffineMap::get(1, 0, {d0}, &ctx);
};

TEST_F(ViewAttrTest, ValidLayoutVerifies) {
  IntegerSet mask = IntegerSet::get(1, 0, {d0 - 1}, {false});
  EXPECT_EQ(verify(identity1, mask, PadKind::NegInf, {}), "");
  EXPECT_EQ(verify(identity1, mask, PadKind::Value, b.getF64FloatAttr(0.5)),
            "");
}

TEST_F(ViewAttrTest, NullMap) {
  EXPECT_EQ(verify(AffineMap(), {}, PadKind::Zero, {}),
            "view needs an affine map");
}

TEST_F(ViewAttrTest, ProductOfIndices) {
  AffineMap map = AffineMap::get(2, 0, {d0 * d1}, &ctx);
  EXPECT_EQ(verify(map, {}, PadKind::Zero, {}),
            "view map multiplies two indices in 'd0 * d1'; views are affine");
}

TEST_F(ViewAttrTest, MaskSymbols) {
  IntegerSet mask =
      IntegerSet::get(1, 1, {d0 + getAffineSymbolExpr(0, &ctx)}, {false});
  EXPECT_EQ(verify(identity1, mask, PadKind::Zero, {}),
            "view mask must not have symbols, found 1");
}

TEST_F(ViewAttrTest, MaskArity) {
  IntegerSet mask = IntegerSet::get(2, 0, {d1}, {false});
  EXPECT_EQ(verify(identity1, mask, PadKind::Zero, {}),
            "view mask has 2 dims but the map has 1; both range over the "
            "result indices");
}

TEST_F(ViewAttrTest, PadValueWithoutValueKind) {
  IntegerSet mask = IntegerSet::get(1, 0, {d0}, {false});
  EXPECT_EQ(verify(identity1, mask, PadKind::One, b.getI64IntegerAttr(3)),
            "a constant pad needs a value, and only it");
  EXPECT_EQ(verify(identity1, mask, PadKind::Value, {}),
            "a constant pad needs a value, and only it");
}

TEST_F(ViewAttrTest, PadValueNotANumber) {
  IntegerSet mask = IntegerSet::get(1, 0, {d0}, {false});
  EXPECT_EQ(verify(identity1, mask, PadKind::Value, b.getStringAttr("x")),
            "pad value must be an integer or float literal");
}

TEST_F(ViewAttrTest, PadAttrPerElementType) {
  IntegerSet mask = IntegerSet::get(1, 0, {d0}, {false});
  auto layout = [&](PadKind kind, Attribute value = {}) {
    return ViewAttr::get(&ctx, identity1, mask, kind, value);
  };
  // -inf is the signed minimum for integers and false for i1.
  auto i8Min = dyn_cast<IntegerAttr>(
      layout(PadKind::NegInf).getPadAttr(b.getIntegerType(8)));
  ASSERT_TRUE(i8Min);
  EXPECT_EQ(i8Min.getValue().getSExtValue(), -128);
  auto i1Max =
      dyn_cast<IntegerAttr>(layout(PadKind::PosInf).getPadAttr(b.getI1Type()));
  ASSERT_TRUE(i1Max);
  EXPECT_TRUE(i1Max.getValue().isOne());
  // 255 fits i8 read as unsigned; 256 does not.
  EXPECT_TRUE(layout(PadKind::Value, b.getI64IntegerAttr(255))
                  .getPadAttr(b.getIntegerType(8)));
  EXPECT_FALSE(layout(PadKind::Value, b.getI64IntegerAttr(256))
                   .getPadAttr(b.getIntegerType(8)));
  auto f16Inf =
      dyn_cast<FloatAttr>(layout(PadKind::NegInf).getPadAttr(b.getF16Type()));
  ASSERT_TRUE(f16Inf);
  EXPECT_TRUE(f16Inf.getValue().isInfinity());
  EXPECT_TRUE(f16Inf.getValue().isNegative());
  EXPECT_FALSE(
      layout(PadKind::NegInf).getPadAttr(ComplexType::get(b.getF32Type())));
}

} // namespace
