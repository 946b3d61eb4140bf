//===- KernelCSE.cpp - the harp-kernel-cse pass ---------------------------===//
//
// CSE that never compares two top-level ops with regions (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/Common/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/CSE.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPKERNELCSEPASS
#include "harp/Codegen/Common/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

namespace {
constexpr llvm::StringLiteral kernelTag = "harp.cse_kernel";

/// Value numbers of a function's top-level values: a hash of the op that
/// defines a value (name, attributes, properties, types, the numbers of
/// its operands and, for an op with regions, everything nested in it, with
/// values defined inside numbered by the order of their definition) and
/// the result's position. Two ops CSE would merge, also after merging the
/// ops they read, get equal numbers; loops with one op sequence reading
/// different tensors (a recurrence's time steps) do not.
class ValueNumbers {
public:
  llvm::hash_code of(Value v) const {
    auto it = numbers.find(v);
    return it != numbers.end() ? it->second
                               : llvm::hash_value(v.getAsOpaquePointer());
  }

  /// Numbers `op`'s results; returns the op's own number.
  llvm::hash_code number(Operation *op) {
    llvm::hash_code hash = opHash(op, [&](Value v) { return of(v); });
    if (op->getNumRegions()) {
      llvm::DenseMap<Value, unsigned> inside;
      auto operandHash = [&](Value v) {
        auto it = inside.find(v);
        return it != inside.end() ? llvm::hash_value(it->second) : of(v);
      };
      op->walk<WalkOrder::PreOrder>([&](Operation *nested) {
        if (nested != op)
          hash = llvm::hash_combine(hash, opHash(nested, operandHash));
        for (Value result : nested->getResults())
          inside.try_emplace(result, inside.size());
        for (Region &region : nested->getRegions())
          for (Block &block : region)
            for (BlockArgument arg : block.getArguments()) {
              hash =
                  llvm::hash_combine(hash, arg.getType().getAsOpaquePointer());
              inside.try_emplace(arg, inside.size());
            }
      });
    }
    for (OpResult result : op->getResults())
      numbers[result] = llvm::hash_combine(hash, result.getResultNumber());
    return hash;
  }

private:
  template <typename OperandHash>
  static llvm::hash_code opHash(Operation *op, OperandHash operandHash) {
    llvm::hash_code hash =
        llvm::hash_combine(op->getName().getAsOpaquePointer(),
                           op->getRawDictionaryAttrs().getAsOpaquePointer(),
                           op->hashProperties(), op->getNumRegions());
    for (Value operand : op->getOperands())
      hash = llvm::hash_combine(hash, operandHash(operand));
    for (Type type : op->getResultTypes())
      hash = llvm::hash_combine(hash, type.getAsOpaquePointer());
    return hash;
  }

  llvm::DenseMap<Value, llvm::hash_code> numbers;
};

struct HarpKernelCSEPass
    : harp::impl::HarpKernelCSEPassBase<HarpKernelCSEPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Builder b(func.getContext());
    ValueNumbers numbers;
    for (Block &block : func.getBody())
      for (Operation &op : block) {
        llvm::hash_code hash = numbers.number(&op);
        if (op.getNumRegions())
          op.setAttr(kernelTag,
                     b.getI64IntegerAttr(static_cast<int64_t>(size_t(hash))));
      }
    DominanceInfo &dominance = getAnalysis<DominanceInfo>();
    IRRewriter rewriter(func.getContext());
    bool changed = false;
    eliminateCommonSubExpressions(rewriter, dominance, func, &changed);
    // (CSE erases dead ops, tagged ones among them: the survivors are
    // looked up again.)
    for (Block &block : func.getBody())
      for (Operation &op : block)
        op.removeAttr(kernelTag);
    if (!changed)
      markAllAnalysesPreserved();
  }
};
} // namespace
