//===- InlineSingleCalls.cpp - the harp-inline-single-calls pass ----------===//
//
// Inlines private functions that have exactly one call, and erases private
// functions nothing uses, so that a gradient function's results land in
// the caller's result buffers instead of being copied there.
//
//===----------------------------------------------------------------------===//

#include "harp/Dialect/Harp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/Inliner.h"
#include "mlir/Transforms/InliningUtils.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPINLINESINGLECALLSPASS
#include "harp/Dialect/Harp/Transforms/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

namespace {
struct HarpInlineSingleCallsPass
    : harp::impl::HarpInlineSingleCallsPassBase<HarpInlineSingleCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    InlinerInterface interface(&getContext());
    InlinerConfig config;
    // One function at a time, each round with fresh use lists: inlining
    // moves calls (a gradient function's call to a helper's gradient lands
    // in its caller). Each round removes a function, so this ends.
    bool changed = true;
    while (changed) {
      changed = false;
      SymbolTableCollection collection;
      SymbolUserMap users(collection, module);
      SymbolTable &symbols = collection.getSymbolTable(module);
      for (auto func : module.getOps<func::FuncOp>()) {
        if (!func.isPrivate() || func.isExternal())
          continue;
        ArrayRef<Operation *> callers = users.getUsers(func);
        auto call = callers.empty() ? func::CallOp()
                                    : dyn_cast<func::CallOp>(callers.front());
        // A recursive call stays (harp-autodiff reports recursion).
        if (!callers.empty() &&
            (callers.size() != 1 || !call || func->isAncestor(call)))
          continue;
        if (call &&
            failed(inlineCall(interface, config.getCloneCallback(), call,
                              cast<CallableOpInterface>(func.getOperation()),
                              &func.getBody())))
          continue;
        if (call)
          call.erase();
        symbols.erase(func);
        changed = true;
        break;
      }
    }
  }
};
} // namespace
