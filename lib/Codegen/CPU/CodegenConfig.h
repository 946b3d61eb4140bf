//===- CodegenConfig.h - the numbers CPU code generation uses ---*- C++ -*-===//
//
// What harp's CPU code generation passes share: the target's numbers
// (vector width, register tile, caches) as pass options give them, and the
// shape questions every pass asks of a linalg kernel (lanes, contraction
// dims, cache blocks), and the copy they make to rearrange an operand.
// docs/Lowering.md derives each number.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_LIB_CODEGEN_CPU_CODEGENCONFIG_H
#define HARP_LIB_CODEGEN_CPU_CODEGENCONFIG_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/PatternMatch.h"

#include <algorithm>
#include <optional>

namespace mlir::harp::cpu {

/// The target's numbers, from pass options.
struct Config {
  unsigned vectorBits = 512;
  unsigned registerRows = 8;
  unsigned registerVectors = 2;
  unsigned reductionVectors = 4;
  unsigned cacheK = 0;
  unsigned cacheN = 0;
  unsigned l1Bytes = 48 * 1024;
  unsigned l2Bytes = 1024 * 1024;
  /// Vector FMAs the core starts per cycle (LLVM's scheduling model).
  double fmaPerCycle = 2;
};

/// A Config with `vector-bits` and `register-vectors` (at least 1), or
/// failure, reported on `op` as `pass`'s, when `vector-bits` is below 8.
FailureOr<Config> makeConfig(Operation *op, StringRef pass, unsigned vectorBits,
                             unsigned registerVectors);

/// Sets the register tile's rows (at least 1) and the cache options of
/// `config` (packing and tiling have them).
void setTileOptions(Config &config, unsigned registerRows, unsigned cacheK,
                    unsigned cacheN, unsigned l1Bytes, unsigned l2Bytes);

/// The width (in elements) of a register tile's row: `register-vectors`
/// vectors of `lanes`.
int64_t registerTileWidth(const Config &config, int64_t lanes);

/// The widest element of the kernel in bits, or nullopt when an operand is
/// not an integer or float (complex, index) or narrower than a byte: `i1`
/// is a byte in memory but a bit in an LLVM vector, so a vector load of
/// booleans would read packed bits.
std::optional<unsigned> widestElementBits(linalg::LinalgOp op);

/// Bytes of the kernel's widest element (1 when it has no integer or float
/// operands, which are not planned anyway).
int64_t elementBytes(linalg::LinalgOp op);

/// Lanes of the kernel's vectors: the vector width over the result's
/// element type, or the widest operand's when narrower (a gather's i64
/// indices should not halve the vectors of the f32 rows it moves).
std::optional<int64_t> laneCount(linalg::LinalgOp op, const Config &config);

/// The contraction dims of `op` with n the one its result is contiguous
/// along (see CodegenConfig.cpp).
FailureOr<linalg::ContractionDimensions>
orientedContractionDims(linalg::LinalgOp op);

/// The kernel's largest tensor input (by elements), or null.
OpOperand *largestInput(linalg::LinalgOp op);

/// The reduced dim a correlation reads its largest input contiguously
/// along (a window `dp + dr` whose longest dim dr is reduced and at least
/// `lanes` long, see CodegenConfig.cpp), or nullopt.
std::optional<unsigned> correlationReducedDim(linalg::LinalgOp op,
                                              int64_t lanes);

/// A correlation computed in place as rows of dot products: the reduced
/// dim both inputs read contiguously (`reduced`, in vectors), a register
/// tile of `rowsA` x `rowsB` outputs over a parallel dim `a` read only by
/// the largest input and one `b` read only by the other, and the reduced
/// dims both read as plain dims (`batch`, outermost in both).
struct CorrelationTile {
  unsigned reduced, a, b;
  int64_t rowsA, rowsB;
  SmallVector<unsigned> batch;
  /// Bytes of both inputs a tile reads per batch step (one image).
  int64_t stepBytes;
};

/// The CorrelationTile of `op` (see CodegenConfig.cpp), or nullopt.
std::optional<CorrelationTile>
correlationTile(linalg::LinalgOp op, const Config &config, int64_t lanes);

/// The loop dim an operand's map reads contiguously (its last result), if
/// that result is a plain dim.
std::optional<unsigned> contiguousDim(AffineMap map);

/// A contraction's cache blocks along k and n (0: none) and the widest n
/// a block may have.
struct CacheBlocks {
  int64_t k = 0, n = 0, nMax = 0;
};

/// A contraction's cache blocks for a register tile of `rows` x `width`
/// elements of `bytes` each over a K x N right operand (see
/// CodegenConfig.cpp).
CacheBlocks cacheBlocks(const Config &config, int64_t rows, int64_t width,
                        int64_t bytes, int64_t k, int64_t n);

/// A new tensor of `shape` whose element i is `source` at `read(i)`: the
/// copies the passes make to rearrange an operand (packed panels, a
/// transposed operand, a window sorted by phase), as a linalg.generic with
/// every loop parallel, built at the rewriter's insertion point.
Value copyThrough(RewriterBase &rewriter, Location loc, Value source,
                  AffineMap read, ArrayRef<int64_t> shape);

} // namespace mlir::harp::cpu

#endif // HARP_LIB_CODEGEN_CPU_CODEGENCONFIG_H
