//===- Reductions.cpp - reductions and contractions of the lazy graph -----===//
//
// Reductions are Reduce nodes (a map_reduce yielding its operand); matmul
// and convolution are a multiply over broadcast views followed by a sum,
// which harp's code generation recognises as contractions.
//
//===----------------------------------------------------------------------===//

#include "Node.h"

#include "harp/Dialect/Harp/IR/HarpBuilders.h"

#include <algorithm>
#include <cmath>

using namespace harp;
using namespace harp::detail;
namespace mh = mlir::harp;

/// `axes` normalized and sorted (empty: all dims); a repeated axis is an
/// error naming `op`.
static std::vector<int64_t> axesOf(const std::string &op,
                                   std::vector<int64_t> axes, size_t rank) {
  // A 0-d tensor's dim 0 (or -1), as PyTorch lends it: reducing over it
  // reduces over nothing.
  if (rank == 0) {
    for (int64_t axis : axes)
      isScalarAxis(op, axis, rank);
    return {};
  }
  if (axes.empty())
    for (size_t i = 0; i < rank; ++i)
      axes.push_back(i);
  for (int64_t &axis : axes)
    axis = normalizeAxis(op, axis, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    throw Error(op + ": repeated axis in " + shapeStr(axes));
  return axes;
}

NodePtr harp::detail::reduce(ReduceOp kind, NodePtr a,
                             std::vector<int64_t> axes, bool keepdim) {
  std::string name = opName(kind);
  size_t rank = a->shape.size();
  axes = axesOf(name, std::move(axes), rank);
  DType d = a->dtype;
  if (kind == ReduceOp::Mean) {
    if (!isFloat(d) && !isComplex(d))
      throw Error("mean: needs a float or complex tensor, got " + dtypeName(d));
    int64_t count = 1;
    for (int64_t axis : axes)
      count *= a->shape[axis];
    NodePtr sum = reduce(ReduceOp::Sum, a, axes, keepdim);
    // The count follows from the shape: a constant of the code.
    return binary(BinaryOp::Mul, sum,
                  full(d, {}, count ? 1.0 / static_cast<double>(count) : NAN));
  }
  // A sum or product of bools counts in int64, as PyTorch's does.
  if ((kind == ReduceOp::Sum || kind == ReduceOp::Prod) && d == DType::Bool)
    return reduce(kind, cast(a, DType::I64), std::move(axes), keepdim);
  if ((kind == ReduceOp::Max || kind == ReduceOp::Min) && isComplex(d))
    throw Error(name + ": not defined for complex tensors (" + dtypeName(d) +
                " " + shapeStr(a->shape) + "): they are unordered");
  mh::ReductionKind irKind = mh::ReductionKind::Sum;
  switch (kind) {
  case ReduceOp::Sum:
    irKind = mh::ReductionKind::Sum;
    break;
  case ReduceOp::Prod:
    irKind = mh::ReductionKind::Prod;
    break;
  case ReduceOp::Max:
    irKind = isUnsigned(d) ? mh::ReductionKind::UMax : mh::ReductionKind::Max;
    break;
  case ReduceOp::Min:
    irKind = isUnsigned(d) ? mh::ReductionKind::UMin : mh::ReductionKind::Min;
    break;
  case ReduceOp::Mean:
    break;
  }
  if (rank == 0)
    return a;
  std::vector<int64_t> shape;
  for (size_t i = 0; i < rank; ++i) {
    bool reduced = std::count(axes.begin(), axes.end(), int64_t(i));
    if (!reduced)
      shape.push_back(a->shape[i]);
    else if (keepdim)
      shape.push_back(1);
  }
  auto n = make(Kind::Reduce, shape, d, {a});
  n->reduceKind = irKind;
  n->dims = axes;
  n->keepdim = keepdim;
  return n;
}

NodePtr harp::detail::softmax(NodePtr a, int64_t axis) {
  if (!isFloat(a->dtype))
    throw Error("softmax: needs a float tensor, got " + dtypeName(a->dtype));
  if (isScalarAxis("softmax", axis, a->shape.size()))
    return onScalarAsVector(a, [](NodePtr v) { return softmax(v, 0); });
  axis = normalizeAxis("softmax", axis, a->shape.size());
  NodePtr m = reduce(ReduceOp::Max, a, {axis}, true);
  NodePtr e = unary(UnaryOp::Exp, binary(BinaryOp::Sub, a, m));
  // One division per row, then products: dividing every element made a
  // 512 x 768 softmax 10-14% slower (vdivps issues once per 5 cycles on
  // AMD Zen 4, a product twice per cycle). The result is within an ulp or
  // two of e / sum, as PyTorch's CPU kernel (which also scales by the
  // reciprocal).
  NodePtr sum = reduce(ReduceOp::Sum, e, {axis}, true);
  return binary(BinaryOp::Mul, e, unary(UnaryOp::Recip, sum));
}

NodePtr harp::detail::matmul(NodePtr a, NodePtr b) {
  commonBackend("matmul", {a, b});
  size_t ra = a->shape.size(), rb = b->shape.size();
  if (ra < 2 || rb < 2)
    throw Error("matmul: operands need rank >= 2, got " + shapeStr(a->shape) +
                " and " + shapeStr(b->shape) + "; unsqueeze vectors first");
  int64_t m = a->shape[ra - 2], k = a->shape[ra - 1];
  int64_t k2 = b->shape[rb - 2], n = b->shape[rb - 1];
  if (k != k2)
    throw Error("matmul: inner dims differ: " + shapeStr(a->shape) + " @ " +
                shapeStr(b->shape));
  std::vector<int64_t> batchA(a->shape.begin(), a->shape.end() - 2);
  std::vector<int64_t> batchB(b->shape.begin(), b->shape.end() - 2);
  std::vector<int64_t> batch = broadcastShape("matmul", {batchA, batchB});
  DType d = promote(a->dtype, b->dtype);
  if (d == DType::Bool)
    throw Error("matmul: not defined for bool");
  a = cast(a, d);
  b = cast(b, d);
  // Domain (batch..., m, n, k).
  size_t nb = batch.size(), rank = nb + 3;
  std::vector<int64_t> domain(batch);
  domain.insert(domain.end(), {m, n, k});
  auto operand = [&](NodePtr x, const std::vector<int64_t> &xb, bool left) {
    ContextLock lock;
    llvm::SmallVector<mlir::AffineExpr> exprs;
    size_t off = nb - xb.size();
    for (size_t i = 0; i < xb.size(); ++i)
      exprs.push_back(xb[i] == 1 && batch[off + i] != 1
                          ? mlir::getAffineConstantExpr(0, context())
                          : dimExpr(off + i));
    if (left)
      exprs.append({dimExpr(nb), dimExpr(nb + 2)});
    else
      exprs.append({dimExpr(nb + 2), dimExpr(nb + 1)});
    return view(x, domain, mh::indexLayout(context(), rank, exprs));
  };
  NodePtr prod = mapBinary(BinaryOp::Mul, operand(a, batchA, true),
                           operand(b, batchB, false), d);
  return reduce(ReduceOp::Sum, prod, {static_cast<int64_t>(rank - 1)}, false);
}

NodePtr harp::detail::conv(NodePtr x, NodePtr w, std::vector<int64_t> stride,
                           std::vector<int64_t> padding,
                           std::vector<int64_t> dilation) {
  commonBackend("conv", {x, w});
  size_t rx = x->shape.size(), rw = w->shape.size();
  if (rx < 3 || rx > 5 || rw != rx)
    throw Error("conv: input [N, C, spatial...] and weight [F, C, kernel...] "
                "must both have rank 3 to 5, got " +
                shapeStr(x->shape) + " and " + shapeStr(w->shape));
  size_t k = rx - 2;
  if (x->shape[1] != w->shape[1])
    throw Error("conv: input has " + std::to_string(x->shape[1]) +
                " channels but the weight expects " +
                std::to_string(w->shape[1]) + " (" + shapeStr(x->shape) + ", " +
                shapeStr(w->shape) + ")");
  if (stride.size() != k || padding.size() != k || dilation.size() != k)
    throw Error("conv: needs " + std::to_string(k) +
                " strides, paddings and dilations");
  DType d = promote(x->dtype, w->dtype);
  if (!isFloat(d) && !isComplex(d))
    throw Error("conv: needs float or complex tensors, got " + dtypeName(d));
  x = cast(x, d);
  w = cast(w, d);
  std::vector<int64_t> before(2, 0), after(2, 0);
  before.insert(before.end(), padding.begin(), padding.end());
  after.insert(after.end(), padding.begin(), padding.end());
  NodePtr padded = pad(x, before, after, 0.0);
  std::vector<int64_t> kernel(w->shape.begin() + 2, w->shape.end());
  NodePtr windows = unfold(padded, kernel, stride, dilation);
  // windows: [N, C, out..., kernel...]; domain [N, F, out..., C, kernel...].
  int64_t n = x->shape[0], c = x->shape[1], f = w->shape[0];
  std::vector<int64_t> outs(windows->shape.begin() + 2,
                            windows->shape.begin() + 2 + k);
  std::vector<int64_t> domain = {n, f};
  domain.insert(domain.end(), outs.begin(), outs.end());
  domain.push_back(c);
  domain.insert(domain.end(), kernel.begin(), kernel.end());
  size_t rank = domain.size();
  NodePtr xb, wb;
  {
    ContextLock lock;
    llvm::SmallVector<mlir::AffineExpr> xe = {dimExpr(0), dimExpr(2 + k)},
                                        we = {dimExpr(1), dimExpr(2 + k)};
    for (size_t i = 0; i < k; ++i)
      xe.push_back(dimExpr(2 + i));
    for (size_t i = 0; i < k; ++i) {
      xe.push_back(dimExpr(3 + k + i));
      we.push_back(dimExpr(3 + k + i));
    }
    xb = view(windows, domain, mh::indexLayout(context(), rank, xe));
    wb = view(w, domain, mh::indexLayout(context(), rank, we));
  }
  NodePtr prod = mapBinary(BinaryOp::Mul, xb, wb, d);
  std::vector<int64_t> dims;
  for (size_t i = 2 + k; i < rank; ++i)
    dims.push_back(i);
  return reduce(ReduceOp::Sum, prod, dims, false);
}

//===----------------------------------------------------------------------===//
// Composite reductions
//===----------------------------------------------------------------------===//

NodePtr harp::detail::logsumexp(NodePtr a, std::vector<int64_t> axes,
                                bool keepdim) {
  if (!isFloat(a->dtype))
    throw Error("logsumexp: needs a float tensor, got " + dtypeName(a->dtype));
  axes = axesOf("logsumexp", axes, a->shape.size());
  NodePtr m = reduce(ReduceOp::Max, a, axes, true);
  // Around the maximum; an infinite maximum (a row of -inf) is replaced by
  // 0 so that no inf - inf appears.
  NodePtr shift = where(unary(UnaryOp::IsInf, m), full(a->dtype, {}, 0), m);
  NodePtr sum = reduce(ReduceOp::Sum,
                       unary(UnaryOp::Exp, binary(BinaryOp::Sub, a, shift)),
                       axes, keepdim);
  NodePtr base = keepdim ? shift : reshape(shift, sum->shape);
  return binary(BinaryOp::Add, unary(UnaryOp::Log, sum), base);
}

NodePtr harp::detail::logSoftmax(NodePtr a, int64_t axis) {
  if (!isFloat(a->dtype))
    throw Error("log_softmax: needs a float tensor, got " +
                dtypeName(a->dtype));
  if (isScalarAxis("log_softmax", axis, a->shape.size()))
    return onScalarAsVector(a, [](NodePtr v) { return logSoftmax(v, 0); });
  axis = normalizeAxis("log_softmax", axis, a->shape.size());
  return binary(BinaryOp::Sub, a, logsumexp(a, {axis}, true));
}

NodePtr harp::detail::var(NodePtr a, std::vector<int64_t> axes,
                          int64_t correction, bool keepdim) {
  if (!isFloat(a->dtype))
    throw Error("var: needs a float tensor, got " + dtypeName(a->dtype));
  axes = axesOf("var", axes, a->shape.size());
  int64_t count = 1;
  for (int64_t axis : axes)
    count *= a->shape[axis];
  NodePtr centered =
      binary(BinaryOp::Sub, a, reduce(ReduceOp::Mean, a, axes, true));
  NodePtr squares =
      reduce(ReduceOp::Sum, unary(UnaryOp::Square, centered), axes, keepdim);
  // n - correction <= 0 gives inf or NaN, as in PyTorch.
  double divisor = static_cast<double>(count - correction);
  return binary(BinaryOp::Mul, squares,
                full(a->dtype, {}, divisor > 0 ? 1 / divisor : INFINITY));
}

NodePtr harp::detail::argExtreme(NodePtr a, int64_t axis, bool keepdim,
                                 bool max) {
  const char *op = max ? "argmax" : "argmin";
  if (a->dtype == DType::Bool)
    throw Error(std::string(op) + ": not defined for bool");
  if (isComplex(a->dtype))
    throw Error(std::string(op) + ": not defined for complex tensors (" +
                dtypeName(a->dtype) + " " + shapeStr(a->shape) +
                "): they are unordered");
  size_t rank = a->shape.size();
  if (isScalarAxis(op, axis, rank))
    return full(DType::I64, {}, 0);
  axis = normalizeAxis(op, axis, rank);
  int64_t n = a->shape[axis];
  if (n == 0)
    throw Error(std::string(op) + ": dim " + std::to_string(axis) + " of " +
                shapeStr(a->shape) + " is empty");
  NodePtr extreme =
      reduce(max ? ReduceOp::Max : ReduceOp::Min, a, {axis}, true);
  NodePtr hit = binary(BinaryOp::Eq, a, extreme);
  if (isFloat(a->dtype))
    hit = binary(BinaryOp::BitOr, hit, unary(UnaryOp::IsNan, a));
  // The smallest index where the extreme is reached.
  std::vector<int64_t> line(rank, 1);
  line[axis] = n;
  NodePtr index = reshape(arange(DType::I64, n, 0, 1), line);
  NodePtr candidates = where(hit, index, full(DType::I64, {}, double(n)));
  return reduce(ReduceOp::Min, candidates, {axis}, keepdim);
}
