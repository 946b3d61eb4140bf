//===- Elementwise.cpp - element-wise ops of the lazy graph ---------------===//
//
// Casts, binary and unary ops: each is a Map node naming its scalar op; the
// arith/math ops of its body are built by buildMapBody.
//
//===----------------------------------------------------------------------===//

#include "Node.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"

#include <cmath>

using namespace harp;
using namespace harp::detail;
using mlir::Location;
using mlir::OpBuilder;
using mlir::Value;
using mlir::ValueRange;
namespace arith = mlir::arith;
namespace complex = mlir::complex;
namespace math = mlir::math;

static NodePtr mapNode(std::vector<NodePtr> inputs, DType out, MapKind kind) {
  std::vector<int64_t> shape = inputs.front()->shape;
  auto n = make(Kind::Map, std::move(shape), out, std::move(inputs));
  n->mapKind = kind;
  return n;
}

NodePtr harp::detail::mapBinary(BinaryOp op, NodePtr a, NodePtr b, DType out) {
  NodePtr n = mapNode({std::move(a), std::move(b)}, out, MapKind::Binary);
  n->binaryOp = op;
  return n;
}

/// The ops taking a complex number to a real one.
static bool realResult(UnaryOp op) {
  return op == UnaryOp::Abs || op == UnaryOp::Real || op == UnaryOp::Imag ||
         op == UnaryOp::Angle;
}

static NodePtr mapUnary(UnaryOp op, NodePtr a) {
  DType d = op == UnaryOp::IsNan || op == UnaryOp::IsInf ? DType::Bool
            : realResult(op)                             ? realOf(a->dtype)
                                                         : a->dtype;
  NodePtr n = mapNode({std::move(a)}, d, MapKind::Unary);
  n->unaryOp = op;
  return n;
}

NodePtr harp::detail::cast(NodePtr a, DType to) {
  if (a->dtype == to)
    return a;
  return mapNode({std::move(a)}, to, MapKind::Cast);
}

static bool isComparison(BinaryOp op) {
  return op >= BinaryOp::Lt && op <= BinaryOp::Ne;
}

/// Whether `op` is defined on operands of dtype `d`.
static bool binaryDefined(BinaryOp op, DType d) {
  bool f = isFloat(d), b = d == DType::Bool;
  if (isComplex(d))
    return op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul ||
           op == BinaryOp::Div || op == BinaryOp::Pow || op == BinaryOp::Eq ||
           op == BinaryOp::Ne;
  switch (op) {
  case BinaryOp::Add:
  case BinaryOp::Sub:
  case BinaryOp::Mul:
  case BinaryOp::Rem:
  case BinaryOp::Maximum:
  case BinaryOp::Minimum:
    return !b;
  case BinaryOp::Div:
    return f;
  case BinaryOp::Pow: // integers: PyTorch's integer power
    return !b;
  case BinaryOp::Mod:
  case BinaryOp::FloorDiv: // floats: floor(a / b)
    return !b;
  case BinaryOp::Shl:
  case BinaryOp::Shr:
    return !f && !b;
  case BinaryOp::BitAnd:
  case BinaryOp::BitOr:
  case BinaryOp::BitXor:
    return !f;
  case BinaryOp::Complex:
    return f;
  default:
    return isComparison(op);
  }
}

/// z ** n for a constant integer n, |n| <= 4, of complex z, as products:
/// exact where complex.pow's exp(n log z) rounds (z ** 2 of 1 + i is 2i, not
/// 2i - 9e-8), as PyTorch's. Null for other exponents.
static NodePtr smallComplexPower(const NodePtr &z, const NodePtr &n,
                                 DType common,
                                 const std::vector<int64_t> &shape) {
  if (n->kind != Kind::Full || !n->shape.empty() || n->imag != 0 ||
      std::abs(n->value) > 4 || n->value != std::floor(n->value))
    return nullptr;
  NodePtr base = broadcastTo(cast(z, common), shape);
  int count = static_cast<int>(std::abs(n->value));
  auto mul = [&](const NodePtr &x, const NodePtr &y) {
    return mapBinary(BinaryOp::Mul, x, y, common);
  };
  NodePtr power;
  if (count == 0) {
    power = broadcastTo(full(common, {}, 1), shape);
  } else if (count == 4) {
    NodePtr square = mul(base, base);
    power = mul(square, square);
  } else {
    for (power = base; --count > 0;)
      power = mul(power, base);
  }
  return n->value < 0 ? unary(UnaryOp::Recip, power) : power;
}

NodePtr harp::detail::binary(BinaryOp op, NodePtr a, NodePtr b) {
  std::string name = opName(op);
  commonBackend(name, {a, b});
  std::vector<int64_t> shape = broadcastShape(name, {a->shape, b->shape});
  DType common = promote(a->dtype, b->dtype);
  // True division of integers is a float division, as in PyTorch; a power
  // of integers stays an integer power (of bools, a float one).
  if ((op == BinaryOp::Div || (op == BinaryOp::Pow && common == DType::Bool)) &&
      !isFloat(common) && !isComplex(common))
    common = DType::F32;
  if (!binaryDefined(op, common))
    throw Error(
        name + ": not defined for " + dtypeName(a->dtype) + " and " +
        dtypeName(b->dtype) + " operands (shapes " + shapeStr(a->shape) +
        " and " + shapeStr(b->shape) + ")" +
        (op == BinaryOp::Complex ? "; the parts must be float tensors"
         : isComplex(common) && (op == BinaryOp::Maximum ||
                                 op == BinaryOp::Minimum || isComparison(op))
             ? "; complex numbers are unordered"
             : ""));
  if (op == BinaryOp::Pow && isComplex(common))
    if (NodePtr power = smallComplexPower(a, b, common, shape))
      return power;
  a = broadcastTo(cast(a, common), shape);
  b = broadcastTo(cast(b, common), shape);
  if (op == BinaryOp::FloorDiv && isFloat(common))
    return unary(UnaryOp::Floor, mapBinary(BinaryOp::Div, a, b, common));
  DType out = isComparison(op)          ? DType::Bool
              : op == BinaryOp::Complex ? complexOf(common)
                                        : common;
  return mapBinary(op, a, b, out);
}

NodePtr harp::detail::where(NodePtr condition, NodePtr a, NodePtr b) {
  commonBackend("where", {condition, a, b});
  if (condition->dtype != DType::Bool)
    throw Error("where: the condition must be a bool tensor, got " +
                dtypeName(condition->dtype) + " " + shapeStr(condition->shape));
  std::vector<int64_t> shape =
      broadcastShape("where", {condition->shape, a->shape, b->shape});
  DType common = promote(a->dtype, b->dtype);
  std::vector<NodePtr> inputs = {broadcastTo(condition, shape),
                                 broadcastTo(cast(a, common), shape),
                                 broadcastTo(cast(b, common), shape)};
  return mapNode(std::move(inputs), common, MapKind::Select);
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

static void checkFloat(const char *op, const NodePtr &x) {
  if (!isFloat(x->dtype))
    throw Error(std::string(op) + ": needs a float tensor, got " +
                dtypeName(x->dtype) + " " + shapeStr(x->shape));
}

NodePtr harp::detail::gelu(NodePtr x, bool tanh) {
  checkFloat("gelu", x);
  DType d = x->dtype;
  auto c = [&](double v) { return full(d, {}, v); }; // structural
  auto mul = [](NodePtr a, NodePtr b) {
    return binary(BinaryOp::Mul, std::move(a), std::move(b));
  };
  NodePtr inner;
  if (tanh) {
    NodePtr cube = mul(mul(x, x), x);
    inner = unary(UnaryOp::Tanh,
                  mul(c(std::sqrt(2 / M_PI)),
                      binary(BinaryOp::Add, x, mul(c(0.044715), cube))));
  } else {
    inner = unary(UnaryOp::Erf, mul(x, c(M_SQRT1_2)));
  }
  return mul(mul(x, c(0.5)), binary(BinaryOp::Add, c(1), inner));
}

NodePtr harp::detail::silu(NodePtr x) {
  checkFloat("silu", x);
  return binary(BinaryOp::Mul, x, unary(UnaryOp::Sigmoid, x));
}

NodePtr harp::detail::elu(NodePtr x, double alpha) {
  checkFloat("elu", x);
  NodePtr negative =
      binary(BinaryOp::Mul, unary(UnaryOp::Expm1, x), scalar(x->dtype, alpha));
  return where(binary(BinaryOp::Gt, x, full(x->dtype, {}, 0)), x, negative);
}

NodePtr harp::detail::leakyRelu(NodePtr x, double slope) {
  checkFloat("leaky_relu", x);
  return where(binary(BinaryOp::Gt, x, full(x->dtype, {}, 0)), x,
               binary(BinaryOp::Mul, x, scalar(x->dtype, slope)));
}

NodePtr harp::detail::softplus(NodePtr x, double beta, double threshold) {
  checkFloat("softplus", x);
  NodePtr bx = binary(BinaryOp::Mul, x, scalar(x->dtype, beta));
  NodePtr soft =
      binary(BinaryOp::Div, unary(UnaryOp::Log1p, unary(UnaryOp::Exp, bx)),
             scalar(x->dtype, beta));
  return where(binary(BinaryOp::Gt, bx, scalar(x->dtype, threshold)), x, soft);
}

NodePtr harp::detail::clamp(NodePtr x, std::optional<double> min,
                            std::optional<double> max) {
  if (!min && !max)
    throw Error("clamp: give min, max or both");
  if (x->dtype == DType::Bool || isComplex(x->dtype))
    throw Error("clamp: not defined for " + dtypeName(x->dtype) + " " +
                shapeStr(x->shape));
  // Selects, not maximum/minimum: the gradient is 1 at the bounds, as
  // PyTorch's, and a NaN stays NaN.
  if (min) {
    NodePtr lo = scalar(x->dtype, *min);
    x = where(binary(BinaryOp::Lt, x, lo), lo, x);
  }
  if (max) {
    NodePtr hi = scalar(x->dtype, *max);
    x = where(binary(BinaryOp::Gt, x, hi), hi, x);
  }
  return x;
}

/// Whether unary `op` is defined on complex numbers (PyTorch's set; sign is
/// not, as in PyTorch).
static bool complexDefined(UnaryOp op) {
  switch (op) {
  case UnaryOp::Floor:
  case UnaryOp::Ceil:
  case UnaryOp::Round:
  case UnaryOp::Trunc:
  case UnaryOp::Erf:
  case UnaryOp::Erfc:
  case UnaryOp::Atan:
  case UnaryOp::Relu:
  case UnaryOp::Not:
  case UnaryOp::Sign:
    return false;
  default:
    return true;
  }
}

NodePtr harp::detail::unary(UnaryOp op, NodePtr a) {
  DType d = a->dtype;
  std::string name = opName(op);
  if (isComplex(d)) {
    if (!complexDefined(op))
      throw Error(name + ": not defined for complex tensors, got " +
                  dtypeName(d) + " " + shapeStr(a->shape));
    return mapUnary(op, std::move(a));
  }
  switch (op) {
  case UnaryOp::Real:
  case UnaryOp::Conj:
    return a; // a real number is its own real part and conjugate
  case UnaryOp::Imag:
    throw Error("imag: needs a complex tensor, got " + dtypeName(d) + " " +
                shapeStr(a->shape));
  case UnaryOp::Angle:
    if (!isFloat(d))
      return mapUnary(op, cast(std::move(a), DType::F32));
    return mapUnary(op, std::move(a));
  default:
    break;
  }
  if ((op == UnaryOp::IsNan || op == UnaryOp::IsInf) && !isFloat(d))
    return binary(BinaryOp::Ne, a, a); // integers are never NaN or infinite
  switch (op) {
  case UnaryOp::Erf:
  case UnaryOp::Erfc:
  case UnaryOp::Log1p:
  case UnaryOp::Expm1:
  case UnaryOp::Rsqrt:
  case UnaryOp::Tan:
  case UnaryOp::Atan:
  case UnaryOp::Recip:
  case UnaryOp::Sqrt:
  case UnaryOp::Log:
  case UnaryOp::Log2:
  case UnaryOp::Exp:
  case UnaryOp::Exp2:
  case UnaryOp::Sin:
  case UnaryOp::Cos:
  case UnaryOp::Tanh:
  case UnaryOp::Sigmoid:
    // Integers and bools are promoted to the default float type (f32), as
    // PyTorch's floating functions promote them.
    if (!isFloat(d))
      return unary(op, cast(std::move(a), DType::F32));
    break;
  case UnaryOp::Ceil:
  case UnaryOp::Round:
  case UnaryOp::Trunc:
  case UnaryOp::Floor:
    if (d == DType::Bool)
      throw Error(name + ": not defined for bool " + shapeStr(a->shape));
    if (!isFloat(d))
      return a; // an integer is already whole, as in PyTorch
    break;
  case UnaryOp::Not:
    if (isFloat(d))
      throw Error("not: needs a bool or integer tensor, got " + dtypeName(d));
    break;
  case UnaryOp::Abs:
    if (isUnsigned(d))
      return a;
    [[fallthrough]];
  default:
    if (d == DType::Bool)
      throw Error(name + ": not defined for bool " + shapeStr(a->shape));
  }
  return mapUnary(op, std::move(a));
}

//===----------------------------------------------------------------------===//
// Bodies
//===----------------------------------------------------------------------===//

/// `v` as a scalar of dtype `d` (v + 0i for a complex dtype; integers
/// truncate).
static Value constant(OpBuilder &b, Location loc, DType d, double v) {
  mlir::Type type = elementType(b.getContext(), d);
  if (auto complexType = llvm::dyn_cast<mlir::ComplexType>(type)) {
    mlir::Type part = complexType.getElementType();
    return complex::ConstantOp::create(
        b, loc, complexType,
        b.getArrayAttr({b.getFloatAttr(part, v), b.getFloatAttr(part, 0)}));
  }
  if (isFloat(d))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(v)));
}

static Value buildComplexBinary(OpBuilder &b, Location loc, BinaryOp op,
                                DType d, Value x, Value y) {
  switch (op) {
  case BinaryOp::Add:
    return complex::AddOp::create(b, loc, x, y);
  case BinaryOp::Sub:
    return complex::SubOp::create(b, loc, x, y);
  case BinaryOp::Mul:
    return complex::MulOp::create(b, loc, x, y);
  case BinaryOp::Div:
    return complex::DivOp::create(b, loc, x, y);
  case BinaryOp::Pow: {
    // complex.pow is exp(y log x), NaN at x = 0, where x ** y is 1 for
    // y = 0 and 0 for Re(y) > 0, as PyTorch's.
    Value power = complex::PowOp::create(b, loc, x, y);
    Value zero = constant(b, loc, d, 0);
    Value rePositive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                             complex::ReOp::create(b, loc, y),
                                             constant(b, loc, realOf(d), 0));
    Value atZero = arith::SelectOp::create(
        b, loc, complex::EqualOp::create(b, loc, y, zero),
        constant(b, loc, d, 1),
        arith::SelectOp::create(b, loc, rePositive, zero, power));
    return arith::SelectOp::create(
        b, loc, complex::EqualOp::create(b, loc, x, zero), atZero, power);
  }
  case BinaryOp::Eq:
    return complex::EqualOp::create(b, loc, x, y);
  case BinaryOp::Ne:
    return complex::NotEqualOp::create(b, loc, x, y);
  default:
    return Value(); // binary() rejected it
  }
}

/// x ** y on integers, as PyTorch computes it: products that wrap, by
/// binary exponentiation over y's bits as selects (no branch, so it
/// vectorizes, and a constant y folds to its products); for y < 0, 1 at
/// x = 1, +-1 at x = -1 by y's parity, and 0 elsewhere (0 at x = 0 too).
static Value integerPower(OpBuilder &b, Location loc, Value x, Value y,
                          bool isUnsigned) {
  mlir::Type type = x.getType();
  unsigned width = type.getIntOrFloatBitWidth();
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, type, b.getIntegerAttr(type, v));
  };
  Value one = c(1), zero = c(0);
  Value result = one, base = x;
  unsigned bits = isUnsigned ? width : width - 1; // not the sign bit
  for (unsigned i = 0; i < bits; ++i) {
    Value bit = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, y, c(i)), one);
    Value set =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, bit, zero);
    result = arith::SelectOp::create(
        b, loc, set, arith::MulIOp::create(b, loc, result, base), result);
    if (i + 1 < bits)
      base = arith::MulIOp::create(b, loc, base, base);
  }
  if (isUnsigned)
    return result;
  auto equal = [&](Value a, Value v) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a, v);
  };
  Value odd =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                            arith::AndIOp::create(b, loc, y, one), zero);
  Value atMinusOne = arith::SelectOp::create(b, loc, odd, c(-1), one);
  Value inverse = arith::SelectOp::create(
      b, loc, equal(x, one), one,
      arith::SelectOp::create(b, loc, equal(x, c(-1)), atMinusOne, zero));
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, y, zero);
  return arith::SelectOp::create(b, loc, negative, inverse, result);
}

static Value buildBinary(OpBuilder &b, Location loc, BinaryOp op, DType d,
                         Value x, Value y) {
  if (isComplex(d))
    return buildComplexBinary(b, loc, op, d, x, y);
  if (op == BinaryOp::Complex)
    return complex::CreateOp::create(
        b, loc, elementType(b.getContext(), complexOf(d)), x, y);
  bool f = isFloat(d), u = isUnsigned(d) || d == DType::Bool;
  using FP = arith::CmpFPredicate;
  using IP = arith::CmpIPredicate;
  auto cmp = [&](FP fp, IP sp, IP up) -> Value {
    if (f)
      return arith::CmpFOp::create(b, loc, fp, x, y);
    return arith::CmpIOp::create(b, loc, u ? up : sp, x, y);
  };
  switch (op) {
  case BinaryOp::Add:
    return f ? Value(arith::AddFOp::create(b, loc, x, y))
             : Value(arith::AddIOp::create(b, loc, x, y));
  case BinaryOp::Sub:
    return f ? Value(arith::SubFOp::create(b, loc, x, y))
             : Value(arith::SubIOp::create(b, loc, x, y));
  case BinaryOp::Mul:
    return f ? Value(arith::MulFOp::create(b, loc, x, y))
             : Value(arith::MulIOp::create(b, loc, x, y));
  case BinaryOp::Div:
    return arith::DivFOp::create(b, loc, x, y);
  case BinaryOp::FloorDiv:
    return u ? Value(arith::DivUIOp::create(b, loc, x, y))
             : Value(arith::FloorDivSIOp::create(b, loc, x, y));
  case BinaryOp::Rem:
    return f   ? Value(arith::RemFOp::create(b, loc, x, y))
           : u ? Value(arith::RemUIOp::create(b, loc, x, y))
               : Value(arith::RemSIOp::create(b, loc, x, y));
  case BinaryOp::Pow:
    return f ? Value(math::PowFOp::create(b, loc, x, y))
             : integerPower(b, loc, x, y, u);
  case BinaryOp::Maximum:
    return f   ? Value(arith::MaximumFOp::create(b, loc, x, y))
           : u ? Value(arith::MaxUIOp::create(b, loc, x, y))
               : Value(arith::MaxSIOp::create(b, loc, x, y));
  case BinaryOp::Minimum:
    return f   ? Value(arith::MinimumFOp::create(b, loc, x, y))
           : u ? Value(arith::MinUIOp::create(b, loc, x, y))
               : Value(arith::MinSIOp::create(b, loc, x, y));
  case BinaryOp::Lt:
    return cmp(FP::OLT, IP::slt, IP::ult);
  case BinaryOp::Le:
    return cmp(FP::OLE, IP::sle, IP::ule);
  case BinaryOp::Gt:
    return cmp(FP::OGT, IP::sgt, IP::ugt);
  case BinaryOp::Ge:
    return cmp(FP::OGE, IP::sge, IP::uge);
  case BinaryOp::Eq:
    return cmp(FP::OEQ, IP::eq, IP::eq);
  case BinaryOp::Ne:
    return cmp(FP::UNE, IP::ne, IP::ne);
  case BinaryOp::BitAnd:
    return arith::AndIOp::create(b, loc, x, y);
  case BinaryOp::BitOr:
    return arith::OrIOp::create(b, loc, x, y);
  case BinaryOp::BitXor:
    return arith::XOrIOp::create(b, loc, x, y);
  case BinaryOp::Shl:
    return arith::ShLIOp::create(b, loc, x, y);
  case BinaryOp::Shr:
    return u ? Value(arith::ShRUIOp::create(b, loc, x, y))
             : Value(arith::ShRSIOp::create(b, loc, x, y));
  case BinaryOp::Mod: {
    if (u)
      return arith::RemUIOp::create(b, loc, x, y);
    // The remainder, moved by one divisor where its sign differs from the
    // divisor's: floor-mod.
    Value zero = constant(b, loc, d, 0);
    Value r = f ? Value(arith::RemFOp::create(b, loc, x, y))
                : Value(arith::RemSIOp::create(b, loc, x, y));
    auto less = [&](Value v) -> Value {
      return f ? Value(arith::CmpFOp::create(b, loc, FP::OLT, v, zero))
               : Value(arith::CmpIOp::create(b, loc, IP::slt, v, zero));
    };
    Value nonzero = f ? Value(arith::CmpFOp::create(b, loc, FP::ONE, r, zero))
                      : Value(arith::CmpIOp::create(b, loc, IP::ne, r, zero));
    Value fix = arith::AndIOp::create(
        b, loc, nonzero, arith::XOrIOp::create(b, loc, less(r), less(y)));
    Value moved = f ? Value(arith::AddFOp::create(b, loc, r, y))
                    : Value(arith::AddIOp::create(b, loc, r, y));
    return arith::SelectOp::create(b, loc, fix, moved, r);
  }
  case BinaryOp::Complex:
    break; // above
  }
  return Value();
}

static Value buildComplexUnary(OpBuilder &b, Location loc, UnaryOp op, DType d,
                               Value z) {
  auto part = [&](bool imag) -> Value {
    return imag ? Value(complex::ImOp::create(b, loc, z))
                : Value(complex::ReOp::create(b, loc, z));
  };
  auto eitherPart = [&](auto test) -> Value {
    return arith::OrIOp::create(b, loc, test(part(false)), test(part(true)));
  };
  switch (op) {
  case UnaryOp::Neg:
    return complex::NegOp::create(b, loc, z);
  case UnaryOp::Recip:
    return complex::DivOp::create(b, loc, constant(b, loc, d, 1), z);
  case UnaryOp::Sqrt:
    return complex::SqrtOp::create(b, loc, z);
  case UnaryOp::Log:
    return complex::LogOp::create(b, loc, z);
  case UnaryOp::Log2:
    return complex::DivOp::create(b, loc, complex::LogOp::create(b, loc, z),
                                  constant(b, loc, d, M_LN2));
  case UnaryOp::Exp:
    return complex::ExpOp::create(b, loc, z);
  case UnaryOp::Exp2:
    return complex::ExpOp::create(
        b, loc, complex::MulOp::create(b, loc, z, constant(b, loc, d, M_LN2)));
  case UnaryOp::Sin:
    return complex::SinOp::create(b, loc, z);
  case UnaryOp::Cos:
    return complex::CosOp::create(b, loc, z);
  case UnaryOp::Tanh:
    return complex::TanhOp::create(b, loc, z);
  case UnaryOp::Tan:
    return complex::TanOp::create(b, loc, z);
  case UnaryOp::Sigmoid: {
    Value one = constant(b, loc, d, 1);
    Value e = complex::ExpOp::create(b, loc, complex::NegOp::create(b, loc, z));
    return complex::DivOp::create(b, loc, one,
                                  complex::AddOp::create(b, loc, one, e));
  }
  case UnaryOp::Abs:
    return complex::AbsOp::create(b, loc, z);
  case UnaryOp::Log1p:
    return complex::Log1pOp::create(b, loc, z);
  case UnaryOp::Expm1:
    return complex::Expm1Op::create(b, loc, z);
  case UnaryOp::Rsqrt:
    return complex::RsqrtOp::create(b, loc, z);
  case UnaryOp::Square:
    return complex::MulOp::create(b, loc, z, z);
  case UnaryOp::IsNan:
    return eitherPart([&](Value x) -> Value {
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
    });
  case UnaryOp::IsInf:
    return eitherPart([&](Value x) -> Value {
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                   math::AbsFOp::create(b, loc, x),
                                   constant(b, loc, realOf(d), INFINITY));
    });
  case UnaryOp::Real:
    return part(false);
  case UnaryOp::Imag:
    return part(true);
  case UnaryOp::Conj:
    return complex::ConjOp::create(b, loc, z);
  case UnaryOp::Angle:
    return complex::AngleOp::create(b, loc, z);
  default:
    return Value(); // unary() rejected it
  }
}

static Value buildUnary(OpBuilder &b, Location loc, UnaryOp op, DType d,
                        Value x) {
  if (isComplex(d))
    return buildComplexUnary(b, loc, op, d, x);
  bool f = isFloat(d);
  switch (op) {
  case UnaryOp::Neg:
    return f ? Value(arith::NegFOp::create(b, loc, x))
             : Value(arith::SubIOp::create(b, loc, constant(b, loc, d, 0), x));
  case UnaryOp::Recip:
    return arith::DivFOp::create(b, loc, constant(b, loc, d, 1), x);
  case UnaryOp::Sqrt:
    return math::SqrtOp::create(b, loc, x);
  case UnaryOp::Log:
    return math::LogOp::create(b, loc, x);
  case UnaryOp::Log2:
    return math::Log2Op::create(b, loc, x);
  case UnaryOp::Exp:
    return math::ExpOp::create(b, loc, x);
  case UnaryOp::Exp2:
    return math::Exp2Op::create(b, loc, x);
  case UnaryOp::Sin:
    return math::SinOp::create(b, loc, x);
  case UnaryOp::Cos:
    return math::CosOp::create(b, loc, x);
  case UnaryOp::Tanh:
    return math::TanhOp::create(b, loc, x);
  case UnaryOp::Floor:
    return math::FloorOp::create(b, loc, x);
  case UnaryOp::Sigmoid: {
    Value one = constant(b, loc, d, 1);
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    return arith::DivFOp::create(b, loc, one,
                                 arith::AddFOp::create(b, loc, one, e));
  }
  case UnaryOp::Relu: {
    Value zero = constant(b, loc, d, 0);
    // Floats: x where x > 0 or x is NaN, else 0; a select rather than
    // maximumf, whose derivative shares a tie, so the gradient at 0 is 0
    // as torch.relu's.
    if (f)
      return arith::SelectOp::create(
          b, loc,
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UGT, x, zero), x,
          zero);
    return isUnsigned(d) ? Value(arith::MaxUIOp::create(b, loc, x, zero))
                         : Value(arith::MaxSIOp::create(b, loc, x, zero));
  }
  case UnaryOp::Abs:
    return f ? Value(math::AbsFOp::create(b, loc, x))
             : Value(math::AbsIOp::create(b, loc, x));
  case UnaryOp::Not:
    return arith::XOrIOp::create(
        b, loc, x, constant(b, loc, d, d == DType::Bool ? 1 : -1));
  case UnaryOp::Erf:
    return math::ErfOp::create(b, loc, x);
  case UnaryOp::Erfc:
    return math::ErfcOp::create(b, loc, x);
  case UnaryOp::Log1p:
    return math::Log1pOp::create(b, loc, x);
  case UnaryOp::Expm1:
    return math::ExpM1Op::create(b, loc, x);
  case UnaryOp::Rsqrt:
    return math::RsqrtOp::create(b, loc, x);
  case UnaryOp::Tan:
    return math::TanOp::create(b, loc, x);
  case UnaryOp::Atan:
    return math::AtanOp::create(b, loc, x);
  case UnaryOp::Ceil:
    return math::CeilOp::create(b, loc, x);
  case UnaryOp::Round:
    return math::RoundEvenOp::create(b, loc, x);
  case UnaryOp::Trunc:
    return math::TruncOp::create(b, loc, x);
  case UnaryOp::Square:
    return f ? Value(arith::MulFOp::create(b, loc, x, x))
             : Value(arith::MulIOp::create(b, loc, x, x));
  case UnaryOp::Sign: {
    // 1, -1, else x * 0 (zero, or NaN for NaN): a zero gradient.
    using FP = arith::CmpFPredicate;
    using IP = arith::CmpIPredicate;
    Value zero = constant(b, loc, d, 0);
    auto compare = [&](FP fp, IP ip) -> Value {
      return f ? Value(arith::CmpFOp::create(b, loc, fp, x, zero))
               : Value(arith::CmpIOp::create(b, loc, ip, x, zero));
    };
    Value rest = f ? Value(arith::MulFOp::create(b, loc, x, zero)) : zero;
    if (!isUnsigned(d))
      rest = arith::SelectOp::create(b, loc, compare(FP::OLT, IP::slt),
                                     constant(b, loc, d, -1), rest);
    Value positive = compare(FP::OGT, isUnsigned(d) ? IP::ugt : IP::sgt);
    return arith::SelectOp::create(b, loc, positive, constant(b, loc, d, 1),
                                   rest);
  }
  case UnaryOp::IsNan:
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  case UnaryOp::IsInf:
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                 math::AbsFOp::create(b, loc, x),
                                 constant(b, loc, d, INFINITY));
  case UnaryOp::Angle: {
    // pi for negative numbers, NaN for NaN, else 0 (torch.angle).
    using FP = arith::CmpFPredicate;
    Value zero = constant(b, loc, d, 0);
    Value rest = arith::SelectOp::create(
        b, loc, arith::CmpFOp::create(b, loc, FP::UNO, x, x), x, zero);
    return arith::SelectOp::create(
        b, loc, arith::CmpFOp::create(b, loc, FP::OLT, x, zero),
        constant(b, loc, d, M_PI), rest);
  }
  case UnaryOp::Real:
  case UnaryOp::Imag:
  case UnaryOp::Conj:
    break; // unary() keeps real numbers as they are
  }
  return Value();
}

static Value buildCast(OpBuilder &b, Location loc, DType from, DType to,
                       Value x) {
  mlir::Type t = elementType(b.getContext(), to);
  if (isComplex(from) && to == DType::Bool)
    return complex::NotEqualOp::create(b, loc, x, constant(b, loc, from, 0));
  if (isComplex(from) && isComplex(to)) {
    // Part by part.
    DType pf = realOf(from), pt = realOf(to);
    Value re = buildCast(b, loc, pf, pt, complex::ReOp::create(b, loc, x));
    Value im = buildCast(b, loc, pf, pt, complex::ImOp::create(b, loc, x));
    return complex::CreateOp::create(b, loc, t, re, im);
  }
  if (isComplex(from)) // the real part, as PyTorch's casts
    return buildCast(b, loc, realOf(from), to,
                     complex::ReOp::create(b, loc, x));
  if (isComplex(to)) {
    Value re = buildCast(b, loc, from, realOf(to), x);
    return complex::CreateOp::create(b, loc, t, re,
                                     constant(b, loc, realOf(to), 0));
  }
  if (from == to)
    return x;
  if (to == DType::Bool) {
    Value zero = constant(b, loc, from, 0);
    if (isFloat(from))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x, zero);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero);
  }
  bool fromUnsigned = isUnsigned(from) || from == DType::Bool;
  if (isFloat(from) && isFloat(to))
    return widthOf(to) > widthOf(from)
               ? Value(arith::ExtFOp::create(b, loc, t, x))
               : Value(arith::TruncFOp::create(b, loc, t, x));
  if (isFloat(to))
    return fromUnsigned ? Value(arith::UIToFPOp::create(b, loc, t, x))
                        : Value(arith::SIToFPOp::create(b, loc, t, x));
  if (isFloat(from) && !isUnsigned(to))
    return arith::FPToSIOp::create(b, loc, t, x);
  if (isFloat(from)) {
    // A negative float wraps modulo 2^width, as PyTorch's conversion does
    // on x86-64 (through a 64-bit signed integer); LLVM's fptoui of one is
    // poison. Through i64 for the narrower types; for u64, the values of
    // 2^63 and up need fptoui, the negative ones fptosi.
    mlir::Type i64 = b.getI64Type();
    Value wide = arith::FPToSIOp::create(b, loc, i64, x);
    if (widthOf(to) < 64)
      return arith::TruncIOp::create(b, loc, t, wide);
    Value negative = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                           constant(b, loc, from, 0));
    return arith::SelectOp::create(b, loc, negative, wide,
                                   arith::FPToUIOp::create(b, loc, t, x));
  }
  // Signed and unsigned of one width share the signless IR type.
  if (widthOf(to) == widthOf(from))
    return x;
  if (widthOf(to) > widthOf(from))
    return fromUnsigned ? Value(arith::ExtUIOp::create(b, loc, t, x))
                        : Value(arith::ExtSIOp::create(b, loc, t, x));
  return arith::TruncIOp::create(b, loc, t, x);
}

Value harp::detail::buildMapBody(OpBuilder &b, Location loc, const Node &n,
                                 ValueRange args) {
  DType in = n.inputs.front()->dtype;
  switch (n.mapKind) {
  case MapKind::Binary:
    return buildBinary(b, loc, n.binaryOp, in, args[0], args[1]);
  case MapKind::Unary:
    return buildUnary(b, loc, n.unaryOp, in, args[0]);
  case MapKind::Cast:
    return buildCast(b, loc, in, n.dtype, args[0]);
  case MapKind::Select:
    return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
  }
  return Value();
}
