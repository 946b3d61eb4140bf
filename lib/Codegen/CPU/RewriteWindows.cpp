//===- RewriteWindows.cpp - harp-rewrite-windows --------------------------===//
//
// De-interleaves strided convolution windows and flattens unit-stride ones
// onto their image's rows (see the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/CPU/Passes.h"
#include "harp/Support/Greedy.h"

#include "CodegenConfig.h"
#include "harp/Codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPREWRITEWINDOWSPASS
#include "harp/Codegen/CPU/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;
using namespace mlir::harp::cpu;

/// `e` as `out + k` (either order) with `k` a reduction dim other than
/// `out`; sets `k`.
static bool isWindowSum(AffineExpr e, unsigned out,
                        ArrayRef<utils::IteratorType> iterators, unsigned &k) {
  auto add = dyn_cast<AffineBinaryOpExpr>(e);
  if (!add || add.getKind() != AffineExprKind::Add)
    return false;
  auto a = dyn_cast<AffineDimExpr>(add.getLHS());
  auto b = dyn_cast<AffineDimExpr>(add.getRHS());
  if (!a || !b)
    return false;
  if (a.getPosition() == out)
    k = b.getPosition();
  else if (b.getPosition() == out)
    k = a.getPosition();
  else
    return false;
  return k != out && linalg::isReductionIterator(iterators[k]);
}

/// Whether a window rewrite may rebuild `op` with other maps and loops: one
/// result on tensors, static loop ranges, no `linalg.index` in its body
/// (whose dims the rewrites renumber).
static bool isRewritableWindowKernel(linalg::GenericOp op) {
  return op.hasPureTensorSemantics() && op.getNumDpsInits() == 1 &&
         op.getNumResults() == 1 &&
         op.getBody()->getOps<linalg::IndexOp>().empty() &&
         !llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic);
}

/// `e` as `s * out + k` (either order, s > 1 a constant) with `k` a
/// reduction dim other than `out`; sets `k` and `s`.
static bool isStridedWindowSum(AffineExpr e, unsigned out,
                               ArrayRef<utils::IteratorType> iterators,
                               unsigned &k, int64_t &s) {
  auto add = dyn_cast<AffineBinaryOpExpr>(e);
  if (!add || add.getKind() != AffineExprKind::Add)
    return false;
  for (auto [scaled, other] : {std::pair(add.getLHS(), add.getRHS()),
                               std::pair(add.getRHS(), add.getLHS())}) {
    auto mul = dyn_cast<AffineBinaryOpExpr>(scaled);
    auto dim = dyn_cast<AffineDimExpr>(other);
    if (!mul || mul.getKind() != AffineExprKind::Mul || !dim)
      continue;
    auto d = dyn_cast<AffineDimExpr>(mul.getLHS());
    auto c = dyn_cast<AffineConstantExpr>(mul.getRHS());
    if (!d || !c || d.getPosition() != out || c.getValue() < 2 ||
        dim.getPosition() == out ||
        !linalg::isReductionIterator(iterators[dim.getPosition()]))
      continue;
    k = dim.getPosition();
    s = c.getValue();
    return true;
  }
  return false;
}

/// Whether the terms `op` sums vanish where one of `phased` (inputs) reads
/// zero: its body yields `out + a * b` (float or integer, either order)
/// with `a` or `b` an element of a phased input, possibly widened.
static bool termsVanishWithPhased(linalg::GenericOp op,
                                  ArrayRef<OpOperand *> phased) {
  auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
  Value sum = yield.getValues().front();
  Operation *add = sum.getDefiningOp();
  if (!add || !isa<arith::AddFOp, arith::AddIOp>(add))
    return false;
  Value out = op.getMatchingBlockArgument(op.getDpsInitOperand(0));
  Value term;
  if (add->getOperand(0) == out)
    term = add->getOperand(1);
  else if (add->getOperand(1) == out)
    term = add->getOperand(0);
  else
    return false;
  Operation *mul = term.getDefiningOp();
  if (!mul || !isa<arith::MulFOp, arith::MulIOp>(mul))
    return false;
  auto isPhased = [&](Value v) {
    while (Operation *def = v.getDefiningOp()) {
      if (!isa<arith::ExtFOp, arith::ExtSIOp, arith::ExtUIOp>(def))
        return false;
      v = def->getOperand(0);
    }
    return llvm::any_of(phased, [&](OpOperand *input) {
      return op.getMatchingBlockArgument(input) == v;
    });
  };
  return isPhased(mul->getOperand(0)) || isPhased(mul->getOperand(1));
}

/// De-interleaves a strided convolution window: a kernel reading
/// `X[..., s * ow + kw]` (stride s > 1) along the dim its result is
/// contiguous in would read every s-th element, which the vectorizer
/// cannot load as a vector (the kernel stayed scalar: a 7x7 stride-2
/// ResNet stem ran at 4 GFLOP/s). With kw = s * kq + r, the read is
/// Xd[..., r, ow + kq] of Xd[..., r, q] = X[..., s * q + r], X's columns
/// sorted by their phase r (one copy of X, padded with zeros to whole
/// phases), and the kernel reduces over (kq, r) instead of kw: a window of
/// unit stride along ow. Operands that read kw as their last dim (the
/// filter) are padded with zeros to whole phases and reshaped to
/// [..., kq, r], so the padding adds terms of zero: where the kernel size
/// is not a multiple of s, only for a body that sums products with a
/// filter element (a plain sum or max over the window would take in the
/// padded taps' X values). Only where no other operand reads ow and X
/// reads kw nowhere else.
static void deinterleaveStridedWindow(RewriterBase &rewriter,
                                      linalg::GenericOp op) {
  if (!isRewritableWindowKernel(op))
    return;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (outMap.getNumResults() == 0)
    return;
  auto outLast = dyn_cast<AffineDimExpr>(outMap.getResults().back());
  if (!outLast || !linalg::isParallelIterator(iterators[outLast.getPosition()]))
    return;
  unsigned ow = outLast.getPosition(), kw = 0;
  int64_t stride = 0;
  OpOperand *window = nullptr;
  SmallVector<OpOperand *> phased;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    if (!map.isFunctionOfDim(ow))
      continue;
    unsigned rank = map.getNumResults();
    if (window || !type || !type.hasStaticShape() || rank == 0 ||
        !isStridedWindowSum(map.getResults().back(), ow, iterators, kw, stride))
      return;
    for (AffineExpr result : map.getResults().drop_back())
      if (result.isFunctionOfDim(ow) || result.isFunctionOfDim(kw))
        return;
    window = input;
  }
  if (!window)
    return;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (input == window || !map.isFunctionOfDim(kw))
      continue;
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    auto last = map.getNumResults()
                    ? dyn_cast<AffineDimExpr>(map.getResults().back())
                    : nullptr;
    if (!type || !type.hasStaticShape() || !last || last.getPosition() != kw ||
        llvm::any_of(map.getResults().drop_back(),
                     [&](AffineExpr e) { return e.isFunctionOfDim(kw); }))
      return;
    phased.push_back(input);
  }

  int64_t taps = ranges[kw], phases = llvm::divideCeil(taps, stride);
  if (taps % stride != 0 && !termsVanishWithPhased(op, phased))
    return;
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  auto xType = cast<RankedTensorType>(window->get().getType());
  int64_t xRank = xType.getRank(), width = xType.getShape().back();
  // Columns read: up to s * (OW - 1 + phases - 1) + s - 1.
  int64_t groups = std::max<int64_t>(llvm::divideCeil(width, stride),
                                     ranges[ow] + phases - 1);
  rewriter.setInsertionPoint(op);
  auto zero = [&](Type type) {
    return arith::ConstantOp::create(
        rewriter, loc, type, cast<TypedAttr>(rewriter.getZeroAttr(type)));
  };
  // Pads the last dim of `value` with zeros to `size`, then splits it into
  // [size / inner, inner].
  auto padAndSplit = [&](Value value, int64_t size, int64_t inner) {
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> shape(type.getShape());
    if (shape.back() != size) {
      shape.back() = size;
      value = tensor::createPadHighOp(
          RankedTensorType::get(shape, type.getElementType()), value,
          zero(type.getElementType()), /*nofold=*/false, loc, rewriter);
    }
    SmallVector<ReassociationIndices> split;
    for (int64_t i = 0; i + 1 < int64_t(shape.size()); ++i)
      split.push_back({i});
    split.push_back({int64_t(shape.size()) - 1, int64_t(shape.size())});
    shape.back() = size / inner;
    shape.push_back(inner);
    return tensor::ExpandShapeOp::create(
               rewriter, loc,
               RankedTensorType::get(shape, type.getElementType()), value,
               split)
        .getResult();
  };
  // Xd[..., r, q] = X[..., s q + r]: X split into [..., q, r], transposed.
  Value split = padAndSplit(window->get(), groups * stride, stride);
  SmallVector<int64_t> dShape(xType.getShape().drop_back());
  dShape.append({stride, groups});
  SmallVector<AffineExpr> readX, writeX;
  for (int64_t i = 0; i < xRank + 1; ++i)
    writeX.push_back(getAffineDimExpr(i, ctx));
  readX.assign(writeX.begin(), writeX.end() - 2);
  readX.append({writeX[xRank], writeX[xRank - 1]});
  Value sorted = copyThrough(rewriter, loc, split,
                             AffineMap::get(xRank + 1, 0, readX, ctx), dShape);

  // The kernel over the old dims (kw now kq) and r, a new last dim.
  unsigned numLoops = op.getNumLoops(), r = numLoops;
  auto dim = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
  auto widen = [&](AffineMap map) {
    return AffineMap::get(numLoops + 1, 0, map.getResults(), ctx);
  };
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (input != window && !llvm::is_contained(phased, input)) {
      // Read as before (a 0-d operand too: it has no last dim to replace).
      inputs.push_back(input->get());
      maps.push_back(widen(map));
      continue;
    }
    SmallVector<AffineExpr> results(map.getResults().drop_back());
    if (input == window) {
      results.append({dim(r), dim(ow) + dim(kw)});
      inputs.push_back(sorted);
    } else {
      results.append({dim(kw), dim(r)});
      inputs.push_back(padAndSplit(input->get(), phases * stride, stride));
    }
    maps.push_back(AffineMap::get(numLoops + 1, 0, results, ctx));
  }
  maps.push_back(widen(outMap));
  SmallVector<utils::IteratorType> newIterators(iterators);
  newIterators.push_back(utils::IteratorType::reduction);
  auto rewritten =
      linalg::GenericOp::create(rewriter, loc, op.getResultTypes(), inputs,
                                op.getDpsInits(), maps, newIterators);
  rewriter.inlineRegionBefore(op.getRegion(), rewritten.getRegion(),
                              rewritten.getRegion().begin());
  // The kernel's loop ranges follow from its operands: kw's is now the
  // phases of the padded filter, r's the stride.
  rewriter.replaceOp(op, rewritten.getResults());
}

/// A window kernel harp-rewrite-windows flattens: `op` reads `X[..., oh +
/// kh, ow + kw]` through `window` and writes `Y[..., oh, ow]`.
struct FlatWindow {
  OpOperand *window;
  unsigned oh, ow, kh, kw;
};

/// Whether `op` is a window kernel to flatten (see flattenWindow): unit
/// strides, output rows no multiple of the register tile's width, no other
/// operand reading oh or ow.
static std::optional<FlatWindow>
matchFlatWindow(linalg::GenericOp op, const Config &config, unsigned lanes) {
  if (!isRewritableWindowKernel(op) || op.getNumLoops() < 4)
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap outMap = op.getMatchingIndexingMap(init);
  auto yType = dyn_cast<RankedTensorType>(init->get().getType());
  unsigned outRank = outMap.getNumResults();
  if (!yType || !yType.hasStaticShape() || outRank < 2)
    return std::nullopt;
  auto outH = dyn_cast<AffineDimExpr>(outMap.getResult(outRank - 2));
  auto outW = dyn_cast<AffineDimExpr>(outMap.getResult(outRank - 1));
  if (!outH || !outW)
    return std::nullopt;
  unsigned oh = outH.getPosition(), ow = outW.getPosition();
  if (oh == ow || !linalg::isParallelIterator(iterators[oh]) ||
      !linalg::isParallelIterator(iterators[ow]))
    return std::nullopt;
  for (AffineExpr result : outMap.getResults().drop_back(2)) {
    auto d = dyn_cast<AffineDimExpr>(result);
    if (!d || d.getPosition() == oh || d.getPosition() == ow)
      return std::nullopt;
  }
  int64_t outRows = ranges[oh], outCols = ranges[ow];
  int64_t wide = registerTileWidth(config, lanes);
  if (outRows < 2 || outCols % wide == 0)
    return std::nullopt;

  // The one input reading the window.
  OpOperand *window = nullptr;
  unsigned kh = 0, kw = 0;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!map.isFunctionOfDim(oh) && !map.isFunctionOfDim(ow))
      continue;
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    unsigned rank = map.getNumResults();
    if (window || !type || !type.hasStaticShape() || rank < 2 ||
        !isWindowSum(map.getResult(rank - 2), oh, iterators, kh) ||
        !isWindowSum(map.getResult(rank - 1), ow, iterators, kw) || kh == kw)
      return std::nullopt;
    for (AffineExpr result : map.getResults().drop_back(2)) {
      auto d = dyn_cast<AffineDimExpr>(result);
      if (!d || llvm::is_contained({oh, ow, kh, kw}, d.getPosition()))
        return std::nullopt;
    }
    window = input;
  }
  // A correlation (a convolution's weight gradient, dW[kh, kw] summing
  // X[oh + kh, ow + kw] dY[oh, ow] over the image) has the window's roles
  // swapped: its short output is the filter and its long reduced dims the
  // image's. Flattened, its rows of 3 taps were copied into planes and
  // summed across them; harp-tile-and-vectorize sums it along the image's
  // rows instead.
  if (!window || (ranges[kh] > outRows && ranges[kw] > outCols))
    return std::nullopt;
  auto xType = cast<RankedTensorType>(window->get().getType());
  int64_t xRank = xType.getRank();
  if (outCols + ranges[kw] - 1 > xType.getDimSize(xRank - 1) ||
      outRows + ranges[kh] - 1 > xType.getDimSize(xRank - 2))
    return std::nullopt;
  return FlatWindow{window, oh, ow, kh, kw};
}

/// Slices a window kernel into the images it computes independently: the
/// parallel dims its window input and its result both read as a plain dim
/// ahead of the window (a depthwise convolution's batch and channels, a
/// convolution's or a pooling's batch) are tiled by one, and the image's
/// padding (`tensor.pad`) and the result's initialisation (`linalg.fill`)
/// are fused into the loops. Whole, the padded image and the grid are each
/// larger than the caches (1.9 MB for a depthwise 3x3 convolution over 144
/// channels of 56 x 56), and filling, copying in, computing and copying out
/// each made a pass over memory; one image at a time (13 KB) they stay in
/// the L1 cache. The loops are marked parallel. Returns the kernel of one
/// image, or `op` where no such dim is longer than one.
static linalg::GenericOp sliceIndependentImages(RewriterBase &rewriter,
                                                linalg::GenericOp op,
                                                const FlatWindow &match) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  AffineMap xMap = op.getMatchingIndexingMap(match.window);
  SmallVector<int64_t> sizes(op.getNumLoops(), 0);
  bool any = false;
  for (AffineExpr result : outMap.getResults().drop_back(2)) {
    unsigned d = cast<AffineDimExpr>(result).getPosition();
    if (ranges[d] > 1 &&
        llvm::is_contained(xMap.getResults().drop_back(2),
                           getAffineDimExpr(d, op.getContext()))) {
      sizes[d] = 1;
      any = true;
    }
  }
  if (!any)
    return op;
  scf::SCFTileAndFuseOptions options;
  options.tilingOptions.setTileSizes(
      getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  // Only the padding and the initialisation: other producers keep their
  // own tiles.
  options.setFusionControlFn(
      [](tensor::ExtractSliceOp, OpResult producer,
         bool) -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
        if (isa<tensor::PadOp, linalg::FillOp>(producer.getOwner()))
          return scf::SCFTileAndFuseOptions::ControlFnResult{};
        return std::nullopt;
      });
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTileAndFuseResult> tiled =
      scf::tileConsumerAndFuseProducersUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return op;
  linalg::GenericOp image;
  for (Operation *tiledOp : tiled->tiledAndFusedOps)
    if (auto generic = dyn_cast<linalg::GenericOp>(tiledOp); generic && !image)
      image = generic;
  for (LoopLikeOpInterface loop : tiled->loops)
    loop->setAttr(harp::kParallelLoopAttr, rewriter.getUnitAttr());
  for (OpResult result : op->getResults())
    if (Value replacement = tiled->replacements.lookup(result))
      rewriter.replaceAllUsesWith(result, replacement);
  rewriter.eraseOp(op);
  return image;
}

/// Reassociation of a rank-`rank` shape with its last two dims merged
/// (an image's rows flattened).
static SmallVector<ReassociationIndices> lastTwoMerged(int64_t rank) {
  SmallVector<ReassociationIndices> groups;
  for (int64_t i = 0; i + 2 < rank; ++i)
    groups.push_back({i});
  groups.push_back({rank - 2, rank - 1});
  return groups;
}

/// The padding X = pad(S) of a window's image by a constant, of static
/// sizes: S's rows and columns, the padding before and after each, and
/// whether any other dim is padded too.
struct PaddedImage {
  tensor::PadOp pad;
  int64_t rows, cols, top, bottom, left, right;
  bool otherDims;
  /// Padding added to the rows and columns only.
  bool onImageOnly() const {
    return !otherDims && top >= 0 && bottom >= 0 && left >= 0 && right >= 0;
  }
};
static std::optional<PaddedImage> paddedImage(Value x) {
  auto pad = x.getDefiningOp<tensor::PadOp>();
  if (!pad || !pad.getSourceType().hasStaticShape() ||
      ShapedType::isDynamicShape(pad.getStaticLow()) ||
      ShapedType::isDynamicShape(pad.getStaticHigh()) ||
      !pad.getConstantPaddingValue() || pad.getSourceType().getRank() < 2)
    return std::nullopt;
  int64_t rank = pad.getSourceType().getRank();
  ArrayRef<int64_t> low = pad.getStaticLow(), high = pad.getStaticHigh();
  bool otherDims = false;
  for (int64_t d = 0; d + 2 < rank; ++d)
    otherDims |= low[d] != 0 || high[d] != 0;
  return PaddedImage{pad,
                     pad.getSourceType().getDimSize(rank - 2),
                     pad.getSourceType().getDimSize(rank - 1),
                     low[rank - 2],
                     high[rank - 2],
                     low[rank - 1],
                     high[rank - 1],
                     otherDims};
}

/// X padded along its rows (`tensor.pad` with a constant, pl columns on
/// the left and pr on the right, both above zero), flattened with rows of
/// W + max(pl, pr) instead of W + pl + pr: a row's right padding serves as
/// the next row's left padding, and pl more padding elements head the
/// whole (the end of one more row of padding on top). Element (r, c) of the
/// padded X is then element r Wp + c of the flat tensor, Wp the narrower width,
/// for every column c of the padded row (the window reads `readCols` of them),
/// as for X flattened itself; and the grid of outputs (`outCols` a row) is Wp
/// wide, so fewer of its columns are wasted: 15 instead of 16 for a 3x3 window
/// over 14 columns padded by one on each side (12.5% -> 6.7%), 19 instead of 21
/// for a 5x5 over 17 padded by two. narrowRowWidth gives the narrower width,
/// or none where X is no such padding (the caller flattens X as it is).
static std::optional<int64_t> narrowRowWidth(Value x, int64_t outCols,
                                             int64_t readCols) {
  std::optional<PaddedImage> image = paddedImage(x);
  if (!image)
    return std::nullopt;
  int64_t left = image->left, right = image->right, width = image->cols;
  int64_t narrow = width + std::max(left, right);
  // A grid row holds a row of outputs; the reads stay in the padded rows.
  if (left <= 0 || right <= 0 || outCols > narrow ||
      readCols > left + width + right)
    return std::nullopt;
  return narrow;
}

/// X flattened with the narrower rows of narrowRowWidth (which must hold).
static Value narrowPaddedRows(RewriterBase &rewriter, Location loc, Value x,
                              int64_t narrow) {
  auto pad = x.getDefiningOp<tensor::PadOp>();
  Value value = pad.getConstantPaddingValue();
  int64_t rank = pad.getSourceType().getRank();
  int64_t left = pad.getStaticLow()[rank - 1];
  int64_t width = pad.getSourceType().getDimSize(rank - 1);
  // The rows padded on the right only, to the narrower width, and one more
  // row of padding on top, from whose end the pl elements heading the flat
  // tensor are taken (a slice: no second copy).
  SmallVector<int64_t> low(pad.getStaticLow()), high(pad.getStaticHigh());
  low[rank - 2] += 1;
  low.back() = 0;
  high.back() = narrow - width;
  SmallVector<int64_t> shape(pad.getResultType().getShape());
  shape[rank - 2] += 1;
  shape.back() = narrow;
  Type element = pad.getResultType().getElementType();
  MLIRContext *ctx = rewriter.getContext();
  Value rows = tensor::PadOp::create(
      rewriter, loc, RankedTensorType::get(shape, element), pad.getSource(),
      getAsIndexOpFoldResult(ctx, low), getAsIndexOpFoldResult(ctx, high),
      value);
  Value flat =
      tensor::CollapseShapeOp::create(rewriter, loc, rows, lastTwoMerged(rank));
  SmallVector<int64_t> sizes(cast<RankedTensorType>(flat.getType()).getShape());
  sizes.back() -= narrow - left;
  SmallVector<int64_t> offsets(sizes.size(), 0), strides(sizes.size(), 1);
  offsets.back() = narrow - left;
  return tensor::ExtractSliceOp::create(
      rewriter, loc, flat, getAsIndexOpFoldResult(ctx, offsets),
      getAsIndexOpFoldResult(ctx, sizes), getAsIndexOpFoldResult(ctx, strides));
}

/// The width of the rows a window's image is flattened with on a grid
/// (flattenWindow): its padded rows narrowed where narrowRowWidth allows,
/// else its own.
static int64_t gridRowWidth(linalg::GenericOp op, const FlatWindow &match) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  Value x = match.window->get();
  auto xType = cast<RankedTensorType>(x.getType());
  return narrowRowWidth(x, ranges[match.ow],
                        ranges[match.ow] + ranges[match.kw] - 1)
      .value_or(xType.getDimSize(xType.getRank() - 1));
}

/// Rebuilds the window kernel `op` over its dims without ow, oh standing for
/// p, the flat index of an output: the window input becomes `flatX`, read at
/// its old leading results followed by `flatRead(replace)` (given what each
/// old dim became), and the result `flatInit`, written at p after `op`'s
/// other result dims.
static linalg::GenericOp rebuildFlat(
    RewriterBase &rewriter, linalg::GenericOp op, const FlatWindow &match,
    Value flatX,
    function_ref<SmallVector<AffineExpr>(ArrayRef<AffineExpr>)> flatRead,
    Value flatInit) {
  MLIRContext *ctx = op.getContext();
  unsigned numLoops = op.getNumLoops();
  SmallVector<AffineExpr> replace(numLoops);
  for (unsigned d = 0, next = 0; d < numLoops; ++d)
    replace[d] = d == match.ow ? getAffineConstantExpr(0, ctx)
                               : getAffineDimExpr(next++, ctx);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (input != match.window) {
      inputs.push_back(input->get());
      maps.push_back(map.replaceDimsAndSymbols(replace, {}, numLoops - 1, 0));
      continue;
    }
    SmallVector<AffineExpr> results;
    for (AffineExpr result : map.getResults().drop_back(2))
      results.push_back(result.replaceDims(replace));
    results.append(flatRead(replace));
    inputs.push_back(flatX);
    maps.push_back(AffineMap::get(numLoops - 1, 0, results, ctx));
  }
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  SmallVector<AffineExpr> outResults;
  for (AffineExpr result : outMap.getResults().drop_back(2))
    outResults.push_back(result.replaceDims(replace));
  outResults.push_back(replace[match.oh]);
  maps.push_back(AffineMap::get(numLoops - 1, 0, outResults, ctx));
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  iterators.erase(iterators.begin() + match.ow);
  auto flat =
      linalg::GenericOp::create(rewriter, op.getLoc(), flatInit.getType(),
                                inputs, ValueRange{flatInit}, maps, iterators);
  rewriter.inlineRegionBefore(op.getRegion(), flat.getRegion(),
                              flat.getRegion().begin());
  return flat;
}

/// Erases the padded image and the result's fill a flattened kernel
/// replaced, where nothing else uses them.
static void eraseUnused(RewriterBase &rewriter, ArrayRef<Value> values) {
  for (Value value : values)
    if (Operation *producer = value.getDefiningOp();
        producer && isa<tensor::PadOp, linalg::FillOp>(producer) &&
        producer->use_empty())
      rewriter.eraseOp(producer);
}

/// Flattens a convolution window onto its image's rows: a kernel reading
/// `X[..., oh + kh, ow + kw]` (X's rows Wp wide) and writing `Y[..., oh,
/// ow]` is computed on a grid as wide as X, where output p = oh Wp + ow
/// reads X flattened at p + kh Wp + kw: one contiguous dim of (OH - 1) Wp +
/// OW outputs instead of OH short rows of OW. The Wp - OW extra outputs per
/// row read across a row's end and are dropped: Y is the grid's first OW
/// columns. The register tile then covers `register-vectors` vectors
/// without a remainder per row (a 56-column image left 8 columns of every
/// row to half-width tiles). Only where matchFlatWindow holds.
static void flattenWindow(RewriterBase &rewriter, linalg::GenericOp op,
                          const FlatWindow &match) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  OpOperand *init = op.getDpsInitOperand(0);
  auto yType = cast<RankedTensorType>(init->get().getType());
  unsigned outRank = yType.getRank();
  OpOperand *window = match.window;
  unsigned oh = match.oh, kh = match.kh, kw = match.kw;
  int64_t outRows = ranges[oh], outCols = ranges[match.ow];
  auto xType = cast<RankedTensorType>(window->get().getType());
  int64_t xRank = xType.getRank();

  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  // X flattened, and the width Wp of its rows.
  int64_t imageW = gridRowWidth(op, match);
  Value flatX = imageW != xType.getDimSize(xRank - 1)
                    ? narrowPaddedRows(rewriter, loc, window->get(), imageW)
                    : tensor::CollapseShapeOp::create(
                          rewriter, loc, window->get(), lastTwoMerged(xRank))
                          .getResult();
  // Outputs on the grid: the last row stops at OW, so no read passes the
  // image's end.
  int64_t grid = (outRows - 1) * imageW + outCols;

  // The output grid: Y's rows widened to Wp (a fill is made on the grid;
  // anything else is padded), flattened, its first `grid` elements.
  Type element = yType.getElementType();
  SmallVector<int64_t> gridShape(yType.getShape());
  gridShape.back() = imageW;
  auto gridType = RankedTensorType::get(gridShape, element);
  Value gridInit;
  if (auto fill = init->get().getDefiningOp<linalg::FillOp>()) {
    Value empty = tensor::EmptyOp::create(rewriter, loc, gridShape, element);
    gridInit =
        linalg::FillOp::create(rewriter, loc, fill.value(), empty).getResult(0);
  } else {
    Value zero = arith::ConstantOp::create(
        rewriter, loc, element, cast<TypedAttr>(rewriter.getZeroAttr(element)));
    gridInit = tensor::createPadHighOp(gridType, init->get(), zero,
                                       /*nofold=*/false, loc, rewriter);
  }
  SmallVector<ReassociationIndices> yGroups = lastTwoMerged(outRank);
  Value flatInit =
      tensor::CollapseShapeOp::create(rewriter, loc, gridInit, yGroups);
  auto flatInitType = cast<RankedTensorType>(flatInit.getType());
  SmallVector<OpFoldResult> zeros(outRank - 1, rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> ones(outRank - 1, rewriter.getIndexAttr(1));
  SmallVector<OpFoldResult> sliceSizes;
  for (int64_t size : flatInitType.getShape().drop_back())
    sliceSizes.push_back(rewriter.getIndexAttr(size));
  sliceSizes.push_back(rewriter.getIndexAttr(grid));
  Value gridSlice = tensor::ExtractSliceOp::create(rewriter, loc, flatInit,
                                                   zeros, sliceSizes, ones);

  linalg::GenericOp flat = rebuildFlat(
      rewriter, op, match, flatX,
      [&](ArrayRef<AffineExpr> replace) {
        return SmallVector<AffineExpr>{replace[oh] + replace[kh] * imageW +
                                       replace[kw]};
      },
      gridSlice);

  // Back to Y: the grid's first OW columns of every row.
  Value full = tensor::InsertSliceOp::create(rewriter, loc, flat.getResult(0),
                                             flatInit, zeros, sliceSizes, ones);
  Value expanded =
      tensor::ExpandShapeOp::create(rewriter, loc, gridType, full, yGroups);
  SmallVector<OpFoldResult> yZeros(outRank, rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> yOnes(outRank, rewriter.getIndexAttr(1));
  SmallVector<OpFoldResult> ySizes;
  for (int64_t size : yType.getShape())
    ySizes.push_back(rewriter.getIndexAttr(size));
  Value result = tensor::ExtractSliceOp::create(rewriter, loc, yType, expanded,
                                                yZeros, ySizes, yOnes);
  Value image = window->get(), initial = init->get();
  rewriter.replaceOp(op, result);
  eraseUnused(rewriter, {image, initial});
}

/// The most planes planesFromPadding copies one by one. It emits up to five
/// ops a plane, and one-shot bufferization is superlinear in such chains of
/// inserts into one tensor: a weight gradient's window is as wide as the
/// output (64 planes of a 5x5 convolution's gradient over 64 columns, padded
/// by 2, made 320 ops that bufferized in 150 s). Wider windows copy the
/// planes with one generic op from the padded image.
constexpr int64_t kMaxPlanesFromPadding = 8;

/// Whether flattenWindowPlanes copies the planes of `x` straight from the
/// image it pads (planesFromPadding): `taps` of them.
static bool planesFromPaddedImage(Value x, int64_t taps) {
  std::optional<PaddedImage> image = paddedImage(x);
  return image && image->onImageOnly() && taps <= kMaxPlanesFromPadding;
}

/// The planes P[..., j, r, c] = X[..., r, c + j] of flattenWindowPlanes
/// written into `planes` straight from the image X pads (paddedImage), or
/// null where X is no such padding or the planes are too many
/// (planesFromPaddedImage): per plane, the columns of S it reads
/// copied into place, then its padding rows and columns filled with the
/// padding value. The padded image is never made: a 3x3 convolution over
/// 64 channels of 56 x 56, padded by one, copied it (30 us of 2.1 ms on
/// the Zen 4 machine, AVX-512 code) and filled its four borders (20 us,
/// most of it the two column strips of single elements a row apart)
/// before copying the planes out of it.
static Value planesFromPadding(RewriterBase &rewriter, Location loc, Value x,
                               Value planes) {
  auto type = cast<RankedTensorType>(planes.getType());
  int64_t rank = type.getRank();
  int64_t taps = type.getDimSize(rank - 3), outCols = type.getDimSize(rank - 1);
  if (!planesFromPaddedImage(x, taps))
    return nullptr;
  std::optional<PaddedImage> image = paddedImage(x);
  Value value = image->pad.getConstantPaddingValue();
  Value source = image->pad.getSource();
  MLIRContext *ctx = rewriter.getContext();
  auto attrs = [&](ArrayRef<int64_t> values) {
    return getAsIndexOpFoldResult(ctx, values);
  };
  // A box of plane j: rows [r0, r0 + rows), columns [c0, c0 + cols).
  auto box = [&](int64_t j, int64_t r0, int64_t rows, int64_t c0,
                 int64_t cols) {
    SmallVector<int64_t> offsets(rank, 0), sizes(type.getShape());
    offsets[rank - 3] = j;
    offsets[rank - 2] = r0;
    offsets[rank - 1] = c0;
    sizes[rank - 3] = 1;
    sizes[rank - 2] = rows;
    sizes[rank - 1] = cols;
    return std::make_pair(offsets, sizes);
  };
  SmallVector<int64_t> ones(rank, 1);
  auto fill = [&](int64_t j, int64_t r0, int64_t rows, int64_t c0,
                  int64_t cols) {
    if (rows <= 0 || cols <= 0)
      return;
    auto [offsets, sizes] = box(j, r0, rows, c0, cols);
    Value slice = tensor::ExtractSliceOp::create(
        rewriter, loc, planes, attrs(offsets), attrs(sizes), attrs(ones));
    Value filled =
        linalg::FillOp::create(rewriter, loc, value, slice).getResult(0);
    planes = tensor::InsertSliceOp::create(rewriter, loc, filled, planes,
                                           attrs(offsets), attrs(sizes),
                                           attrs(ones));
  };
  int64_t planeRows = type.getDimSize(rank - 2);
  for (int64_t j = 0; j < taps; ++j) {
    // Plane column c reads padded column c + j, S's column c + j - left.
    int64_t first = std::clamp<int64_t>(image->left - j, 0, outCols);
    int64_t last =
        std::clamp<int64_t>(image->left + image->cols - j, first, outCols);
    if (last > first) {
      SmallVector<int64_t> offsets(rank - 1, 0);
      SmallVector<int64_t> sizes(
          cast<RankedTensorType>(source.getType()).getShape());
      offsets.back() = first + j - image->left;
      sizes.back() = last - first;
      Value columns = tensor::ExtractSliceOp::create(
          rewriter, loc, source, attrs(offsets), attrs(sizes),
          attrs(SmallVector<int64_t>(rank - 1, 1)));
      auto [to, size] = box(j, image->top, image->rows, first, last - first);
      planes = tensor::InsertSliceOp::create(
          rewriter, loc, columns, planes, attrs(to), attrs(size), attrs(ones));
    }
    fill(j, 0, image->top, 0, outCols);
    fill(j, image->top + image->rows, planeRows - image->top - image->rows, 0,
         outCols);
    fill(j, image->top, image->rows, 0, first);
    fill(j, image->top, image->rows, last, outCols - last);
  }
  return planes;
}

/// Flattens a convolution window onto K planes of its image, K the window's
/// width: plane j holds columns j to j + OW - 1 of X's rows, P[..., j, r,
/// c] = X[..., r, c + j] (one copy of X per tap column), flattened to rows
/// of OW; output p = oh OW + ow of Y flattened reads plane kw at p + kh OW.
/// No output is wasted, where flattenWindow's grid computes Wp - OW extra
/// outputs a row, and Y is the kernel's result reshaped, where the grid is
/// copied out. Only where matchFlatWindow holds.
static void flattenWindowPlanes(RewriterBase &rewriter, linalg::GenericOp op,
                                const FlatWindow &match) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  OpOperand *init = op.getDpsInitOperand(0);
  auto yType = cast<RankedTensorType>(init->get().getType());
  OpOperand *window = match.window;
  unsigned oh = match.oh, kh = match.kh, kw = match.kw;
  int64_t outCols = ranges[match.ow];
  auto xType = cast<RankedTensorType>(window->get().getType());
  int64_t xRank = xType.getRank();
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);

  // P over (X's leading dims..., j, r, c), reading X at (..., r, c + j).
  SmallVector<int64_t> planeShape(xType.getShape().drop_back(2));
  planeShape.append({ranges[kw], xType.getDimSize(xRank - 2), outCols});
  unsigned planeRank = planeShape.size();
  Value empty = tensor::EmptyOp::create(rewriter, loc, planeShape,
                                        xType.getElementType());
  Value planes = planesFromPadding(rewriter, loc, window->get(), empty);
  if (!planes) {
    auto dim = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
    SmallVector<AffineExpr> readX;
    for (unsigned d = 0; d + 3 < planeRank; ++d)
      readX.push_back(dim(d));
    readX.append({dim(planeRank - 2), dim(planeRank - 1) + dim(planeRank - 3)});
    SmallVector<AffineMap> copyMaps = {
        AffineMap::get(planeRank, 0, readX, ctx),
        rewriter.getMultiDimIdentityMap(planeRank)};
    planes = linalg::GenericOp::create(
                 rewriter, loc, empty.getType(), ValueRange{window->get()},
                 ValueRange{empty}, copyMaps,
                 SmallVector<utils::IteratorType>(
                     planeRank, utils::IteratorType::parallel),
                 [](OpBuilder &b, Location l, ValueRange args) {
                   linalg::YieldOp::create(b, l, args[0]);
                 })
                 .getResult(0);
  }
  Value flatX = tensor::CollapseShapeOp::create(rewriter, loc, planes,
                                                lastTwoMerged(planeRank));

  SmallVector<ReassociationIndices> yGroups = lastTwoMerged(yType.getRank());
  Value flatInit =
      tensor::CollapseShapeOp::create(rewriter, loc, init->get(), yGroups);
  linalg::GenericOp flat = rebuildFlat(
      rewriter, op, match, flatX,
      [&](ArrayRef<AffineExpr> replace) {
        return SmallVector<AffineExpr>{replace[kw],
                                       replace[oh] + replace[kh] * outCols};
      },
      flatInit);
  Value result = tensor::ExpandShapeOp::create(rewriter, loc, yType,
                                               flat.getResult(0), yGroups);
  Value image = window->get();
  rewriter.replaceOp(op, result);
  eraseUnused(rewriter, {image});
}

/// Whether a window flattened onto planes (flattenWindowPlanes) costs less
/// than on a grid (flattenWindow), in a model of vector operations: the
/// grid's extra outputs cost the kernel's work per output vector (every
/// loop of `op` but oh and ow) times the vectors they add to the flat
/// outputs, at `fmaPerCycle`; the planes cost a vector store per `lanes`
/// of their rows (K of every row of X), less the grid's copy to Y, which
/// they spare, and, for a padded image, less its copy into padded rows. Extra
/// outputs that fit the last vector of the grid cost nothing: a 7 x 7 image's
/// grid of 55 outputs takes four 16-lane vectors, as its 49 outputs do, and
/// planes made a 32-channel 3x3 convolution 3% slower (a 14 x 14 one 6% faster:
/// 209 outputs, 14 vectors, against 196 and 13; on a Zen 4 core with AVX-512
/// code).
static bool planesPay(linalg::GenericOp op, const FlatWindow &match,
                      int64_t lanes, double fmaPerCycle) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t outRows = ranges[match.oh], outCols = ranges[match.ow];
  int64_t work = 1;
  for (auto [d, range] : llvm::enumerate(ranges))
    if (d != match.oh && d != match.ow)
      work *= range;
  int64_t wide = gridRowWidth(op, match);
  int64_t gridVectors = llvm::divideCeil((outRows - 1) * wide + outCols, lanes);
  int64_t planeVectors = llvm::divideCeil(outRows * outCols, lanes);
  double saved =
      double(work) * (gridVectors - planeVectors) / std::max(fmaPerCycle, 1e-3);
  auto xType = cast<RankedTensorType>(match.window->get().getType());
  auto yType = cast<RankedTensorType>(op.getDpsInitOperand(0)->get().getType());
  // X's rows (all but its last dim) and Y's images (all but its last two).
  int64_t xRows = ShapedType::getNumElements(xType.getShape().drop_back());
  int64_t yImages = ShapedType::getNumElements(yType.getShape().drop_back(2));
  int64_t rowVectors = llvm::divideCeil(outCols, lanes);
  double copied = double(ranges[match.kw]) * xRows * rowVectors -
                  double(yImages) * outRows * rowVectors;
  // Planes of a padded image are copied from the image it pads
  // (planesFromPadding); the grid copies it into its padded rows.
  if (planesFromPaddedImage(match.window->get(), ranges[match.kw]))
    copied -= double(xRows) *
              llvm::divideCeil(xType.getShape().back(), int64_t(lanes));
  return saved > copied;
}

/// Marks the window kernels (their images, once sliced) to flatten.
static constexpr llvm::StringLiteral kFlatWindowAttr = "harp.flat_window";

namespace {
struct HarpRewriteWindowsPass
    : harp::impl::HarpRewriteWindowsPassBase<HarpRewriteWindowsPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<Config> options =
        makeConfig(getOperation(), getArgument(), vectorBits, registerVectors);
    if (failed(options))
      return signalPassFailure();
    Config config = *options;
    IRRewriter rewriter(&getContext());
    auto generics = [&] {
      SmallVector<linalg::GenericOp> ops;
      getOperation().walk([&](linalg::GenericOp op) { ops.push_back(op); });
      return ops;
    };
    if (deinterleave)
      for (linalg::GenericOp op : generics())
        deinterleaveStridedWindow(rewriter, op);
    if (!flatten)
      return;
    // Window kernels are sliced into images first, and marked; slicing
    // leaves the whole padded image and initialisation unused, and guards
    // against empty slices that are constant false (folded before
    // flattening, which looks for the image's padding through them).
    bool sliced = false;
    for (linalg::GenericOp op : generics())
      if (std::optional<int64_t> lanes = laneCount(op, config))
        if (std::optional<FlatWindow> match =
                matchFlatWindow(op, config, *lanes)) {
          linalg::GenericOp image = op;
          if (sliceImages) {
            image = sliceIndependentImages(rewriter, op, *match);
            sliced |= image != op;
          }
          image->setAttr(kFlatWindowAttr, rewriter.getUnitAttr());
        }
    if (sliced) {
      MLIRContext *context = &getContext();
      RewritePatternSet patterns(context);
      scf::IfOp::getCanonicalizationPatterns(patterns, context);
      if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                       harp::structuredGreedyConfig())))
        return signalPassFailure();
    }
    for (linalg::GenericOp op : generics()) {
      if (!op->hasAttr(kFlatWindowAttr))
        continue;
      op->removeAttr(kFlatWindowAttr);
      if (std::optional<int64_t> lanes = laneCount(op, config))
        if (std::optional<FlatWindow> flat =
                matchFlatWindow(op, config, *lanes)) {
          if (planes && planesPay(op, *flat, *lanes, fmaPerCycle))
            flattenWindowPlanes(rewriter, op, *flat);
          else
            flattenWindow(rewriter, op, *flat);
        }
    }
  }
};
} // namespace
