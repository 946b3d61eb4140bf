//===- ScalarDerivatives.cpp - derivative rules of region scalar ops ------===//
//
// External models of ScalarDerivativeOpInterface for the arith, math and
// complex ops a map_reduce region may use. harp-autodiff differentiates a
// region by running these in reverse over its ops. Complex numbers follow
// PyTorch: z_bar = w_bar * conj(f'(z)) for holomorphic f.
//
//===----------------------------------------------------------------------===//

#include "harp/Dialect/Harp/IR/HarpInterfaces.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/DialectRegistry.h"

#include <cmath>

using namespace mlir;
using namespace mlir::harp;

namespace {
/// Small arithmetic helpers on scalars of the adjoint's type.
struct Ops {
  OpBuilder &b;
  Location loc;

  Value cst(Type type, double v) {
    if (auto complexType = dyn_cast<ComplexType>(type)) {
      Type part = complexType.getElementType();
      return complex::ConstantOp::create(
          b, loc, complexType,
          b.getArrayAttr({b.getFloatAttr(part, v), b.getFloatAttr(part, 0)}));
    }
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v));
  }
  bool isComplex(Value v) { return isa<ComplexType>(v.getType()); }
  Value add(Value x, Value y) {
    return isComplex(x) ? Value(complex::AddOp::create(b, loc, x, y))
                        : Value(arith::AddFOp::create(b, loc, x, y));
  }
  Value sub(Value x, Value y) {
    return isComplex(x) ? Value(complex::SubOp::create(b, loc, x, y))
                        : Value(arith::SubFOp::create(b, loc, x, y));
  }
  Value mul(Value x, Value y) {
    return isComplex(x) ? Value(complex::MulOp::create(b, loc, x, y))
                        : Value(arith::MulFOp::create(b, loc, x, y));
  }
  Value div(Value x, Value y) {
    return isComplex(x) ? Value(complex::DivOp::create(b, loc, x, y))
                        : Value(arith::DivFOp::create(b, loc, x, y));
  }
  Value neg(Value x) {
    return isComplex(x) ? Value(complex::NegOp::create(b, loc, x))
                        : Value(arith::NegFOp::create(b, loc, x));
  }
  Value conj(Value x) {
    return isComplex(x) ? Value(complex::ConjOp::create(b, loc, x)) : x;
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value cmp(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  Value zeroLike(Value x) { return cst(x.getType(), 0.0); }
};

template <typename OpT>
void adjoints(OpT op, Ops &o, Value a, SmallVectorImpl<Value> &out);

//===--- arith ------------------------------------------------------------===//

template <>
void adjoints(arith::AddFOp, Ops &, Value a, SmallVectorImpl<Value> &out) {
  out.assign({a, a});
}
template <>
void adjoints(arith::SubFOp, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  out.assign({a, o.neg(a)});
}
template <>
void adjoints(arith::MulFOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  out.assign({o.mul(a, op.getRhs()), o.mul(a, op.getLhs())});
}
template <>
void adjoints(arith::DivFOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  Value da = o.div(a, op.getRhs());
  out.assign({da, o.neg(o.mul(da, op.getResult()))});
}
template <>
void adjoints(arith::NegFOp, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  out.assign({o.neg(a)});
}
/// max/min: the cotangent goes to the chosen operand; a tie shares it
/// evenly (as torch.maximum/minimum, and as harp's max/min reductions).
template <typename OpT>
static void extremum(OpT op, Ops &o, Value a, SmallVectorImpl<Value> &out,
                     arith::CmpFPredicate firstWins) {
  Value first = o.cmp(firstWins, op.getLhs(), op.getRhs());
  Value tie = o.cmp(arith::CmpFPredicate::OEQ, op.getLhs(), op.getRhs());
  Value zero = o.zeroLike(a);
  Value half = o.mul(a, o.cst(a.getType(), 0.5));
  out.assign({o.select(first, a, o.select(tie, half, zero)),
              o.select(first, zero, o.select(tie, half, a))});
}
template <>
void adjoints(arith::MaximumFOp op, Ops &o, Value a,
              SmallVectorImpl<Value> &out) {
  extremum(op, o, a, out, arith::CmpFPredicate::OGT);
}
template <>
void adjoints(arith::MinimumFOp op, Ops &o, Value a,
              SmallVectorImpl<Value> &out) {
  extremum(op, o, a, out, arith::CmpFPredicate::OLT);
}
template <>
void adjoints(arith::MaxNumFOp op, Ops &o, Value a,
              SmallVectorImpl<Value> &out) {
  extremum(op, o, a, out, arith::CmpFPredicate::OGT);
}
template <>
void adjoints(arith::MinNumFOp op, Ops &o, Value a,
              SmallVectorImpl<Value> &out) {
  extremum(op, o, a, out, arith::CmpFPredicate::OLT);
}
/// fmod: a - trunc(a / b) b, so d/da = 1 and d/db = -trunc(a / b) (the
/// quotient is flat between its jumps).
template <>
void adjoints(arith::RemFOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  Value quotient =
      math::TruncOp::create(o.b, o.loc, o.div(op.getLhs(), op.getRhs()));
  out.assign({a, o.neg(o.mul(a, quotient))});
}
template <>
void adjoints(arith::SelectOp op, Ops &o, Value a,
              SmallVectorImpl<Value> &out) {
  Value zero = o.zeroLike(a);
  out.assign({Value(), o.select(op.getCondition(), a, zero),
              o.select(op.getCondition(), zero, a)});
}
template <>
void adjoints(arith::ExtFOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  out.assign({arith::TruncFOp::create(o.b, o.loc, op.getIn().getType(), a)});
}
template <>
void adjoints(arith::TruncFOp op, Ops &o, Value a,
              SmallVectorImpl<Value> &out) {
  out.assign({arith::ExtFOp::create(o.b, o.loc, op.getIn().getType(), a)});
}
/// Integer-to-float casts: integers have no gradient.
template <>
void adjoints(arith::SIToFPOp, Ops &, Value, SmallVectorImpl<Value> &out) {
  out.assign({Value()});
}
template <>
void adjoints(arith::UIToFPOp, Ops &, Value, SmallVectorImpl<Value> &out) {
  out.assign({Value()});
}

//===--- math -------------------------------------------------------------===//

/// out.assign({a * f'(x)} with f'(x) built by `derivative`.
template <typename OpT, typename Fn>
static void unary(OpT op, Ops &o, Value a, SmallVectorImpl<Value> &out,
                  Fn derivative) {
  out.assign({o.mul(a, derivative(op.getOperand(), op.getResult()))});
}

template <>
void adjoints(math::ExpOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  unary(op, o, a, out, [&](Value, Value f) { return o.conj(f); });
}
template <>
void adjoints(math::Exp2Op op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  unary(op, o, a, out, [&](Value, Value f) {
    return o.mul(f, o.cst(f.getType(), std::log(2.0)));
  });
}
template <>
void adjoints(math::ExpM1Op op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  unary(op, o, a, out,
        [&](Value, Value f) { return o.add(f, o.cst(f.getType(), 1.0)); });
}
template <>
void adjoints(math::LogOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  out.assign({o.div(a, o.conj(op.getOperand()))});
}
template <>
void adjoints(math::Log2Op op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  Value x = op.getOperand();
  out.assign({o.div(a, o.mul(x, o.cst(x.getType(), std::log(2.0))))});
}
template <>
void adjoints(math::Log1pOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  Value x = op.getOperand();
  out.assign({o.div(a, o.add(x, o.cst(x.getType(), 1.0)))});
}
template <>
void adjoints(math::SinOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  unary(op, o, a, out,
        [&](Value x, Value) { return math::CosOp::create(o.b, o.loc, x); });
}
template <>
void adjoints(math::CosOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  unary(op, o, a, out, [&](Value x, Value) {
    return o.neg(math::SinOp::create(o.b, o.loc, x));
  });
}
template <>
void adjoints(math::TanOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  unary(op, o, a, out, [&](Value, Value f) {
    return o.add(o.cst(f.getType(), 1.0), o.mul(f, f));
  });
}
template <>
void adjoints(math::TanhOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  unary(op, o, a, out, [&](Value, Value f) {
    return o.sub(o.cst(f.getType(), 1.0), o.mul(f, f));
  });
}
template <>
void adjoints(math::AtanOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  Value x = op.getOperand();
  out.assign({o.div(a, o.add(o.cst(x.getType(), 1.0), o.mul(x, x)))});
}
template <>
void adjoints(math::SqrtOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  Value f = op.getResult();
  out.assign({o.div(a, o.mul(o.cst(f.getType(), 2.0), f))});
}
template <>
void adjoints(math::RsqrtOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  unary(op, o, a, out, [&](Value, Value f) {
    return o.mul(o.cst(f.getType(), -0.5), o.mul(f, o.mul(f, f)));
  });
}
/// |x|' = sign(x), 0 at 0 (as PyTorch).
template <>
void adjoints(math::AbsFOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  Value x = op.getOperand();
  Value zero = o.zeroLike(x);
  Value pos = o.cmp(arith::CmpFPredicate::OGT, x, zero);
  Value negv = o.cmp(arith::CmpFPredicate::OLT, x, zero);
  out.assign({o.select(pos, a, o.select(negv, o.neg(a), o.zeroLike(a)))});
}
/// x^y: d/dx = y x^(y-1), d/dy = x^y log x; as PyTorch's, d/dx is 0 where
/// y is 0 and d/dy is 0 where x is 0 and y >= 0 (0 * inf would be NaN: the
/// gradient of 0 ** t, or of x ** 0 at x = 0).
template <>
void adjoints(math::PowFOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  Value x = op.getLhs(), y = op.getRhs(), f = op.getResult();
  Value ym1 = o.sub(y, o.cst(y.getType(), 1.0));
  Value dx = o.mul(y, math::PowFOp::create(o.b, o.loc, x, ym1));
  Value dy = o.mul(f, math::LogOp::create(o.b, o.loc, x));
  Value yZero = o.cmp(arith::CmpFPredicate::OEQ, y, o.zeroLike(y));
  Value xZero = o.cmp(arith::CmpFPredicate::OEQ, x, o.zeroLike(x));
  Value yNonNegative = o.cmp(arith::CmpFPredicate::OGE, y, o.zeroLike(y));
  Value baseZero = arith::AndIOp::create(o.b, o.loc, xZero, yNonNegative);
  out.assign({o.select(yZero, o.zeroLike(a), o.mul(a, dx)),
              o.select(baseZero, o.zeroLike(a), o.mul(a, dy))});
}
template <>
void adjoints(math::ErfOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  unary(op, o, a, out, [&](Value x, Value) {
    Value sq = o.neg(o.mul(x, x));
    return o.mul(o.cst(x.getType(), 2.0 / std::sqrt(M_PI)),
                 math::ExpOp::create(o.b, o.loc, sq));
  });
}
template <>
void adjoints(math::ErfcOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  unary(op, o, a, out, [&](Value x, Value) {
    Value sq = o.neg(o.mul(x, x));
    return o.mul(o.cst(x.getType(), -2.0 / std::sqrt(M_PI)),
                 math::ExpOp::create(o.b, o.loc, sq));
  });
}
/// Piecewise-constant functions: zero almost everywhere.
template <typename OpT>
static void flat(OpT, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  out.assign({o.zeroLike(a)});
}
template <>
void adjoints(math::FloorOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  flat(op, o, a, out);
}
template <>
void adjoints(math::CeilOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  flat(op, o, a, out);
}
template <>
void adjoints(math::RoundOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  flat(op, o, a, out);
}
template <>
void adjoints(math::RoundEvenOp op, Ops &o, Value a,
              SmallVectorImpl<Value> &out) {
  flat(op, o, a, out);
}
template <>
void adjoints(math::TruncOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  flat(op, o, a, out);
}

//===--- complex ----------------------------------------------------------===//

template <>
void adjoints(complex::AddOp, Ops &, Value a, SmallVectorImpl<Value> &out) {
  out.assign({a, a});
}
template <>
void adjoints(complex::SubOp, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  out.assign({a, o.neg(a)});
}
template <>
void adjoints(complex::MulOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  out.assign({o.mul(a, o.conj(op.getRhs())), o.mul(a, o.conj(op.getLhs()))});
}
template <>
void adjoints(complex::DivOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  Value da = o.div(a, o.conj(op.getRhs()));
  out.assign({da, o.neg(o.mul(da, o.conj(op.getResult())))});
}
template <>
void adjoints(complex::NegOp, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  out.assign({o.neg(a)});
}
template <>
void adjoints(complex::ConjOp, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  out.assign({o.conj(a)});
}
template <>
void adjoints(complex::ExpOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  out.assign({o.mul(a, o.conj(op.getResult()))});
}
template <>
void adjoints(complex::LogOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  out.assign({o.div(a, o.conj(op.getOperand()))});
}
template <>
void adjoints(complex::SqrtOp op, Ops &o, Value a,
              SmallVectorImpl<Value> &out) {
  Value f = op.getResult();
  out.assign({o.div(a, o.mul(o.cst(f.getType(), 2.0), o.conj(f)))});
}
template <>
void adjoints(complex::SinOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  Value c = complex::CosOp::create(o.b, o.loc, op.getOperand());
  out.assign({o.mul(a, o.conj(c))});
}
template <>
void adjoints(complex::CosOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  Value s = complex::SinOp::create(o.b, o.loc, op.getOperand());
  out.assign({o.neg(o.mul(a, o.conj(s)))});
}
template <>
void adjoints(complex::TanhOp op, Ops &o, Value a,
              SmallVectorImpl<Value> &out) {
  Value f = op.getResult();
  Value d = o.sub(o.cst(f.getType(), 1.0), o.mul(f, f)); // 1 - tanh^2
  out.assign({o.mul(a, o.conj(d))});
}
template <>
void adjoints(complex::TanOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  Value f = op.getResult();
  Value d = o.add(o.cst(f.getType(), 1.0), o.mul(f, f)); // 1 + tan^2
  out.assign({o.mul(a, o.conj(d))});
}
template <>
void adjoints(complex::RsqrtOp op, Ops &o, Value a,
              SmallVectorImpl<Value> &out) {
  Value f = op.getResult();
  Value d = o.mul(o.cst(f.getType(), -0.5), o.mul(f, o.mul(f, f)));
  out.assign({o.mul(a, o.conj(d))});
}
template <>
void adjoints(complex::Expm1Op op, Ops &o, Value a,
              SmallVectorImpl<Value> &out) {
  Value f = op.getResult();
  out.assign({o.mul(a, o.conj(o.add(f, o.cst(f.getType(), 1.0))))});
}
template <>
void adjoints(complex::Log1pOp op, Ops &o, Value a,
              SmallVectorImpl<Value> &out) {
  Value z = op.getOperand();
  out.assign({o.div(a, o.conj(o.add(z, o.cst(z.getType(), 1.0))))});
}
/// z^w: w z^(w-1) for z and z^w log z for w, the latter 0 at z = 0 (as
/// PyTorch, where z^w is 0 or 1 there).
template <>
void adjoints(complex::PowOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  Value z = op.getLhs(), w = op.getRhs(), f = op.getResult();
  Type type = z.getType();
  Value dz = o.mul(
      w, complex::PowOp::create(o.b, o.loc, z, o.sub(w, o.cst(type, 1.0))));
  Value zero = o.zeroLike(z);
  Value atZero = complex::EqualOp::create(o.b, o.loc, z, zero);
  Value dw =
      o.select(atZero, zero, o.mul(f, complex::LogOp::create(o.b, o.loc, z)));
  out.assign({o.mul(a, o.conj(dz)), o.mul(a, o.conj(dw))});
}
/// re/im/abs/angle take a complex to a real: their adjoint is complex again.
template <>
void adjoints(complex::ReOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  out.assign({complex::CreateOp::create(o.b, o.loc, op.getComplex().getType(),
                                        a, o.zeroLike(a))});
}
template <>
void adjoints(complex::ImOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  out.assign({complex::CreateOp::create(o.b, o.loc, op.getComplex().getType(),
                                        o.zeroLike(a), a)});
}
template <>
void adjoints(complex::CreateOp, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  out.assign({Value(complex::ReOp::create(o.b, o.loc, a)),
              Value(complex::ImOp::create(o.b, o.loc, a))});
}
/// |z|: z_bar = a * z / |z| (0 at 0, as PyTorch).
template <>
void adjoints(complex::AbsOp op, Ops &o, Value a, SmallVectorImpl<Value> &out) {
  Value z = op.getComplex(), r = op.getResult();
  Value zero = o.zeroLike(r);
  Value nonzero = o.cmp(arith::CmpFPredicate::ONE, r, zero);
  Value scale = o.select(nonzero, o.div(a, r), zero);
  Value re = o.mul(scale, complex::ReOp::create(o.b, o.loc, z));
  Value im = o.mul(scale, complex::ImOp::create(o.b, o.loc, z));
  out.assign({complex::CreateOp::create(o.b, o.loc, z.getType(), re, im)});
}

/// arg z = atan2(y, x): a (d/dx + i d/dy) = a i z / |z|^2 (0 at 0).
template <>
void adjoints(complex::AngleOp op, Ops &o, Value a,
              SmallVectorImpl<Value> &out) {
  Value z = op.getComplex();
  Value re = complex::ReOp::create(o.b, o.loc, z);
  Value im = complex::ImOp::create(o.b, o.loc, z);
  Value norm2 = o.add(o.mul(re, re), o.mul(im, im));
  Value zero = o.zeroLike(a);
  Value nonzero = o.cmp(arith::CmpFPredicate::ONE, norm2, zero);
  Value scale = o.select(nonzero, o.div(a, norm2), zero);
  out.assign({complex::CreateOp::create(
      o.b, o.loc, z.getType(), o.neg(o.mul(scale, im)), o.mul(scale, re))});
}

template <typename OpT>
struct Model
    : public ScalarDerivativeOpInterface::ExternalModel<Model<OpT>, OpT> {
  void buildAdjoints(Operation *op, OpBuilder &b, Value resultAdjoint,
                     SmallVectorImpl<Value> &operandAdjoints) const {
    Ops o{b, op->getLoc()};
    adjoints(cast<OpT>(op), o, resultAdjoint, operandAdjoints);
  }
};

template <typename... OpTs>
void attach(MLIRContext *ctx) {
  (OpTs::template attachInterface<Model<OpTs>>(*ctx), ...);
}
} // namespace

void mlir::harp::registerScalarDerivativeModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, arith::ArithDialect *) {
    attach<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
           arith::NegFOp, arith::MaximumFOp, arith::MinimumFOp,
           arith::MaxNumFOp, arith::MinNumFOp, arith::RemFOp, arith::SelectOp,
           arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp>(
        ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, math::MathDialect *) {
    attach<math::ExpOp, math::Exp2Op, math::ExpM1Op, math::LogOp, math::Log2Op,
           math::Log1pOp, math::SinOp, math::CosOp, math::TanOp, math::TanhOp,
           math::AtanOp, math::SqrtOp, math::RsqrtOp, math::AbsFOp,
           math::PowFOp, math::ErfOp, math::ErfcOp, math::FloorOp, math::CeilOp,
           math::RoundOp, math::RoundEvenOp, math::TruncOp>(ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, complex::ComplexDialect *) {
    attach<complex::AddOp, complex::SubOp, complex::MulOp, complex::DivOp,
           complex::NegOp, complex::ConjOp, complex::ExpOp, complex::LogOp,
           complex::SqrtOp, complex::SinOp, complex::CosOp, complex::ReOp,
           complex::ImOp, complex::CreateOp, complex::AbsOp, complex::TanhOp,
           complex::TanOp, complex::RsqrtOp, complex::Expm1Op, complex::Log1pOp,
           complex::PowOp, complex::AngleOp>(ctx);
  });
}
