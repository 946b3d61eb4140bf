//===- HarpBuilders.cpp - layouts and wrappers shared by IR builders ------===//

#include "harp/Dialect/Harp/IR/HarpBuilders.h"
#include "harp/Dialect/Harp/IR/HarpOps.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IntegerSet.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::harp;

AffineExpr mlir::harp::linearize(ArrayRef<AffineExpr> dims,
                                 ArrayRef<int64_t> shape, MLIRContext *ctx) {
  AffineExpr linear = getAffineConstantExpr(0, ctx);
  for (auto [d, size] : llvm::zip(dims, shape))
    linear = linear * size + d;
  return linear;
}

SmallVector<AffineExpr> mlir::harp::delinearize(AffineExpr linear,
                                                ArrayRef<int64_t> shape) {
  SmallVector<AffineExpr> result;
  int64_t stride = 1;
  for (int64_t size : shape)
    stride *= size;
  for (auto [i, size] : llvm::enumerate(shape)) {
    stride /= size == 0 ? 1 : size;
    // A box with a zero-size dim has no index: any divisor will do, and
    // 0 is not one.
    int64_t divisor = std::max<int64_t>(stride, 1);
    AffineExpr q = divisor == 1 ? linear : linear.floorDiv(divisor);
    result.push_back(i == 0 ? q : q % std::max<int64_t>(size, 1));
  }
  return result;
}

static SmallVector<AffineExpr> dimExprs(MLIRContext *ctx, unsigned rank) {
  SmallVector<AffineExpr> dims;
  for (unsigned d = 0; d < rank; ++d)
    dims.push_back(getAffineDimExpr(d, ctx));
  return dims;
}

ViewAttr mlir::harp::indexLayout(MLIRContext *ctx, unsigned resultRank,
                                 ArrayRef<AffineExpr> exprs) {
  return ViewAttr::get(ctx, AffineMap::get(resultRank, 0, exprs, ctx));
}

ViewAttr mlir::harp::reshapeLayout(MLIRContext *ctx, ArrayRef<int64_t> source,
                                   ArrayRef<int64_t> result) {
  SmallVector<AffineExpr> dims = dimExprs(ctx, result.size());
  return indexLayout(ctx, result.size(),
                     delinearize(linearize(dims, result, ctx), source));
}

ViewAttr mlir::harp::broadcastLayout(MLIRContext *ctx, ArrayRef<int64_t> source,
                                     ArrayRef<int64_t> result) {
  size_t offset = result.size() - source.size();
  SmallVector<AffineExpr> exprs;
  for (auto [i, size] : llvm::enumerate(source))
    exprs.push_back(size == 1 && result[offset + i] != 1
                        ? getAffineConstantExpr(0, ctx)
                        : getAffineDimExpr(offset + i, ctx));
  return indexLayout(ctx, result.size(), exprs);
}

ViewAttr mlir::harp::permuteLayout(MLIRContext *ctx, ArrayRef<int64_t> perm) {
  SmallVector<AffineExpr> exprs(perm.size());
  for (auto [k, p] : llvm::enumerate(perm))
    exprs[p] = getAffineDimExpr(k, ctx);
  return indexLayout(ctx, perm.size(), exprs);
}

ViewAttr mlir::harp::sliceLayout(MLIRContext *ctx, unsigned rank, unsigned dim,
                                 int64_t start, int64_t step) {
  SmallVector<AffineExpr> exprs = dimExprs(ctx, rank);
  exprs[dim] = exprs[dim] * step + start;
  return indexLayout(ctx, rank, exprs);
}

ViewAttr mlir::harp::flipLayout(MLIRContext *ctx, ArrayRef<int64_t> shape,
                                ArrayRef<bool> flipped) {
  SmallVector<AffineExpr> exprs = dimExprs(ctx, shape.size());
  for (auto [i, size] : llvm::enumerate(shape))
    if (flipped[i])
      exprs[i] = getAffineConstantExpr(size - 1, ctx) - exprs[i];
  return indexLayout(ctx, shape.size(), exprs);
}

ViewAttr mlir::harp::padLayout(MLIRContext *ctx, ArrayRef<int64_t> source,
                               ArrayRef<int64_t> before,
                               ArrayRef<int64_t> after, TypedAttr pad) {
  unsigned rank = source.size();
  SmallVector<AffineExpr> exprs = dimExprs(ctx, rank), mask;
  for (unsigned i = 0; i < rank; ++i) {
    AffineExpr d = exprs[i];
    exprs[i] = d - before[i];
    if (before[i])
      mask.push_back(d - before[i]);
    if (after[i])
      mask.push_back(getAffineConstantExpr(source[i] - 1 + before[i], ctx) - d);
  }
  AffineMap map = AffineMap::get(rank, 0, exprs, ctx);
  if (mask.empty())
    return ViewAttr::get(ctx, map);
  PadKind kind = PadKind::Value;
  Attribute value;
  if (auto f = dyn_cast<FloatAttr>(pad)) {
    double v = f.getValueAsDouble();
    if (v == 0 && !std::signbit(v))
      kind = PadKind::Zero;
    else if (v == 1)
      kind = PadKind::One;
    else if (std::isinf(v))
      kind = v < 0 ? PadKind::NegInf : PadKind::PosInf;
    else
      value = FloatAttr::get(Float64Type::get(ctx), v);
  } else {
    int64_t v = cast<IntegerAttr>(pad).getInt();
    if (v == 0 || v == 1)
      kind = v == 0 ? PadKind::Zero : PadKind::One;
    else
      value = IntegerAttr::get(IntegerType::get(ctx, 64), v);
  }
  IntegerSet set =
      IntegerSet::get(rank, 0, mask, SmallVector<bool>(mask.size(), false));
  return ViewAttr::get(ctx, map, set, kind, value);
}

ViewAttr mlir::harp::windowLayout(MLIRContext *ctx, unsigned rank,
                                  ArrayRef<int64_t> stride,
                                  ArrayRef<int64_t> dilation) {
  unsigned k = stride.size(), lead = rank - k;
  SmallVector<AffineExpr> exprs = dimExprs(ctx, lead);
  for (unsigned i = 0; i < k; ++i)
    exprs.push_back(getAffineDimExpr(lead + i, ctx) * stride[i] +
                    getAffineDimExpr(lead + k + i, ctx) * dilation[i]);
  return indexLayout(ctx, lead + 2 * k, exprs);
}

ViewAttr mlir::harp::foldLayout(MLIRContext *ctx, unsigned lead,
                                ArrayRef<int64_t> outs,
                                ArrayRef<int64_t> stride,
                                ArrayRef<int64_t> dilation) {
  unsigned k = outs.size(), rank = lead + 2 * k;
  SmallVector<AffineExpr> exprs = dimExprs(ctx, lead), constraints;
  SmallVector<bool> eq;
  for (unsigned i = 0; i < k; ++i) {
    AffineExpr num = getAffineDimExpr(lead + i, ctx) -
                     getAffineDimExpr(lead + k + i, ctx) * dilation[i];
    AffineExpr window = num.floorDiv(stride[i]);
    exprs.push_back(window);
    constraints.append({num, getAffineConstantExpr(outs[i] - 1, ctx) - window});
    eq.append({false, false});
    if (stride[i] > 1) {
      constraints.push_back(num % stride[i]);
      eq.push_back(true);
    }
  }
  for (unsigned i = 0; i < k; ++i)
    exprs.push_back(getAffineDimExpr(lead + k + i, ctx));
  return ViewAttr::get(ctx, AffineMap::get(rank, 0, exprs, ctx),
                       IntegerSet::get(rank, 0, constraints, eq), PadKind::Zero,
                       Attribute());
}

func::FuncOp mlir::harp::buildGradientFunction(OpBuilder &b, Location loc,
                                               StringRef name,
                                               func::FuncOp callee,
                                               ArrayRef<int64_t> wrt,
                                               bool seeded) {
  FunctionType calleeType = callee.getFunctionType();
  SmallVector<Type> inputs(calleeType.getInputs());
  if (seeded)
    llvm::append_range(inputs, calleeType.getResults());
  SmallVector<Type> results(calleeType.getResults());
  for (int64_t w : wrt)
    results.push_back(calleeType.getInput(w));
  auto func =
      func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, results));
  OpBuilder::InsertionGuard guard(b);
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  unsigned numArgs = calleeType.getNumInputs();
  ValueRange args = entry->getArguments().take_front(numArgs);
  ValueRange seeds = entry->getArguments().drop_front(numArgs);
  auto autodiff = AutodiffOp::create(
      b, loc, results, FlatSymbolRefAttr::get(callee.getSymNameAttr()), args,
      seeds, b.getDenseI64ArrayAttr(wrt));
  func::ReturnOp::create(b, loc, autodiff.getResults());
  return func;
}
