//===- GPUHost.cpp - a host function's buffers on the device --------------===//

#include "BufferEffects.h"

#include "harp/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPGPUHOSTPASS
#include "harp/Codegen/GPU/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

static bool insideLaunch(Operation *op) {
  return op->getParentOfType<gpu::LaunchOp>() != nullptr;
}

namespace {
struct HarpGPUHostPass
    : public harp::impl::HarpGPUHostPassBase<HarpGPUHostPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    IRRewriter rewriter(&getContext());
    if (failed(sinkConstants(rewriter, func)))
      return signalPassFailure();
    if (failed(rebaseViews(rewriter, func)))
      return signalPassFailure();
    moveAllocations(rewriter, func);

    WalkResult checked = func->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::LaunchOp>(op))
        return WalkResult::skip();
      if (isa<gpu::MemcpyOp>(op) || op->getNumRegions() != 0)
        return WalkResult::advance();
      if (harp::firstBufferAccess(op)) {
        op->emitError("harp-gpu-host: '")
            << op->getName()
            << "' would access device memory on the host (run "
               "harp-gpu-kernels first)";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (checked.wasInterrupted())
      signalPassFailure();
  }

  /// A constant read by a kernel is read inside it: the `memref.get_global`
  /// moves into each launch that uses it, and kernel outlining copies the
  /// global into the kernel's module (device memory, no copy per call).
  /// One still used on the host is copied to the device (copyToDevice).
  LogicalResult sinkConstants(IRRewriter &rewriter, func::FuncOp func) {
    SmallVector<memref::GetGlobalOp> globals;
    func.walk([&](memref::GetGlobalOp op) {
      if (!insideLaunch(op))
        globals.push_back(op);
    });
    for (memref::GetGlobalOp global : globals) {
      llvm::SetVector<gpu::LaunchOp> launches;
      for (Operation *user : global->getUsers())
        if (auto launch = user->getParentOfType<gpu::LaunchOp>())
          launches.insert(launch);
      for (gpu::LaunchOp launch : launches) {
        rewriter.setInsertionPointToStart(&launch.getBody().front());
        Operation *copy = rewriter.clone(*global);
        rewriter.replaceUsesWithIf(
            global.getResult(), copy->getResult(0), [&](OpOperand &use) {
              return launch->isProperAncestor(use.getOwner());
            });
      }
      if (global->use_empty()) {
        rewriter.eraseOp(global);
        continue;
      }
      if (failed(copyToDevice(rewriter, func, global)))
        return failure();
    }
    return success();
  }

  /// A constant the host passes on (to a call, or through a view) goes to
  /// the device once per call of `func`, at its start (so the copy dominates
  /// every use and every return): the callee's kernels read it as device
  /// memory, which a host global is not.
  LogicalResult copyToDevice(IRRewriter &rewriter, func::FuncOp func,
                             memref::GetGlobalOp global) {
    for (Operation *user : global->getUsers())
      if (isa<func::ReturnOp>(user))
        return user->emitError("harp-gpu-host: a function returns the "
                               "constant buffer @")
               << global.getName() << "; results are out-parameters";
    Location loc = global.getLoc();
    rewriter.setInsertionPointToStart(&func.getBody().front());
    auto host = cast<memref::GetGlobalOp>(rewriter.clone(*global));
    auto device = gpu::AllocOp::create(
        rewriter, loc, global.getType(), /*asyncToken=*/Type(), ValueRange(),
        ValueRange(), ValueRange(), /*hostShared=*/false);
    gpu::MemcpyOp::create(rewriter, loc, /*asyncToken=*/Type(), ValueRange(),
                          device.getMemref(), host.getResult());
    rewriter.replaceOp(global, device.getMemref());
    func.walk([&](func::ReturnOp ret) {
      rewriter.setInsertionPoint(ret);
      gpu::DeallocOp::create(rewriter, ret.getLoc(), /*asyncToken=*/Type(),
                             ValueRange(), device.getMemref());
    });
    return success();
  }

  /// Kernels get plain buffers: a strided view captured by a launch is
  /// passed as its base buffer and rebuilt inside.
  LogicalResult rebaseViews(IRRewriter &rewriter, func::FuncOp func) {
    SmallVector<gpu::LaunchOp> launches;
    func.walk([&](gpu::LaunchOp op) { launches.push_back(op); });
    for (gpu::LaunchOp launch : launches) {
      llvm::SetVector<Value> captured;
      getUsedValuesDefinedAbove(launch.getBody(), captured);
      for (Value value : captured) {
        auto type = dyn_cast<MemRefType>(value.getType());
        if (!type || type.getLayout().isIdentity())
          continue;
        SmallVector<int64_t> strides;
        int64_t offset;
        if (failed(type.getStridesAndOffset(strides, offset)) ||
            ShapedType::isDynamic(offset) || !type.hasStaticShape() ||
            llvm::any_of(strides, ShapedType::isDynamic))
          return launch.emitError("harp-gpu-host: a kernel reads a view with "
                                  "a dynamic layout: ")
                 << type;
        Location loc = launch.getLoc();
        rewriter.setInsertionPoint(launch);
        auto meta =
            memref::ExtractStridedMetadataOp::create(rewriter, loc, value);
        rewriter.setInsertionPointToStart(&launch.getBody().front());
        auto view = memref::ReinterpretCastOp::create(
            rewriter, loc, type, meta.getBaseBuffer(), offset, type.getShape(),
            strides);
        rewriter.replaceUsesWithIf(value, view.getResult(), [&](OpOperand &u) {
          return launch->isProperAncestor(u.getOwner());
        });
      }
    }
    return success();
  }

  /// Host allocations become device allocations; a stack allocation is
  /// freed before the function returns.
  void moveAllocations(IRRewriter &rewriter, func::FuncOp func) {
    SmallVector<func::ReturnOp> returns;
    func.walk([&](func::ReturnOp op) { returns.push_back(op); });
    SmallVector<Operation *> ops;
    func->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::LaunchOp>(op))
        return WalkResult::skip();
      if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp>(op))
        ops.push_back(op);
      return WalkResult::advance();
    });
    for (Operation *op : ops) {
      rewriter.setInsertionPoint(op);
      if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        gpu::DeallocOp::create(rewriter, op->getLoc(), /*asyncToken=*/Type(),
                               ValueRange(), dealloc.getMemref());
        rewriter.eraseOp(op);
        continue;
      }
      auto type = cast<MemRefType>(op->getResult(0).getType());
      bool onStack = isa<memref::AllocaOp>(op);
      ValueRange dynamicSizes =
          isa<memref::AllocOp>(op)
              ? cast<memref::AllocOp>(op).getDynamicSizes()
              : cast<memref::AllocaOp>(op).getDynamicSizes();
      auto alloc = gpu::AllocOp::create(rewriter, op->getLoc(), type,
                                        /*asyncToken=*/Type(), ValueRange(),
                                        dynamicSizes, ValueRange(),
                                        /*hostShared=*/false);
      rewriter.replaceOp(op, alloc.getMemref());
      if (!onStack)
        continue;
      for (func::ReturnOp ret : returns) {
        rewriter.setInsertionPoint(ret);
        gpu::DeallocOp::create(rewriter, ret.getLoc(), /*asyncToken=*/Type(),
                               ValueRange(), alloc.getMemref());
      }
    }
  }
};
} // namespace
