//===- PackContractions.cpp - harp-pack-contractions ----------------------===//
//
// Packs the right operand of wide matmuls into register-tile panels (see
// the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/CPU/Passes.h"

#include "CodegenConfig.h"

#include "harp/Codegen/Common/TilingUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPPACKCONTRACTIONSPASS
#include "harp/Codegen/CPU/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;
using namespace mlir::harp::cpu;

/// Copies `operand` of `op` with its dims in `order` (order[j]: the
/// operand dim the copy's dim j holds) and points `op` at the copy.
static void readThroughCopy(RewriterBase &rewriter, linalg::GenericOp op,
                            OpOperand *operand, ArrayRef<unsigned> order) {
  auto type = cast<RankedTensorType>(operand->get().getType());
  SmallVector<int64_t> shape;
  for (unsigned d : order)
    shape.push_back(type.getDimSize(d));
  rewriter.setInsertionPoint(op);
  AffineMap toCopy = AffineMap::getPermutationMap(order, op.getContext());
  Value copy = copyThrough(rewriter, op.getLoc(), operand->get(),
                           inversePermutation(toCopy), shape);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap &map = maps[operand->getOperandNumber()];
  map = toCopy.compose(map);
  rewriter.modifyOpInPlace(op, [&] {
    operand->set(copy);
    op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
  });
}

/// Copies a right operand read transposed (contiguous along k, n further
/// out: a gradient's W^T, nn.Linear's x @ W^T, attention's q @ k^T per
/// head, whose heads may sit between n and k) into one whose innermost dim
/// is n, the other dims in their order, and points `op` at it. Read in
/// place, a register tile's w columns of B are w rows of the operand, K
/// elements apart: one scalar load per lane (a 256 x 1024 x 784 matmul
/// took 10x as long). The copy is a permutation, which
/// harp-tile-and-vectorize moves in square tiles transposed in registers;
/// it costs one pass over B, 1/M of the contraction's work.
static void transposeRightOperand(RewriterBase &rewriter, linalg::GenericOp op,
                                  OpOperand *right, unsigned nPosition) {
  unsigned rank = cast<RankedTensorType>(right->get().getType()).getRank();
  SmallVector<unsigned> order;
  for (unsigned d = 0; d < rank; ++d)
    if (d != nPosition)
      order.push_back(d);
  order.push_back(nPosition);
  readThroughCopy(rewriter, op, right, order);
}

/// The span of a cache line on x86 cores.
static constexpr int64_t kLineBytes = 64;

/// The span x86 hardware prefetchers stay within (they track physical
/// addresses, so they stop at the edge of a 4 KiB page whatever page size
/// the OS maps), and the base page a TLB entry covers.
static constexpr int64_t kPageBytes = 4096;

/// Whether `expr` is one of `loops`' dims.
static bool isDimIn(AffineExpr expr, ArrayRef<unsigned> loops) {
  auto d = dyn_cast<AffineDimExpr>(expr);
  return d && llvm::is_contained(loops, d.getPosition());
}

/// The contraction dims of `op` where it is a contraction of two inputs on
/// tensors, one result, static loop ranges and m, n and k each present (the
/// matmuls harp-pack-contractions rewrites), else failure.
static FailureOr<linalg::ContractionDimensions>
twoInputContraction(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
    return failure();
  FailureOr<linalg::ContractionDimensions> dims = orientedContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty() ||
      llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return failure();
  return dims;
}

/// Collapses each run of consecutive loops of one kind that every operand
/// reads as consecutive dims (a linear layer's batch and token dims, its
/// weight gradient's reduction over them) into one loop, and returns the
/// collapsed contraction (or `op`). Cache blocks bound the innermost k and
/// n dims: with k split into (batch, token), a weight gradient
/// dW = dY^T @ x over 16 x 64 tokens was blocked along the 64 tokens only
/// and read x (2 MB, 1024 x 512) from memory once per register row tile:
/// 4.0 ms against 1.4 for the same product collapsed.
static linalg::GenericOp collapseContiguousDims(RewriterBase &rewriter,
                                                linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || !linalg::isaContractionOpInterface(op) ||
      !op.getBody()->getOps<linalg::IndexOp>().empty())
    return op;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<ReassociationIndices> groups;
  // Batch dims (read by every operand) stay: only m, n and k runs.
  auto batch = [&](unsigned d) {
    return llvm::all_of(maps,
                        [&](AffineMap map) { return map.isFunctionOfDim(d); });
  };
  for (unsigned d = 0, e = op.getNumLoops(); d < e;) {
    ReassociationIndices run = {d};
    if (batch(d)) {
      ++d;
      continue;
    }
    while (run.back() + 1 < e && iterators[run.back() + 1] == iterators[d] &&
           !batch(run.back() + 1)) {
      ReassociationIndices longer(run);
      longer.push_back(run.back() + 1);
      if (!linalg::areDimSequencesPreserved(maps, {longer}))
        break;
      run = std::move(longer);
    }
    d = run.back() + 1;
    if (run.size() > 1)
      groups.push_back(run);
  }
  if (groups.empty())
    return op;
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::CollapseResult> collapsed =
      linalg::collapseOpIterationDims(op, groups, rewriter);
  if (failed(collapsed))
    return op;
  rewriter.replaceOp(op, collapsed->results);
  return cast<linalg::GenericOp>(collapsed->collapsedOp.getOperation());
}

/// Copies a left operand read transposed (contiguous along an m dim, its k
/// dims further out: a weight gradient's x^T in x^T @ dY, summed over rows
/// and batch) into one whose innermost dims are its k dims, the others in
/// their order, and points `op` at it, where consecutive k are a cache line
/// or more apart. Read in place, the register tile's k loop loads its
/// `register-rows` elements of A from a line of its own at every k (a page
/// of its own where A's rows are 4 KiB long), a stream the prefetchers do
/// not follow, and its rows x kc slice of A spans kc lines; copied, the
/// slice is rows runs of kc contiguous elements. The copy is a permutation
/// (moved in square tiles transposed in registers), one pass over A, 1/N
/// of the contraction's work. On a Zen 4 core, h^T @ dY (1024 x 256 x
/// 1024) took 6.5 ms with AVX2 code against 4.9 for h @ dY, and 1024^3
/// 28.2 ms against 19.9.
///
/// Several k dims are copied in the order the right operand reads them, and
/// the k loops are interchanged into that order, so that the copy and the
/// right operand read the reduction as one run of consecutive dims, which
/// `collapseContiguousDims` then makes one k loop. A per-head weight
/// gradient of attention, dW[h, e, c] summed over dY[t, b, h, e] x[b, t, c]
/// with the loops (t, b), copied dY as [h, e, t, b]: the register tile's k
/// loop then stepped through x 64 rows (32 KiB) apart at each k, a page of
/// its own per step (64 GFLOP/s against 120 for the same product with the
/// loops (b, t) on an Emerald Rapids core). Returns the rewritten
/// contraction, or null where it left `op` alone.
static linalg::GenericOp transposeLeftOperand(RewriterBase &rewriter,
                                              linalg::GenericOp op) {
  FailureOr<linalg::ContractionDimensions> dims = twoInputContraction(op);
  if (failed(dims))
    return nullptr;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::all_of(dims->m, [&](unsigned d) { return ranges[d] == 1; }))
    return nullptr;
  unsigned n = dims->n.back();
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    unsigned rank = map.getNumResults();
    if (!type || !type.hasStaticShape() || rank < 2 ||
        !map.isProjectedPermutation() || map.isFunctionOfDim(n) ||
        !isDimIn(map.getResult(rank - 1), dims->m))
      continue;
    SmallVector<unsigned> order, kPositions;
    for (unsigned i = 0; i < rank; ++i)
      (isDimIn(map.getResult(i), dims->k) ? kPositions : order).push_back(i);
    if (kPositions.empty())
      return nullptr;
    int64_t stride = std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
    for (unsigned i = kPositions.back() + 1; i < rank; ++i)
      stride *= type.getDimSize(i);
    if (stride < kLineBytes)
      return nullptr;
    // The k dims in the order the right operand reads them, where it reads
    // each as a dim of its own.
    AffineMap other = op.getMatchingIndexingMap(
        op.getDpsInputOperand(1 - input->getOperandNumber()));
    auto readAt = [&](unsigned position) -> std::optional<unsigned> {
      unsigned loop =
          cast<AffineDimExpr>(map.getResult(position)).getPosition();
      for (unsigned i = 0, e = other.getNumResults(); i < e; ++i)
        if (other.getResult(i) == getAffineDimExpr(loop, op.getContext()))
          return i;
      return std::nullopt;
    };
    bool reorder = llvm::all_of(kPositions, [&](unsigned position) {
      return readAt(position).has_value();
    });
    if (reorder)
      llvm::stable_sort(kPositions, [&](unsigned a, unsigned b) {
        return *readAt(a) < *readAt(b);
      });
    order.append(kPositions);
    readThroughCopy(rewriter, op, input, order);
    if (!reorder)
      return op;
    // The k loops, in their places, take that order too.
    SmallVector<unsigned> kLoops;
    for (unsigned position : kPositions)
      kLoops.push_back(
          cast<AffineDimExpr>(map.getResult(position)).getPosition());
    SmallVector<unsigned> places(kLoops);
    llvm::sort(places);
    if (places == kLoops)
      return op;
    SmallVector<unsigned> interchange =
        llvm::to_vector(llvm::seq<unsigned>(0, op.getNumLoops()));
    for (auto [place, loop] : llvm::zip_equal(places, kLoops))
      interchange[place] = loop;
    FailureOr<linalg::GenericOp> interchanged =
        linalg::interchangeGenericOp(rewriter, op, interchange);
    return succeeded(interchanged) ? *interchanged : op;
  }
  return nullptr;
}

/// Row tiles (of `register-rows`) a matmul needs before a right operand
/// with misaligned rows, or rows a page apart, is packed where its n fits
/// a cache block: the copy costs about one pass over B, and the register
/// tiles read B once per row tile. (With AVX2 code on a Zen 4 core, 500 x
/// 500 columns: 24 rows packed took 0.21 ms against 0.13 unpacked, 48 rows
/// 0.24 against 0.25, 64 rows 0.31 against 0.34.)
static constexpr int64_t kPackRowTiles = 8;

/// The tensor whose rows a matmul's right operand `b` reads: `b` itself,
/// or the source of unit-stride slices of it (a slice keeps its source's
/// rows); a 2-d tensor with a static row length, else null.
static RankedTensorType rowsOf(Value b) {
  while (auto slice = b.getDefiningOp<tensor::ExtractSliceOp>()) {
    if (!slice.hasUnitStride())
      return nullptr;
    b = slice.getSource();
  }
  auto type = dyn_cast<RankedTensorType>(b.getType());
  if (!type || type.getRank() != 2 || type.isDynamicDim(1))
    return nullptr;
  return type;
}

/// Whether a register tile's vector loads from the rows of `b` (a 2-d
/// tensor read along its last dim, or a unit-stride slice of one, whose
/// rows are its source's) cross cache lines, and whether that costs: rows
/// whose length in bytes is no multiple of a vector (at most a 64-byte
/// line) start at offsets where some loads straddle two lines (500 floats:
/// one row in four with 32-byte vectors, three in four with 64-byte ones),
/// and a straddling load takes a second turn at the load ports. That
/// matters where the k loop keeps them busy: it issues `register-vectors`
/// loads of B and `register-rows` broadcasts of A per k, over rows x
/// vectors FMAs, so (rows + vectors) x fmaPerCycle / (rows x vectors)
/// loads per cycle; at one or more the rows are packed. With AVX2 code
/// (6 x 2 vectors, 2 FMAs per cycle: 1.33 loads per cycle) a 500^3 matmul
/// took 2.54 ms unpacked, 2.32 packed on a Zen 4 core; that core's
/// AVX-512 code (8 x 2, one 512-bit FMA per cycle: 0.63) took 2.22 ms
/// unpacked, 2.25 packed.
static bool misalignedRows(Value b, int64_t bytes, const Config &config) {
  RankedTensorType type = rowsOf(b);
  if (!type)
    return false;
  int64_t vectorBytes = std::min<int64_t>(kLineBytes, config.vectorBits / 8);
  if (vectorBytes <= bytes || type.getDimSize(1) * bytes % vectorBytes == 0)
    return false;
  double rows = config.registerRows, vectors = config.registerVectors;
  return (rows + vectors) * config.fmaPerCycle / (rows * vectors) >= 1;
}

/// Whether the rows of `b` (as for misalignedRows) are a page or more
/// apart: the k loop then reads every row of its k block from a page of
/// its own, where no prefetcher runs ahead of it, and a k block of 128-512
/// rows outgrows the first-level TLB (64-96 entries on x86 cores). Packed,
/// the same k block is one run of pages. On a Zen 4 core, AVX-512 code,
/// 1024 x 1024 @ 1024 x N, read in place and packed: N = 1024 20.1 -> 19.5
/// ms, N = 1040 1-4% faster; N = 512 and 768 (rows 2-3 KiB apart) the
/// same, N = 960 (3840 bytes) 1-2% faster, within the machine's noise.
static bool pageApartRows(Value b, int64_t bytes) {
  RankedTensorType type = rowsOf(b);
  return type && type.getDimSize(1) * bytes >= kPageBytes;
}

/// Packs the right operand of a large matmul into register-tile panels:
/// B (K x N, read along n) becomes Bp (N/w x K x w), w the register tile's
/// width, and the matmul a contraction over (m, n-panel, n-in-panel, k)
/// writing C as M x N/w x w (a free reshape of M x N). The register tile
/// then reads its K x w panel of B contiguously, where it read w columns of
/// rows N apart (which map to the same cache sets when N is a large power
/// of two). Only for matmuls whose n is larger than a cache block, or whose
/// B has misaligned rows or rows a page apart (misalignedRows,
/// pageApartRows), with whole panels of w (the last columns split off);
/// the copy costs one pass over B. A right operand read
/// transposed (N x K) is packed likewise wherever n is a multiple of w and
/// k at least w, whatever the caches; any other contraction reading its
/// right operand transposed, batched ones included, gets a transposed copy
/// (transposeRightOperand). Returns whether it rewrote `op`.
static bool packRightOperand(RewriterBase &rewriter, linalg::GenericOp op,
                             const Config &config, unsigned lanes) {
  FailureOr<linalg::ContractionDimensions> dims = twoInputContraction(op);
  if (failed(dims))
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  MLIRContext *ctx = op.getContext();
  auto dim = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
  // n: the result's innermost dim, along which register tiles run vectors.
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap initMap = op.getMatchingIndexingMap(init);
  if (initMap.getNumResults() == 0)
    return false;
  auto last = dyn_cast<AffineDimExpr>(initMap.getResults().back());
  if (!last || !llvm::is_contained(dims->n, last.getPosition()))
    return false;
  unsigned n = last.getPosition();
  auto readsAny = [](AffineMap map, ArrayRef<unsigned> loops) {
    return llvm::any_of(loops,
                        [&](unsigned d) { return map.isFunctionOfDim(d); });
  };
  auto isK = [&](AffineExpr expr) { return isDimIn(expr, dims->k); };
  // B reads n and k but not m and is contiguous along n, or transposed:
  // contiguous along a k dim, n further out (a gradient's W^T as (n, k);
  // attention's keys as (n, batch..., k), the heads between; a weight
  // gradient summed over batch and rows, (batch, n, row)). Panels take B
  // as (k, n) or (n, k); the copy puts n innermost.
  OpOperand *right = nullptr, *left = nullptr;
  bool transposed = false;
  unsigned nPosition = 0;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    unsigned rank = map.getNumResults();
    if (!right && rank >= 2 && map.isProjectedPermutation() &&
        !readsAny(map, dims->m) && map.isFunctionOfDim(n) &&
        readsAny(map, dims->k) &&
        (map.getResult(rank - 1) == dim(n) || isK(map.getResult(rank - 1)))) {
      right = input;
      transposed = isK(map.getResult(rank - 1));
      nPosition = *map.getResultPosition(dim(n));
    } else {
      left = input;
    }
  }
  if (!right || !left)
    return false;
  // One row of the left operand (x @ W^T, x @ B for a single input): B is
  // read once, and harp-tile-and-vectorize reads it row by row in place
  // (W^T as dot products along k, B streamed along its rows); a copy
  // would be a second pass over B.
  if (llvm::all_of(dims->m, [&](unsigned d) { return ranges[d] == 1; }))
    return false;
  // A single column (n = 1) is contiguous along k either way.
  bool copyTransposed = transposed && ranges[n] > 1;
  // Panels: a plain matmul, one dim each.
  bool single =
      dims->m.size() == 1 && dims->n.size() == 1 && dims->k.size() == 1;
  unsigned m = dims->m[0], k = dims->k[0];
  int64_t w = registerTileWidth(config, lanes);
  bool panelShape = single && dims->batch.empty() && op.getNumLoops() == 3 &&
                    op.getMatchingIndexingMap(right).getNumResults() == 2 &&
                    initMap.getNumResults() == 2 &&
                    initMap.getResult(0) == dim(m) &&
                    initMap.getResult(1) == dim(n) && ranges[k] >= w;
  bool wide = false;
  if (panelShape) {
    CacheBlocks blocks =
        cacheBlocks(config, std::min<int64_t>(ranges[m], config.registerRows),
                    w, elementBytes(op), ranges[k], ranges[n]);
    wide = ranges[n] > std::max<int64_t>(blocks.nMax, w) ||
           (!transposed &&
            ranges[m] >= kPackRowTiles * int64_t(config.registerRows) &&
            (misalignedRows(right->get(), elementBytes(op), config) ||
             pageApartRows(right->get(), elementBytes(op))));
  }
  // n no multiple of w: the whole panels and the last columns become two
  // matmuls (a split along n, each writing its columns of C); the first is
  // packed, the second, narrower than a register tile, is read in place (or
  // copied, transposed). Unpacked, a 97 x 1031 x 257 matmul with AVX2 code
  // read its 16 register-tile columns from rows 1028 bytes apart, most
  // loads split across two cache lines, and took 1.35x as long as one of
  // 256 columns.
  int64_t tail = ranges[n] % w;
  if (panelShape && tail && ranges[n] > w && (wide || transposed)) {
    // splitOp erases `op`, and `right` with it: keep its position.
    unsigned rightNumber = right->getOperandNumber();
    rewriter.setInsertionPoint(op);
    auto [head, rest] =
        linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()), n,
                        rewriter.getIndexAttr(ranges[n] - tail));
    if (auto generic = dyn_cast_or_null<linalg::GenericOp>(head.getOperation()))
      (void)packRightOperand(rewriter, generic, config, lanes);
    auto last = dyn_cast_or_null<linalg::GenericOp>(rest.getOperation());
    if (!last)
      return true;
    if (tail > 1 || transposed) {
      (void)packRightOperand(rewriter, last, config, lanes);
      return true;
    }
    // One column, N elements apart in B: copied into a row (1 x K), read
    // as (n, k), it is contiguous along k, and harp-tile-and-vectorize
    // computes it as dot products along k.
    readThroughCopy(rewriter, last, &last->getOpOperand(rightNumber), {1, 0});
    return true;
  }
  bool panelsFit = panelShape && tail == 0;
  if (!panelsFit || (!wide && !transposed)) {
    if (!copyTransposed)
      return false;
    transposeRightOperand(rewriter, op, right, nPosition);
    return true;
  }

  Location loc = op.getLoc();
  int64_t panels = ranges[n] / w;
  Value b = right->get();
  Type element = getElementTypeOrSelf(b.getType());
  rewriter.setInsertionPoint(op);
  // Bp[p, k, j] = B[k, p * w + j]. Transposed, B (N x K) is first
  // reshaped (freely) to P x w x K and Bp[p, k, j] = B3[p, j, k]: a
  // permutation, which harp-tile-and-vectorize copies in square tiles
  // transposed in registers (read as B[p * w + j, k], each lane was a
  // scalar load K elements from the next).
  AffineExpr p = dim(0), kk = dim(1), j = dim(2);
  SmallVector<AffineExpr> read = {kk, p * w + j};
  if (transposed) {
    b = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get({panels, w, ranges[k]}, element),
        b, SmallVector<ReassociationIndices>{{0, 1}, {2}});
    read = {p, j, kk};
  }
  Value pack = copyThrough(rewriter, loc, b, AffineMap::get(3, 0, read, ctx),
                           {panels, ranges[k], w});

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
  inputs[rightIndex] = pack;
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

/// Whether `op` sums the products of its two inputs (whatever its maps).
static bool isProductSum(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() == 0)
    return false;
  return linalg::detail::isContractionBody(
      *op.getBody(), [](Operation *mul, Operation *add) {
        return (isa<arith::MulFOp>(mul) && isa<arith::AddFOp>(add)) ||
               (isa<arith::MulIOp>(mul) && isa<arith::AddIOp>(add));
      });
}

/// `op` without its loops of one iteration, where it sums products
/// (a contraction or a correlation) at the function's top level. The
/// analyses below and harp-tile-and-vectorize's plans read unit loops as
/// dims: a 1x1 convolution's taps (kh, kw) made the dim its result is
/// contiguous along a unit one, so a pointwise convolution and its
/// gradients were planned as contractions one column wide (3-6 GFLOP/s on
/// a Sapphire Rapids core), and a depthwise weight gradient's channel was
/// read as `c + g + j` (grouping dims of one) by both operands instead of
/// as a plain dim. Kernels inside loops are left alone: others passes made
/// those loops and their slices.
static linalg::GenericOp dropUnitLoops(RewriterBase &rewriter,
                                       linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || !isa<func::FuncOp>(op->getParentOp()) ||
      !isProductSum(op) || !op.getBody()->getOps<linalg::IndexOp>().empty() ||
      llvm::none_of(op.getStaticLoopRanges(),
                    [](int64_t range) { return range == 1; }))
    return op;
  // A contraction whose m or n is only unit loops (a vector-matrix
  // product) keeps them: harp-tile-and-vectorize plans it as a row or
  // column reduction (dropUnitRowOrColumn there).
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  auto onlyUnit = [&](ArrayRef<unsigned> loops) {
    return llvm::all_of(loops, [&](unsigned d) { return ranges[d] == 1; });
  };
  if (succeeded(dims) &&
      (onlyUnit(dims->m) || onlyUnit(dims->n) || onlyUnit(dims->k)))
    return op;
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::DropUnitDimsResult> dropped =
      linalg::dropUnitDims(rewriter, op, linalg::ControlDropUnitDims());
  if (failed(dropped))
    return op;
  rewriter.replaceOp(op, dropped->replacements);
  return cast<linalg::GenericOp>(dropped->resultOp.getOperation());
}

/// Whether `map` reads a correlation's window: some result mixes loop dims
/// (`oh + kh`, `2 * oh + kh`, or a single dim scaled: `2 * oh`), and in
/// every such result the reduction dims span more than the parallel ones.
/// A convolution's weight gradient reads its image so, X[n, c, oh + kh]
/// summed over n and oh for each tap kh: the parallel dim is the short
/// filter's, the long image's is reduced. A convolution (`oh + kh` with oh
/// parallel, the filter's kh reduced) and its input gradient are the
/// other way round and keep their windows (harp-rewrite-windows).
static bool readsCorrelationWindow(AffineMap map, ArrayRef<int64_t> ranges,
                                   ArrayRef<utils::IteratorType> iterators) {
  if (map.isProjectedPermutation() || !harp::isMonotone(map))
    return false;
  for (AffineExpr result : map.getResults()) {
    if (isa<AffineDimExpr, AffineConstantExpr>(result))
      continue;
    int64_t parallel = 1, reduced = 1;
    result.walk([&](AffineExpr e) {
      if (auto d = dyn_cast<AffineDimExpr>(e)) {
        int64_t &span = linalg::isReductionIterator(iterators[d.getPosition()])
                            ? reduced
                            : parallel;
        span = std::max(span, ranges[d.getPosition()]);
      }
    });
    if (reduced <= parallel)
      return false;
  }
  return true;
}

/// Reassociation of `rank` dims with dims [at, at + length) as one dim and
/// the others on their own.
static SmallVector<ReassociationIndices> runAsOneDim(unsigned rank, unsigned at,
                                                     unsigned length) {
  SmallVector<ReassociationIndices> groups;
  for (unsigned d = 0; d < rank; ++d) {
    if (d == at) {
      groups.push_back(llvm::to_vector(llvm::seq<int64_t>(at, at + length)));
      d += length - 1;
      continue;
    }
    groups.push_back({d});
  }
  return groups;
}

/// Packs the windowed operand of a correlation (readsCorrelationWindow: a
/// convolution's weight gradient dW[f, c, kh, kw] = sum over (n, oh, ow)
/// of dY[n, f, oh, ow] X[n, c, oh + kh, ow + kw], strided or not) into a
/// column tensor and computes the sum as a matmul. The window's
/// parallel dims read only by it (c, kh, kw: the filter's) are the column
/// tensor's rows, flattened to one dim j; the reduced dims (n, oh, ow) in
/// the other operand's order are its columns:
///
///   Xc[j, n, oh, ow] = X[n, c, oh + kh, ow + kw]   (one pass, rows copied)
///   R[j, f] = sum over (n, oh, ow) of Xc[j, n, oh, ow] dY[n, f, oh, ow]
///   dW[f, c, kh, kw] = init + R[(c, kh, kw), f]
///
/// R is a matmul whose left operand is contiguous along k and whose right
/// operand the rest of this pass copies with n innermost (dY, the smaller
/// operand where c x taps exceeds f), so it gets register tiles and cache
/// blocks. Read through its window, the sum was vectorized along the
/// filter's 3-wide rows, or along kw with the image copied per filter
/// row: a 16 -> 16 channel 3x3 weight gradient over 8 x 32 x 32 took 7.8
/// ms (4.8 GFLOP/s) on a Sapphire Rapids core, AVX-512 code. Only where
/// every parallel dim is read by exactly one operand, every reduced dim by
/// both, and the other operand through a projected permutation. Returns
/// the matmul, or null where it did not rewrite.
static linalg::GenericOp packCorrelation(RewriterBase &rewriter,
                                         linalg::GenericOp op,
                                         const Config &config, int64_t lanes) {
  if (!op.hasPureTensorSemantics() || !isProductSum(op) ||
      !op.getBody()->getOps<linalg::IndexOp>().empty())
    return nullptr;
  // Rows a vector long or longer are read in place by register tiles of
  // dot products (harp-tile-and-vectorize, correlationTile).
  if (correlationTile(op, config, lanes))
    return nullptr;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return nullptr;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap initMap = op.getMatchingIndexingMap(init);
  if (!initMap.isProjectedPermutation() ||
      initMap.getNumResults() != op.getNumParallelLoops())
    return nullptr;
  OpOperand *window = nullptr, *other = nullptr;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!window && readsCorrelationWindow(map, ranges, iterators))
      window = input;
    else if (map.isProjectedPermutation())
      other = input;
  }
  if (!window || !other)
    return nullptr;
  AffineMap windowMap = op.getMatchingIndexingMap(window);
  AffineMap otherMap = op.getMatchingIndexingMap(other);
  // Rows: the window's parallel dims in the result's order; the other
  // operand's parallel dims likewise; columns: the reduced dims in the
  // other operand's order.
  SmallVector<unsigned> rows, cols, reduced;
  for (AffineExpr e : initMap.getResults()) {
    unsigned d = cast<AffineDimExpr>(e).getPosition();
    bool inWindow = windowMap.isFunctionOfDim(d);
    bool inOther = otherMap.isFunctionOfDim(d);
    if (inWindow == inOther)
      return nullptr;
    (inWindow ? rows : cols).push_back(d);
  }
  for (AffineExpr e : otherMap.getResults()) {
    unsigned d = cast<AffineDimExpr>(e).getPosition();
    if (linalg::isReductionIterator(iterators[d]))
      reduced.push_back(d);
  }
  if (rows.empty() || cols.empty() ||
      reduced.size() != op.getNumReductionLoops() ||
      llvm::any_of(reduced,
                   [&](unsigned d) { return !windowMap.isFunctionOfDim(d); }))
    return nullptr;

  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  auto dim = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
  Type element = getElementTypeOrSelf(init->get().getType());
  rewriter.setInsertionPoint(op);

  // Where the windowed operand is contiguous along a row dim (a
  // channels-last image: a conv1d over a transposed embedding reads
  // E[n, t + k, c]), the column tensor keeps its rows innermost,
  // Xc[reduced..., (rows)], each (n, t, k) a contiguous copy of E's c; the
  // matmul is then R^T[cols..., j] with Xc as its right operand (k x n).
  // With the rows outermost the copy moved c across t, a transposition
  // through the window (64 x 5 x 64 x 76 floats in 2.3 ms, a third of the
  // weight gradient).
  bool rowsInner = false;
  if (auto last = dyn_cast<AffineDimExpr>(windowMap.getResults().back()))
    rowsInner = llvm::is_contained(rows, last.getPosition());
  // Rows innermost follow the operand's dims (k of t + k, then c), so that
  // a copied row block is a contiguous block of the operand.
  if (rowsInner) {
    auto firstRead = [&](unsigned d) {
      for (auto [i, e] : llvm::enumerate(windowMap.getResults()))
        if (e.isFunctionOfDim(d))
          return i;
      return size_t(windowMap.getNumResults());
    };
    llvm::stable_sort(rows, [&](unsigned a, unsigned b) {
      return firstRead(a) < firstRead(b);
    });
  }

  // The column tensor, rows unflattened: loops (rows..., reduced...), or
  // (reduced..., rows...) with the rows innermost.
  unsigned numRows = rows.size(), numReduced = reduced.size();
  unsigned rowsAt = rowsInner ? numReduced : 0;
  unsigned reducedAt = rowsInner ? 0 : numRows;
  SmallVector<AffineExpr> toCopy(op.getNumLoops(),
                                 getAffineConstantExpr(0, ctx));
  SmallVector<int64_t> copyShape(numRows + numReduced);
  int64_t rowCount = 1;
  for (auto [i, d] : llvm::enumerate(rows)) {
    toCopy[d] = dim(rowsAt + i);
    copyShape[rowsAt + i] = ranges[d];
    rowCount *= ranges[d];
  }
  for (auto [i, d] : llvm::enumerate(reduced)) {
    toCopy[d] = dim(reducedAt + i);
    copyShape[reducedAt + i] = ranges[d];
  }
  AffineMap read =
      windowMap.replaceDimsAndSymbols(toCopy, {}, numRows + numReduced, 0);
  Value columns = copyThrough(rewriter, loc, window->get(), read, copyShape);
  // Flattened: one dim j for the rows, in place.
  SmallVector<ReassociationIndices> rowGroups =
      runAsOneDim(numRows + numReduced, rowsAt, numRows);
  SmallVector<int64_t> flatShape;
  for (const ReassociationIndices &group : rowGroups) {
    int64_t size = 1;
    for (int64_t d : group)
      size *= copyShape[d];
    flatShape.push_back(size);
  }
  Value flat = columns;
  if (numRows > 1)
    flat = tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get(flatShape, element), columns,
        rowGroups);

  // The matmul over (j, cols..., reduced...), or (cols..., j, reduced...)
  // with the rows innermost.
  unsigned numCols = cols.size();
  unsigned numLoops = 1 + numCols + numReduced;
  unsigned jAt = rowsInner ? numCols : 0;
  unsigned colsAt = rowsInner ? 0 : 1;
  unsigned kAt = 1 + numCols;
  SmallVector<AffineExpr> toMatmul(op.getNumLoops(),
                                   getAffineConstantExpr(0, ctx));
  for (auto [i, d] : llvm::enumerate(cols))
    toMatmul[d] = dim(colsAt + i);
  for (auto [i, d] : llvm::enumerate(reduced))
    toMatmul[d] = dim(kAt + i);
  SmallVector<AffineExpr> flatRead, resultExprs(numCols + 1);
  SmallVector<int64_t> resultShape(numCols + 1);
  if (!rowsInner)
    flatRead.push_back(dim(jAt));
  for (unsigned i = 0; i < numReduced; ++i)
    flatRead.push_back(dim(kAt + i));
  if (rowsInner)
    flatRead.push_back(dim(jAt));
  resultExprs[jAt] = dim(jAt);
  resultShape[jAt] = rowCount;
  for (auto [i, d] : llvm::enumerate(cols)) {
    resultExprs[colsAt + i] = dim(colsAt + i);
    resultShape[colsAt + i] = ranges[d];
  }
  SmallVector<Value> inputs(2);
  SmallVector<AffineMap> maps(3);
  inputs[window->getOperandNumber()] = flat;
  maps[window->getOperandNumber()] = AffineMap::get(numLoops, 0, flatRead, ctx);
  inputs[other->getOperandNumber()] = other->get();
  maps[other->getOperandNumber()] =
      otherMap.replaceDimsAndSymbols(toMatmul, {}, numLoops, 0);
  // With the rows innermost the other operand is the left one, A[m, k]:
  // copied as [cols..., reduced...] unless it is in that order, so that
  // its reduced dims are one contiguous k (dY[n, f, t] has f between the
  // batch and the positions: the k blocks then spanned the positions only,
  // 49 against 81 GFLOP/s for 96 x 320 x 4864).
  if (rowsInner) {
    SmallVector<unsigned> order;
    for (AffineExpr e : otherMap.getResults())
      order.push_back(cast<AffineDimExpr>(e).getPosition());
    SmallVector<unsigned> wanted(cols);
    wanted.append(reduced.begin(), reduced.end());
    if (order != wanted) {
      SmallVector<AffineExpr> toOther(op.getNumLoops(),
                                      getAffineConstantExpr(0, ctx));
      SmallVector<int64_t> otherShape;
      for (auto [i, d] : llvm::enumerate(wanted)) {
        toOther[d] = dim(i);
        otherShape.push_back(ranges[d]);
      }
      AffineMap readOther =
          otherMap.replaceDimsAndSymbols(toOther, {}, wanted.size(), 0);
      inputs[other->getOperandNumber()] =
          copyThrough(rewriter, loc, other->get(), readOther, otherShape);
      SmallVector<AffineExpr> copied;
      for (unsigned i = 0; i < numCols; ++i)
        copied.push_back(dim(colsAt + i));
      for (unsigned i = 0; i < numReduced; ++i)
        copied.push_back(dim(kAt + i));
      maps[other->getOperandNumber()] =
          AffineMap::get(numLoops, 0, copied, ctx);
    }
  }
  maps[2] = AffineMap::get(numLoops, 0, resultExprs, ctx);
  Value zero = arith::ConstantOp::create(rewriter, loc, element,
                                         rewriter.getZeroAttr(element));
  Value empty = tensor::EmptyOp::create(rewriter, loc, resultShape, element);
  Value zeros = linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
  using It = utils::IteratorType;
  SmallVector<It> matmulIterators(1 + numCols, It::parallel);
  matmulIterators.append(numReduced, It::reduction);
  auto matmul =
      linalg::GenericOp::create(rewriter, loc, zeros.getType(), inputs,
                                ValueRange{zeros}, maps, matmulIterators);
  rewriter.cloneRegionBefore(op.getRegion(), matmul.getRegion(),
                             matmul.getRegion().begin());

  // The result: R unflattened, added to the kernel's init, in its order.
  SmallVector<int64_t> expandedShape(numRows + numCols);
  unsigned rowsOut = rowsInner ? numCols : 0, colsOut = rowsInner ? 0 : numRows;
  for (auto [i, d] : llvm::enumerate(rows))
    expandedShape[rowsOut + i] = ranges[d];
  for (auto [i, d] : llvm::enumerate(cols))
    expandedShape[colsOut + i] = ranges[d];
  SmallVector<ReassociationIndices> resultGroups =
      runAsOneDim(numRows + numCols, rowsOut, numRows);
  Value expanded = matmul.getResult(0);
  if (numRows > 1)
    expanded = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(expandedShape, element), expanded,
        resultGroups);
  // Loops of the last kernel: the init's dims in its order.
  unsigned numOut = initMap.getNumResults();
  SmallVector<AffineExpr> fromOut(op.getNumLoops(),
                                  getAffineConstantExpr(0, ctx));
  for (unsigned i = 0; i < numOut; ++i)
    fromOut[initMap.getDimPosition(i)] = dim(i);
  SmallVector<AffineExpr> expandedRead(numRows + numCols);
  for (auto [i, d] : llvm::enumerate(rows))
    expandedRead[rowsOut + i] = fromOut[d];
  for (auto [i, d] : llvm::enumerate(cols))
    expandedRead[colsOut + i] = fromOut[d];
  AffineMap identity = AffineMap::getMultiDimIdentityMap(numOut, ctx);
  bool isFloat = isa<FloatType>(element);
  auto sum = linalg::GenericOp::create(
      rewriter, loc, init->get().getType(), ValueRange{init->get(), expanded},
      ValueRange{tensor::EmptyOp::create(
          rewriter, loc,
          cast<RankedTensorType>(init->get().getType()).getShape(), element)},
      SmallVector<AffineMap>{
          identity, AffineMap::get(numOut, 0, expandedRead, ctx), identity},
      SmallVector<It>(numOut, It::parallel),
      [&](OpBuilder &b, Location nloc, ValueRange args) {
        Value added =
            isFloat
                ? arith::AddFOp::create(b, nloc, args[0], args[1]).getResult()
                : arith::AddIOp::create(b, nloc, args[0], args[1]).getResult();
        linalg::YieldOp::create(b, nloc, added);
      });
  rewriter.replaceOp(op, sum.getResults());
  return matmul;
}

/// Copies the windowed operand of a convolution that reads its output's
/// contiguous dim v across rows (the window `o + k` on an outer dim of the
/// operand, a reduced dim innermost: a 1-d convolution over a transposed
/// embedding, X[n, c, t] = E[n, t, c]) into one with that window innermost,
/// the other dims in their order, and points `op` at the copy. Read in
/// place, each lane of the convolution's output vectors was a load a row
/// apart: a 64 -> 96 channel convolution of width 5 over 64 x 80 took 220
/// ms a call on a Sapphire Rapids core (AVX-512 code), 70 times the
/// contiguous one. The copy is a permutation (moved in square tiles
/// transposed in registers), one pass over the operand, which the
/// convolution reads once per output channel. Returns whether it rewrote.
static bool transposeWindowOperand(RewriterBase &rewriter,
                                   linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || !isProductSum(op) ||
      llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return false;
  AffineMap initMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (initMap.getNumResults() == 0)
    return false;
  auto last = dyn_cast<AffineDimExpr>(initMap.getResults().back());
  if (!last)
    return false;
  unsigned v = last.getPosition();
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    unsigned rank = map.getNumResults();
    if (!type || !type.hasStaticShape() || rank < 2 ||
        map.isProjectedPermutation() || !harp::isMonotone(map) ||
        map.getResult(rank - 1).isFunctionOfDim(v))
      continue;
    std::optional<unsigned> window;
    for (unsigned i = 0; i + 1 < rank; ++i)
      if (map.getResult(i).isFunctionOfDim(v) &&
          !isa<AffineDimExpr>(map.getResult(i)))
        window = i;
    if (!window)
      continue;
    SmallVector<unsigned> order;
    for (unsigned i = 0; i < rank; ++i)
      if (i != *window)
        order.push_back(i);
    order.push_back(*window);
    readThroughCopy(rewriter, op, input, order);
    return true;
  }
  return false;
}

/// Gives every operand of a sum of products that reads a dim with a
/// stride and no window (a strided 1x1 convolution's image,
/// `X[n, c, 2 * oh, 2 * ow]`) a dense copy of what it reads,
/// `Xs[n, c, oh, ow]`, read as a projected permutation. (That
/// convolution's weight gradient is a correlation: packCorrelation's
/// column tensor holds the pixels read.)
/// Read in place, the stride keeps the operand off the register-tiled
/// path: harp-tile-and-vectorize cannot load a vector of it, so the
/// contraction ran as scalar loops (4.5 GFLOP/s for a 32 x 16 x 32 x 32
/// image through a 1x1 convolution of stride 2 to 32 channels on an AMD
/// EPYC Zen 4). The copy is one strided pass over the elements read, which
/// the contraction reads again for every index of the dims the operand
/// does not read (the output channels); an operand every one of whose
/// elements the contraction reads once is left as it is. Returns whether
/// it rewrote.
static bool copyStridedOperands(RewriterBase &rewriter, linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || !isProductSum(op) ||
      llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  bool rewrote = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    if (!type || !type.hasStaticShape() || map.isProjectedPermutation())
      continue;
    // Each result a dim, or a dim read with a stride; each dim once.
    SmallVector<unsigned> dims;
    bool strided = false, simple = true;
    for (AffineExpr e : map.getResults()) {
      if (auto d = dyn_cast<AffineDimExpr>(e)) {
        dims.push_back(d.getPosition());
      } else if (std::optional<harp::StridedRead> read = harp::stridedRead(e)) {
        dims.push_back(read->dim);
        strided = true;
      } else {
        simple = false;
      }
    }
    SmallVector<unsigned> sorted(dims);
    llvm::sort(sorted);
    if (!strided || !simple ||
        std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      continue;
    // Only where some dim of the op is not read by this operand, so that
    // the contraction reads each copied element more than once.
    if (llvm::all_of(llvm::seq<unsigned>(0, map.getNumDims()), [&](unsigned d) {
          return map.isFunctionOfDim(d) || ranges[d] == 1;
        }))
      continue;
    // The copy's dim j is the op's dim dims[j]; it reads the operand at
    // the map's results with those dims renamed.
    MLIRContext *ctx = op.getContext();
    SmallVector<AffineExpr> rename(map.getNumDims(),
                                   getAffineConstantExpr(0, ctx));
    SmallVector<int64_t> shape;
    for (auto [j, d] : llvm::enumerate(dims)) {
      rename[d] = getAffineDimExpr(j, ctx);
      shape.push_back(ranges[d]);
    }
    AffineMap read = map.replaceDimsAndSymbols(rename, {}, dims.size(), 0);
    rewriter.setInsertionPoint(op);
    Value copy = copyThrough(rewriter, op.getLoc(), input->get(), read, shape);
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    SmallVector<AffineExpr> projected;
    for (unsigned d : dims)
      projected.push_back(getAffineDimExpr(d, ctx));
    maps[input->getOperandNumber()] =
        AffineMap::get(map.getNumDims(), 0, projected, ctx);
    rewriter.modifyOpInPlace(op, [&] {
      input->set(copy);
      op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
    });
    rewrote = true;
  }
  return rewrote;
}

namespace {
struct HarpPackContractionsPass
    : harp::impl::HarpPackContractionsPassBase<HarpPackContractionsPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<Config> options =
        makeConfig(getOperation(), getArgument(), vectorBits, registerVectors);
    if (failed(options))
      return signalPassFailure();
    Config config = *options;
    setTileOptions(config, registerRows, cacheK, cacheN, l1Cache, l2Cache);
    config.fmaPerCycle = fmaPerCycle;
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : generics) {
      op = dropUnitLoops(rewriter, op);
      if (std::optional<int64_t> lanes = laneCount(op, config)) {
        if (linalg::GenericOp matmul =
                packCorrelation(rewriter, op, config, *lanes))
          op = matmul;
        else if (!copyStridedOperands(rewriter, op))
          (void)transposeWindowOperand(rewriter, op);
        op = collapseContiguousDims(rewriter, op);
        if (linalg::GenericOp copied = transposeLeftOperand(rewriter, op))
          op = collapseContiguousDims(rewriter, copied);
        (void)packRightOperand(rewriter, op, config, *lanes);
      }
    }
  }
};
} // namespace
