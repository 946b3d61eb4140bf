//===- MergeGPUModules.cpp - a module's GPU kernels in one gpu.module -----===//
//
// gpu-kernel-outlining makes a gpu.module per kernel, and each becomes a
// gpu.binary of its own: a ptxas process (about 50 ms before any work) and
// a module load at run time per kernel. harp-merge-gpu-modules puts them
// in one.
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPMERGEGPUMODULESPASS
#include "harp/Codegen/GPU/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

/// Whether two globals are the same constant: the same type, initial
/// value, constness and alignment (their names may differ).
static bool sameGlobal(memref::GlobalOp a, memref::GlobalOp b) {
  return a.getType() == b.getType() &&
         a.getInitialValueAttr() == b.getInitialValueAttr() &&
         a.getConstant() == b.getConstant() &&
         a.getAlignmentAttr() == b.getAlignmentAttr();
}

namespace {
struct HarpMergeGPUModulesPass
    : public harp::impl::HarpMergeGPUModulesPassBase<HarpMergeGPUModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
    if (gpuModules.size() < 2)
      return;
    gpu::GPUModuleOp into = gpuModules.front();
    SymbolTable intoSymbols(into);
    for (gpu::GPUModuleOp from : llvm::drop_begin(gpuModules)) {
      if (from.getTargetsAttr() != into.getTargetsAttr() ||
          from.getOffloadingHandlerAttr() != into.getOffloadingHandlerAttr())
        continue; // compiled for other targets: left apart
      SymbolTable fromSymbols(from);
      llvm::DenseMap<StringAttr, StringAttr> renamed;
      for (Operation &op :
           llvm::make_early_inc_range(from.getBody()->getOperations())) {
        auto symbol = dyn_cast<SymbolOpInterface>(op);
        if (!symbol)
          continue;
        StringAttr name = symbol.getNameAttr();
        Operation *there = intoSymbols.lookup(name);
        if (!there)
          continue;
        auto global = dyn_cast<memref::GlobalOp>(op);
        auto thereGlobal = dyn_cast<memref::GlobalOp>(there);
        if (global && thereGlobal && sameGlobal(global, thereGlobal)) {
          fromSymbols.erase(&op); // its uses read the one there, by name
          continue;
        }
        FailureOr<StringAttr> unique =
            fromSymbols.renameToUnique(&op, {&intoSymbols});
        if (failed(unique)) {
          op.emitOpError("harp-merge-gpu-modules: cannot rename ") << name;
          return signalPassFailure();
        }
        renamed[name] = *unique;
      }
      for (Operation &op :
           llvm::make_early_inc_range(from.getBody()->getOperations())) {
        op.moveBefore(into.getBody(), into.getBody()->end());
        if (isa<SymbolOpInterface>(op))
          intoSymbols.insert(&op);
      }
      StringAttr fromName = from.getNameAttr();
      module.walk([&](gpu::LaunchFuncOp launch) {
        if (launch.getKernelModuleName() != fromName)
          return;
        StringAttr kernel = launch.getKernelName();
        if (auto it = renamed.find(kernel); it != renamed.end())
          kernel = it->second;
        launch.setKernelAttr(SymbolRefAttr::get(
            into.getNameAttr(), {FlatSymbolRefAttr::get(kernel)}));
      });
      from.erase();
    }
  }
};
} // namespace
