//===- CodegenConfig.cpp - the numbers CPU code generation uses -----------===//

#include "CodegenConfig.h"

#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::harp::cpu;

/// The width (in elements) of a register tile's row: `register-vectors`
/// vectors of `lanes`.
FailureOr<Config> harp::cpu::makeConfig(Operation *op, StringRef pass,
                                        unsigned vectorBits,
                                        unsigned registerVectors) {
  if (vectorBits < 8)
    return op->emitError() << pass << ": vector-bits must be at least 8, got "
                           << vectorBits;
  Config config;
  config.vectorBits = vectorBits;
  config.registerVectors = std::max(1u, registerVectors);
  return config;
}

void harp::cpu::setTileOptions(Config &config, unsigned registerRows,
                               unsigned cacheK, unsigned cacheN,
                               unsigned l1Bytes, unsigned l2Bytes) {
  config.registerRows = std::max(1u, registerRows);
  config.cacheK = cacheK;
  config.cacheN = cacheN;
  config.l1Bytes = l1Bytes;
  config.l2Bytes = l2Bytes;
}

int64_t harp::cpu::registerTileWidth(const Config &config, int64_t lanes) {
  return config.registerVectors * lanes;
}

/// The widest element of the kernel in bits, or nullopt when an operand is
/// not an integer or float (complex, index) or narrower than a byte: `i1`
/// is a byte in memory but a bit in an LLVM vector, so a vector load of
/// booleans would read packed bits.
std::optional<unsigned> harp::cpu::widestElementBits(linalg::LinalgOp op) {
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
int64_t harp::cpu::elementBytes(linalg::LinalgOp op) {
  return llvm::divideCeil(widestElementBits(op).value_or(8), 8);
}

/// Lanes of the kernel's vectors: the vector width over the result's
/// element type, or the widest operand's when narrower (a gather's i64
/// indices should not halve the vectors of the f32 rows it moves).
std::optional<int64_t> harp::cpu::laneCount(linalg::LinalgOp op,
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
FailureOr<linalg::ContractionDimensions>
harp::cpu::orientedContractionDims(linalg::LinalgOp op) {
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

/// A contraction's cache blocks (k, n) for a register tile of `rows` x
/// `width` elements of `bytes` each over a K x N right operand (0: no block
/// along that dim). `cache-k` / `cache-n` when given (blocks only where
/// they divide the dim), else derived from the caches: the k loop of a
/// register tile reads a rows x kc slice of the left operand, reused by
/// every register tile of the n block, which takes at most half of L1; the
/// kc x width panels of the right operand stream from L2 past it (one line
/// or two per k, a few bytes per cycle) through the other half. A kc x nc
/// block of the right operand, read once per row tile, takes half of L2.
/// Each is then the largest block in [half, all] of that bound that divides
/// the dim (a remainder block would need a plan of its own): K = 1024 with
/// at most 512 gives 512, K = 1031 none. (Keeping the panel in L1 as well,
/// (rows + width) x kc in 5/6 of it, made k blocks of 128-256: C was read
/// and written back once per k block, and 1024^3 took 20.0-20.3 ms with
/// AVX2 code against 19.5-19.8 now, on a Zen 4 core.)
CacheBlocks harp::cpu::cacheBlocks(const Config &config, int64_t rows,
                                   int64_t width, int64_t bytes, int64_t k,
                                   int64_t n) {
  auto fixed = [](unsigned block, int64_t extent) -> int64_t {
    return block && extent > block && extent % block == 0 ? block : 0;
  };
  CacheBlocks blocks;
  if (config.cacheK) {
    blocks.k = fixed(config.cacheK, k);
  } else {
    int64_t kMax =
        std::max<int64_t>(1, int64_t(config.l1Bytes) / 2 / (rows * bytes));
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

/// The kernel's largest tensor input, or null.
OpOperand *harp::cpu::largestInput(linalg::LinalgOp op) {
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

/// The reduced dim a correlation reads its largest input contiguously
/// along: that input's last result a window `dp + dr` (unit coefficients)
/// whose longest dim dr is reduced and at least a vector long, every other
/// input reading dr, if at all, as its last result (plain or in such a
/// window). A convolution's weight gradient reads its image so,
/// X[n, c, oh + kh, ow + kw] summed over (n, oh, ow) for each tap (kh, kw):
/// with the tap fixed, a row of X along ow is a contiguous vector, as is
/// dY's. A convolution (`ow + kw` with kw reduced) reduces the short dim
/// and is not one.
std::optional<unsigned> harp::cpu::correlationReducedDim(linalg::LinalgOp op,
                                                         int64_t lanes) {
  OpOperand *largest = largestInput(op);
  if (!largest)
    return std::nullopt;
  AffineMap map = op.getMatchingIndexingMap(largest);
  if (map.getNumResults() == 0)
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  std::optional<unsigned> longest;
  bool unitSum = true;
  map.getResults().back().walk([&](AffineExpr e) {
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      if (!longest || ranges[d.getPosition()] > ranges[*longest])
        longest = d.getPosition();
    } else if (isa<AffineConstantExpr>(e) ||
               e.getKind() != AffineExprKind::Add) {
      unitSum = false;
    }
  });
  if (!unitSum || !longest ||
      !linalg::isReductionIterator(iterators[*longest]) ||
      ranges[*longest] < lanes)
    return std::nullopt;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap other = op.getMatchingIndexingMap(input);
    for (unsigned i = 0; i + 1 < other.getNumResults(); ++i)
      if (other.getResult(i).isFunctionOfDim(*longest))
        return std::nullopt;
  }
  return longest;
}

/// A convolution's weight gradient dW[f, c, kh, kw] = sum over (n, oh, ow)
/// of dY[n, f, oh, ow] X[n, c, oh + kh, ow + kw] as rows of dot products
/// along ow: for each tap (kh, kw), a register tile of rowsB filters f
/// by rowsA channels c keeps one vector of partial sums per output, and
/// each step loads a vector of rowsB rows of dY and of rowsA rows of X
/// (shifted by kw) for rowsA x rowsB multiply-adds. Both operands are read
/// in place; packed as a column tensor (harp-pack-contractions'
/// packCorrelation) the image was copied nine times (kh x kw) into 19 MB
/// and read by a matmul 16 columns wide.
///
/// Needs two inputs, one of them read through a correlation window along
/// `reduced` (correlationReducedDim), a parallel dim each reads as a plain
/// dim the other does not read (c, f), every parallel dim in the result
/// and the result read by plain dims. The tile is as near square as
/// `register-rows` x `register-vectors` accumulators allow.
std::optional<CorrelationTile> harp::cpu::correlationTile(linalg::LinalgOp op,
                                                          const Config &config,
                                                          int64_t lanes) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !op.hasPureTensorSemantics())
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  std::optional<unsigned> reduced = correlationReducedDim(op, lanes);
  OpOperand *large = largestInput(op);
  if (!reduced || !large)
    return std::nullopt;
  OpOperand *small =
      op.getDpsInputOperand(large == op.getDpsInputOperand(0) ? 1 : 0);
  AffineMap largeMap = op.getMatchingIndexingMap(large);
  AffineMap smallMap = op.getMatchingIndexingMap(small);
  AffineMap initMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  // Both read the row contiguously: their last result is `reduced`, or a
  // sum of dims with it (a strided image, X[n, c, 2 oh + kh, 2 ow + kw],
  // reads every other element of the row: gathers, slower than the
  // column tensor).
  auto readsRow = [&](AffineMap map) {
    if (map.getNumResults() == 0)
      return false;
    AffineExpr last = map.getResults().back();
    bool unitSum = true;
    last.walk([&](AffineExpr e) {
      if (!isa<AffineDimExpr>(e) && e.getKind() != AffineExprKind::Add)
        unitSum = false;
    });
    return unitSum && last.isFunctionOfDim(*reduced);
  };
  if (!readsRow(largeMap) || !readsRow(smallMap))
    return std::nullopt;
  if (!initMap.isProjectedPermutation() ||
      initMap.getNumResults() != op.getNumParallelLoops())
    return std::nullopt;
  auto readsPlain = [](AffineMap map, unsigned d) {
    return llvm::any_of(map.getResults(), [&](AffineExpr e) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      return dim && dim.getPosition() == d;
    });
  };
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  std::optional<unsigned> a, b;
  SmallVector<unsigned> batch;
  for (unsigned d = 0; d < op.getNumLoops(); ++d) {
    bool inLarge = largeMap.isFunctionOfDim(d);
    bool inSmall = smallMap.isFunctionOfDim(d);
    if (linalg::isParallelIterator(iterators[d])) {
      if (inLarge && !inSmall && readsPlain(largeMap, d))
        a = d;
      else if (inSmall && !inLarge && readsPlain(smallMap, d))
        b = d;
    } else if (d != *reduced && readsPlain(largeMap, d) &&
               readsPlain(smallMap, d)) {
      batch.push_back(d);
    }
  }
  if (!a || !b)
    return std::nullopt;
  // Batch dims lead both operands (the tile's blocks of them are whole
  // images), else they are left to the row loops.
  auto leads = [&](AffineMap map) {
    for (auto [i, d] : llvm::enumerate(batch))
      if (i >= map.getNumResults() || !isa<AffineDimExpr>(map.getResult(i)) ||
          cast<AffineDimExpr>(map.getResult(i)).getPosition() != d)
        return false;
    return true;
  };
  if (!leads(largeMap) || !leads(smallMap))
    batch.clear();
  // Whole vectors along the row: a remainder of fewer lanes (28 = 16 + 12)
  // made vectors of no register shape in the innermost loop, and the
  // column tensor's matmul was faster.
  if (ranges[*reduced] % lanes)
    return std::nullopt;
  int64_t accumulators =
      std::max<int64_t>(1, config.registerRows * config.registerVectors);
  int64_t side = 1;
  while ((side + 1) * (side + 1) <= accumulators)
    ++side;
  // Tile rows that divide their dim where one near the limit does (16
  // filters in tiles of 4, not 5, 5, 5 and 1).
  auto rowsOf = [](int64_t extent, int64_t limit) {
    if (extent <= limit)
      return extent;
    for (int64_t r = limit; 2 * r >= limit; --r)
      if (extent % r == 0)
        return r;
    return limit;
  };
  CorrelationTile tile;
  tile.reduced = *reduced;
  tile.a = *a;
  tile.b = *b;
  tile.rowsA = rowsOf(ranges[*a], side);
  tile.rowsB =
      rowsOf(ranges[*b], tile.rowsA < side ? accumulators / tile.rowsA : side);
  // The tile's rows of one batch step (one image of X and of dY) stay in L1
  // across the taps that reread them; larger images (56 x 56 x 4 channels
  // of each, 104 KB) streamed from L2 once per tap, slower than the
  // column tensor's matmul.
  int64_t steps = 1;
  for (unsigned d : batch)
    steps *= ranges[d];
  auto tileElements = [&](OpOperand *input, unsigned d, int64_t rows) {
    auto type = cast<RankedTensorType>(input->get().getType());
    return type.getNumElements() / steps / ranges[d] * rows;
  };
  int64_t working = (tileElements(large, *a, tile.rowsA) +
                     tileElements(small, *b, tile.rowsB)) *
                    elementBytes(op);
  if (working > int64_t(config.l1Bytes))
    return std::nullopt;
  tile.batch = std::move(batch);
  tile.stepBytes = working;
  return tile;
}

/// The loop dim an operand's map reads contiguously (its last result), if
/// that result is a plain dim.
std::optional<unsigned> harp::cpu::contiguousDim(AffineMap map) {
  if (map.getNumResults() == 0)
    return std::nullopt;
  if (auto dim = dyn_cast<AffineDimExpr>(map.getResults().back()))
    return dim.getPosition();
  return std::nullopt;
}

Value harp::cpu::copyThrough(RewriterBase &rewriter, Location loc, Value source,
                             AffineMap read, ArrayRef<int64_t> shape) {
  Type element = getElementTypeOrSelf(source.getType());
  Value empty = tensor::EmptyOp::create(rewriter, loc, shape, element);
  unsigned rank = shape.size();
  auto copy = linalg::GenericOp::create(
      rewriter, loc, empty.getType(), ValueRange{source}, ValueRange{empty},
      SmallVector<AffineMap>{
          read, AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext())},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [](OpBuilder &b, Location nloc, ValueRange args) {
        linalg::YieldOp::create(b, nloc, args[0]);
      });
  return copy.getResult(0);
}
