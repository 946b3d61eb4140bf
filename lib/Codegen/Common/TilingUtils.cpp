//===- TilingUtils.cpp - what MLIR's tiling gets right --------------------===//

#include "harp/Codegen/Common/TilingUtils.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;

bool harp::isMonotone(AffineMap map) {
  for (AffineExpr result : map.getResults()) {
    bool monotone = true;
    result.walk([&](AffineExpr e) {
      if (auto c = dyn_cast<AffineConstantExpr>(e); c && c.getValue() < 0)
        monotone = false;
      if (auto bin = dyn_cast<AffineBinaryOpExpr>(e)) {
        if (e.getKind() == AffineExprKind::Add)
          return;
        if (e.getKind() == AffineExprKind::Mul) {
          auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
          if (c && c.getValue() >= 0)
            return;
        }
        monotone = false;
      }
    });
    if (!monotone)
      return false;
  }
  return true;
}

bool harp::hasMonotoneMaps(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  return linalgOp &&
         llvm::all_of(linalgOp.getIndexingMapsArray(), harp::isMonotone);
}

std::optional<harp::StridedRead> harp::stridedRead(AffineExpr expr) {
  int64_t offset = 0;
  if (auto sum = dyn_cast<AffineBinaryOpExpr>(expr);
      sum && sum.getKind() == AffineExprKind::Add) {
    auto constant = dyn_cast<AffineConstantExpr>(sum.getRHS());
    if (!constant || constant.getValue() < 0)
      return std::nullopt;
    offset = constant.getValue();
    expr = sum.getLHS();
  }
  auto product = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!product || product.getKind() != AffineExprKind::Mul)
    return std::nullopt;
  auto dim = dyn_cast<AffineDimExpr>(product.getLHS());
  auto stride = dyn_cast<AffineConstantExpr>(product.getRHS());
  if (!dim || !stride || stride.getValue() <= 1)
    return std::nullopt;
  return StridedRead{dim.getPosition(), stride.getValue(), offset};
}

int64_t harp::ConstantBounds::tripCount() const {
  return ub <= lb ? 0 : (ub - lb + step - 1) / step;
}

std::optional<harp::ConstantBounds> harp::constantBounds(Value lb, Value ub,
                                                         Value step) {
  std::optional<int64_t> l = getConstantIntValue(lb);
  std::optional<int64_t> u = getConstantIntValue(ub);
  std::optional<int64_t> s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return std::nullopt;
  return ConstantBounds{*l, *u, *s};
}

std::optional<harp::ConstantBounds> harp::constantBounds(scf::ForOp loop) {
  return constantBounds(loop.getLowerBound(), loop.getUpperBound(),
                        loop.getStep());
}
