//===- FunctionABI.cpp - the harp-function-abi pass -----------------------===//

#include "harp/Codegen/Common/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPFUNCTIONABIPASS
#include "harp/Codegen/Common/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

namespace {
struct HarpFunctionABIPass
    : harp::impl::HarpFunctionABIPassBase<HarpFunctionABIPass> {
  void runOnOperation() override {
    Builder b(&getContext());
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.isPublic())
        continue;
      func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
      for (auto [i, type] : llvm::enumerate(func.getArgumentTypes()))
        if (isa<TensorType>(type))
          func.setArgAttr(i, "bufferization.writable", b.getBoolAttr(false));
    }
  }
};
} // namespace
