//===- LowerCopies.cpp - harp-lower-copies --------------------------------===//
//
// Strided memref.copy as loops of vector transfers (see the pass
// description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/CPU/Passes.h"

#include "CodegenConfig.h"
#include "harp/Codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPLOWERCOPIESPASS
#include "harp/Codegen/CPU/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

/// The innermost stride of `type` when it is a memref of static shape with
/// a strided layout whose elements are integers or floats of whole bytes
/// (an `i1` is a byte in memory but a bit in a vector); nullopt otherwise.
static std::optional<int64_t> innermostStride(MemRefType type) {
  Type element = type.getElementType();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (type.getRank() == 0 || !type.hasStaticShape() ||
      !element.isIntOrFloat() || element.getIntOrFloatBitWidth() < 8 ||
      element.getIntOrFloatBitWidth() % 8 != 0 ||
      failed(type.getStridesAndOffset(strides, offset)))
    return std::nullopt;
  return strides.back();
}

/// Replaces `copy` by loops over the dims longer than one; rows (the
/// innermost dim) move as vectors of `lanes` and one shorter vector for the
/// rest when contiguous in both memrefs, element by element otherwise.
static void lowerCopy(RewriterBase &rewriter, memref::CopyOp copy,
                      unsigned vectorBits, unsigned parallelBytes) {
  auto srcType = cast<MemRefType>(copy.getSource().getType());
  auto dstType = cast<MemRefType>(copy.getTarget().getType());
  ArrayRef<int64_t> shape = srcType.getShape();
  int64_t rank = srcType.getRank();
  Location loc = copy.getLoc();
  rewriter.setInsertionPoint(copy);
  if (srcType.getNumElements() == 0) {
    rewriter.eraseOp(copy);
    return;
  }
  Type element = srcType.getElementType();
  int64_t bits = element.getIntOrFloatBitWidth();
  int64_t inner = shape.back();
  Value src = copy.getSource(), dst = copy.getTarget();
  bool rows = *innermostStride(srcType) == 1 && *innermostStride(dstType) == 1;
  int64_t lanes = std::max<int64_t>(1, vectorBits / bits);
  int64_t whole = inner - inner % lanes;
  // Constants ahead of the loops.
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  Value zero = constant(0), one = constant(1);
  SmallVector<Value> uppers(rank);
  for (int64_t d = 0; d < rank; ++d)
    if (shape[d] > 1 && (d + 1 < rank || !rows))
      uppers[d] = constant(shape[d]);
  Value wholeEnd, step, padding;
  if (rows) {
    if (whole > lanes || (whole > 0 && inner % lanes))
      wholeEnd = constant(whole);
    if (whole > lanes)
      step = constant(lanes);
    padding = ub::PoisonOp::create(rewriter, loc, element);
  }

  SmallVector<Value> indices(rank, zero);
  scf::ForOp outermost;
  auto loopOver = [&](Value upper, Value loopStep) {
    auto loop = scf::ForOp::create(rewriter, loc, zero, upper, loopStep);
    if (!outermost)
      outermost = loop;
    rewriter.setInsertionPoint(loop.getBody()->getTerminator());
    return loop.getInductionVar();
  };
  for (int64_t d = 0; d + 1 < rank; ++d)
    if (uppers[d])
      indices[d] = loopOver(uppers[d], one);
  if (rows) {
    auto move = [&](Value column, int64_t width) {
      indices.back() = column;
      auto vectorType = VectorType::get({width}, element);
      SmallVector<bool> inBounds(1, true);
      Value v = vector::TransferReadOp::create(rewriter, loc, vectorType, src,
                                               indices, padding, inBounds);
      vector::TransferWriteOp::create(rewriter, loc, v, dst, indices, inBounds);
    };
    if (whole == lanes) {
      move(zero, lanes);
    } else if (whole > 0) {
      OpBuilder::InsertionGuard guard(rewriter);
      move(loopOver(wholeEnd, step), lanes);
    }
    if (inner % lanes)
      move(whole > 0 ? wholeEnd : zero, inner % lanes);
  } else {
    if (uppers.back())
      indices.back() = loopOver(uppers.back(), one);
    Value v = memref::LoadOp::create(rewriter, loc, src, indices);
    memref::StoreOp::create(rewriter, loc, v, dst, indices);
  }
  if (outermost &&
      srcType.getNumElements() * (bits / 8) >= int64_t(parallelBytes))
    outermost->setAttr(harp::kParallelLoopAttr, rewriter.getUnitAttr());
  rewriter.eraseOp(copy);
}

/// The value a fill of a whole buffer writes: a `linalg.fill`, or a
/// `linalg.map` with no inputs yielding a value from outside (what a
/// padded tensor's fill bufferizes to); null otherwise.
static Value filledValue(Operation *op) {
  if (auto fill = dyn_cast<linalg::FillOp>(op);
      fill && fill.hasPureBufferSemantics())
    return fill.value();
  auto map = dyn_cast<linalg::MapOp>(op);
  if (!map || !map.hasPureBufferSemantics() || map.getNumDpsInputs() != 0)
    return {};
  auto yield = cast<linalg::YieldOp>(map.getBody()->getTerminator());
  Value value = yield.getValues().front();
  if (value.getParentRegion()->isProperAncestor(&map.getRegion()))
    return value;
  return {};
}

/// The buffer `view` is a view of (through subviews, reshapes and casts).
static Value baseBuffer(Value view) {
  while (Operation *def = view.getDefiningOp()) {
    auto viewLike = dyn_cast<ViewLikeOpInterface>(def);
    if (!viewLike)
      break;
    view = viewLike.getViewSource();
  }
  return view;
}

/// A padded image on buffers: a fill of a whole buffer B, then a copy into
/// a subview of B (static offsets and sizes, unit strides) with only
/// side-effect free ops between. The fill then writes only where the copy
/// does not: for each dim d, the slabs before and after the subview along
/// d, within the subview along the dims before d (two rows and two
/// columns of a 2-D image padded by one, where it wrote the whole image).
static void fillAroundCopy(RewriterBase &rewriter, memref::CopyOp copy) {
  auto subview = copy.getTarget().getDefiningOp<memref::SubViewOp>();
  if (!subview || !subview.hasUnitStride())
    return;
  Value buffer = subview.getSource();
  auto bufferType = dyn_cast<MemRefType>(buffer.getType());
  if (!bufferType || !bufferType.hasStaticShape() ||
      subview.getSourceType().getRank() != bufferType.getRank() ||
      ShapedType::isDynamicShape(subview.getStaticOffsets()) ||
      ShapedType::isDynamicShape(subview.getStaticSizes()))
    return;
  Operation *fill = nullptr;
  Value value;
  for (Operation *op = copy->getPrevNode(); op; op = op->getPrevNode()) {
    if ((value = filledValue(op))) {
      fill = op;
      break;
    }
    if (!isMemoryEffectFree(op))
      return;
  }
  if (!fill ||
      cast<linalg::LinalgOp>(fill).getDpsInitOperand(0)->get() != buffer)
    return;
  // A source in the same buffer would read what the fill no longer writes.
  if (baseBuffer(copy.getSource()) == baseBuffer(buffer))
    return;
  ArrayRef<int64_t> offsets = subview.getStaticOffsets();
  ArrayRef<int64_t> sizes = subview.getStaticSizes();
  ArrayRef<int64_t> shape = bufferType.getShape();
  int64_t rank = bufferType.getRank();
  Location loc = fill->getLoc();
  rewriter.setInsertionPoint(fill);
  auto fillSlab = [&](ArrayRef<int64_t> slabOffsets,
                      ArrayRef<int64_t> slabSizes) {
    if (llvm::is_contained(slabSizes, 0))
      return;
    SmallVector<int64_t> strides(rank, 1);
    Value slab = memref::SubViewOp::create(rewriter, loc, buffer, slabOffsets,
                                           slabSizes, strides);
    linalg::FillOp::create(rewriter, loc, value, slab);
  };
  for (int64_t d = 0; d < rank; ++d) {
    SmallVector<int64_t> slabOffsets(rank, 0), slabSizes(shape);
    for (int64_t e = 0; e < d; ++e) {
      slabOffsets[e] = offsets[e];
      slabSizes[e] = sizes[e];
    }
    slabOffsets[d] = 0;
    slabSizes[d] = offsets[d];
    fillSlab(slabOffsets, slabSizes);
    slabOffsets[d] = offsets[d] + sizes[d];
    slabSizes[d] = shape[d] - offsets[d] - sizes[d];
    fillSlab(slabOffsets, slabSizes);
  }
  rewriter.eraseOp(fill);
}

namespace {
struct HarpLowerCopiesPass
    : harp::impl::HarpLowerCopiesPassBase<HarpLowerCopiesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(harp::cpu::makeConfig(getOperation(), getArgument(), vectorBits,
                                     /*registerVectors=*/1)))
      return signalPassFailure();
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      auto src = dyn_cast<MemRefType>(copy.getSource().getType());
      auto dst = dyn_cast<MemRefType>(copy.getTarget().getType());
      if (!src || !dst || !innermostStride(src) || !innermostStride(dst) ||
          src.getShape() != dst.getShape() ||
          src.getElementType() != dst.getElementType())
        return;
      // One memcpy already.
      if (memref::isStaticShapeAndContiguousRowMajor(src) &&
          memref::isStaticShapeAndContiguousRowMajor(dst))
        return;
      copies.push_back(copy);
    });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp copy : copies) {
      fillAroundCopy(rewriter, copy);
      lowerCopy(rewriter, copy, vectorBits, parallelBytes);
    }
  }
};
} // namespace
