//===- Vectorize.cpp - the harp-vectorize pass ----------------------------===//
//
// Tiles every linalg kernel on tensors to a vector-sized tile and vectorizes
// the tile (see the pass description in Passes.td for the tile shapes).
//
//===----------------------------------------------------------------------===//

#include "harp/Dialect/Harp/Transforms/Passes.h"

#include "TilingUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPVECTORIZEPASS
#include "harp/Dialect/Harp/Transforms/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

namespace {

/// How one kernel is tiled: a tile size per loop (0 = not tiled), the order
/// of the tile loops, and whether the tiled reduction dim keeps a vector of
/// partial accumulators.
struct TilePlan {
  SmallVector<int64_t> tileSizes;
  SmallVector<int64_t> interchange;
  std::optional<unsigned> partialReductionDim;
  /// Cache blocks tiled first (0 = none), their loops ordered as
  /// `cacheInterchange`: a contraction's (n, k) panels.
  SmallVector<int64_t> cacheTileSizes;
  SmallVector<int64_t> cacheInterchange;
};

struct Config {
  unsigned vectorBits;
  unsigned registerRows;
  unsigned registerVectors;
  unsigned reductionVectors;
  unsigned cacheK;
  unsigned cacheN;
  unsigned l1Bytes;
  unsigned l2Bytes;
  bool pack;
  bool flattenWindows;
};

} // namespace

/// The width (in elements) of a register tile's row: `register-vectors`
/// vectors of `lanes`.
static int64_t registerTileWidth(const Config &config, int64_t lanes) {
  return config.registerVectors * lanes;
}

/// The widest element of the kernel in bits, or nullopt when an operand is
/// not an integer or float (complex, index) or narrower than a byte: `i1`
/// is a byte in memory but a bit in an LLVM vector, so a vector load of
/// booleans would read packed bits.
static std::optional<unsigned> widestElementBits(linalg::LinalgOp op) {
  unsigned widest = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    Type element = getElementTypeOrSelf(operand.get().getType());
    if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() < 8)
      return std::nullopt;
    widest = std::max(widest, element.getIntOrFloatBitWidth());
  }
  return widest;
}

/// Bytes of the kernel's widest element (1 when it has no integer or float
/// operands, which are not planned anyway).
static int64_t elementBytes(linalg::LinalgOp op) {
  return llvm::divideCeil(widestElementBits(op).value_or(8), 8);
}

/// Lanes of the kernel's vectors: the vector width over the result's
/// element type, or the widest operand's when narrower (a gather's i64
/// indices should not halve the vectors of the f32 rows it moves).
static std::optional<int64_t> laneCount(linalg::LinalgOp op,
                                        const Config &config) {
  std::optional<unsigned> bits = widestElementBits(op);
  if (!bits)
    return std::nullopt;
  unsigned resultBits =
      getElementTypeOrSelf(op.getDpsInitOperand(0)->get().getType())
          .getIntOrFloatBitWidth();
  return std::max<int64_t>(1, config.vectorBits /
                                  std::max(8u, std::min(*bits, resultBits)));
}

/// The contraction dims of `op` with n the one its result is contiguous
/// along: `inferContractionDims` calls n the dims of the second operand,
/// and a product whose transposed factor comes first (a gradient's
/// G @ W^T) would otherwise get register tiles whose vectors run across
/// the result's rows.
static FailureOr<linalg::ContractionDimensions>
orientedContractionDims(linalg::LinalgOp op) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || op.getNumDpsInits() != 1)
    return dims;
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (out.getNumResults() == 0)
    return dims;
  auto last = dyn_cast<AffineDimExpr>(out.getResults().back());
  if (last && llvm::is_contained(dims->m, last.getPosition()) &&
      !llvm::is_contained(dims->n, last.getPosition()))
    std::swap(dims->m, dims->n);
  return dims;
}

/// The largest divisor of `extent` that is a multiple of `unit` and lies in
/// [limit / 2, limit], or 0.
static int64_t blockDividing(int64_t extent, int64_t limit, int64_t unit) {
  for (int64_t b = limit - limit % unit; unit > 0 && b > 0 && 2 * b >= limit;
       b -= unit)
    if (extent % b == 0)
      return b;
  return 0;
}

/// A contraction's cache blocks along k and n (0: none) and the widest n
/// a block may have.
struct CacheBlocks {
  int64_t k = 0, n = 0, nMax = 0;
};

/// A contraction's cache blocks (k, n) for a register tile of `rows` x
/// `width` elements of `bytes` each over a K x N right operand (0: no block
/// along that dim). `cache-k` / `cache-n` when given (blocks only where
/// they divide the dim), else derived from the caches: the k loop of a
/// register tile reads a rows x kc slice of the left operand, reused by
/// every register tile of the block, and a kc x width panel of the right
/// one, so both together take at most 5/6 of L1 (the rest holds the
/// accumulator tile's lines and those in flight); a kc x nc block of the
/// right operand, read once per row tile, takes half of L2. Each is then
/// the largest block in [half, all] of that bound that divides the dim (a
/// remainder block would need a plan of its own): K = 1024 with at most
/// 256 gives 256, K = 1031 none.
static CacheBlocks cacheBlocks(const Config &config, int64_t rows,
                               int64_t width, int64_t bytes, int64_t k,
                               int64_t n) {
  auto fixed = [](unsigned block, int64_t extent) -> int64_t {
    return block && extent > block && extent % block == 0 ? block : 0;
  };
  CacheBlocks blocks;
  if (config.cacheK) {
    blocks.k = fixed(config.cacheK, k);
  } else {
    int64_t kMax = std::max<int64_t>(1, int64_t(config.l1Bytes) * 5 / 6 /
                                            ((rows + width) * bytes));
    if (k > kMax)
      blocks.k = blockDividing(k, kMax, 1);
  }
  if (config.cacheN) {
    blocks.nMax = config.cacheN;
    blocks.n = fixed(config.cacheN, n);
    return blocks;
  }
  int64_t kc = blocks.k ? blocks.k : k;
  blocks.nMax = std::max<int64_t>(width, int64_t(config.l2Bytes) / 2 /
                                             std::max<int64_t>(1, kc * bytes));
  if (n > blocks.nMax)
    blocks.n = blockDividing(n, blocks.nMax, width);
  return blocks;
}

/// Loop order with `inner` dims last, the others in their original order.
static SmallVector<int64_t> innermostLast(unsigned numLoops,
                                          ArrayRef<unsigned> inner) {
  SmallVector<int64_t> order;
  for (unsigned d = 0; d < numLoops; ++d)
    if (!llvm::is_contained(inner, d))
      order.push_back(d);
  llvm::append_range(order, inner);
  return order;
}

/// The loop dim an operand's map reads contiguously (its last result), if
/// that result is a plain dim.
static std::optional<unsigned> contiguousDim(AffineMap map) {
  if (map.getNumResults() == 0)
    return std::nullopt;
  if (auto dim = dyn_cast<AffineDimExpr>(map.getResults().back()))
    return dim.getPosition();
  return std::nullopt;
}

/// The kernel's largest tensor input, or null.
static OpOperand *largestInput(linalg::LinalgOp op) {
  OpOperand *largest = nullptr;
  int64_t largestSize = -1;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    if (type && type.getRank() > 0 && type.getNumElements() > largestSize) {
      largest = input;
      largestSize = type.getNumElements();
    }
  }
  return largest;
}

/// The largest tensor input whose map reads loop dim `dim`, or null.
static OpOperand *largestInputAlong(linalg::LinalgOp op, unsigned dim) {
  OpOperand *largest = nullptr;
  int64_t largestSize = -1;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    if (type && type.getRank() > 0 && type.getNumElements() > largestSize &&
        op.getMatchingIndexingMap(input).isFunctionOfDim(dim)) {
      largest = input;
      largestSize = type.getNumElements();
    }
  }
  return largest;
}

/// Whether some tensor input is reused across a parallel dim of more than
/// one iteration that its map does not read (a matmul's or a
/// convolution's operands), rather than each input element being read for
/// one output (a row sum, softmax's statistics).
static bool reusesInputs(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    if (!type || type.getRank() == 0)
      continue;
    AffineMap map = op.getMatchingIndexingMap(input);
    for (unsigned d = 0; d < ranges.size(); ++d)
      if (linalg::isParallelIterator(iterators[d]) && ranges[d] > 1 &&
          !map.isFunctionOfDim(d))
        return true;
  }
  return false;
}

/// The contiguous dim of the kernel's largest tensor input.
static std::optional<unsigned> largestInputContiguousDim(linalg::LinalgOp op) {
  OpOperand *largest = largestInput(op);
  if (!largest)
    return std::nullopt;
  return contiguousDim(op.getMatchingIndexingMap(largest));
}

/// Register rows along a convolution's output channels: the most, up to
/// `rows`, that divide the channels, down to half as many, so that no
/// remainder tile of channels is left (measured on AVX2 code: 6 rows over
/// 64 channels, 10 tiles and a remainder of 4, took 107 ms where 4 rows
/// took 2.9 ms); `rows` when none does.
static int64_t dividingRows(int64_t extent, int64_t rows) {
  for (int64_t r = rows; r >= 1 && 2 * r >= rows; --r)
    if (extent % r == 0)
      return r;
  return rows;
}

static std::optional<TilePlan> planTiles(linalg::LinalgOp op,
                                         const Config &config) {
  unsigned numLoops = op.getNumLoops();
  if (numLoops == 0 || !op.hasPureTensorSemantics() ||
      !harp::hasMonotoneMaps(op))
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, [](int64_t r) { return r <= 0; }))
    return std::nullopt;
  std::optional<int64_t> laneCountOrNone = laneCount(op, config);
  if (!laneCountOrNone)
    return std::nullopt;
  int64_t lanes = *laneCountOrNone;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  auto clampTo = [&](unsigned dim, int64_t size) {
    return std::min<int64_t>(ranges[dim], size);
  };

  TilePlan plan;
  plan.tileSizes.assign(numLoops, 1);

  // Contractions: a register tile over (m, n), k innermost with step one.
  if (linalg::isaContractionOpInterface(op)) {
    FailureOr<linalg::ContractionDimensions> dims = orientedContractionDims(op);
    if (succeeded(dims) && !dims->m.empty() && !dims->n.empty() &&
        !dims->k.empty()) {
      unsigned m = dims->m.back(), n = dims->n.back();
      plan.tileSizes[m] = clampTo(m, config.registerRows);
      plan.tileSizes[n] = clampTo(n, registerTileWidth(config, lanes));
      SmallVector<unsigned> inner(dims->k.begin(), dims->k.end());
      plan.interchange = innermostLast(numLoops, inner);
      // Cache blocks: a (k x n) panel of the right operand stays in L2
      // while every row tile of the left one streams past it.
      unsigned k = dims->k.back();
      plan.cacheTileSizes.assign(numLoops, 0);
      // A packed right operand (packRightOperand): the outer n dims count
      // panels of the register tile's width; a cache block is as many of
      // them as make its columns.
      SmallVector<unsigned> panels(dims->n.begin(), dims->n.end() - 1);
      int64_t columns = ranges[n];
      for (unsigned d : panels)
        columns *= ranges[d];
      auto [kBlock, nBlock, nMax] =
          cacheBlocks(config, plan.tileSizes[m], plan.tileSizes[n],
                      elementBytes(op), ranges[k], columns);
      (void)nMax;
      if (!panels.empty()) {
        int64_t perBlock = std::max<int64_t>(1, nBlock / ranges[n]);
        for (unsigned d : panels)
          plan.cacheTileSizes[d] = ranges[d] % perBlock ? 1 : perBlock;
      } else if (nBlock) {
        plan.cacheTileSizes[n] = nBlock;
      }
      if (kBlock)
        plan.cacheTileSizes[k] = kBlock;
      // A k block heading the nest would keep the matmul off threads
      // (harp-parallelize forks only at the head of a nest, and k is a
      // reduction): without a block over n, m gets two halves, the outer
      // loop threads split.
      bool nBlocks =
          plan.cacheTileSizes[n] || llvm::any_of(panels, [&](unsigned d) {
            return plan.cacheTileSizes[d] && ranges[d] > plan.cacheTileSizes[d];
          });
      int64_t rows = config.registerRows;
      if (plan.cacheTileSizes[k] && !nBlocks && ranges[m] % (2 * rows) == 0 &&
          ranges[m] >= 8 * rows)
        plan.cacheTileSizes[m] = ranges[m] / 2;
      SmallVector<unsigned> blockOrder(panels);
      blockOrder.append({n, k});
      plan.cacheInterchange = innermostLast(numLoops, blockOrder);
      if (llvm::all_of(plan.cacheTileSizes, [](int64_t t) { return !t; }))
        plan.cacheTileSizes.clear();
      return plan;
    }
  }

  // Reductions along the contiguous dim of their largest input: a vector of
  // partial accumulators along that dim. Not a kernel that reuses an input
  // across a parallel dim (a convolution: the image across output
  // channels, the filter across pixels) and reduces fewer elements than a
  // vector along that dim (a 3-wide filter row): it gets register rows
  // below, where a 256-channel 3x3 convolution planned as a row reduction
  // of its (larger) filter ran 20 times slower.
  bool hasReduction = op.getNumReductionLoops() > 0;
  if (hasReduction) {
    std::optional<unsigned> dim = largestInputContiguousDim(op);
    if (dim && linalg::isReductionIterator(iterators[*dim]) &&
        (ranges[*dim] >= lanes || !reusesInputs(op))) {
      int64_t width = config.reductionVectors * lanes;
      plan.interchange = innermostLast(numLoops, {*dim});
      if (ranges[*dim] > width && op.getNumDpsInits() == 1 &&
          op.getNumReductionLoops() == 1) {
        plan.tileSizes[*dim] = width;
        plan.partialReductionDim = *dim;
      } else {
        plan.tileSizes[*dim] = std::min(ranges[*dim], width);
      }
      return plan;
    }
  }

  // Everything else: vectors along the innermost dim of the result.
  std::optional<unsigned> dim =
      contiguousDim(op.getMatchingIndexingMap(op.getDpsInitOperand(0)));
  if (!dim || !linalg::isParallelIterator(iterators[*dim]))
    return std::nullopt;
  plan.tileSizes[*dim] = clampTo(*dim, lanes);
  // A transpose reads along another dim than it writes: a square tile, read
  // and written with full vectors and transposed in registers.
  // (A broadcast input, like a gather's row indices, is no transpose.)
  OpOperand *largest = largestInput(op);
  if (std::optional<unsigned> read = largestInputContiguousDim(op);
      read && *read != *dim && linalg::isParallelIterator(iterators[*read]) &&
      op.getMatchingIndexingMap(largest).isPermutation())
    plan.tileSizes[*read] = clampTo(*read, lanes);
  // A reduction that broadcasts the input it reads along the vector dim (a
  // convolution's image) along a parallel dim (the output channels) gets
  // register rows along that dim: each vector of the input is loaded once
  // for `register-rows` accumulators.
  bool rows = false;
  if (OpOperand *streamed = largestInputAlong(op, *dim);
      hasReduction && streamed) {
    AffineMap map = op.getMatchingIndexingMap(streamed);
    for (unsigned d = 0; d < numLoops && !rows; ++d) {
      bool readElsewhere =
          llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *other) {
            return op.getMatchingIndexingMap(other).isFunctionOfDim(d);
          });
      if (d != *dim && linalg::isParallelIterator(iterators[d]) &&
          ranges[d] > 1 && !map.isFunctionOfDim(d) && readElsewhere) {
        plan.tileSizes[d] =
            clampTo(d, dividingRows(ranges[d], config.registerRows));
        // Rows as wide as a contraction's register tile where the columns
        // are many (a flattened window, flattenWindow) or divide evenly:
        // twice the accumulators per input load. (A short row, a
        // 56-column image, would leave a remainder tile of most of a row.)
        int64_t wide = registerTileWidth(config, lanes);
        if (ranges[*dim] % wide == 0 || ranges[*dim] >= 8 * wide)
          plan.tileSizes[*dim] = clampTo(*dim, wide);
        rows = true;
      }
    }
  }
  // A reduction without such a dim (a depthwise convolution, a column
  // sum) accumulates `reduction-vectors` vectors along the vector dim
  // where it is long or they divide it: independent multiply-add chains
  // instead of one, whose latency bounded a 3x3 depthwise convolution.
  if (hasReduction && !rows) {
    int64_t wide = config.reductionVectors * lanes;
    if (ranges[*dim] % wide == 0 || ranges[*dim] >= 8 * wide)
      plan.tileSizes[*dim] = clampTo(*dim, wide);
  }
  SmallVector<unsigned> reductions;
  for (unsigned d = 0; d < numLoops; ++d)
    if (linalg::isReductionIterator(iterators[d]))
      reductions.push_back(d);
  plan.interchange = innermostLast(numLoops, reductions);
  return plan;
}

/// Marks the tiles `harp-vectorize` vectorizes once their shapes are static.
static constexpr llvm::StringLiteral kVectorTile = "harp.vector_tile";

/// Re-slices a tile's inputs so that they have static shapes and their
/// maps no constant terms. Tiling keeps the op's maps and starts each
/// input's slice at `expr(tile offset) - expr(0)`, so the tile reads the
/// slice at `expr(index in the tile)`, with a size clamped to the operand:
/// a window read (`oh + kh` of a convolution) gets a dynamic size although
/// it reads a static extent, and a shifted read (`d0 + 1`, a view's slice)
/// keeps its constant, which the vectorizer rejects (not a projected
/// permutation). For the monotone maps tiling accepts, result `expr` reads
/// `[expr(0), expr(ranges - 1)]` of the slice: the input is re-sliced from
/// `offset + expr(0)` with size `expr(ranges - 1) - expr(0) + 1`, and the
/// map reads it at `expr - expr(0)`.
static void normalizeInputSlices(RewriterBase &rewriter, linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return;
  MLIRContext *context = op->getContext();
  SmallVector<AffineExpr> first, last;
  for (int64_t range : ranges) {
    first.push_back(getAffineConstantExpr(0, context));
    last.push_back(getAffineConstantExpr(range - 1, context));
  }
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  bool mapsChanged = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    if (!type)
      continue;
    Value source = input->get();
    if (auto cast = source.getDefiningOp<tensor::CastOp>())
      source = cast.getSource();
    auto slice = source.getDefiningOp<tensor::ExtractSliceOp>();
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!slice || !slice.hasUnitStride() ||
        slice.getType().getRank() != int64_t(map.getNumResults()))
      continue;
    SmallVector<int64_t> lows, sizes;
    bool constant = true;
    for (AffineExpr result : map.getResults()) {
      auto lo = dyn_cast<AffineConstantExpr>(
          simplifyAffineExpr(result.replaceDims(first), 0, 0));
      auto hi = dyn_cast<AffineConstantExpr>(
          simplifyAffineExpr(result.replaceDims(last), 0, 0));
      if (!lo || !hi || lo.getValue() < 0) {
        constant = false;
        break;
      }
      lows.push_back(lo.getValue());
      sizes.push_back(hi.getValue() - lo.getValue() + 1);
    }
    bool shifted = llvm::any_of(lows, [](int64_t lo) { return lo != 0; });
    // Only a generic's maps can be rewritten; named ops have no constants.
    if (!constant || (type.hasStaticShape() && !shifted) ||
        (shifted && !generic))
      continue;
    rewriter.setInsertionPoint(op);
    Location loc = slice.getLoc();
    SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
    AffineExpr s0 = getAffineSymbolExpr(0, context);
    for (auto [offset, lo] : llvm::zip(offsets, lows))
      if (lo != 0)
        offset = affine::makeComposedFoldedAffineApply(rewriter, loc, s0 + lo,
                                                       {offset});
    Value exact = tensor::ExtractSliceOp::create(
        rewriter, loc, slice.getSource(), offsets,
        getAsIndexOpFoldResult(context, sizes), slice.getMixedStrides());
    rewriter.modifyOpInPlace(op, [&] { input->set(exact); });
    if (shifted) {
      SmallVector<AffineExpr> results;
      for (auto [result, lo] : llvm::zip(map.getResults(), lows))
        results.push_back(simplifyAffineExpr(result - lo, map.getNumDims(), 0));
      maps[input->getOperandNumber()] =
          AffineMap::get(map.getNumDims(), 0, results, context);
      mapsChanged = true;
    }
  }
  if (mapsChanged)
    rewriter.modifyOpInPlace(generic, [&] {
      generic.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
    });
}

/// Vectorizes one marked tile. A tile whose shape is still dynamic (the
/// peeled remainder at the edge of a dim its tile size does not divide) and
/// a tile the vectorizer rejects stay scalar.
static void vectorizeTile(RewriterBase &rewriter, linalg::LinalgOp op) {
  op->removeAttr(kVectorTile);
  normalizeInputSlices(rewriter, op);
  if (op.hasDynamicShape())
    return;
  auto canVectorize = [](linalg::LinalgOp candidate) {
    return succeeded(linalg::vectorizeOpPrecondition(
        candidate, {}, {}, /*vectorizeNDExtract=*/true));
  };
  // Tiles have unit dims (the k step of a register tile, the rows of a
  // partial reduction, the window offsets of a convolution): dropped, they
  // leave no unit dims in the vectors, a contraction tile becomes an
  // element-wise multiply-add, and a window read (`oh + kh`, not a projected
  // permutation, which the vectorizer needs) becomes a plain dim. (Not when
  // every dim is a unit: a 0-d tile is a scalar.)
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (generic && llvm::is_contained(ranges, 1) &&
      llvm::any_of(ranges, [](int64_t r) { return r > 1; })) {
    linalg::ControlDropUnitDims control;
    control.rankReductionStrategy =
        linalg::ControlDropUnitDims::RankReductionStrategy::ExtractInsertSlice;
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::DropUnitDimsResult> dropped =
        linalg::dropUnitDims(rewriter, generic, control);
    if (succeeded(dropped)) {
      rewriter.replaceOp(op, dropped->replacements);
      op = cast<linalg::LinalgOp>(dropped->resultOp.getOperation());
    }
  }
  if (!canVectorize(op))
    return;
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::VectorizationResult> result =
      linalg::vectorize(rewriter, op, {}, {}, /*vectorizeNDExtract=*/true);
  if (failed(result))
    return;
  rewriter.replaceOp(op, result->replacements);
}

/// MLIR 22's partial-reduction tiling copies the kernel's body into each
/// tile without offsetting `linalg.index` of the tiled dim (the regular
/// tiling does): a masked row reduction (a causal softmax's row max) read
/// the mask and the gathered columns of the first tile in every tile. Adds
/// the tile loop's induction variable, the tile's offset, to those indices.
static void offsetPartialReductionIndices(RewriterBase &rewriter,
                                          scf::SCFTilingResult &tiled,
                                          unsigned partialDim) {
  if (tiled.loops.size() != 1)
    return;
  auto loop = dyn_cast<scf::ForOp>(tiled.loops.front().getOperation());
  if (!loop)
    return;
  Value offset = loop.getInductionVar();
  for (Operation *tile : tiled.tiledOps) {
    SmallVector<linalg::IndexOp> indices;
    tile->walk([&](linalg::IndexOp index) {
      if (index.getDim() == partialDim)
        indices.push_back(index);
    });
    for (linalg::IndexOp index : indices) {
      rewriter.setInsertionPointAfter(index);
      Value global =
          arith::AddIOp::create(rewriter, index.getLoc(), index, offset);
      rewriter.replaceAllUsesExcept(index, global, global.getDefiningOp());
    }
  }
}

/// Tiles `op` with `sizes` (and the partial-reduction strategy along
/// `partialDim` when set), marks the tiles, and peels the tile loops whose
/// step does not divide their range, so the main loops carry tiles of a
/// static shape. Linalg ops the tiling creates outside the loops
/// (accumulator initialisation, the merge of partial reductions) are
/// appended to `worklist`.
static FailureOr<scf::SCFTilingResult>
tileOnce(RewriterBase &rewriter, linalg::LinalgOp op, ArrayRef<int64_t> sizes,
         ArrayRef<int64_t> interchange, std::optional<unsigned> partialDim,
         SmallVectorImpl<linalg::LinalgOp> &worklist) {
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  options.setInterchange(interchange);
  if (partialDim) {
    options.setReductionTilingStrategy(
        ReductionTilingStrategy::PartialReductionOuterReduction);
    options.setReductionDims({*partialDim});
  }
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return failure();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  rewriter.replaceOp(op, tiled->replacements);

  // Loops over parallel dims are marked: harp-parallelize may run them on
  // threads once they are on buffers. Loops are made for the tiled dims in
  // interchange order.
  SmallVector<int64_t> order(interchange);
  if (order.empty())
    order = llvm::to_vector(llvm::seq<int64_t>(0, sizes.size()));
  llvm::erase_if(order, [&](int64_t d) { return sizes[d] == 0; });
  if (order.size() == tiled->loops.size())
    for (auto [loop, d] : llvm::zip(tiled->loops, order))
      if (linalg::isParallelIterator(iterators[d]))
        loop->setAttr(harp::kParallelLoopAttr, rewriter.getUnitAttr());

  for (Operation *tile : tiled->tiledOps)
    if (isa<linalg::LinalgOp>(tile))
      tile->setAttr(kVectorTile, rewriter.getUnitAttr());
  if (partialDim)
    offsetPartialReductionIndices(rewriter, *tiled, *partialDim);
  // Innermost first, so an outer loop's remainder copies the peeled inner
  // loops.
  for (LoopLikeOpInterface loop : llvm::reverse(tiled->loops)) {
    auto forOp = dyn_cast<scf::ForOp>(loop.getOperation());
    scf::ForOp remainder;
    if (forOp)
      (void)scf::peelForLoopAndSimplifyBounds(rewriter, forOp, remainder);
  }
  for (Operation *merge : tiled->mergeOps)
    if (auto linalgMerge = dyn_cast<linalg::LinalgOp>(merge))
      worklist.push_back(linalgMerge);
  for (Value init : tiled->initialValues)
    if (auto linalgInit = init.getDefiningOp<linalg::LinalgOp>())
      worklist.push_back(linalgInit);
  return tiled;
}

/// Packs the right operand of a large matmul into register-tile panels:
/// B (K x N, read along n) becomes Bp (N/w x K x w), w the register tile's
/// width, and the matmul a contraction over (m, n-panel, n-in-panel, k)
/// writing C as M x N/w x w (a free reshape of M x N). The register tile
/// then reads its K x w panel of B contiguously, where it read w columns of
/// rows N apart (which map to the same cache sets when N is a large power
/// of two). Only for matmuls whose n is larger than a cache block and a
/// multiple of w; the copy costs one pass over B. Returns whether it did.
static bool packRightOperand(RewriterBase &rewriter, linalg::GenericOp op,
                             const Config &config, unsigned lanes) {
  if (!op.hasPureTensorSemantics() || op.getNumLoops() != 3 ||
      op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !linalg::isaContractionOpInterface(op))
    return false;
  FailureOr<linalg::ContractionDimensions> dims = orientedContractionDims(op);
  if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 ||
      dims->k.size() != 1 || !dims->batch.empty())
    return false;
  unsigned m = dims->m[0], n = dims->n[0], k = dims->k[0];
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t w = registerTileWidth(config, lanes);
  if (ShapedType::isDynamic(ranges[n]) || ShapedType::isDynamic(ranges[k]) ||
      ShapedType::isDynamic(ranges[m]) || ranges[n] % w || ranges[k] < w)
    return false;
  CacheBlocks blocks =
      cacheBlocks(config, std::min<int64_t>(ranges[m], config.registerRows), w,
                  elementBytes(op), ranges[k], ranges[n]);
  if (ranges[n] <= std::max<int64_t>(blocks.nMax, w))
    return false;
  MLIRContext *ctx = op.getContext();
  auto dim = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
  // B is read as (k, n), or transposed as (n, k) (a gradient's W^T): the
  // panels are the same, the copy transposes.
  OpOperand *right = nullptr, *left = nullptr;
  bool transposed = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!right && map.getNumResults() == 2 &&
        ((map.getResult(0) == dim(k) && map.getResult(1) == dim(n)) ||
         (map.getResult(0) == dim(n) && map.getResult(1) == dim(k)))) {
      right = input;
      transposed = map.getResult(0) == dim(n);
    } else {
      left = input;
    }
  }
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap initMap = op.getMatchingIndexingMap(init);
  if (!right || !left || initMap.getNumResults() != 2 ||
      initMap.getResult(0) != dim(m) || initMap.getResult(1) != dim(n))
    return false;

  Location loc = op.getLoc();
  int64_t panels = ranges[n] / w;
  Value b = right->get();
  Type element = getElementTypeOrSelf(b.getType());
  rewriter.setInsertionPoint(op);
  // Bp[p, k, j] = B[k, p * w + j] (or B[p * w + j, k]).
  Value empty = tensor::EmptyOp::create(
      rewriter, loc, ArrayRef<int64_t>{panels, ranges[k], w}, element);
  AffineExpr p = dim(0), kk = dim(1), j = dim(2);
  SmallVector<AffineExpr> read = {kk, p * w + j};
  if (transposed)
    std::swap(read[0], read[1]);
  auto packMaps =
      SmallVector<AffineMap>{AffineMap::get(3, 0, read, ctx),
                             AffineMap::getMultiDimIdentityMap(3, ctx)};
  auto pack = linalg::GenericOp::create(
      rewriter, loc, empty.getType(), ValueRange{b}, ValueRange{empty},
      packMaps,
      SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
      [](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, args[0]);
      });

  // The matmul over (m, p, j, k): the left operand's map with n = p w + j.
  SmallVector<AffineExpr> replace(3);
  replace[m] = dim(0);
  replace[n] = dim(1) * w + dim(2);
  replace[k] = dim(3);
  AffineMap leftMap =
      op.getMatchingIndexingMap(left).replaceDimsAndSymbols(replace, {}, 4, 0);
  auto initType = cast<RankedTensorType>(init->get().getType());
  SmallVector<ReassociationIndices> groups = {{0}, {1, 2}};
  Value expanded = tensor::ExpandShapeOp::create(
      rewriter, loc,
      RankedTensorType::get({initType.getDimSize(0), panels, w}, element),
      init->get(), groups);
  SmallVector<Value> inputs(2);
  SmallVector<AffineMap> maps(2);
  unsigned leftIndex = left->getOperandNumber(),
           rightIndex = right->getOperandNumber();
  inputs[leftIndex] = left->get();
  maps[leftIndex] = leftMap;
  inputs[rightIndex] = pack.getResult(0);
  maps[rightIndex] = AffineMap::get(4, 0, {dim(1), dim(3), dim(2)}, ctx);
  maps.push_back(AffineMap::get(4, 0, {dim(0), dim(1), dim(2)}, ctx));
  using It = utils::IteratorType;
  auto packed = linalg::GenericOp::create(
      rewriter, loc, expanded.getType(), inputs, ValueRange{expanded}, maps,
      SmallVector<It>{It::parallel, It::parallel, It::parallel, It::reduction});
  rewriter.inlineRegionBefore(op.getRegion(), packed.getRegion(),
                              packed.getRegion().begin());
  Value result = tensor::CollapseShapeOp::create(rewriter, loc, initType,
                                                 packed.getResult(0), groups);
  rewriter.replaceOp(op, result);
  return true;
}

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
/// [..., kq, r], so the padding adds terms of zero. Only where no other
/// operand reads ow and X reads kw nowhere else.
static void deinterleaveStridedWindow(RewriterBase &rewriter,
                                      linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumResults() != 1 ||
      !op.getBody()->getOps<linalg::IndexOp>().empty())
    return;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return;
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

  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  int64_t taps = ranges[kw], phases = llvm::divideCeil(taps, stride);
  auto xType = cast<RankedTensorType>(window->get().getType());
  int64_t xRank = xType.getRank(), width = xType.getShape().back();
  // Columns read: up to s * (OW - 1 + phases - 1) + s - 1.
  int64_t groups = std::max<int64_t>(llvm::divideCeil(width, stride),
                                     ranges[ow] + phases - 1);
  Type element = xType.getElementType();
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
  Value empty = tensor::EmptyOp::create(rewriter, loc, dShape, element);
  SmallVector<AffineExpr> readX, writeX;
  for (int64_t i = 0; i < xRank + 1; ++i)
    writeX.push_back(getAffineDimExpr(i, ctx));
  readX.assign(writeX.begin(), writeX.end() - 2);
  readX.append({writeX[xRank], writeX[xRank - 1]});
  auto sorted = linalg::GenericOp::create(
      rewriter, loc, empty.getType(), ValueRange{split}, ValueRange{empty},
      SmallVector<AffineMap>{AffineMap::get(xRank + 1, 0, readX, ctx),
                             AffineMap::get(xRank + 1, 0, writeX, ctx)},
      SmallVector<utils::IteratorType>(xRank + 1,
                                       utils::IteratorType::parallel),
      [](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, args[0]);
      });

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
    SmallVector<AffineExpr> results(map.getResults().drop_back());
    if (input == window) {
      results.append({dim(r), dim(ow) + dim(kw)});
      inputs.push_back(sorted.getResult(0));
    } else if (llvm::is_contained(phased, input)) {
      results.append({dim(kw), dim(r)});
      inputs.push_back(padAndSplit(input->get(), phases * stride, stride));
    } else {
      inputs.push_back(input->get());
      maps.push_back(widen(map));
      continue;
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

/// Flattens a convolution window onto its image's rows: a kernel reading
/// `X[..., oh + kh, ow + kw]` (X's rows Wp wide) and writing `Y[..., oh,
/// ow]` is computed on a grid as wide as X, where output p = oh Wp + ow
/// reads X flattened at p + kh Wp + kw: one contiguous dim of (OH - 1) Wp +
/// OW outputs instead of OH short rows of OW. The Wp - OW extra outputs per
/// row read across a row's end and are dropped: Y is the grid's first OW
/// columns. The register tile then covers `register-vectors` vectors
/// without a remainder per row (a 56-column image left 8 columns of every
/// row to half-width tiles). Only where OW is not already a multiple of
/// the register tile's width, for windows with unit strides, and where no
/// other operand reads oh or ow.
static void flattenWindow(RewriterBase &rewriter, linalg::GenericOp op,
                          const Config &config, unsigned lanes) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumResults() != 1 || op.getNumLoops() < 4 ||
      !op.getBody()->getOps<linalg::IndexOp>().empty())
    return;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap outMap = op.getMatchingIndexingMap(init);
  auto yType = dyn_cast<RankedTensorType>(init->get().getType());
  unsigned outRank = outMap.getNumResults();
  if (!yType || !yType.hasStaticShape() || outRank < 2)
    return;
  auto outH = dyn_cast<AffineDimExpr>(outMap.getResult(outRank - 2));
  auto outW = dyn_cast<AffineDimExpr>(outMap.getResult(outRank - 1));
  if (!outH || !outW)
    return;
  unsigned oh = outH.getPosition(), ow = outW.getPosition();
  if (oh == ow || !linalg::isParallelIterator(iterators[oh]) ||
      !linalg::isParallelIterator(iterators[ow]))
    return;
  for (AffineExpr result : outMap.getResults().drop_back(2)) {
    auto d = dyn_cast<AffineDimExpr>(result);
    if (!d || d.getPosition() == oh || d.getPosition() == ow)
      return;
  }
  int64_t outRows = ranges[oh], outCols = ranges[ow];
  int64_t wide = registerTileWidth(config, lanes);
  if (outRows < 2 || outCols % wide == 0)
    return;

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
      return;
    for (AffineExpr result : map.getResults().drop_back(2)) {
      auto d = dyn_cast<AffineDimExpr>(result);
      if (!d || llvm::is_contained({oh, ow, kh, kw}, d.getPosition()))
        return;
    }
    window = input;
  }
  if (!window)
    return;
  auto xType = cast<RankedTensorType>(window->get().getType());
  int64_t xRank = xType.getRank();
  int64_t imageH = xType.getDimSize(xRank - 2),
          imageW = xType.getDimSize(xRank - 1);
  if (outCols + ranges[kw] - 1 > imageW || outRows + ranges[kh] - 1 > imageH)
    return;
  // Outputs on the grid: the last row stops at OW, so no read passes the
  // image's end.
  int64_t grid = (outRows - 1) * imageW + outCols;

  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  auto lastTwoMerged = [](int64_t rank) {
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i + 2 < rank; ++i)
      groups.push_back({i});
    groups.push_back({rank - 2, rank - 1});
    return groups;
  };
  Value flatX = tensor::CollapseShapeOp::create(rewriter, loc, window->get(),
                                                lastTwoMerged(xRank));

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

  // The kernel over the old dims without ow; oh becomes p.
  unsigned numLoops = op.getNumLoops();
  SmallVector<AffineExpr> replace(numLoops);
  for (unsigned d = 0, next = 0; d < numLoops; ++d)
    replace[d] =
        d == ow ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(next++, ctx);
  auto remap = [&](AffineMap map) {
    return map.replaceDimsAndSymbols(replace, {}, numLoops - 1, 0);
  };
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (input != window) {
      inputs.push_back(input->get());
      maps.push_back(remap(map));
      continue;
    }
    SmallVector<AffineExpr> results;
    for (AffineExpr result : map.getResults().drop_back(2))
      results.push_back(result.replaceDims(replace));
    results.push_back(replace[oh] + replace[kh] * imageW + replace[kw]);
    inputs.push_back(flatX);
    maps.push_back(AffineMap::get(numLoops - 1, 0, results, ctx));
  }
  SmallVector<AffineExpr> outResults;
  for (AffineExpr result : outMap.getResults().drop_back(2))
    outResults.push_back(result.replaceDims(replace));
  outResults.push_back(replace[oh]);
  maps.push_back(AffineMap::get(numLoops - 1, 0, outResults, ctx));
  SmallVector<utils::IteratorType> flatIterators(iterators);
  flatIterators.erase(flatIterators.begin() + ow);
  auto flat =
      linalg::GenericOp::create(rewriter, loc, gridSlice.getType(), inputs,
                                ValueRange{gridSlice}, maps, flatIterators);
  rewriter.inlineRegionBefore(op.getRegion(), flat.getRegion(),
                              flat.getRegion().begin());

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
  rewriter.replaceOp(op, result);
}

/// Where to split `op` so that no tile is between one and several whole
/// vectors wide: a tile of several vectors along the result's contiguous
/// dim (a register tile's row) whose remainder, or whose range, is no whole
/// number of vectors (20 columns of 16-lane vectors) would get a vector of
/// 20 lanes,
/// no register shape, which LLVM legalizes with shuffles in the innermost
/// loop (a matmul whose n left such a remainder ran at 60% of one whose n
/// did not). Split off the last `remainder % lanes` columns, the rest
/// tiles into whole vectors. Returns (dim, split point).
static std::optional<std::pair<unsigned, int64_t>>
partialVectorSplit(linalg::LinalgOp op, const TilePlan &plan,
                   const Config &config) {
  if (op.getNumDpsInits() != 1)
    return std::nullopt;
  std::optional<unsigned> dim =
      contiguousDim(op.getMatchingIndexingMap(op.getDpsInitOperand(0)));
  std::optional<int64_t> lanes = laneCount(op, config);
  if (!dim || !lanes ||
      !linalg::isParallelIterator(op.getIteratorTypesArray()[*dim]))
    return std::nullopt;
  int64_t range = op.getStaticLoopRanges()[*dim];
  int64_t tile = plan.tileSizes[*dim];
  if (tile <= *lanes)
    return std::nullopt;
  // The last tile: the remainder, or a whole tile (also one clamped to a
  // range narrower than the register tile).
  int64_t last = range % tile ? range % tile : tile;
  if (last <= *lanes || last % *lanes == 0)
    return std::nullopt;
  return std::make_pair(*dim, range - last % *lanes);
}

/// `plan` for a piece of the kernel it was made for: tile sizes clamped to
/// the piece's ranges, cache blocks kept where they still divide them.
static TilePlan planForPiece(const TilePlan &plan, linalg::LinalgOp piece) {
  TilePlan result = plan;
  SmallVector<int64_t> ranges = piece.getStaticLoopRanges();
  for (auto [size, range] : llvm::zip(result.tileSizes, ranges))
    size = std::min(size, range);
  for (auto [size, range] : llvm::zip(result.cacheTileSizes, ranges))
    if (size && (size >= range || range % size))
      size = 0;
  if (llvm::all_of(result.cacheTileSizes, [](int64_t t) { return !t; }))
    result.cacheTileSizes.clear();
  return result;
}

/// Tiles `op` as `planTiles` says, or as `given` (see `tileOnce`).
static void tileAndPeel(RewriterBase &rewriter, linalg::LinalgOp op,
                        const Config &config,
                        SmallVectorImpl<linalg::LinalgOp> &worklist,
                        std::optional<TilePlan> given = std::nullopt) {
  std::optional<TilePlan> plan = given ? given : planTiles(op, config);
  if (!plan)
    return;
  if (auto split = partialVectorSplit(op, *plan, config)) {
    // Both pieces keep the kernel's plan: planned again, a narrow tail could
    // find another input the largest and pick another shape.
    rewriter.setInsertionPoint(op);
    auto [head, tail] =
        linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()),
                        split->first, rewriter.getIndexAttr(split->second));
    for (TilingInterface piece : {head, tail})
      if (auto linalgPiece =
              dyn_cast_or_null<linalg::LinalgOp>(piece.getOperation()))
        if (!linalgPiece.hasDynamicShape())
          tileAndPeel(rewriter, linalgPiece, config, worklist,
                      planForPiece(*plan, linalgPiece));
    return;
  }

  SmallVector<int64_t> sizes = plan->tileSizes;
  SmallVector<int64_t> interchange = plan->interchange;
  if (!plan->cacheTileSizes.empty()) {
    FailureOr<scf::SCFTilingResult> blocks =
        tileOnce(rewriter, op, plan->cacheTileSizes, plan->cacheInterchange,
                 std::nullopt, worklist);
    if (failed(blocks) || blocks->tiledOps.size() != 1)
      return;
    op = cast<linalg::LinalgOp>(blocks->tiledOps.front());
    op->removeAttr(kVectorTile);
  }
  if (plan->partialReductionDim) {
    // Partial-reduction tiling cannot tile parallel dims: the parallel
    // dims get their own loops first (one row per iteration), then the
    // row is tiled along the reduced dim.
    SmallVector<int64_t> rows(sizes.size(), 0);
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    for (auto [d, iterator] : llvm::enumerate(iterators))
      if (linalg::isParallelIterator(iterator))
        rows[d] = sizes[d];
    if (llvm::any_of(rows, [](int64_t size) { return size != 0; })) {
      FailureOr<scf::SCFTilingResult> byRow =
          tileOnce(rewriter, op, rows, {}, std::nullopt, worklist);
      if (failed(byRow) || byRow->tiledOps.size() != 1)
        return;
      op = cast<linalg::LinalgOp>(byRow->tiledOps.front());
      op->removeAttr(kVectorTile);
    }
    SmallVector<int64_t> along(sizes.size(), 0);
    along[*plan->partialReductionDim] = sizes[*plan->partialReductionDim];
    sizes = along;
    interchange.clear();
  }
  (void)tileOnce(rewriter, op, sizes, interchange, plan->partialReductionDim,
                 worklist);
}

namespace {
/// Vector multiplies and adds may be contracted into fused multiply-adds
/// (`fastmath<contract>`): the register tiles of contractions are made of
/// them, and one rounding instead of two is never less accurate. LLVM forms
/// the FMAs, which also sees through the unit-dim reshapes of a tile.
template <typename ArithOp>
struct AllowContraction : OpRewritePattern<ArithOp> {
  using OpRewritePattern<ArithOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ArithOp op,
                                PatternRewriter &rewriter) const override {
    arith::FastMathFlags flags = op.getFastmath();
    if (!isa<VectorType>(op.getType()) ||
        bitEnumContainsAll(flags, arith::FastMathFlags::contract))
      return failure();
    rewriter.modifyOpInPlace(
        op, [&] { op.setFastmath(flags | arith::FastMathFlags::contract); });
    return success();
  }
};

/// `insert_slice(transfer_write(v, extract_slice(t)[0...]), t)` with the
/// same offsets and sizes is `transfer_write(v, t)[offsets]`: the shape the
/// accumulator of a convolution tile takes once its unit dims are dropped,
/// and the form loop-invariant subset hoisting matches.
struct WriteThroughSlice : OpRewritePattern<tensor::InsertSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::InsertSliceOp insert,
                                PatternRewriter &rewriter) const override {
    auto write = insert.getSource().getDefiningOp<vector::TransferWriteOp>();
    if (!write || !write->hasOneUse() || write.getMask())
      return failure();
    auto slice = write.getBase().getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || slice.getSource() != insert.getDest() ||
        !slice.isSameAs(
            insert, [](OpFoldResult a, OpFoldResult b) { return a == b; }) ||
        slice.getSourceType().getRank() != slice.getType().getRank() ||
        !insert.hasUnitStride())
      return failure();
    if (!llvm::all_of(write.getIndices(),
                      [](Value v) { return isZeroInteger(v); }))
      return failure();
    SmallVector<Value> indices;
    for (OpFoldResult offset : insert.getMixedOffsets())
      indices.push_back(
          getValueOrCreateConstantIndexOp(rewriter, insert.getLoc(), offset));
    rewriter.replaceOpWithNewOp<vector::TransferWriteOp>(
        insert, write.getVector(), insert.getDest(), indices,
        write.getPermutationMapAttr(), write.getInBoundsAttr());
    return success();
  }
};

/// The largest value `index` takes, when it is a constant or the induction
/// variable of an `scf.for` with constant bounds whose step divides its
/// range (the tile loops tiling makes).
static std::optional<int64_t> largestIndex(Value index) {
  if (std::optional<int64_t> c = getConstantIntValue(index))
    return c;
  auto arg = dyn_cast<BlockArgument>(index);
  if (!arg)
    return std::nullopt;
  auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
  if (!loop || loop.getInductionVar() != arg)
    return std::nullopt;
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!lb || !ub || !step || *step <= 0 || *ub <= *lb || (*ub - *lb) % *step)
    return std::nullopt;
  return *ub - *step;
}

/// A transfer along a tile loop (`x[i : i + 16]` for i in 0..N step 16)
/// is in bounds; folding the tile's slices into it forgot so, and an
/// out-of-bounds transfer lowers to a masked access with a mask computed
/// per vector.
template <typename TransferOp>
struct InBoundsAlongTileLoops : OpRewritePattern<TransferOp> {
  using OpRewritePattern<TransferOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(TransferOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<ShapedType>(op.getBase().getType());
    AffineMap map = op.getPermutationMap();
    if (!type || !type.hasStaticShape() || op.getMask())
      return failure();
    SmallVector<bool> inBounds = op.getInBoundsValues();
    bool changed = false;
    for (auto [i, result] : llvm::enumerate(map.getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(result);
      if (inBounds[i] || !dim)
        continue;
      std::optional<int64_t> largest =
          largestIndex(op.getIndices()[dim.getPosition()]);
      if (largest && *largest >= 0 &&
          *largest + op.getVectorType().getDimSize(i) <=
              type.getDimSize(dim.getPosition())) {
        inBounds[i] = true;
        changed = true;
      }
    }
    if (!changed)
      return failure();
    rewriter.modifyOpInPlace(
        op, [&] { op.setInBoundsAttr(rewriter.getBoolArrayAttr(inBounds)); });
    return success();
  }
};

struct HarpVectorizePass
    : harp::impl::HarpVectorizePassBase<HarpVectorizePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *context = &getContext();
    Config config{vectorBits,
                  std::max(1u, registerRows.getValue()),
                  std::max(1u, registerVectors.getValue()),
                  std::max(1u, reductionVectors.getValue()),
                  cacheK,
                  cacheN,
                  l1Cache,
                  l2Cache,
                  pack,
                  flattenWindows};
    if (config.vectorBits < 8) {
      func.emitError("harp-vectorize: vector-bits must be at least 8, got ")
          << config.vectorBits;
      return signalPassFailure();
    }

    IRRewriter packer(context);
    if (config.flattenWindows) {
      SmallVector<linalg::GenericOp> generics;
      func.walk([&](linalg::GenericOp op) { generics.push_back(op); });
      for (linalg::GenericOp op : generics)
        deinterleaveStridedWindow(packer, op);
    }
    if (config.pack || config.flattenWindows) {
      SmallVector<linalg::GenericOp> generics;
      func.walk([&](linalg::GenericOp op) { generics.push_back(op); });
      for (linalg::GenericOp op : generics) {
        std::optional<unsigned> bits = widestElementBits(op);
        if (!bits)
          continue;
        unsigned lanes = std::max(1u, config.vectorBits / std::max(8u, *bits));
        if (config.pack && packRightOperand(packer, op, config, lanes))
          continue;
        if (config.flattenWindows)
          flattenWindow(packer, op, config, lanes);
      }
    }

    // Ops already inside loops (the rows of harp-fuse-epilogues) are tiled
    // as well: their tile loops nest inside the existing ones.
    SmallVector<linalg::LinalgOp> worklist;
    func.walk([&](linalg::LinalgOp op) { worklist.push_back(op); });
    IRRewriter rewriter(context);
    // Each op is visited once; the ops tiling creates are smaller (merges
    // reduce one vector, inits fill one) and plan no further partial tiles.
    for (size_t i = 0; i < worklist.size() && i < 4096; ++i)
      tileAndPeel(rewriter, worklist[i], config, worklist);

    // Constant tile sizes become static shapes, then the tiles are
    // vectorized.
    RewritePatternSet staticShapes(context);
    linalg::populateLinalgTilingCanonicalizationPatterns(staticShapes);
    tensor::ExtractSliceOp::getCanonicalizationPatterns(staticShapes, context);
    tensor::InsertSliceOp::getCanonicalizationPatterns(staticShapes, context);
    tensor::CastOp::getCanonicalizationPatterns(staticShapes, context);
    if (failed(applyPatternsGreedily(func, std::move(staticShapes))))
      return signalPassFailure();
    SmallVector<linalg::LinalgOp> tiles;
    func.walk([&](linalg::LinalgOp op) {
      if (op->hasAttr(kVectorTile))
        tiles.push_back(op);
    });
    for (linalg::LinalgOp tile : tiles)
      vectorizeTile(rewriter, tile);

    // Fold slices into transfers, then hoist loop-invariant subsets (the
    // accumulator tiles) out of their loops, innermost loop first.
    RewritePatternSet cleanup(context);
    tensor::populateFoldTensorSubsetIntoVectorTransferPatterns(cleanup);
    vector::populateVectorTransferDropUnitDimsPatterns(cleanup);
    cleanup
        .add<WriteThroughSlice, InBoundsAlongTileLoops<vector::TransferReadOp>,
             InBoundsAlongTileLoops<vector::TransferWriteOp>>(context);
    vector::TransferReadOp::getCanonicalizationPatterns(cleanup, context);
    vector::TransferWriteOp::getCanonicalizationPatterns(cleanup, context);
    tensor::ExtractSliceOp::getCanonicalizationPatterns(cleanup, context);
    tensor::InsertSliceOp::getCanonicalizationPatterns(cleanup, context);
    scf::ForOp::getCanonicalizationPatterns(cleanup, context);
    affine::AffineApplyOp::getCanonicalizationPatterns(cleanup, context);
    affine::AffineMinOp::getCanonicalizationPatterns(cleanup, context);
    FrozenRewritePatternSet frozenCleanup(std::move(cleanup));
    if (failed(applyPatternsGreedily(func, frozenCleanup)))
      return signalPassFailure();
    SmallVector<LoopLikeOpInterface> loops;
    func.walk([&](LoopLikeOpInterface loop) { loops.push_back(loop); });
    for (LoopLikeOpInterface loop : loops)
      hoistLoopInvariantSubsets(rewriter, loop);
    // Loop-invariant scalar and vector values (a gather's row index and its
    // clamp, read once per row instead of once per vector) leave their
    // loops. Ops with tensor results stay: a tensor hoisted out of a tile
    // loop that later runs on threads could bufferize to one buffer every
    // thread writes. (Subset hoisting replaced loops: collect them again.)
    loops.clear();
    func.walk([&](LoopLikeOpInterface loop) { loops.push_back(loop); });
    for (LoopLikeOpInterface loop : loops)
      moveLoopInvariantCode(
          loop.getLoopRegions(),
          [&](Value value, Region *) {
            return loop.isDefinedOutsideOfLoop(value);
          },
          [&](Operation *op, Region *) {
            return op->getNumRegions() == 0 && isMemoryEffectFree(op) &&
                   isSpeculatable(op) &&
                   llvm::none_of(op->getResultTypes(),
                                 llvm::IsaPred<TensorType>);
          },
          [&](Operation *op, Region *) { loop.moveOutOfLoop(op); });

    // Polynomial approximations of math functions on f32, so they stay
    // vectors. Not rsqrt (its approximation needs AVX2 intrinsics and is
    // meant for vectors only), nor sin and cos (their range reduction loses
    // accuracy for large arguments): those stay libm calls or LLVM
    // intrinsics.
    RewritePatternSet math(context);
    // Transposed and broadcasting transfers become minor-identity ones and
    // vector.transpose (after hoisting, which matches transfers of equal
    // form).
    vector::populateVectorTransferPermutationMapLoweringPatterns(math);
    populateMathPolynomialApproximationPatterns(math, [](StringRef name) {
      return llvm::is_contained(
          {"math.tanh", "math.exp", "math.exp2", "math.expm1", "math.log",
           "math.log2", "math.log1p", "math.erf", "math.erfc", "math.atan",
           "math.atan2", "math.asin", "math.acos", "math.cbrt"},
          name);
    });
    math.add<AllowContraction<arith::MulFOp>, AllowContraction<arith::AddFOp>,
             AllowContraction<arith::SubFOp>>(context);
    if (failed(applyPatternsGreedily(func, std::move(math))))
      return signalPassFailure();
  }
};
} // namespace
