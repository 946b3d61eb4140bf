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
    // The kernels of each merged module, by module name: their renames.
    llvm::DenseMap<StringAttr, llvm::DenseMap<StringAttr, StringAttr>> moved;
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
        // The same global (type, value, constness, alignment; the same name).
        if (isa<memref::GlobalOp>(op) &&
            OperationEquivalence::isEquivalentTo(
                &op, there, OperationEquivalence::IgnoreLocations)) {
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
      moved[from.getNameAttr()] = std::move(renamed);
      from.erase();
    }
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto it = moved.find(launch.getKernelModuleName());
      if (it == moved.end())
        return;
      StringAttr kernel = launch.getKernelName();
      if (auto renamed = it->second.find(kernel); renamed != it->second.end())
        kernel = renamed->second;
      launch.setKernelAttr(SymbolRefAttr::get(
          into.getNameAttr(), {FlatSymbolRefAttr::get(kernel)}));
    });
  }
};
} // namespace
