//===- DuplicateFills.cpp - the harp-duplicate-fills pass -----------------===//
//
// A tensor built from constants alone that several ops write into in place
// is rebuilt for each writer, so that bufferization fills a buffer per
// writer instead of copying a shared one (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/Common/Passes.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPDUPLICATEFILLSPASS
#include "harp/Codegen/Common/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

namespace {
/// Decides which tensors are built from constants alone and collects, for
/// one such tensor, the producers to clone (operands before users).
class ConstantBuilt {
public:
  explicit ConstantBuilt(unsigned maxOps) : maxOps(maxOps) {}

  /// Whether `value` is computed without reading anything but constants
  /// and values that are not tensors, by producers small enough to clone.
  bool check(Value value) {
    Operation *op = value.getDefiningOp();
    if (!op)
      return false;
    auto [it, inserted] = memo.try_emplace(op, false);
    if (!inserted)
      return it->second;
    bool ok = isa<tensor::EmptyOp>(op) || checkProducer(op);
    memo[op] = ok;
    return ok;
  }

  /// The producers of `value` (which `check` accepted), each once, every
  /// one after the producers of its operands.
  void producers(Value value, SmallVectorImpl<Operation *> &order,
                 llvm::SmallPtrSetImpl<Operation *> &seen) {
    Operation *op = value.getDefiningOp();
    if (!seen.insert(op).second)
      return;
    for (Value read : tensorsReadFromAbove(op))
      producers(read, order, seen);
    order.push_back(op);
  }

private:
  bool checkProducer(Operation *op) {
    if (!isMemoryEffectFree(op))
      return false;
    unsigned count = 0;
    op->walk([&](Operation *) { ++count; });
    if (count > maxOps)
      return false;
    return llvm::all_of(tensorsReadFromAbove(op),
                        [&](Value read) { return check(read); });
  }

  /// The tensor values `op` or its regions use that are defined outside it.
  static SmallVector<Value> tensorsReadFromAbove(Operation *op) {
    SmallVector<Value> reads;
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands()) {
        if (!isa<TensorType>(operand.getType()))
          continue;
        Operation *scope = operand.getParentBlock()->getParentOp();
        if (!op->isAncestor(scope) && !llvm::is_contained(reads, operand))
          reads.push_back(operand);
      }
    });
    return reads;
  }

  unsigned maxOps;
  DenseMap<Operation *, bool> memo;
};

enum class Use { Read, Write, Alias };

/// How `use` treats the tensor it uses: an in-place write, a read, or a
/// slice that only aliases it. A reshape takes after its result's uses.
static Use classify(OpOperand &use,
                    const bufferization::BufferizationOptions &options,
                    const bufferization::AnalysisState &state) {
  Operation *user = use.getOwner();
  if (isa<tensor::ExtractSliceOp>(user))
    return Use::Alias;
  auto insert = dyn_cast<tensor::InsertSliceOp>(user);
  if (insert && use.get() == insert.getDest())
    return Use::Alias;
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user)) {
    Use result = Use::Alias;
    for (OpOperand &next : user->getResult(0).getUses()) {
      Use kind = classify(next, options, state);
      if (kind == Use::Write)
        return Use::Write;
      if (kind == Use::Read)
        result = Use::Read;
    }
    return result;
  }
  auto bufferizable = options.dynCastBufferizableOp(user);
  if (bufferizable && bufferizable.bufferizesToMemoryWrite(use, state))
    return Use::Write;
  return Use::Read;
}

struct HarpDuplicateFillsPass
    : harp::impl::HarpDuplicateFillsPassBase<HarpDuplicateFillsPass> {
  using HarpDuplicateFillsPassBase::HarpDuplicateFillsPassBase;

  void runOnOperation() override {
    bufferization::BufferizationOptions options;
    bufferization::AnalysisState state(options);
    ConstantBuilt built(maxOps);

    // Tensors with several uses, and every op's place in program order.
    SmallVector<Value> shared;
    DenseMap<Operation *, unsigned> position;
    getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
      position[op] = position.size();
      for (Value result : op->getResults())
        if (isa<RankedTensorType>(result.getType()) && !result.hasOneUse() &&
            !result.use_empty())
          shared.push_back(result);
    });
    for (Value value : shared) {
      // Slices only alias the value (an extract_slice and the insert_slice
      // that writes the slice back bufferize in place, as a padded image's
      // interior does); a reshape is a writer when its result is written.
      // The writers each need a buffer of their own, and so do they when
      // something else reads it.
      SmallVector<OpOperand *> writes;
      SmallVector<Operation *> readers;
      for (OpOperand &use : value.getUses()) {
        switch (classify(use, options, state)) {
        case Use::Write:
          writes.push_back(&use);
          break;
        case Use::Read:
          readers.push_back(use.getOwner());
          break;
        case Use::Alias:
          break;
        }
      }
      // An op reading the value it writes into (an element-wise kernel
      // whose input is its init) does that in place.
      bool read = llvm::any_of(readers, [&](Operation *reader) {
        return llvm::none_of(writes, [&](OpOperand *write) {
          return write->getOwner() == reader;
        });
      });
      llvm::sort(writes, [&](OpOperand *a, OpOperand *b) {
        return position.lookup(a->getOwner()) < position.lookup(b->getOwner());
      });
      // Without a reader the first writer may keep the value.
      size_t keep = read ? 0 : 1;
      if (writes.size() <= keep || !built.check(value))
        continue;
      SmallVector<Operation *> order;
      llvm::SmallPtrSet<Operation *, 8> seen;
      built.producers(value, order, seen);
      Operation *producer = value.getDefiningOp();
      for (OpOperand *use : llvm::drop_begin(writes, keep)) {
        OpBuilder b(producer->getContext());
        b.setInsertionPointAfter(producer);
        IRMapping mapping;
        for (Operation *op : order)
          b.clone(*op, mapping);
        use->set(mapping.lookup(value));
      }
    }
  }
};
} // namespace
