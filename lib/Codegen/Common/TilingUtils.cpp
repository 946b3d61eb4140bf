//===- TilingUtils.cpp - what MLIR's tiling gets right --------------------===//

#include "harp/Codegen/Common/TilingUtils.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
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
