//===- ForwardFills.cpp - the harp-forward-fills pass ---------------------===//
//
// Vector reads of a tensor that hold only the value a fill wrote become
// that value, and a fill nobody reads any more, because the kernel that
// writes into it overwrites all of it, is dropped (see Passes.td).
//
// The reasoning is about boxes: the region of a tensor a vector write
// covers, one [lo, hi) interval per dim, each either constant or relative
// to a loop's induction variable. A loop's writes are its body's, expanded
// over its iterations; those are exact for constant bounds and writes at
// the induction variable no narrower than the step.
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/Common/Passes.h"
#include "harp/Codegen/Common/TilingUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPFORWARDFILLSPASS
#include "harp/Codegen/Common/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

namespace {
/// [iv + lo, iv + hi) along one dim, or [lo, hi) where iv is null.
struct Interval {
  Value iv;
  int64_t lo = 0, hi = 0;
};
using Box = SmallVector<Interval>;

/// The constant bounds of `loop`: lower bound, the last value its
/// induction variable takes, and its step; none when it runs no iteration.
struct Iterations {
  int64_t first, last, step;
};
} // namespace

static std::optional<Iterations> rangeOf(scf::ForOp loop) {
  std::optional<harp::ConstantBounds> bounds = harp::constantBounds(loop);
  if (!bounds || bounds->tripCount() == 0)
    return std::nullopt;
  return Iterations{bounds->lb, bounds->last(), bounds->step};
}

/// `size` elements from `index` along one dim: a constant or a loop's
/// induction variable; none for any other index.
static std::optional<Interval> intervalAt(Value index, int64_t size) {
  if (std::optional<int64_t> c = getConstantIntValue(index))
    return Interval{Value(), *c, *c + size};
  if (scf::getForInductionVarOwner(index))
    return Interval{index, 0, size};
  return std::nullopt;
}

/// The box `write` covers in its destination: in bounds, unmasked, the
/// vector along the destination's innermost dims, each index a constant
/// or a loop's induction variable.
static std::optional<Box> boxOf(vector::TransferWriteOp write) {
  auto type = dyn_cast<RankedTensorType>(write.getBase().getType());
  if (!type || write.getMask() || !write.getPermutationMap().isMinorIdentity())
    return std::nullopt;
  if (llvm::any_of(write.getInBoundsValues(), [](bool b) { return !b; }))
    return std::nullopt;
  int64_t leading = type.getRank() - write.getVectorType().getRank();
  Box box;
  for (auto [d, index] : llvm::enumerate(write.getIndices())) {
    int64_t size = int64_t(d) < leading
                       ? 1
                       : write.getVectorType().getDimSize(d - leading);
    std::optional<Interval> dim = intervalAt(index, size);
    if (!dim)
      return std::nullopt;
    box.push_back(*dim);
  }
  return box;
}

/// `box` over every iteration of `loop`: dims at its induction variable
/// become constant intervals, exact where each box is at least a step
/// wide (no gaps between iterations); otherwise their hull where `exact`
/// is false (what may be touched), none where it is true (what surely is).
static std::optional<Box> expand(const Box &box, scf::ForOp loop, bool exact) {
  std::optional<Iterations> range = rangeOf(loop);
  if (!range)
    return std::nullopt;
  Box result = box;
  for (Interval &dim : result) {
    if (dim.iv != loop.getInductionVar())
      continue;
    if (exact && dim.hi - dim.lo < range->step && range->first != range->last)
      return std::nullopt;
    dim = {Value(), range->first + dim.lo, range->last + dim.hi};
  }
  return result;
}

/// The box of the element `insert` writes, its indices constants or loop
/// induction variables.
static std::optional<Box> boxOf(tensor::InsertOp insert) {
  Box box;
  for (Value index : insert.getIndices()) {
    std::optional<Interval> dim = intervalAt(index, 1);
    if (!dim)
      return std::nullopt;
    box.push_back(*dim);
  }
  return box;
}

/// The box the vector write or element insert `op` covers; none for any
/// other op, or a box not known.
static std::optional<Box> boxOfWrite(Operation *op) {
  if (auto write = dyn_cast_or_null<vector::TransferWriteOp>(op))
    return boxOf(write);
  if (auto insert = dyn_cast_or_null<tensor::InsertOp>(op))
    return boxOf(insert);
  return std::nullopt;
}

/// `box`, in the coordinates of the slice `slice` takes, in those of its
/// source: offsets added (a constant, or a loop's induction variable along
/// a dim the box has at a constant). False where that cannot be said (a
/// strided or rank-reducing slice).
static bool toSource(Box &box, tensor::ExtractSliceOp slice) {
  if (slice.getSourceType().getRank() != slice.getResultType().getRank() ||
      int64_t(box.size()) != slice.getResultType().getRank() ||
      !slice.hasUnitStride())
    return false;
  for (auto [dim, offset] : llvm::zip(box, slice.getMixedOffsets())) {
    if (std::optional<int64_t> c = getConstantIntValue(offset)) {
      dim.lo += *c;
      dim.hi += *c;
      continue;
    }
    auto iv = dyn_cast<Value>(offset);
    if (!iv || !scf::getForInductionVarOwner(iv) || dim.iv)
      return false;
    dim.iv = iv;
  }
  return true;
}

/// The value `value` was written from by one vector write, element
/// insert, slice insert or loop; null for anything else.
static Value writtenFrom(Value value) {
  if (auto write = value.getDefiningOp<vector::TransferWriteOp>())
    return write.getBase();
  if (auto insert = value.getDefiningOp<tensor::InsertOp>())
    return insert.getDest();
  if (auto insert = value.getDefiningOp<tensor::InsertSliceOp>())
    return insert.getDest();
  if (auto result = dyn_cast<OpResult>(value))
    if (auto loop = dyn_cast<scf::ForOp>(result.getOwner()))
      return loop.getInitArgs()[result.getResultNumber()];
  return Value();
}

/// The value `value` was first written from: writtenFrom, repeated.
static Value chainBase(Value value) {
  while (Value from = writtenFrom(value))
    value = from;
  return value;
}

/// The slice `insert` writes back, if its source was computed from a
/// slice of its destination, taken at the same place (tiling's extract,
/// update, insert): the extract_slice. The destination must be the very
/// value the slice was taken from, so that what the slice's writes left
/// alone goes back unchanged.
static tensor::ExtractSliceOp writtenBack(tensor::InsertSliceOp insert) {
  auto slice =
      chainBase(insert.getSource()).getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || slice.getSource() != insert.getDest() ||
      !slice.hasUnitStride() || !insert.hasUnitStride())
    return nullptr;
  auto same = [](ArrayRef<OpFoldResult> a, ArrayRef<OpFoldResult> b) {
    return a.size() == b.size() && llvm::all_of(llvm::zip(a, b), [](auto pair) {
             return isEqualConstantIntOrValue(std::get<0>(pair),
                                              std::get<1>(pair));
           });
  };
  if (!same(slice.getMixedOffsets(), insert.getMixedOffsets()) ||
      !same(slice.getMixedSizes(), insert.getMixedSizes()))
    return nullptr;
  return slice;
}

/// The boxes written into `value` since `base`, through vector writes,
/// element inserts and loops carrying it: exactly those elements where
/// `exact`, else at least those; none when something else came between or
/// a write's box is not known. `base` is a value or the iteration argument
/// the writes of one iteration start from.
static std::optional<SmallVector<Box>> writesSince(Value value, Value base,
                                                   bool exact) {
  SmallVector<Box> boxes;
  while (value != base) {
    if (isa_and_present<vector::TransferWriteOp, tensor::InsertOp>(
            value.getDefiningOp())) {
      std::optional<Box> box = boxOfWrite(value.getDefiningOp());
      if (!box)
        return std::nullopt;
      boxes.push_back(*box);
      value = writtenFrom(value);
      continue;
    }
    if (auto insert = value.getDefiningOp<tensor::InsertSliceOp>()) {
      // A slice written back where it was taken: what was written into
      // the slice, at the slice's place.
      tensor::ExtractSliceOp slice = writtenBack(insert);
      if (!slice)
        return std::nullopt;
      std::optional<SmallVector<Box>> inner =
          writesSince(insert.getSource(), slice.getResult(), exact);
      if (!inner)
        return std::nullopt;
      for (Box box : *inner) {
        if (!toSource(box, slice))
          return std::nullopt;
        boxes.push_back(box);
      }
      value = insert.getDest();
      continue;
    }
    auto result = dyn_cast<OpResult>(value);
    auto loop = result ? dyn_cast<scf::ForOp>(result.getOwner()) : nullptr;
    if (!loop)
      return std::nullopt;
    unsigned i = result.getResultNumber();
    std::optional<SmallVector<Box>> body = writesSince(
        loop.getYieldedValues()[i], loop.getRegionIterArgs()[i], exact);
    if (!body)
      return std::nullopt;
    for (const Box &box : *body) {
      std::optional<Box> all = expand(box, loop, exact);
      if (!all)
        return std::nullopt;
      boxes.push_back(*all);
    }
    value = loop.getInitArgs()[i];
  }
  return boxes;
}

/// Whether two boxes surely share no element: along some dim both are
/// relative to the same variable (or both constant) and do not overlap.
static bool disjoint(const Box &a, const Box &b) {
  for (auto [x, y] : llvm::zip(a, b))
    if (x.iv == y.iv && (x.hi <= y.lo || y.hi <= x.lo))
      return true;
  return false;
}

/// Whether the writes into `value` since `start` all write one splat
/// vector: of `scalar` or of `constant` (set by the first write seen).
static bool onlySplatWrites(Value value, Value start, Value &scalar,
                            Attribute &constant) {
  while (value != start) {
    if (auto write = value.getDefiningOp<vector::TransferWriteOp>()) {
      if (write.getMask())
        return false;
      Value vector = write.getVector();
      Value s;
      Attribute c;
      SplatElementsAttr splat;
      if (matchPattern(vector, m_Constant(&splat)))
        c = splat.getSplatValue<Attribute>();
      else if (auto broadcast = vector.getDefiningOp<vector::BroadcastOp>();
               broadcast && !isa<VectorType>(broadcast.getSourceType()))
        s = broadcast.getSource();
      else
        return false;
      if ((scalar || constant) && (s != scalar || c != constant))
        return false;
      scalar = s;
      constant = c;
      value = write.getBase();
      continue;
    }
    auto result = dyn_cast<OpResult>(value);
    auto loop = result ? dyn_cast<scf::ForOp>(result.getOwner()) : nullptr;
    if (!loop)
      return false;
    unsigned i = result.getResultNumber();
    if (!onlySplatWrites(loop.getYieldedValues()[i],
                         loop.getRegionIterArgs()[i], scalar, constant))
      return false;
    value = loop.getInitArgs()[i];
  }
  return true;
}

/// The value every element of a fill holds: a scalar, or a constant.
struct Fill {
  Value scalar;
  Attribute constant;
};

/// `value` with the reshapes that produced it looked through.
static Value beforeReshapes(Value value) {
  while (Operation *reshape = value.getDefiningOp()) {
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(reshape))
      break;
    value = reshape->getOperand(0);
  }
  return value;
}

/// Whether `value` is a tensor.empty or a reshape of one (a fill of a
/// contiguous block is made flat: harp-tile-and-vectorize).
static bool isEmpty(Value value) {
  return static_cast<bool>(
      beforeReshapes(value).getDefiningOp<tensor::EmptyOp>());
}

/// What every element of `value` holds, if it is a fill: a linalg.fill of
/// a tensor.empty, a reshape of one, or a loop nest from a tensor.empty
/// (or a reshape of one) whose only writes are of one splat vector
/// (elements it leaves unwritten are undefined, so they may as well hold
/// the same).
static std::optional<Fill> fillOf(Value value) {
  value = beforeReshapes(value);
  if (auto fill = value.getDefiningOp<linalg::FillOp>()) {
    if (!isEmpty(fill.getOutputs()[0]))
      return std::nullopt;
    Value scalar = fill.getInputs()[0];
    Attribute constant;
    if (matchPattern(scalar, m_Constant(&constant)))
      return Fill{Value(), constant};
    return Fill{scalar, Attribute()};
  }
  if (!value.getDefiningOp<scf::ForOp>())
    return std::nullopt;
  // Back to the tensor.empty the loop nest starts from.
  Value start = chainBase(value);
  if (!isEmpty(start))
    return std::nullopt;
  Fill fill;
  if (!onlySplatWrites(value, start, fill.scalar, fill.constant) ||
      (!fill.scalar && !fill.constant))
    return std::nullopt;
  return fill;
}

/// Whether `read` loads a contraction's accumulators: through reshapes of
/// the vector it becomes the initial value of a loop whose body multiplies
/// and adds into it (a `contract` arith op, or an FMA). A reduction's
/// partial sums (a row of a softmax) are read from an L1-resident scratch
/// once per row: forwarding them saved nothing measurable and changed the
/// code around the row's other loops, which LLVM then allocated registers
/// for worse (AVX2 code, softmax 512 x 768: 200 -> 246 us on a Zen 4).
static bool loadsAccumulators(vector::TransferReadOp read) {
  Value value = read.getResult();
  while (value.hasOneUse()) {
    OpOperand &use = *value.use_begin();
    Operation *user = use.getOwner();
    if (isa<vector::ShapeCastOp, vector::BroadcastOp, vector::TransposeOp>(
            user)) {
      value = user->getResult(0);
      continue;
    }
    auto loop = dyn_cast<scf::ForOp>(user);
    if (!loop || !loop.getTiedLoopRegionIterArg(&use))
      return false;
    return loop
        .walk([](Operation *op) {
          if (isa<math::FmaOp, vector::FMAOp, vector::ContractionOp>(op))
            return WalkResult::interrupt();
          auto fastmath = dyn_cast<arith::ArithFastMathInterface>(op);
          arith::FastMathFlagsAttr flags =
              fastmath ? fastmath.getFastMathFlagsAttr() : nullptr;
          if (flags && arith::bitEnumContainsAll(
                           flags.getValue(), arith::FastMathFlags::contract))
            return WalkResult::interrupt();
          return WalkResult::advance();
        })
        .wasInterrupted();
  }
  return false;
}

namespace {
struct HarpForwardFillsPass
    : mlir::harp::impl::HarpForwardFillsPassBase<HarpForwardFillsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    DominanceInfo dominance(func);
    SmallVector<vector::TransferReadOp> reads;
    func.walk([&](vector::TransferReadOp read) {
      if (isa<RankedTensorType>(read.getBase().getType()))
        reads.push_back(read);
    });
    for (vector::TransferReadOp read : reads)
      forward(read, dominance);

    SmallVector<Value> roots;
    func.walk([&](Operation *op) {
      for (Value result : op->getResults())
        if (isa<RankedTensorType>(result.getType()) && result.hasOneUse() &&
            isa<scf::ForOp>(*result.getUsers().begin()) &&
            isa<linalg::FillOp, scf::ForOp, tensor::ExpandShapeOp,
                tensor::CollapseShapeOp>(op) &&
            fillOf(result))
          roots.push_back(result);
    });
    for (Value root : roots)
      dropIfOverwritten(root);
  }

private:
  /// Replaces `read` by the fill value its elements hold, if they hold one.
  void forward(vector::TransferReadOp read, DominanceInfo &dominance) {
    if (!loadsAccumulators(read) || read.getMask() ||
        llvm::any_of(read.getInBoundsValues(), [](bool b) { return !b; }))
      return;
    // The read's box: from its indices and the dims its map reads (dims
    // the map broadcasts read one element).
    Box box;
    for (Value index : read.getIndices()) {
      std::optional<Interval> dim = intervalAt(index, 1);
      if (!dim)
        return;
      box.push_back(*dim);
    }
    for (auto [i, result] :
         llvm::enumerate(read.getPermutationMap().getResults()))
      if (auto dim = dyn_cast<AffineDimExpr>(result))
        box[dim.getPosition()].hi =
            box[dim.getPosition()].lo + read.getVectorType().getDimSize(i);

    Value value = read.getBase();
    while (true) {
      if (std::optional<Fill> fill = fillOf(value)) {
        replace(read, *fill, dominance);
        return;
      }
      if (auto arg = dyn_cast<BlockArgument>(value)) {
        // An iteration argument of a loop whose iterations are
        // independent (harp.parallel): no other iteration wrote what this
        // one reads. Outside the loop the read covers all its iterations.
        auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
        if (!loop || !loop->hasAttr(harp::kParallelLoopAttr) ||
            arg.getArgNumber() == 0)
          return;
        std::optional<Box> all = expand(box, loop, /*exact=*/false);
        if (!all)
          return;
        box = *all;
        value = loop.getTiedLoopInit(arg)->get();
        continue;
      }
      if (auto slice = value.getDefiningOp<tensor::ExtractSliceOp>()) {
        if (!toSource(box, slice))
          return;
        value = slice.getSource();
        continue;
      }
      // Written before the read: only elsewhere.
      Value before = writtenFrom(value);
      if (!before)
        return;
      std::optional<SmallVector<Box>> written =
          writesSince(value, before, /*exact=*/false);
      if (!written || !llvm::all_of(*written, [&](const Box &w) {
            return disjoint(w, box);
          }))
        return;
      value = before;
    }
  }

  void replace(vector::TransferReadOp read, const Fill &fill,
               DominanceInfo &dominance) {
    OpBuilder b(read);
    VectorType type = read.getVectorType();
    Value value;
    if (fill.constant) {
      auto typed = dyn_cast<TypedAttr>(fill.constant);
      if (!typed || typed.getType() != type.getElementType())
        return;
      // At the function's entry, as the canonicalizer would hoist it.
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          &read->getParentOfType<func::FuncOp>().getBody().front());
      value = arith::ConstantOp::create(
          b, read.getLoc(), DenseElementsAttr::get(type, fill.constant));
    } else {
      if (fill.scalar.getType() != type.getElementType() ||
          !dominance.properlyDominates(fill.scalar, read))
        return;
      value = vector::BroadcastOp::create(b, read.getLoc(), type, fill.scalar);
    }
    read.replaceAllUsesWith(value);
    read.erase();
  }

  /// Replaces the fill `root` by an empty tensor when the loop nest using
  /// it reads none of it and overwrites all of it.
  void dropIfOverwritten(Value root) {
    auto type = cast<RankedTensorType>(root.getType());
    if (!type.hasStaticShape())
      return;
    // Follow the tensor through the loops and writes that only write into
    // it (a peeled loop's remainder writes into the main loop's result).
    Value value = root;
    while (value.hasOneUse()) {
      OpOperand &use = *value.use_begin();
      Operation *user = use.getOwner();
      if (auto loop = dyn_cast<scf::ForOp>(user)) {
        if (!onlyWritten(loop.getTiedLoopRegionIterArg(&use)))
          break;
        value = loop.getTiedLoopResult(&use);
      } else if (auto write = dyn_cast<vector::TransferWriteOp>(user);
                 write && value == write.getBase()) {
        value = write.getResult();
      } else if (auto insert = dyn_cast<tensor::InsertOp>(user);
                 insert && value == insert.getDest()) {
        value = insert.getResult();
      } else {
        break;
      }
    }
    if (value == root)
      return;
    std::optional<SmallVector<Box>> written =
        writesSince(value, root, /*exact=*/true);
    if (!written || !covers(*written, type.getShape()))
      return;
    // The fill itself becomes empty; reshapes of it stay. (Folded into an
    // empty tensor of the reshaped type, a packed matmul's result would
    // be allocated in panel shape, no view of the caller's buffer, and
    // copied into it: 4 MB per 1024 x 1024 result.)
    Value fill = root;
    while (isa_and_present<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(
        fill.getDefiningOp())) {
      fill = fill.getDefiningOp()->getOperand(0);
      // Another reader of the fill, or of a reshape of it, keeps it.
      if (!fill.hasOneUse())
        return;
    }
    // A fill of a reshaped empty tensor (a flat fill) gives way to that
    // reshape, so that the buffer keeps the shape it was made in.
    Operation *producer = fill.getDefiningOp();
    auto linalgFill = dyn_cast_if_present<linalg::FillOp>(producer);
    Value base = linalgFill ? linalgFill.getOutputs()[0] : chainBase(fill);
    Value empty;
    if (base != fill && base.getType() == fill.getType() &&
        !base.getDefiningOp<tensor::EmptyOp>() && isEmpty(base)) {
      empty = base;
      fill.replaceAllUsesWith(empty);
    } else {
      auto fillType = cast<RankedTensorType>(fill.getType());
      OpBuilder b(fill.getContext());
      b.setInsertionPointAfterValue(fill);
      empty = tensor::EmptyOp::create(b, fill.getLoc(), fillType.getShape(),
                                      fillType.getElementType());
      fill.replaceAllUsesExcept(empty, empty.getDefiningOp());
    }
    // Nothing reads the fill any more; erased here rather than by a
    // canonicalizer, which would also fold the reshapes into the empty
    // tensor.
    if (!producer || !isOpTriviallyDead(producer))
      return;
    llvm::SetVector<Operation *> inputs;
    for (Value operand : producer->getOperands())
      if (Operation *input = operand.getDefiningOp())
        inputs.insert(input);
    producer->erase();
    for (Operation *input : inputs)
      if (isOpTriviallyDead(input))
        input->erase();
  }

  /// Whether `value` (a loop's iteration argument) is only written into,
  /// carried by loops and yielded: no op reads what it holds.
  static bool onlyWritten(Value value) {
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (auto write = dyn_cast<vector::TransferWriteOp>(user)) {
        if (use.get() != write.getBase() || !onlyWritten(write.getResult()))
          return false;
      } else if (auto insert = dyn_cast<tensor::InsertOp>(user)) {
        if (use.get() != insert.getDest() || !onlyWritten(insert.getResult()))
          return false;
      } else if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user)) {
        if (!onlyWritten(slice.getResult()))
          return false;
      } else if (auto insert = dyn_cast<tensor::InsertSliceOp>(user)) {
        // Into the tensor, or a slice put back where it was taken.
        if (use.get() == insert.getDest() ? !onlyWritten(insert.getResult())
                                          : !writtenBack(insert))
          return false;
      } else if (auto loop = dyn_cast<scf::ForOp>(user)) {
        if (!onlyWritten(loop.getTiedLoopRegionIterArg(&use)) ||
            !onlyWritten(loop.getTiedLoopResult(&use)))
          return false;
      } else if (!isa<scf::YieldOp>(user)) {
        return false;
      }
    }
    return true;
  }

  /// Whether the union of `boxes` (all constant) is the whole of `shape`:
  /// boxes equal but along one dim, where they touch or overlap, merge
  /// until one box is left.
  static bool covers(SmallVector<Box> boxes, ArrayRef<int64_t> shape) {
    for (const Box &box : boxes)
      if (llvm::any_of(box, [](const Interval &i) { return bool(i.iv); }))
        return false;
    bool merged = true;
    while (merged && boxes.size() > 1) {
      merged = false;
      for (size_t i = 0; i < boxes.size() && !merged; ++i)
        for (size_t j = i + 1; j < boxes.size() && !merged; ++j) {
          std::optional<size_t> along;
          bool mergeable = true;
          for (size_t d = 0; d < shape.size() && mergeable; ++d) {
            const Interval &x = boxes[i][d], &y = boxes[j][d];
            if (x.lo == y.lo && x.hi == y.hi)
              continue;
            if (along || x.hi < y.lo || y.hi < x.lo)
              mergeable = false;
            along = d;
          }
          if (!mergeable)
            continue;
          if (along) {
            Interval &x = boxes[i][*along];
            const Interval &y = boxes[j][*along];
            x = {Value(), std::min(x.lo, y.lo), std::max(x.hi, y.hi)};
          }
          boxes.erase(boxes.begin() + j);
          merged = true;
        }
    }
    if (boxes.size() != 1)
      return false;
    for (auto [interval, size] : llvm::zip(boxes.front(), shape))
      if (interval.lo > 0 || interval.hi < size)
        return false;
    return true;
  }
};
} // namespace
