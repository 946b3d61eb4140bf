//===- DataMovement.cpp - concat, gather, scatter_add ---------------------===//

#include "KernelBuilder.h"

#include "harp/Conversion/HarpToLinalg/HarpToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::harp;

namespace {
/// tensor.concat of the operands along `dim`: one op, bufferized as one
/// allocation and a copy of each operand into its slice. A chain of
/// tensor.insert_slice ops into an empty result bufferized the same way, but
/// one-shot bufferization's analysis is superlinear in such chains (about
/// n^4: 100 operands took 3.5 s, 200 took 60 s), where tensor.concat is one
/// op to it (0.02 s for 200).
struct ConcatToTensorConcat : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    // Empty operands add nothing (and tensor.concat would bufferize one to a
    // subview starting past the end, which the verifier rejects).
    SmallVector<Value> inputs;
    for (Value input : op.getInputs())
      if (cast<RankedTensorType>(input.getType()).getNumElements() != 0)
        inputs.push_back(input);
    RankedTensorType type = op.getType();
    if (inputs.empty())
      rewriter.replaceOpWithNewOp<tensor::EmptyOp>(op, type.getShape(),
                                                   type.getElementType());
    else if (inputs.size() == 1)
      rewriter.replaceOp(op, inputs.front());
    else
      rewriter.replaceOpWithNewOp<tensor::ConcatOp>(op, type, op.getDim(),
                                                    inputs);
    return success();
  }
};

/// An index tensor broadcast along the innermost dim (an embedding's rows):
/// the tensor its views read and their layout, where the layout is unmasked
/// and reads no innermost index, and `dim`, the dim the index selects along,
/// is not the innermost. Every row of such an index holds one value, which
/// readRowIndex reads.
static std::optional<std::pair<Value, ViewAttr>> rowIndex(Value index,
                                                          int64_t dim) {
  int64_t rank = cast<RankedTensorType>(index.getType()).getRank();
  auto [source, layout] = stripViews(index);
  if (!layout || layout.hasMask() || dim == rank - 1 ||
      layout.getMap().isFunctionOfDim(rank - 1))
    return std::nullopt;
  return std::make_pair(source, layout);
}

/// The value of a rowIndex at `indices` (the innermost ignored), read from
/// its source through its layout.
static Value readRowIndex(OpBuilder &b, Location loc,
                          std::pair<Value, ViewAttr> index,
                          ValueRange indices) {
  SmallVector<Value> at;
  for (AffineExpr expr : index.second.getMap().getResults())
    at.push_back(lowering::applyExpr(b, loc, expr, indices));
  return tensor::ExtractOp::create(b, loc, index.first, at);
}

/// Loop bounds 0 to `shape[i]` step 1, for scf::buildLoopNest.
static void loopBounds(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                       SmallVectorImpl<Value> &lbs, SmallVectorImpl<Value> &ubs,
                       SmallVectorImpl<Value> &steps) {
  for (int64_t size : shape) {
    lbs.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    ubs.push_back(arith::ConstantIndexOp::create(b, loc, size));
    steps.push_back(arith::ConstantIndexOp::create(b, loc, 1));
  }
}

/// result[i] = input[i with i[dim] = index[i]], one kernel over the index.
struct GatherToGeneric : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GatherOp op,
                                PatternRewriter &rewriter) const override {
    Value input = op.getInput();
    RankedTensorType inputType = op.getInput().getType();
    int64_t dim = op.getDim();
    ArrayRef<int64_t> shape = op.getIndex().getType().getShape();
    // An index broadcast along the innermost dim (the rows of an embedding
    // lookup) is read in the body through its view: the same index for a
    // whole row, so the row is read as contiguous vectors, not gathered
    // element by element.
    std::optional<std::pair<Value, ViewAttr>> rows =
        rowIndex(op.getIndex(), dim);
    SmallVector<Value> operands;
    if (!rows)
      operands.push_back(op.getIndex());
    Value result = lowering::buildKernel(
        rewriter, op.getLoc(), shape, operands, {}, std::nullopt,
        inputType.getElementType(),
        [&](OpBuilder &b, Location loc, ValueRange scalars,
            ValueRange indices) -> Value {
          Value raw =
              rows ? readRowIndex(b, loc, *rows, indices) : scalars.front();
          Value at = arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
          SmallVector<Value> coords(indices);
          coords[dim] =
              lowering::clampIndex(b, loc, at, inputType.getDimSize(dim));
          return tensor::ExtractOp::create(b, loc, input, coords);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// `old` + `add`, element-wise, in the element type's addition.
static Value addElements(OpBuilder &b, Location loc, Value old, Value add) {
  if (isa<ComplexType>(add.getType()))
    return complex::AddOp::create(b, loc, old, add);
  if (isa<FloatType>(add.getType()))
    return arith::AddFOp::create(b, loc, old, add);
  return arith::AddIOp::create(b, loc, old, add);
}

/// A loop nest over the index, accumulating into a copy of dest: scatters
/// may hit one position many times, so this is sequential by nature.
struct ScatterAddToLoops : OpRewritePattern<ScatterAddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ScatterAddOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType destType = op.getDest().getType();
    ArrayRef<int64_t> shape = op.getIndex().getType().getShape();
    int64_t dim = op.getDim();
    // An index broadcast along the innermost dim (the gradient of an
    // embedding lookup) names one destination row per source row: the loops
    // run over the rows, read the index once per row through its view (the
    // broadcast is never materialised) and add the whole row with one
    // element-wise kernel, which harp-vectorize turns into vectors.
    if (std::optional<std::pair<Value, ViewAttr>> rows =
            rowIndex(op.getIndex(), dim);
        rows && shape.back() > 1)
      return scatterRows(op, *rows, rewriter);
    SmallVector<Value> lbs, ubs, steps;
    loopBounds(rewriter, loc, shape, lbs, ubs, steps);
    Value src = op.getSrc(), index = op.getIndex();
    scf::LoopNest nest = scf::buildLoopNest(
        rewriter, loc, lbs, ubs, steps, ValueRange{op.getDest()},
        [&](OpBuilder &b, Location l, ValueRange ivs,
            ValueRange acc) -> scf::ValueVector {
          Value raw = tensor::ExtractOp::create(b, l, index, ivs);
          Value at = arith::IndexCastOp::create(b, l, b.getIndexType(), raw);
          SmallVector<Value> coords(ivs);
          coords[dim] =
              lowering::clampIndex(b, l, at, destType.getDimSize(dim));
          Value add = tensor::ExtractOp::create(b, l, src, ivs);
          Value old = tensor::ExtractOp::create(b, l, acc.front(), coords);
          Value sum = addElements(b, l, old, add);
          return {tensor::InsertOp::create(b, l, sum, acc.front(), coords)};
        });
    rewriter.replaceOp(op, nest.results.front());
    return success();
  }

  /// The scatter of `op` row by row, its index `rows` (rowIndex): a loop
  /// nest over all dims but the innermost.
  LogicalResult scatterRows(ScatterAddOp op, std::pair<Value, ViewAttr> rows,
                            PatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    RankedTensorType destType = op.getDest().getType();
    RankedTensorType srcType = op.getSrc().getType();
    ArrayRef<int64_t> shape = op.getIndex().getType().getShape();
    int64_t rank = shape.size(), dim = op.getDim(), width = shape.back();
    SmallVector<Value> lbs, ubs, steps;
    loopBounds(rewriter, loc, shape.drop_back(), lbs, ubs, steps);
    auto rowType = RankedTensorType::get({width}, srcType.getElementType());
    Value src = op.getSrc();
    scf::LoopNest nest = scf::buildLoopNest(
        rewriter, loc, lbs, ubs, steps, ValueRange{op.getDest()},
        [&](OpBuilder &b, Location l, ValueRange ivs,
            ValueRange acc) -> scf::ValueVector {
          Value zero = arith::ConstantIndexOp::create(b, l, 0);
          SmallVector<Value> at(ivs);
          at.push_back(zero);
          Value raw = readRowIndex(b, l, rows, at);
          Value row = arith::IndexCastOp::create(b, l, b.getIndexType(), raw);
          SmallVector<OpFoldResult> srcOffsets(getAsOpFoldResult(at));
          SmallVector<OpFoldResult> destOffsets(srcOffsets);
          destOffsets[dim] =
              lowering::clampIndex(b, l, row, destType.getDimSize(dim));
          SmallVector<OpFoldResult> sizes(rank, b.getIndexAttr(1));
          sizes.back() = b.getIndexAttr(width);
          SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
          Value add = tensor::ExtractSliceOp::create(
              b, l, rowType, src, srcOffsets, sizes, strides);
          Value old = tensor::ExtractSliceOp::create(
              b, l, rowType, acc.front(), destOffsets, sizes, strides);
          AffineMap identity = b.getMultiDimIdentityMap(1);
          Value sum = linalg::GenericOp::create(
                          b, l, rowType, ValueRange{old, add}, ValueRange{old},
                          SmallVector<AffineMap>(3, identity),
                          SmallVector<utils::IteratorType>{
                              utils::IteratorType::parallel},
                          [](OpBuilder &nb, Location nl, ValueRange args) {
                            linalg::YieldOp::create(
                                nb, nl, addElements(nb, nl, args[0], args[1]));
                          })
                          .getResult(0);
          return {tensor::InsertSliceOp::create(b, l, sum, acc.front(),
                                                destOffsets, sizes, strides)
                      .getResult()};
        });
    rewriter.replaceOp(op, nest.results.front());
    return success();
  }
};
} // namespace

void mlir::harp::populateDataMovementToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ConcatToTensorConcat, GatherToGeneric, ScatterAddToLoops>(
      patterns.getContext());
}
