//===- TileAndVectorize.cpp - harp-tile-and-vectorize ---------------------===//
//
// Tiles every linalg kernel on tensors to a vector-sized tile and vectorizes
// the tile (see the pass description in Passes.td for the tile shapes).
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/CPU/Passes.h"
#include "harp/Support/Greedy.h"

#include "CodegenConfig.h"
#include "harp/Codegen/Common/Passes.h"
#include "harp/Codegen/Common/TilingUtils.h"

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
#define GEN_PASS_DEF_HARPTILEANDVECTORIZEPASS
#include "harp/Codegen/CPU/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;
using namespace mlir::harp::cpu;

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

} // namespace

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

/// Reduced elements from which a reduction down the rows of its streamed
/// input is computed row by row (`streamsRows`); a short one (a 3 x 3
/// window) keeps its accumulators in registers.
static constexpr int64_t kStreamedRowsMin = 64;
/// Vector tiles a row of the streamed input must span to be streamed: a
/// narrower one is walked down that many times, and keeps its
/// accumulators in registers.
static constexpr int64_t kStreamedRowTiles = 8;

/// The plan of a reduction whose largest input is read along the result's
/// vector dim `dim` and reduced along dims outside it (a column sum, a
/// vector-matrix product): the reduced loops outside `dim`, so that each
/// reduction step reads a contiguous row of that input, and `dim` in
/// blocks whose accumulators (the result's slice, read and written once
/// per row) take at most half of L2. nullopt where the input's rows are not
/// contiguous along `dim` or the result is not indexed by plain dims.
static std::optional<TilePlan> streamsRows(linalg::LinalgOp op,
                                           const Config &config, unsigned dim,
                                           int64_t lanes,
                                           ArrayRef<unsigned> reductions) {
  OpOperand *streamed = largestInputAlong(op, dim);
  if (!streamed || op.getNumDpsInits() != 1 ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0))
           .isProjectedPermutation())
    return std::nullopt;
  AffineMap map = op.getMatchingIndexingMap(streamed);
  if (!map.isProjectedPermutation() || contiguousDim(map) != dim ||
      !llvm::all_of(reductions,
                    [&](unsigned d) { return map.isFunctionOfDim(d); }))
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned numLoops = op.getNumLoops();
  TilePlan plan;
  plan.tileSizes.assign(numLoops, 1);
  int64_t wide = config.reductionVectors * lanes;
  plan.tileSizes[dim] = std::min<int64_t>(
      ranges[dim],
      ranges[dim] % wide == 0 || ranges[dim] >= 8 * wide ? wide : lanes);
  // A row of a few tiles is walked down a few times, from cache: its
  // accumulators stay in registers.
  if (ranges[dim] < kStreamedRowTiles * plan.tileSizes[dim])
    return std::nullopt;
  SmallVector<unsigned> inner(reductions);
  inner.push_back(dim);
  plan.interchange = innermostLast(numLoops, inner);
  // Blocks only where a row's accumulators would not fit half of L2: the
  // hardware prefetchers run on past the end of a row's piece, so shorter
  // pieces read rows twice (a 4096 x 4096 column sum in blocks of 1024 or
  // 2048 columns took 6.7 ms, whole rows 2.3; a 1 x 4096 @ 4096 x 4096
  // product in two halves 5.4 ms, whole 2.2). Without a block the reduced
  // loops head the nest, and harp-parallelize, which forks threads only
  // there, runs it on one thread.
  int64_t tile = plan.tileSizes[dim];
  int64_t block =
      int64_t(config.l2Bytes) / 2 / std::max<int64_t>(1, elementBytes(op));
  if (ranges[dim] > block && block >= tile) {
    plan.cacheTileSizes.assign(numLoops, 0);
    plan.cacheTileSizes[dim] = block - block % tile;
    plan.cacheInterchange = innermostLast(numLoops, {dim});
  }
  return plan;
}

/// The plan of a correlation computed as register tiles of dot-product
/// rows (CorrelationTile): the tile's rowsA x rowsB outputs each keep a
/// vector of partial sums along the reduced row, carried across the other
/// reduced dims and summed once per block. Cache blocks: the filters `b`
/// in two halves heading the nest (harp-parallelize's threads), then as
/// many batch steps (images) per block as the tile's rows of them fit L1,
/// rows the tile rereads from L1 for every tap. (Without the batch blocks
/// every tile and tap streamed all of the images: 144 passes over 2.4 MB
/// for a 16 -> 16 channel 3x3 weight gradient over 32 x 32 x 32.)
static void planCorrelationTile(linalg::LinalgOp op, const Config &config,
                                int64_t lanes, const CorrelationTile &tile,
                                TilePlan &plan) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned numLoops = op.getNumLoops();
  plan.tileSizes[tile.a] = tile.rowsA;
  plan.tileSizes[tile.b] = tile.rowsB;
  plan.tileSizes[tile.reduced] = lanes;
  plan.partialReductionDim = tile.reduced;
  plan.interchange.clear();
  plan.cacheTileSizes.assign(numLoops, 0);
  // Blocks that divide their dims: a remainder block has a dynamic shape
  // where it is peeled inside another block loop, and stays scalar.
  auto divisor = [](int64_t extent, int64_t limit, int64_t unit) -> int64_t {
    for (int64_t b = limit - limit % unit; b >= unit; b -= unit)
      if (extent % b == 0)
        return b;
    return 0;
  };
  if (ranges[tile.b] >= 2 * tile.rowsB)
    plan.cacheTileSizes[tile.b] =
        divisor(ranges[tile.b], ranges[tile.b] / 2, tile.rowsB);
  // Blocks of as many batch steps (images) as the tile's rows of them fit
  // L1 (correlationTile), each block summed into the result: the rows stay
  // in L1 across the taps, and the partial sums are carried across the
  // block's images (with one-vector rows, 16 x 16 images at 16 lanes, a
  // horizontal sum per image and tap cost about as much as the image's
  // multiply-adds).
  for (unsigned d : tile.batch)
    plan.cacheTileSizes[d] = 1;
  if (!tile.batch.empty()) {
    unsigned inner = tile.batch.back();
    plan.cacheTileSizes[inner] =
        divisor(ranges[inner],
                std::clamp<int64_t>(int64_t(config.l1Bytes) /
                                        std::max<int64_t>(1, tile.stepBytes),
                                    1, ranges[inner]),
                1);
  }
  SmallVector<unsigned> blockOrder{tile.b};
  blockOrder.append(tile.batch.begin(), tile.batch.end());
  plan.cacheInterchange.clear();
  for (unsigned d : blockOrder)
    plan.cacheInterchange.push_back(d);
  for (unsigned d = 0; d < numLoops; ++d)
    if (!llvm::is_contained(blockOrder, d))
      plan.cacheInterchange.push_back(d);
  if (llvm::all_of(plan.cacheTileSizes, [](int64_t t) { return !t; }))
    plan.cacheTileSizes.clear();
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
      // them as make its columns. Without an n block (the columns fit one,
      // or no block divides them) all panels are one block: their loop runs
      // inside the row tiles', each row tile reading every panel of the k
      // block from L2. (A block of one panel each put the panel loop at the
      // head of the nest and read all of A again per panel: 1024^3 with
      // AVX-512 code, packed for its page-apart rows, took 21.3 ms that way
      // and 19.5 ms with all panels in one block, on a Zen 4 core.)
      SmallVector<unsigned> panels(dims->n.begin(), dims->n.end() - 1);
      int64_t columns = ranges[n];
      for (unsigned d : panels)
        columns *= ranges[d];
      CacheBlocks blocks =
          cacheBlocks(config, plan.tileSizes[m], plan.tileSizes[n],
                      elementBytes(op), ranges[k], columns);
      int64_t kBlock = blocks.k, nBlock = blocks.n;
      if (!panels.empty()) {
        if (nBlock) {
          int64_t perBlock = std::max<int64_t>(1, nBlock / ranges[n]);
          for (unsigned d : panels)
            plan.cacheTileSizes[d] = ranges[d] % perBlock ? 1 : perBlock;
        }
      } else if (nBlock) {
        plan.cacheTileSizes[n] = nBlock;
      }
      if (kBlock)
        plan.cacheTileSizes[k] = kBlock;
      // A k block heading the nest would keep the matmul off threads
      // (harp-parallelize forks only at the head of a nest, and k is a
      // reduction): without a block over n, m gets two halves of whole
      // register tiles, the outer loop threads split; rows left over (less
      // than two tiles) are a peeled remainder on one thread. (Halves only
      // where m divided into two: a 500-row matmul ran on one thread.)
      bool nBlocks =
          plan.cacheTileSizes[n] || llvm::any_of(panels, [&](unsigned d) {
            return plan.cacheTileSizes[d] && ranges[d] > plan.cacheTileSizes[d];
          });
      int64_t rows = config.registerRows;
      if (plan.cacheTileSizes[k] && !nBlocks && ranges[m] >= 8 * rows)
        plan.cacheTileSizes[m] = rows * (ranges[m] / (2 * rows));
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
  // A correlation that harp-pack-contractions left to be read in place.
  if (std::optional<CorrelationTile> tile = correlationTile(op, config, lanes);
      hasReduction && tile) {
    planCorrelationTile(op, config, lanes, *tile, plan);
    return plan;
  }
  // A row shorter than a vector (a pooling window's 2 or 3 taps) is no
  // row reduction where the result's contiguous dim is a parallel dim of
  // more outputs than the row has taps and comes right outside the row in
  // the input: vectors along it (below), each tap one strided read across
  // the outputs' taps, which lie together, instead of a horizontal
  // reduction of a few elements per output. (A 2x2 max pool of
  // 64 x 64 x 8 x 8 took 0.229 ms as rows of two, 0.058 ms along the
  // output's width, AMD EPYC Zen 5, AVX-512 code. Outputs further apart
  // in the input are not taken: a batch norm's channel sums over rows of
  // 8 read as gathers a channel apart took 0.15 ms.)
  auto acrossOutputs = [&](unsigned reduced) {
    std::optional<unsigned> out =
        contiguousDim(op.getMatchingIndexingMap(op.getDpsInitOperand(0)));
    AffineMap read = op.getMatchingIndexingMap(largestInput(op));
    unsigned n = read.getNumResults();
    return ranges[reduced] < lanes && out &&
           linalg::isParallelIterator(iterators[*out]) &&
           ranges[*out] > ranges[reduced] && n >= 2 &&
           read.getResult(n - 1) ==
               getAffineDimExpr(reduced, op.getContext()) &&
           read.getResult(n - 2) == getAffineDimExpr(*out, op.getContext());
  };
  if (hasReduction) {
    std::optional<unsigned> dim = largestInputContiguousDim(op);
    bool window = false;
    if (!dim) {
      dim = correlationReducedDim(op, lanes);
      window = dim.has_value();
    }
    if (dim && linalg::isReductionIterator(iterators[*dim]) &&
        (ranges[*dim] >= lanes || !reusesInputs(op)) &&
        (window || !acrossOutputs(*dim))) {
      int64_t width = config.reductionVectors * lanes;
      plan.interchange = innermostLast(numLoops, {*dim});
      bool twoTiles = ranges[*dim] >= 2 * width;
      if (ranges[*dim] > width && (twoTiles || !window) &&
          op.getNumDpsInits() == 1 && op.getNumReductionLoops() == 1) {
        plan.tileSizes[*dim] = width;
        // Partial accumulators only across two tiles or more: a row of one
        // tile and a remainder reduces each in registers (the remainder
        // peeled), where they cost a fill, a merge and three scratch rows
        // per output (a text classifier's max over 76 time steps: 0.28 ms
        // for 64 x 96 rows instead of 0.14).
        if (twoTiles)
          plan.partialReductionDim = *dim;
      } else if (window && op.getNumDpsInits() == 1) {
        // Rows of a correlation, reduced over the outer dims too: vectors
        // of partial sums along the row carried across all of them, one
        // horizontal sum per output at the end. Planned as the other
        // kernels, along the result's 3-wide tap rows with a broadcast of
        // dY per element, a 3x3 depthwise weight gradient over
        // 32 x 16 x 16 x 16 took 0.53 ms on a Sapphire Rapids core
        // (AVX-512 code); along the image's rows 0.072 ms.
        plan.tileSizes[*dim] =
            ranges[*dim] > width ? width : ranges[*dim] - ranges[*dim] % lanes;
        plan.partialReductionDim = *dim;
        // A row of one vector gets its independent multiply-add chains
        // from the next reduced dim out (rows oh and oh + 1): one chain's
        // latency bounded it.
        if (plan.tileSizes[*dim] < width)
          for (unsigned d = *dim; d-- > 0;)
            if (linalg::isReductionIterator(iterators[d])) {
              if (ranges[d] % config.reductionVectors == 0)
                plan.tileSizes[d] = config.reductionVectors;
              break;
            }
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
  // for `register-rows` accumulators. Channels that rows do not divide
  // leave a peeled remainder tile of fewer rows (6 rows over 64 channels:
  // ten tiles and one of 4). Rows that divided the channels (4 of 64 with
  // AVX2 code) kept 8 accumulators where 6 rows keep 12: 10% slower 1x1
  // and 8% slower 14x14 convolutions, AVX2 code on Zen 4.
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
        plan.tileSizes[d] = clampTo(d, config.registerRows);
        // Rows as wide as a contraction's register tile where the columns
        // make at least two such tiles or divide evenly: twice the
        // accumulators per input load. (The remainder is whole vectors and
        // one shorter one, see partialVectorSplit; with a threshold of
        // eight tiles, a 256-channel 14x14 convolution's 222-output grid
        // kept one-vector rows.)
        int64_t wide = registerTileWidth(config, lanes);
        if (ranges[*dim] % wide == 0 || ranges[*dim] >= 2 * wide)
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
  int64_t reduced = 1;
  for (unsigned d = 0; d < numLoops; ++d)
    if (linalg::isReductionIterator(iterators[d])) {
      reductions.push_back(d);
      reduced *= ranges[d];
    }
  plan.interchange = innermostLast(numLoops, reductions);
  // A long reduction down the rows of the input it streams (a column sum,
  // a vector-matrix product x @ B with one row of x): the reduced loops
  // go outside the vector dim, so that each step reads a row of that
  // input contiguously and adds it into the result's accumulators, which
  // stay in cache (`streamsRows`). Innermost, they walked each column strip
  // down every row, one row (often a page) apart, and a 4096 x 4096
  // column sum took 2.3 times as long as the row sum.
  if (hasReduction && !rows && reduced >= kStreamedRowsMin) {
    if (std::optional<TilePlan> streamed =
            streamsRows(op, config, *dim, lanes, reductions))
      return streamed;
  }
  return plan;
}

/// Marks the tiles `harp-vectorize` vectorizes once their shapes are static.
static constexpr llvm::StringLiteral kVectorTile = "harp.vector_tile";
/// Marks the remainder of a cache-blocked loop, tiled once its shape is
/// static.
static constexpr llvm::StringLiteral kRemainderBlock = "harp.remainder_block";
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
  // A loop's range from any operand that reads it as a plain dim of static
  // extent: getStaticLoopRanges takes the first operand's, which may be an
  // input slice of a clamped, dynamic size (a filter's slice along the
  // register rows of output channels) where the result's is static.
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type)
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (auto [i, result] : llvm::enumerate(map.getResults()))
      if (auto d = dyn_cast<AffineDimExpr>(result);
          d && ShapedType::isDynamic(ranges[d.getPosition()]) &&
          !type.isDynamicDim(i))
        ranges[d.getPosition()] = type.getDimSize(i);
  }
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

/// Reads every input of `op` that a map reads with a stride and no window
/// (`d * s + c`: a strided slice of a view, a strided 1x1 convolution's
/// image, the column tensor of a strided convolution's weight gradient)
/// through a strided slice, `extract_slice [c] [range of d] [s]`, and reads
/// that at `d`. The vectorizer takes only projected permutations: read in
/// place, the tile stayed scalar loops (1.1 ns an element for a copy of
/// every other column of a 512 x 2048 matrix on an AMD EPYC Zen 4). The
/// strided slice becomes a strided view after bufferization, whose vector
/// reads the lowering makes element loads. Only static tiles whose every
/// map result is a dim or such a read, each dim once.
static void sliceStridedInputs(RewriterBase &rewriter, linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics())
    return;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return;
  MLIRContext *context = op.getContext();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  bool changed = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = maps[input->getOperandNumber()];
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    if (!type || !type.hasStaticShape() || map.isProjectedPermutation())
      continue;
    SmallVector<OpFoldResult> offsets, sizes, strides;
    SmallVector<AffineExpr> results;
    SmallVector<unsigned> seen;
    bool strided = false, simple = true;
    for (auto [j, e] : llvm::enumerate(map.getResults())) {
      std::optional<harp::StridedRead> read;
      if (auto d = dyn_cast<AffineDimExpr>(e))
        read = harp::StridedRead{d.getPosition(), 1, 0};
      else if ((read = harp::stridedRead(e)))
        strided = true;
      if (!read || llvm::is_contained(seen, read->dim) ||
          read->offset + (ranges[read->dim] - 1) * read->stride >=
              type.getDimSize(j)) {
        simple = false;
        break;
      }
      seen.push_back(read->dim);
      offsets.push_back(rewriter.getIndexAttr(read->offset));
      sizes.push_back(rewriter.getIndexAttr(ranges[read->dim]));
      strides.push_back(rewriter.getIndexAttr(read->stride));
      results.push_back(getAffineDimExpr(read->dim, context));
    }
    if (!strided || !simple)
      continue;
    rewriter.setInsertionPoint(op);
    Value slice = tensor::ExtractSliceOp::create(
        rewriter, op.getLoc(), input->get(), offsets, sizes, strides);
    rewriter.modifyOpInPlace(op, [&] { input->set(slice); });
    maps[input->getOperandNumber()] =
        AffineMap::get(map.getNumDims(), 0, results, context);
    changed = true;
  }
  if (changed)
    rewriter.modifyOpInPlace(op, [&] {
      op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
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
  if (auto strided = dyn_cast<linalg::GenericOp>(op.getOperation());
      strided && !canVectorize(op))
    sliceStridedInputs(rewriter, strided);
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
/// appended to `worklist`; the tiles in peeled remainder loops (copies of
/// the tile with the remainder's shape) to `remainders` when given.
static FailureOr<scf::SCFTilingResult>
tileOnce(RewriterBase &rewriter, linalg::LinalgOp op, ArrayRef<int64_t> sizes,
         ArrayRef<int64_t> interchange, std::optional<unsigned> partialDim,
         SmallVectorImpl<linalg::LinalgOp> &worklist,
         SmallVectorImpl<linalg::LinalgOp> *remainders = nullptr) {
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  options.setInterchange(interchange);
  if (partialDim) {
    options.setReductionTilingStrategy(
        ReductionTilingStrategy::PartialReductionOuterReduction);
    // Every tiled reduction dim keeps partial sums (one of them a vector
    // of them): the outer ones then run as loops that carry the partial
    // accumulators, merged once after them.
    SmallVector<unsigned> reductionDims;
    SmallVector<utils::IteratorType> kinds = op.getIteratorTypesArray();
    for (auto [d, size] : llvm::enumerate(sizes))
      if (size != 0 && linalg::isReductionIterator(kinds[d]))
        reductionDims.push_back(d);
    options.setReductionDims(reductionDims);
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
  SmallVector<scf::ForOp> peeled;
  for (LoopLikeOpInterface loop : llvm::reverse(tiled->loops)) {
    auto forOp = dyn_cast<scf::ForOp>(loop.getOperation());
    scf::ForOp remainder;
    if (forOp && succeeded(scf::peelForLoopAndSimplifyBounds(rewriter, forOp,
                                                             remainder)))
      peeled.push_back(remainder);
  }
  if (remainders) {
    llvm::SetVector<Operation *> copies;
    for (scf::ForOp remainder : peeled)
      remainder->walk([&](linalg::LinalgOp tile) {
        if (tile->hasAttr(kVectorTile))
          copies.insert(tile);
      });
    for (Operation *copy : copies)
      remainders->push_back(cast<linalg::LinalgOp>(copy));
  }
  for (Operation *merge : tiled->mergeOps)
    if (auto linalgMerge = dyn_cast<linalg::LinalgOp>(merge))
      worklist.push_back(linalgMerge);
  for (Value init : tiled->initialValues)
    if (auto linalgInit = init.getDefiningOp<linalg::LinalgOp>())
      worklist.push_back(linalgInit);
  return tiled;
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
/// the piece's ranges, cache blocks kept where they are shorter than them
/// (a remainder block is peeled and tiled like the others).
static TilePlan planForPiece(const TilePlan &plan, linalg::LinalgOp piece) {
  TilePlan result = plan;
  SmallVector<int64_t> ranges = piece.getStaticLoopRanges();
  for (auto [size, range] : llvm::zip(result.tileSizes, ranges))
    size = std::min(size, range);
  for (auto [size, range] : llvm::zip(result.cacheTileSizes, ranges))
    if (size >= range)
      size = 0;
  if (llvm::all_of(result.cacheTileSizes, [](int64_t t) { return !t; }))
    result.cacheTileSizes.clear();
  return result;
}

/// A contraction with a single row (a vector-matrix product: x @ W^T or
/// x @ B for one row of x), or with a single column (a matrix-vector
/// product, the last column of a matmul split by harp-pack-contractions)
/// whose largest input is contiguous along k, without its unit dims.
///
/// A single row read along k (W of x @ W^T) is then a reduction along k,
/// rows of dot products with vectors along k; read along n (B of x @ B), a
/// reduction down B's rows, which `streamsRows` streams. As a contraction
/// it got a register tile of 1 x w that walked each column strip of B down
/// every row, one row apart: 1 x 1024 @ 1024 x 1024 took 150-250 us against
/// NumPy's 53 (and W^T was first copied transposed: 200 us).
///
/// A single column is a reduction along k too. As a contraction it got a
/// register tile of rows x 1, its vectors down the rows of its matrix, one
/// scalar load per lane (the last column of a 97 x 1031 x 257 matmul took
/// 22 us, twelve times a column of the register tiles); and with the unit
/// dim kept, the column (K x 1) is read along its outer dim, which the
/// transfer lowering moves one element at a time.
static linalg::LinalgOp dropUnitRowOrColumn(RewriterBase &rewriter,
                                            linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || !linalg::isaContractionOpInterface(op) ||
      op.hasDynamicShape())
    return op;
  FailureOr<linalg::ContractionDimensions> dims = orientedContractionDims(op);
  if (failed(dims) || dims->k.empty())
    return op;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto unit = [&](ArrayRef<unsigned> loops) {
    return !loops.empty() &&
           llvm::all_of(loops, [&](unsigned d) { return ranges[d] == 1; });
  };
  bool column = dims->n.size() == 1 && unit(dims->n);
  bool row = unit(dims->m);
  if (!column && !row)
    return op;
  std::optional<unsigned> read = largestInputContiguousDim(op);
  if (column && (!read || !llvm::is_contained(dims->k, *read)))
    return op;
  // Reshapes, not rank-reducing slices: transfers fold a slice of K x 1
  // into a read along its outer dim, a reshape makes the column a K vector.
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::DropUnitDimsResult> dropped =
      linalg::dropUnitDims(rewriter, generic, linalg::ControlDropUnitDims());
  if (failed(dropped))
    return op;
  rewriter.replaceOp(op, dropped->replacements);
  return cast<linalg::LinalgOp>(dropped->resultOp.getOperation());
}

/// Tiles `op` as `planTiles` says, or as `given` (see `tileOnce`).
static void tileAndPeel(RewriterBase &rewriter, linalg::LinalgOp op,
                        const Config &config,
                        SmallVectorImpl<linalg::LinalgOp> &worklist,
                        std::optional<TilePlan> given = std::nullopt) {
  if (!given)
    op = dropUnitRowOrColumn(rewriter, op);
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
    SmallVector<linalg::LinalgOp> remainders;
    FailureOr<scf::SCFTilingResult> blocks =
        tileOnce(rewriter, op, plan->cacheTileSizes, plan->cacheInterchange,
                 std::nullopt, worklist, &remainders);
    if (failed(blocks) || blocks->tiledOps.size() != 1)
      return;
    // A remainder block (the rows left after two halves of m) is tiled
    // once its shape is static (harp-tile-and-vectorize's second round);
    // vectorized whole, it was one vector of all its elements.
    for (linalg::LinalgOp remainder : remainders) {
      remainder->removeAttr(kVectorTile);
      remainder->setAttr(kRemainderBlock, rewriter.getUnitAttr());
    }
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
      SmallVector<linalg::LinalgOp> remainders;
      FailureOr<scf::SCFTilingResult> byRow =
          tileOnce(rewriter, op, rows, {}, std::nullopt, worklist, &remainders);
      if (failed(byRow) || byRow->tiledOps.size() != 1)
        return;
      // The rows a register tile leaves (5 channels in tiles of 3: a tile
      // of 2) hold the whole reduction too: planned and tiled once static,
      // as a remainder block. Vectorized as they were, a 3x3 weight
      // gradient over 23 x 24 images got vectors of 3 x 2 x 23 x 24
      // elements, 30 s in LLVM for one small kernel.
      for (linalg::LinalgOp remainder : remainders) {
        remainder->removeAttr(kVectorTile);
        remainder->setAttr(kRemainderBlock, rewriter.getUnitAttr());
      }
      op = cast<linalg::LinalgOp>(byRow->tiledOps.front());
      op->removeAttr(kVectorTile);
    }
    // The row is tiled along the reduced dims (all of them partial
    // reductions, see tileOnce): the vector dim by its tile, the others
    // by one.
    SmallVector<int64_t> along(sizes.size(), 0);
    for (auto [d, iterator] : llvm::enumerate(iterators))
      if (linalg::isReductionIterator(iterator))
        along[d] = sizes[d];
    sizes = along;
    interchange.clear();
  }
  (void)tileOnce(rewriter, op, sizes, interchange, plan->partialReductionDim,
                 worklist);
}

/// Lets the multiply-add of a reduction's accumulation, `out + a * b`
/// (either order), be contracted into a fused multiply-add
/// (`fastmath<contract>` on both ops, which the vectorized tiles and their
/// remainders inherit): the register tiles of contractions are made of
/// them, and one rounding instead of two is never less accurate. Nothing
/// else is contracted: an element-wise expression that fusion recomputes
/// in several kernels (a max-reduction's derivative compares a recomputed
/// value with the maximum) must round the same way in each, in vector lanes
/// and scalar remainders alike, so it keeps IEEE rounding per op.
static void allowAccumulationContraction(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumReductionLoops() == 0)
    return;
  auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
  auto add = yield.getValues().front().getDefiningOp<arith::AddFOp>();
  if (!add)
    return;
  Value out = op.getMatchingBlockArgument(op.getDpsInitOperand(0));
  Value term;
  if (add.getLhs() == out)
    term = add.getRhs();
  else if (add.getRhs() == out)
    term = add.getLhs();
  else
    return;
  auto mul = term.getDefiningOp<arith::MulFOp>();
  if (!mul || !mul->hasOneUse())
    return;
  for (Operation *arith : {add.getOperation(), mul.getOperation()}) {
    auto fastmath = cast<arith::ArithFastMathInterface>(arith);
    arith->setAttr(
        fastmath.getFastMathAttrName(),
        arith::FastMathFlagsAttr::get(
            arith->getContext(), fastmath.getFastMathFlagsAttr().getValue() |
                                     arith::FastMathFlags::contract));
  }
}

/// Whether `slice` is a contiguous block of its source in row-major order:
/// unit strides, size one in the dims before some dim, and every dim after
/// that one taken whole.
static bool isContiguousSlice(tensor::ExtractSliceOp slice) {
  if (!slice.hasUnitStride())
    return false;
  ArrayRef<int64_t> source = slice.getSourceType().getShape();
  SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
  SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
  size_t d = 0;
  while (d < source.size() && getConstantIntValue(sizes[d]) == 1)
    ++d;
  for (++d; d < source.size(); ++d)
    if (getConstantIntValue(sizes[d]) != source[d] ||
        !isZeroInteger(offsets[d]))
      return false;
  return true;
}

/// Whether `value` bufferizes to a contiguous block of memory in row-major
/// order: a new tensor, a function argument (identity layouts at function
/// boundaries), a contiguous slice of such a tensor, or what a loop or an
/// in-place write yields of one.
static bool isContiguousTensor(Value value, unsigned depth = 0) {
  if (depth > 16)
    return false;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    Operation *owner = arg.getOwner()->getParentOp();
    if (isa<func::FuncOp>(owner))
      return true;
    auto loop = dyn_cast<scf::ForOp>(owner);
    if (!loop || arg.getArgNumber() == 0)
      return false;
    return isContiguousTensor(loop.getTiedLoopInit(arg)->get(), depth + 1);
  }
  Operation *def = value.getDefiningOp();
  if (isa_and_present<tensor::EmptyOp>(def))
    return true;
  if (auto slice = dyn_cast_if_present<tensor::ExtractSliceOp>(def))
    return isContiguousSlice(slice) &&
           isContiguousTensor(slice.getSource(), depth + 1);
  if (auto insert = dyn_cast_if_present<tensor::InsertSliceOp>(def))
    return isContiguousTensor(insert.getDest(), depth + 1);
  if (auto loop = dyn_cast_if_present<scf::ForOp>(def))
    return isContiguousTensor(
        loop.getInitArgs()[cast<OpResult>(value).getResultNumber()], depth + 1);
  if (auto dps = dyn_cast_if_present<DestinationStyleOpInterface>(def))
    return isContiguousTensor(
        dps.getTiedOpOperand(cast<OpResult>(value))->get(), depth + 1);
  return false;
}

/// A fill of a contiguous block of several rows becomes one 1-D fill,
/// reshaped back: tiled by rows, a fill whose rows leave a remainder of
/// lanes was one short loop per row (a vector loop and a narrower store),
/// which LLVM made a `memset` per row, unrolled whole (7 x 65 rows of a
/// convolution's accumulators: 455 of them in one block) and then
/// scheduled in time quadratic in the block (seconds of code generation).
/// Flat, it is one loop of whole vectors and one remainder, one `memset`
/// for zeros. The reshapes bufferize to views of the same buffer.
static void flattenContiguousFill(RewriterBase &rewriter, linalg::FillOp fill) {
  if (!fill.hasPureTensorSemantics())
    return;
  Value out = fill.getOutputs()[0];
  auto type = dyn_cast<RankedTensorType>(out.getType());
  if (!type || !type.hasStaticShape() ||
      llvm::count_if(type.getShape(), [](int64_t n) { return n > 1; }) < 2 ||
      !isContiguousTensor(out))
    return;
  Location loc = fill.getLoc();
  SmallVector<ReassociationIndices> all(1);
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.front().push_back(d);
  rewriter.setInsertionPoint(fill);
  Value flat = tensor::CollapseShapeOp::create(rewriter, loc, out, all);
  Value filled =
      linalg::FillOp::create(rewriter, loc, fill.value(), flat).getResult(0);
  rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(fill, type, filled, all);
}

/// Gives every value a kernel reads element by element (`tensor.extract` in
/// its body: the vectorizer makes it a `vector.gather` on indices
/// linearized over the value's own shape) a contiguous buffer: a strided
/// slice of a larger tensor (the result of a window kernel computed on a
/// wider grid) is copied first. The gather's lowering adds the linearized
/// indices to the buffer's base as if it were dense, so it read a slice of
/// a [4, 4, 6, 8] grid as [4, 4, 6, 6] and the gradient of a 2x2 max pool
/// after a convolution came out wrong.
static void copyStridedGatherSources(RewriterBase &rewriter,
                                     linalg::GenericOp op) {
  DenseMap<Value, Value> copies;
  op.getBody()->walk([&](tensor::ExtractOp extract) {
    Value source = extract.getTensor();
    auto slice = source.getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || isContiguousSlice(slice))
      return;
    Value &copy = copies[source];
    if (!copy) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPoint(op);
      auto type = cast<RankedTensorType>(source.getType());
      Value empty = tensor::EmptyOp::create(
          rewriter, op.getLoc(), type.getShape(), type.getElementType());
      copy = linalg::CopyOp::create(rewriter, op.getLoc(), source, empty)
                 .getResult(0);
    }
    rewriter.modifyOpInPlace(extract,
                             [&] { extract.getTensorMutable().assign(copy); });
  });
}

/// `expr`, a function of one operand `x`, with `x` = `d * hi + lo` where
/// 0 <= lo < d: `(x + c) floordiv d` becomes `hi + c / d` and `(x + c) mod d`
/// becomes `lo` (c a multiple of d), `x` elsewhere `d * hi + lo`. Nullopt
/// where a division of `x` is by anything else.
static std::optional<AffineExpr> splitByDivisor(AffineExpr expr, AffineExpr x,
                                                AffineExpr hi, AffineExpr lo,
                                                int64_t d) {
  if (expr == x)
    return hi * d + lo;
  auto bin = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!bin)
    return expr;
  auto constant = dyn_cast<AffineConstantExpr>(bin.getRHS());
  bool usesX = false;
  bin.getLHS().walk([&](AffineExpr e) { usesX |= e == x; });
  switch (expr.getKind()) {
  case AffineExprKind::Add:
  case AffineExprKind::Mul: {
    std::optional<AffineExpr> lhs = splitByDivisor(bin.getLHS(), x, hi, lo, d);
    std::optional<AffineExpr> rhs = splitByDivisor(bin.getRHS(), x, hi, lo, d);
    if (!lhs || !rhs)
      return std::nullopt;
    return expr.getKind() == AffineExprKind::Add ? *lhs + *rhs : *lhs * *rhs;
  }
  case AffineExprKind::FloorDiv:
  case AffineExprKind::Mod: {
    if (!usesX)
      return expr;
    if (!constant || constant.getValue() != d)
      return std::nullopt;
    // The dividend must be x plus a multiple of d.
    AffineExpr rest = simplifyAffineExpr(bin.getLHS() - x, 0, 1);
    auto offset = dyn_cast<AffineConstantExpr>(rest);
    if (!offset || offset.getValue() % d != 0)
      return std::nullopt;
    return expr.getKind() == AffineExprKind::Mod ? lo
                                                 : hi + offset.getValue() / d;
  }
  default:
    return usesX ? std::nullopt : std::optional<AffineExpr>(expr);
  }
}

/// The divisor of the first floordiv or mod of `x` in `expr` (0: none).
static int64_t divisorOf(AffineExpr expr, AffineExpr x) {
  int64_t divisor = 0;
  expr.walk([&](AffineExpr e) {
    auto bin = dyn_cast<AffineBinaryOpExpr>(e);
    if (!bin || divisor ||
        (e.getKind() != AffineExprKind::FloorDiv &&
         e.getKind() != AffineExprKind::Mod))
      return;
    bool usesX = false;
    bin.getLHS().walk([&](AffineExpr inner) { usesX |= inner == x; });
    if (auto c = dyn_cast<AffineConstantExpr>(bin.getRHS()); usesX && c)
      divisor = c.getValue();
  });
  return divisor;
}

/// Splits the dim a gathering kernel's vectors run along (its result's
/// innermost), v of N, into (v / d, v mod d) when the kernel's reads divide
/// v by d, a multiple of the vector length that divides N: a concatenation
/// along the last dim of pieces a multiple of d long, read through a
/// head split (`dqkv[b, t, c]` from `dq[b, t, c floordiv 32 - 0, c mod 32]`,
/// `dk[... c floordiv 32 - 4 ...]`, `dv[...]`). Each element index `c mod
/// d` becomes the new inner dim and `c floordiv d` an outer one, constant
/// along a vector: the vectorizer reads each piece with a contiguous
/// vector load instead of a gather of computed indices (a nanoGPT block's
/// gradient of its q, k, v split took 0.8 ms a step as gathers on an AMD
/// EPYC Zen 4). The clamps the reads put around `c mod d` (in range by
/// construction) are dropped. Only kernels at a function's top level whose
/// every use of v's index is an affine.apply of it alone that this split
/// rewrites, and whose operands read v as a plain dim.
static void splitGatheredLaneDim(RewriterBase &rewriter, linalg::GenericOp op,
                                 const Config &config) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      !isa<func::FuncOp>(op->getParentOp()) ||
      op.getBody()->getOps<tensor::ExtractOp>().empty())
    return;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return;
  AffineMap initMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (initMap.getNumResults() == 0 || !initMap.isProjectedPermutation())
    return;
  auto last = dyn_cast<AffineDimExpr>(initMap.getResults().back());
  if (!last)
    return;
  unsigned v = last.getPosition();
  if (!linalg::isParallelIterator(op.getIteratorTypesArray()[v]))
    return;
  std::optional<int64_t> lanes = laneCount(op, config);
  if (!lanes)
    return;
  MLIRContext *context = op.getContext();
  AffineExpr x = getAffineSymbolExpr(0, context);
  AffineExpr xDim = getAffineDimExpr(0, context);

  // Every use of v's index: an affine.apply of it alone.
  SmallVector<affine::AffineApplyOp> applies;
  bool usable = true;
  op.getBody()->walk([&](linalg::IndexOp index) {
    if (index.getDim() != v)
      return;
    for (Operation *user : index->getUsers()) {
      auto apply = dyn_cast<affine::AffineApplyOp>(user);
      if (!apply || apply.getMapOperands().size() != 1)
        usable = false;
      else
        applies.push_back(apply);
    }
  });
  if (!usable || applies.empty())
    return;
  auto operandExpr = [&](affine::AffineApplyOp apply) {
    AffineMap map = apply.getAffineMap();
    return map.getNumDims() == 1 ? xDim : x;
  };
  int64_t d = 0;
  for (affine::AffineApplyOp apply : applies)
    if (!d)
      d = divisorOf(apply.getAffineMap().getResult(0), operandExpr(apply));
  if (d <= 1 || d % *lanes != 0 || ranges[v] % d != 0 || ranges[v] == d)
    return;
  AffineExpr hi = getAffineDimExpr(0, context),
             lo = getAffineDimExpr(1, context);
  SmallVector<AffineExpr> split;
  for (affine::AffineApplyOp apply : applies) {
    std::optional<AffineExpr> e = splitByDivisor(
        apply.getAffineMap().getResult(0), operandExpr(apply), hi, lo, d);
    if (!e)
      return;
    split.push_back(simplifyAffineExpr(*e, 2, 0));
  }
  // The operands read v as a plain dim, if at all.
  unsigned rank = op.getNumLoops();
  auto renumber = [&](unsigned k) { return k > v ? k + 1 : k; };
  SmallVector<AffineMap> maps;
  SmallVector<Value> operands;
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    SmallVector<AffineExpr> results;
    std::optional<unsigned> expanded;
    for (auto [j, e] : llvm::enumerate(map.getResults())) {
      if (auto dim = dyn_cast<AffineDimExpr>(e);
          dim && dim.getPosition() == v) {
        results.push_back(getAffineDimExpr(v, context));
        results.push_back(getAffineDimExpr(v + 1, context));
        expanded = j;
        continue;
      }
      if (e.isFunctionOfDim(v))
        return;
      SmallVector<AffineExpr> shift;
      for (unsigned k = 0; k < rank; ++k)
        shift.push_back(getAffineDimExpr(renumber(k), context));
      results.push_back(e.replaceDims(shift));
    }
    maps.push_back(AffineMap::get(rank + 1, 0, results, context));
    operands.push_back(operand.get());
    if (!expanded)
      continue;
    auto type = cast<RankedTensorType>(operand.get().getType());
    if (type.getDimSize(*expanded) != ranges[v])
      return;
    SmallVector<int64_t> shape;
    SmallVector<ReassociationIndices> groups;
    for (int64_t j = 0; j < type.getRank(); ++j) {
      ReassociationIndices group{int64_t(shape.size())};
      if (j == int64_t(*expanded)) {
        shape.push_back(ranges[v] / d);
        group.push_back(int64_t(shape.size()));
        shape.push_back(d);
      } else {
        shape.push_back(type.getDimSize(j));
      }
      groups.push_back(group);
    }
    operands.back() = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(shape, type.getElementType()),
        operand.get(), groups);
  }
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  iterators.insert(iterators.begin() + v + 1, utils::IteratorType::parallel);
  unsigned inputs = op.getNumDpsInputs();
  auto splitOp = linalg::GenericOp::create(
      rewriter, loc, TypeRange{operands.back().getType()},
      ArrayRef<Value>(operands).take_front(inputs),
      ArrayRef<Value>(operands).drop_front(inputs), maps, iterators);
  IRMapping mapping;
  op.getRegion().cloneInto(&splitOp.getRegion(), mapping);
  // The body's indices: v's from the two new dims, the later ones renumbered.
  Block *body = splitOp.getBody();
  SmallVector<linalg::IndexOp> oldIndices(body->getOps<linalg::IndexOp>());
  rewriter.setInsertionPointToStart(body);
  Value hiIndex = linalg::IndexOp::create(rewriter, loc, v);
  Value loIndex = linalg::IndexOp::create(rewriter, loc, v + 1);
  for (linalg::IndexOp index : oldIndices) {
    if (index.getDim() != v) {
      rewriter.modifyOpInPlace(index,
                               [&] { index.setDim(renumber(index.getDim())); });
      continue;
    }
    for (auto [apply, e] : llvm::zip(applies, split)) {
      auto clone =
          cast<affine::AffineApplyOp>(mapping.lookup(apply.getOperation()));
      if (clone.getMapOperands().front() != index.getResult())
        continue;
      rewriter.setInsertionPoint(clone);
      Value value = affine::AffineApplyOp::create(
          rewriter, loc, AffineMap::get(2, 0, e, context),
          ValueRange{hiIndex, loIndex});
      rewriter.replaceOp(clone, value);
      // Clamps of the inner index to [0, d) or wider (and clamps of those)
      // hold already.
      if (e != lo)
        continue;
      SmallVector<Operation *> work(value.getUsers());
      while (!work.empty()) {
        Operation *user = work.pop_back_val();
        if (!isa<arith::MaxSIOp, arith::MinSIOp>(user))
          continue;
        Value other = user->getOperand(user->getOperand(0) == value ? 1 : 0);
        std::optional<int64_t> bound = getConstantIntValue(other);
        if (!bound || (isa<arith::MaxSIOp>(user) ? *bound > 0 : *bound < d - 1))
          continue;
        llvm::append_range(work, user->getResult(0).getUsers());
        rewriter.replaceAllUsesWith(user->getResult(0), value);
      }
    }
    rewriter.eraseOp(index);
  }
  rewriter.setInsertionPointAfter(splitOp);
  auto resultType = cast<RankedTensorType>(op.getResult(0).getType());
  SmallVector<ReassociationIndices> groups;
  for (int64_t j = 0; j + 1 < resultType.getRank(); ++j)
    groups.push_back({j});
  groups.push_back({resultType.getRank() - 1, resultType.getRank()});
  Value collapsed = tensor::CollapseShapeOp::create(
      rewriter, loc, resultType, splitOp.getResult(0), groups);
  rewriter.replaceOp(op, collapsed);
}

namespace {
struct HarpTileAndVectorizePass
    : harp::impl::HarpTileAndVectorizePassBase<HarpTileAndVectorizePass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<Config> options =
        makeConfig(getOperation(), getArgument(), vectorBits, registerVectors);
    if (failed(options))
      return signalPassFailure();
    Config config = *options;
    setTileOptions(config, registerRows, cacheK, cacheN, l1Cache, l2Cache);
    config.reductionVectors = std::max(1u, reductionVectors.getValue());
    func::FuncOp func = getOperation();
    MLIRContext *context = &getContext();

    {
      IRRewriter flattener(context);
      SmallVector<linalg::FillOp> fills;
      func.walk([&](linalg::FillOp fill) { fills.push_back(fill); });
      for (linalg::FillOp fill : fills)
        flattenContiguousFill(flattener, fill);
    }
    {
      IRRewriter splitter(context);
      SmallVector<linalg::GenericOp> generics;
      func.walk([&](linalg::GenericOp op) { generics.push_back(op); });
      for (linalg::GenericOp op : generics)
        splitGatheredLaneDim(splitter, op, config);
    }
    // Ops already inside loops (the rows of harp-fuse-epilogues) are tiled
    // as well: their tile loops nest inside the existing ones.
    SmallVector<linalg::LinalgOp> worklist;
    func.walk([&](linalg::LinalgOp op) { worklist.push_back(op); });
    func.walk(allowAccumulationContraction);
    {
      IRRewriter copier(context);
      SmallVector<linalg::GenericOp> generics;
      func.walk([&](linalg::GenericOp op) { generics.push_back(op); });
      for (linalg::GenericOp op : generics)
        copyStridedGatherSources(copier, op);
    }
    IRRewriter rewriter(context);
    // Each op is visited once; the ops tiling creates are smaller (merges
    // reduce one vector, inits fill one) and plan no further partial tiles.
    size_t i = 0;
    for (; i < worklist.size() && i < 4096; ++i)
      tileAndPeel(rewriter, worklist[i], config, worklist);

    // Constant tile sizes become static shapes.
    RewritePatternSet patterns(context);
    linalg::populateLinalgTilingCanonicalizationPatterns(patterns);
    tensor::ExtractSliceOp::getCanonicalizationPatterns(patterns, context);
    tensor::InsertSliceOp::getCanonicalizationPatterns(patterns, context);
    tensor::CastOp::getCanonicalizationPatterns(patterns, context);
    // A tile whose input is a static slice cast to a dynamic shape (the
    // peeled reduced dim of a reduction down the rows: a bias gradient's sum
    // over batch and time) takes the static shape (the tensor dialect's
    // folding of tensor.cast into its consumer); left dynamic, it stayed
    // scalar.
    context->getLoadedDialect<tensor::TensorDialect>()
        ->getCanonicalizationPatterns(patterns);
    FrozenRewritePatternSet staticShapes(std::move(patterns));
    if (failed(applyPatternsGreedily(func, staticShapes,
                                     harp::structuredGreedyConfig())))
      return signalPassFailure();
    // Remainder blocks, static now, get their own tiles.
    SmallVector<linalg::LinalgOp> remainders;
    func.walk([&](linalg::LinalgOp op) {
      if (op->hasAttr(kRemainderBlock))
        remainders.push_back(op);
    });
    for (linalg::LinalgOp remainder : remainders) {
      remainder->removeAttr(kRemainderBlock);
      // A window's input slices are dynamic until re-sliced.
      normalizeInputSlices(rewriter, remainder);
      if (!remainder.hasDynamicShape())
        tileAndPeel(rewriter, remainder, config, worklist);
      else
        remainder->setAttr(kVectorTile, rewriter.getUnitAttr());
    }
    for (; i < worklist.size() && i < 4096; ++i)
      tileAndPeel(rewriter, worklist[i], config, worklist);
    if (!remainders.empty() &&
        failed(applyPatternsGreedily(func, staticShapes,
                                     harp::structuredGreedyConfig())))
      return signalPassFailure();

    // Then the tiles are vectorized.
    SmallVector<linalg::LinalgOp> tiles;
    func.walk([&](linalg::LinalgOp op) {
      if (op->hasAttr(kVectorTile))
        tiles.push_back(op);
    });
    for (linalg::LinalgOp tile : tiles)
      vectorizeTile(rewriter, tile);
  }
};
} // namespace
