//===- DistinctResults.cpp - the harp-distinct-results pass ---------------===//
//
// A tensor returned twice gets a copy per repeat, so that every result of a
// function bufferizes to a buffer of its own (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/Common/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPDISTINCTRESULTSPASS
#include "harp/Codegen/Common/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

namespace {
struct HarpDistinctResultsPass
    : harp::impl::HarpDistinctResultsPassBase<HarpDistinctResultsPass> {
  void runOnOperation() override {
    getOperation().walk([](func::ReturnOp ret) {
      llvm::SmallPtrSet<Value, 4> seen;
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value value = operand.get();
        auto type = dyn_cast<RankedTensorType>(value.getType());
        if (!type || seen.insert(value).second)
          continue;
        Value empty = tensor::EmptyOp::create(b, ret.getLoc(), type.getShape(),
                                              type.getElementType());
        Value copy =
            linalg::CopyOp::create(b, ret.getLoc(), value, empty)->getResult(0);
        operand.set(copy);
      }
    });
  }
};
} // namespace
