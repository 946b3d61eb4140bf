//===- MathApproximations.cpp - f32 math functions as polynomials ---------===//
//
// harp's rational tanh, MLIR's other approximations, and the split of their
// fused multiply-adds for targets without FMA.
//
//===----------------------------------------------------------------------===//

#include "MathApproximations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace {

/// Marks a `math.fma` that was in the function before the approximations.
constexpr StringLiteral keptFma = "harp.kept_fma";

/// tanh(x) on f32 as x P(x^2) / Q(x^2), with P and Q of degree 4 and
/// P(0) = Q(0) = 1, on x clamped to [-8, 8]. The coefficients are harp's
/// own fit of tanh(x) / x over [0, 8] (relative error 6.8e-9 in exact
/// arithmetic, below f32's rounding; docs/Lowering.md gives the error in
/// ulps, and test_math_approximations.py bounds it). Both polynomials
/// run side by side (4 dependent multiply-adds each), and there is no
/// branch for small |x|: with P(0) = Q(0) = 1 a tiny or subnormal x comes
/// out as x itself. 13 x86 vector instructions per vector of results where
/// MLIR's approximation takes 17 with a 6-deep chain of multiply-adds (the
/// GELU chain of 2^24 elements on Zen 4: AVX2 code 9.41 -> 7.40 ms, AVX-512
/// code 6.70 -> 5.93 ms).
/// The clamp selects x where the comparison is unordered, so NaN stays NaN;
/// beyond 8 the result is tanh(8) rounded, at most 2.5 ulps from tanh(x),
/// and it never exceeds 1 in magnitude.
struct RationalTanh : OpRewritePattern<math::TanhOp> {
  RationalTanh(MLIRContext *context, bool fma)
      : OpRewritePattern(context), fma(fma) {}

  LogicalResult matchAndRewrite(math::TanhOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return rewriter.notifyMatchFailure(op, "not f32");
    Location loc = op.getLoc();
    auto constant = [&](float value) {
      return createScalarOrSplatConstant(rewriter, loc, type, APFloat(value));
    };
    auto select = [&](arith::CmpFPredicate predicate, Value x, Value bound) {
      Value keep = arith::CmpFOp::create(rewriter, loc, predicate, x, bound);
      return arith::SelectOp::create(rewriter, loc, keep, x, bound);
    };
    // Horner's rule in y, from the highest coefficient down.
    auto polynomial = [&](Value y, ArrayRef<float> coefficients) {
      Value sum = constant(coefficients.back());
      for (float c : llvm::reverse(coefficients.drop_back())) {
        if (fma) {
          sum = math::FmaOp::create(rewriter, loc, sum, y, constant(c));
        } else {
          Value product = arith::MulFOp::create(rewriter, loc, sum, y);
          sum = arith::AddFOp::create(rewriter, loc, product, constant(c));
        }
      }
      return sum;
    };

    static constexpr float bound = 8.0f;
    static constexpr float p[] = {1.0f, 0.13446787f, 0.00357430428f,
                                  2.19389985e-05f, 1.52923416e-08f};
    static constexpr float q[] = {1.0f, 0.467801154f, 0.0261747669f,
                                  0.00034157047f, 8.547633e-07f};
    Value x =
        select(arith::CmpFPredicate::ULT, op.getOperand(), constant(bound));
    x = select(arith::CmpFPredicate::UGT, x, constant(-bound));
    Value y = arith::MulFOp::create(rewriter, loc, x, x);
    Value numerator = arith::MulFOp::create(rewriter, loc, x, polynomial(y, p));
    rewriter.replaceOpWithNewOp<arith::DivFOp>(op, numerator, polynomial(y, q));
    return success();
  }

  bool fma;
};

} // namespace

void mlir::harp::cpu::populateMathApproximationPatterns(
    RewritePatternSet &patterns, bool fma) {
  patterns.add<RationalTanh>(patterns.getContext(), fma);
  // Not rsqrt (its approximation needs AVX2 intrinsics and is meant for
  // vectors only), nor sin and cos (their range reduction loses accuracy for
  // large arguments): those stay libm calls or LLVM intrinsics.
  populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
    return llvm::is_contained(
        {"math.exp", "math.exp2", "math.expm1", "math.log", "math.log2",
         "math.log1p", "math.erf", "math.erfc", "math.atan", "math.atan2",
         "math.asin", "math.acos", "math.cbrt"},
        name);
  });
}

void mlir::harp::cpu::markExistingFmas(Operation *root) {
  root->walk([](math::FmaOp fma) {
    fma->setAttr(keptFma, UnitAttr::get(fma.getContext()));
  });
}

void mlir::harp::cpu::splitApproximationFmas(Operation *root) {
  SmallVector<Operation *> made;
  root->walk([&](math::FmaOp fma) {
    if (!fma->removeAttr(keptFma))
      made.push_back(fma);
  });
  if (made.empty())
    return;
  // MLIR's expansion of math.fma: arith.mulf + arith.addf.
  RewritePatternSet split(root->getContext());
  math::populateExpansionPatterns(split, {"fma"});
  (void)applyOpPatternsGreedily(made, std::move(split));
}
