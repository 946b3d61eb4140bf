//===- MathApproximations.cpp - f32 math functions as polynomials ---------===//
//
// harp's rational tanh and its sin and cos, MLIR's other approximations, and
// the split of their fused multiply-adds for targets without FMA.
//
//===----------------------------------------------------------------------===//

#include "MathApproximations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <type_traits>

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

/// Marks a `math.sin`, `math.cos` or `math.tan` that stays a libm call (the
/// lanes the approximation below does not handle).
constexpr StringLiteral libmCall = "harp.libm";

/// sin(x) and cos(x) on f32. x is reduced to r = x - k pi/2 with
/// k = roundeven(x 2/pi), so |r| <= pi/4:
///
/// * with FMA, r = x - k P1 - k P2 - k P3 by three multiply-adds (P1 + P2 +
///   P3 = pi/2 to 72 bits), the first exact, up to |x| = 2^17;
/// * without, by four multiply-subtracts of pieces of pi/2 of 12 bits each
///   (the last rounded), whose products with k < 2^12 are exact, up to
///   |x| = 4096.
///
/// Then sin(r) = r + r s S(s) and cos(r) = 1 - s/2 + s^2 C(s) with s = r^2
/// and S, C of degree 2 (harp's fit, `scripts/fit-sincos.py`: relative
/// errors 3.8e-9 and 1.2e-10 in exact arithmetic), and the quadrant k mod 4
/// (k + 1 for cos) picks sin(r), cos(r), -sin(r) or -cos(r). tan(x) is
/// sin(r) / cos(r) for even k and -cos(r) / sin(r) for odd k. Lanes beyond
/// the bound, inf and NaN call libm: the vector is computed by the
/// polynomials, and only when one of its lanes is out of bounds, lane by
/// lane by libm as well, those lanes taken from there. A scalar does the
/// same, so remainders round as the vector lanes do.
template <typename TrigOp>
struct ReducedTrig : OpRewritePattern<TrigOp> {
  ReducedTrig(MLIRContext *context, bool fma)
      : OpRewritePattern<TrigOp>(context), fma(fma) {}

  LogicalResult matchAndRewrite(TrigOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32() || op->hasAttr(libmCall))
      return rewriter.notifyMatchFailure(op, "not f32, or kept a libm call");
    constexpr bool cosine = std::is_same_v<TrigOp, math::CosOp>;
    constexpr bool tangent = std::is_same_v<TrigOp, math::TanOp>;
    Location loc = op.getLoc();
    auto constant = [&](float value) {
      return createScalarOrSplatConstant(rewriter, loc, type, APFloat(value));
    };
    auto mul = [&](Value a, Value b) {
      return arith::MulFOp::create(rewriter, loc, a, b).getResult();
    };
    // a * b + c, fused where the target has FMA.
    auto madd = [&](Value a, Value b, Value c) -> Value {
      if (fma)
        return math::FmaOp::create(rewriter, loc, a, b, c);
      return arith::AddFOp::create(rewriter, loc, mul(a, b), c);
    };
    auto horner = [&](Value y, ArrayRef<float> coefficients) {
      Value sum = constant(coefficients.back());
      for (float c : llvm::reverse(coefficients.drop_back()))
        sum = madd(sum, y, constant(c));
      return sum;
    };

    static constexpr float sinCoefficients[] = {-0.166666552f, 0.00833216123f,
                                                -0.000195153843f};
    static constexpr float cosCoefficients[] = {0.0416666456f, -0.00138873165f,
                                                2.4433235e-05f};
    // pi/2 in pieces, each rounded down, so all are positive: with k = +0
    // each step adds -0 and x = -0 stays -0.
    static constexpr float halfPiFma[] = {1.57079625f, 7.54978942e-08f,
                                          5.39030253e-15f};
    static constexpr float halfPiPieces[] = {1.5703125f, 0.000483751297f,
                                             7.54953362e-08f, 2.56334407e-12f};
    float bound = fma ? 131072.0f : 4096.0f;

    Value x = op.getOperand();
    Value magnitude = math::AbsFOp::create(rewriter, loc, x);
    // Out of bounds, or NaN (unordered).
    Value large = arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::UGT, magnitude, constant(bound));
    // The polynomials see 0 in those lanes: no inf or NaN through the
    // reduction, and k stays an i32.
    Value reduced =
        arith::SelectOp::create(rewriter, loc, large, constant(0.0f), x);
    // k + 0 is +0 where k is -0 (x = -0): the products below are then -0,
    // and x - k P keeps x's sign.
    Value k = arith::AddFOp::create(
        rewriter, loc,
        math::RoundEvenOp::create(rewriter, loc,
                                  mul(reduced, constant(0.636619772f))),
        constant(0.0f));
    Value minusK = arith::NegFOp::create(rewriter, loc, k);
    Value r = reduced;
    if (fma) {
      for (float piece : halfPiFma)
        r = madd(minusK, constant(piece), r);
    } else {
      for (float piece : halfPiPieces)
        r = arith::SubFOp::create(rewriter, loc, r, mul(k, constant(piece)));
    }
    Value s = mul(r, r);
    Value sine = madd(mul(r, s), horner(s, sinCoefficients), r);
    Value head = madd(s, constant(-0.5f), constant(1.0f));
    Value cos = madd(mul(s, s), horner(s, cosCoefficients), head);

    Type intType = rewriter.getI32Type();
    if (auto vector = dyn_cast<VectorType>(type))
      intType = vector.clone(intType);
    auto integer = [&](int64_t value) {
      return createScalarOrSplatConstant(rewriter, loc, intType,
                                         APInt(32, value));
    };
    Value quadrant = arith::FPToSIOp::create(rewriter, loc, intType, k);
    if (cosine)
      quadrant = arith::AddIOp::create(rewriter, loc, quadrant, integer(1));
    auto bitSet = [&](int64_t bit) {
      Value masked =
          arith::AndIOp::create(rewriter, loc, quadrant, integer(bit));
      return arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ne,
                                   masked, integer(0));
    };
    Value value;
    if (tangent) {
      Value odd = bitSet(1);
      Value numerator = arith::SelectOp::create(
          rewriter, loc, odd, arith::NegFOp::create(rewriter, loc, cos), sine);
      Value denominator =
          arith::SelectOp::create(rewriter, loc, odd, sine, cos);
      value = arith::DivFOp::create(rewriter, loc, numerator, denominator);
    } else {
      value = arith::SelectOp::create(rewriter, loc, bitSet(1), cos, sine);
      value = arith::SelectOp::create(
          rewriter, loc, bitSet(2), arith::NegFOp::create(rewriter, loc, value),
          value);
    }
    // sin(-0) = tan(-0) = -0, where r + r s S(s) adds +0 to -0.
    if (!cosine) {
      Value zero = arith::CmpFOp::create(
          rewriter, loc, arith::CmpFPredicate::OEQ, x, constant(0.0f));
      value = arith::SelectOp::create(rewriter, loc, zero, x, value);
    }

    // The lanes out of bounds, from libm.
    auto libm = [&](OpBuilder &b, Value operand) {
      Operation *call = TrigOp::create(b, loc, operand);
      call->setAttr(libmCall, b.getUnitAttr());
      return call->getResult(0);
    };
    auto vector = dyn_cast<VectorType>(type);
    Value any = large;
    if (vector) {
      auto flatMask =
          VectorType::get({vector.getNumElements()}, rewriter.getI1Type());
      Value flat = vector::ShapeCastOp::create(rewriter, loc, flatMask, large);
      any = vector::ReductionOp::create(rewriter, loc,
                                        vector::CombiningKind::OR, flat);
    }
    auto branch = scf::IfOp::create(
        rewriter, loc, any,
        [&](OpBuilder &b, Location) {
          if (!vector) {
            scf::YieldOp::create(b, loc, libm(b, x));
            return;
          }
          // Lane by lane, in a loop (the vector of a transpose tile has
          // 256).
          int64_t lanes = vector.getNumElements();
          auto flatType = VectorType::get({lanes}, b.getF32Type());
          Value flat = vector::ShapeCastOp::create(b, loc, flatType, x);
          Value zero = arith::ConstantIndexOp::create(b, loc, 0);
          Value count = arith::ConstantIndexOp::create(b, loc, lanes);
          Value one = arith::ConstantIndexOp::create(b, loc, 1);
          auto loop = scf::ForOp::create(
              b, loc, zero, count, one, ValueRange{flat},
              [&](OpBuilder &lb, Location, Value lane, ValueRange carried) {
                Value element =
                    vector::ExtractOp::create(lb, loc, carried[0], lane);
                Value result = vector::InsertOp::create(
                    lb, loc, libm(lb, element), carried[0], lane);
                scf::YieldOp::create(lb, loc, result);
              });
          Value called =
              vector::ShapeCastOp::create(b, loc, vector, loop.getResult(0));
          scf::YieldOp::create(
              b, loc,
              arith::SelectOp::create(b, loc, large, called, value)
                  .getResult());
        },
        [&](OpBuilder &b, Location) { scf::YieldOp::create(b, loc, value); });
    rewriter.replaceOp(op, branch.getResults());
    return success();
  }

  bool fma;
};

} // namespace

void mlir::harp::cpu::populateMathApproximationPatterns(
    RewritePatternSet &patterns, bool fma) {
  patterns.add<RationalTanh, ReducedTrig<math::SinOp>, ReducedTrig<math::CosOp>,
               ReducedTrig<math::TanOp>>(patterns.getContext(), fma);
  // Not rsqrt (its approximation needs AVX2 intrinsics and is meant for
  // vectors only), nor MLIR's sin and cos (their range reduction loses
  // accuracy for large arguments; harp's above calls libm there).
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
