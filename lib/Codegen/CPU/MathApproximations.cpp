//===- MathApproximations.cpp - f32 math functions as polynomials ---------===//
//
// MLIR's approximations, and the split of their fused multiply-adds for
// targets without FMA.
//
//===----------------------------------------------------------------------===//

#include "MathApproximations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace {

/// Marks a `math.fma` that was in the function before the approximations.
constexpr StringLiteral keptFma = "harp.kept_fma";

} // namespace

void mlir::harp::cpu::populateMathApproximationPatterns(
    RewritePatternSet &patterns) {
  // Not rsqrt (its approximation needs AVX2 intrinsics and is meant for
  // vectors only), nor sin and cos (their range reduction loses accuracy for
  // large arguments): those stay libm calls or LLVM intrinsics.
  populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
    return llvm::is_contained(
        {"math.tanh", "math.exp", "math.exp2", "math.expm1", "math.log",
         "math.log2", "math.log1p", "math.erf", "math.erfc", "math.atan",
         "math.atan2", "math.asin", "math.acos", "math.cbrt"},
        name);
  });
}

void mlir::harp::cpu::markExistingFmas(Operation *root) {
  root->walk([](math::FmaOp fma) {
    fma->setAttr(keptFma, UnitAttr::get(fma.getContext()));
  });
}

void mlir::harp::cpu::splitApproximationFmas(Operation *root) {
  SmallVector<math::FmaOp> made;
  root->walk([&](math::FmaOp fma) {
    if (!fma->removeAttr(keptFma))
      made.push_back(fma);
  });
  for (math::FmaOp fma : made) {
    OpBuilder builder(fma);
    Location loc = fma.getLoc();
    Value product = arith::MulFOp::create(builder, loc, fma.getA(), fma.getB(),
                                          fma.getFastmathAttr());
    Value sum = arith::AddFOp::create(builder, loc, product, fma.getC(),
                                      fma.getFastmathAttr());
    fma.replaceAllUsesWith(sum);
    fma.erase();
  }
}
