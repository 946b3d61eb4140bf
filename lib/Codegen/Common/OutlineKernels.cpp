//===- OutlineKernels.cpp - the harp-outline-kernels pass -----------------===//
//
// Moves every kernel (a loop nest directly in a function's body) into a
// private function of its own and calls it, then merges kernel functions
// that are the same up to their names (see Passes.td): LLVM optimizes many
// small functions in time linear in their number, where one function
// holding hundreds of loop nests cost superlinear time (IndVarSimplify
// took 8.4 of the 13 s LLVM spent on a GPT-style training step).
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/Common/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPOUTLINEKERNELSPASS
#include "harp/Codegen/Common/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

/// Whether `op`, directly in a function's body, is a kernel to outline: a
/// linalg op (loops to be), an op with regions holding a loop (not the
/// scf.if around a deallocation), or a memory copy. A small copy is
/// expanded inline into loads and stores; a `cat` of 1,000 pieces was one
/// block of 4,000 of them in its caller, which LLVM's post-RA scheduler
/// handles in quadratic time (3 s of code generation). Called, each is one
/// call (a scheduling boundary) to one kernel function for all copies of
/// the same shapes.
static bool isLoopKernel(Operation *op) {
  if (isa<linalg::LinalgOp, memref::CopyOp>(op))
    return true;
  if (op->getNumRegions() == 0)
    return false;
  return op
      ->walk([](Operation *inner) {
        return isa<LoopLikeOpInterface>(inner) ? WalkResult::interrupt()
                                               : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Whether `op` is better rematerialized inside a kernel than its result
/// passed to it: a constant (loop bounds stay constant, so LLVM still knows
/// trip counts), a global's address, or any other operation without
/// operands, regions or effects.
static bool isRematerializable(Operation *op) {
  if (op->getNumOperands() != 0 || op->getNumRegions() != 0 ||
      op->getNumResults() != 1)
    return false;
  return op->hasTrait<OpTrait::ConstantLike>() ||
         isa<memref::GetGlobalOp>(op) || isMemoryEffectFree(op);
}

static bool isRematerializable(Value captured) {
  Operation *def = captured.getDefiningOp();
  return def && isRematerializable(def);
}

/// Whether a function can take or return a value of `type` all the way to
/// LLVM (func-to-llvm converts builtin types; a dialect's own type, such as
/// an MPI communicator, is converted only where its ops are).
static bool isPassable(Type type) {
  return isa<MemRefType, IndexType, IntegerType, FloatType, VectorType,
             ComplexType>(type);
}

/// The values `kernel` uses that are defined outside it, in order of first
/// use.
static llvm::SetVector<Value> capturedValues(Operation *kernel) {
  llvm::SetVector<Value> captured;
  kernel->walk([&](Operation *op) {
    for (Value operand : op->getOperands()) {
      Operation *owner = operand.getDefiningOp();
      if (!owner)
        owner = cast<BlockArgument>(operand).getOwner()->getParentOp();
      if (!kernel->isAncestor(owner))
        captured.insert(operand);
    }
  });
  return captured;
}

/// `type` with a dynamic offset where it is a memref of a strided layout
/// with a static one; `type` otherwise.
static Type withDynamicOffset(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref)
    return type;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(memref.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset))
    return type;
  auto layout =
      StridedLayoutAttr::get(type.getContext(), ShapedType::kDynamic, strides);
  return MemRefType::get(memref.getShape(), memref.getElementType(), layout,
                         memref.getMemorySpace());
}

/// Structural hash of a kernel function: its type and its operations'
/// names, attributes and types, ignoring locations and value identities.
static llvm::hash_code structuralHash(func::FuncOp func) {
  llvm::hash_code hash = hash_value(func.getFunctionType());
  func.getBody().walk([&](Operation *op) {
    hash =
        llvm::hash_combine(hash, OperationEquivalence::computeHash(
                                     op, OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::IgnoreLocations));
  });
  return hash;
}

namespace {
struct HarpOutlineKernelsPass
    : mlir::harp::impl::HarpOutlineKernelsPassBase<HarpOutlineKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> kernels;
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    for (func::FuncOp func : funcs) {
      if (func.isExternal())
        continue;
      SmallVector<Operation *> work;
      for (Block &block : func.getBody())
        for (Operation &op : block)
          if (isLoopKernel(&op))
            work.push_back(&op);
      // A function that is one kernel and its return (and what a kernel
      // rematerializes) is a kernel function already: this pass made it,
      // or its author did.
      if (work.size() == 1 && func.getBody().hasOneBlock() &&
          func.getBody().front().getOperations().size() <=
              2 + llvm::count_if(func.getBody().front(), [](Operation &op) {
                return isRematerializable(&op);
              }))
        continue;
      // The kernel functions follow their caller, in program order.
      Operation *after = func;
      unsigned index = 0;
      for (Operation *kernel : work) {
        func::FuncOp outlined = outline(symbols, func, after, kernel, index++);
        if (!outlined)
          continue;
        kernels.push_back(outlined);
        after = outlined;
      }
    }
    if (merge)
      mergeIdentical(kernels);
  }

private:
  /// Moves `kernel` into a new private function `@<func>_kernel<index>`,
  /// placed after `after`, and calls it in its place; null (and `kernel`
  /// left where it is) when it uses or makes a value of a type a function
  /// cannot pass.
  func::FuncOp outline(SymbolTable &symbols, func::FuncOp func,
                       Operation *after, Operation *kernel, unsigned index) {
    MLIRContext *ctx = func.getContext();
    llvm::SetVector<Value> captured = capturedValues(kernel);
    SmallVector<Value> arguments;
    SmallVector<Type> argumentTypes;
    for (Value value : captured)
      if (!isRematerializable(value)) {
        arguments.push_back(value);
        argumentTypes.push_back(value.getType());
      }
    // A copy's memrefs are passed with their static offsets made dynamic,
    // so that copies into different places of one buffer (the pieces of a
    // `cat`) share one kernel function.
    if (isa<memref::CopyOp>(kernel))
      for (Type &type : argumentTypes)
        type = withDynamicOffset(type);
    if (!llvm::all_of(argumentTypes, isPassable) ||
        !llvm::all_of(kernel->getResultTypes(), isPassable))
      return nullptr;

    OpBuilder b(ctx);
    b.setInsertionPointAfter(after);
    auto type = b.getFunctionType(argumentTypes, kernel->getResultTypes());
    auto outlined = func::FuncOp::create(
        b, kernel->getLoc(), (func.getName() + "_kernel" + Twine(index)).str(),
        type);
    outlined.setPrivate();
    // Internal to the object, and never inlined: LLVM would inline a
    // function called once straight back into its caller.
    outlined->setAttr(
        "llvm.linkage",
        LLVM::LinkageAttr::get(ctx, LLVM::linkage::Linkage::Internal));
    outlined->setAttr("passthrough",
                      b.getArrayAttr({b.getStringAttr("noinline")}));
    symbols.insert(outlined);

    Block *body = outlined.addEntryBlock();
    b.setInsertionPointToStart(body);
    IRMapping mapping;
    unsigned next = 0;
    for (Value value : captured) {
      if (isRematerializable(value))
        mapping.map(value, b.clone(*value.getDefiningOp())->getResult(0));
      else
        mapping.map(value, body->getArgument(next++));
    }
    Operation *moved = b.clone(*kernel, mapping);
    func::ReturnOp::create(b, kernel->getLoc(), moved->getResults());

    b.setInsertionPoint(kernel);
    for (auto [argument, type] : llvm::zip(arguments, argumentTypes))
      if (argument.getType() != type)
        argument = memref::CastOp::create(b, kernel->getLoc(), type, argument);
    auto call = func::CallOp::create(b, kernel->getLoc(), outlined, arguments);
    kernel->replaceAllUsesWith(call.getResults());
    kernel->erase();
    return outlined;
  }

  /// Replaces each kernel function that is the same as an earlier one (a
  /// layer repeated in a model, the same kernel in forward and backward)
  /// by that one: LLVM compiles it once.
  void mergeIdentical(ArrayRef<func::FuncOp> kernels) {
    ModuleOp module = getOperation();
    llvm::DenseMap<llvm::hash_code, SmallVector<func::FuncOp, 1>> seen;
    llvm::DenseMap<StringAttr, func::FuncOp> replacement;
    for (func::FuncOp kernel : kernels) {
      SmallVector<func::FuncOp, 1> &candidates = seen[structuralHash(kernel)];
      func::FuncOp same;
      for (func::FuncOp candidate : candidates)
        if (candidate.getFunctionType() == kernel.getFunctionType() &&
            OperationEquivalence::isRegionEquivalentTo(
                &candidate.getBody(), &kernel.getBody(),
                OperationEquivalence::IgnoreLocations)) {
          same = candidate;
          break;
        }
      if (same)
        replacement[kernel.getSymNameAttr()] = same;
      else
        candidates.push_back(kernel);
    }
    if (replacement.empty())
      return;
    module.walk([&](func::CallOp call) {
      auto it = replacement.find(call.getCalleeAttr().getAttr());
      if (it != replacement.end())
        call.setCalleeAttr(FlatSymbolRefAttr::get(it->second.getSymNameAttr()));
    });
    for (auto &entry : replacement)
      if (auto func = module.lookupSymbol<func::FuncOp>(entry.first))
        func.erase();
  }
};
} // namespace
