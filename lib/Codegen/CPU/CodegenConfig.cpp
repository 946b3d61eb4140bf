//===- CodegenConfig.cpp - the numbers CPU code generation uses -----------===//

#include "CodegenConfig.h"

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
