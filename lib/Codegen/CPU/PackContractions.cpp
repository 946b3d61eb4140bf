//===- PackContractions.cpp - harp-pack-contractions ----------------------===//
//
// Packs the right operand of wide matmuls into register-tile panels (see
// the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/CPU/Passes.h"

#include "CodegenConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPPACKCONTRACTIONSPASS
#include "harp/Codegen/CPU/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;
using namespace mlir::harp::cpu;

/// Copies a right operand read transposed (its last two dims n, k: a
/// gradient's W^T, nn.Linear's x @ W^T, attention's q @ k^T per batch)
/// into one whose last two dims are k, n, and points `op` at it. Read in
/// place, a register tile's w columns of B are w rows of the operand, K
/// elements apart: one scalar load per lane (a 256 x 1024 x 784 matmul
/// took 10x as long). The copy is a permutation, which
/// harp-tile-and-vectorize moves in square tiles transposed in registers;
/// it costs one pass over B, 1/M of the contraction's work.
static void transposeRightOperand(RewriterBase &rewriter, linalg::GenericOp op,
                                  OpOperand *right) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  Value b = right->get();
  auto type = cast<RankedTensorType>(b.getType());
  unsigned rank = type.getRank();
  SmallVector<int64_t> shape(type.getShape());
  std::swap(shape[rank - 2], shape[rank - 1]);
  SmallVector<unsigned> swapLast = llvm::to_vector(llvm::seq(0u, rank));
  std::swap(swapLast[rank - 2], swapLast[rank - 1]);
  rewriter.setInsertionPoint(op);
  Value copy = copyThrough(rewriter, loc, b,
                           AffineMap::getPermutationMap(swapLast, ctx), shape);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap &map = maps[right->getOperandNumber()];
  SmallVector<AffineExpr> results(map.getResults());
  std::swap(results[rank - 2], results[rank - 1]);
  map = AffineMap::get(map.getNumDims(), 0, results, ctx);
  rewriter.modifyOpInPlace(op, [&] {
    right->set(copy);
    op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
  });
}

/// Packs the right operand of a large matmul into register-tile panels:
/// B (K x N, read along n) becomes Bp (N/w x K x w), w the register tile's
/// width, and the matmul a contraction over (m, n-panel, n-in-panel, k)
/// writing C as M x N/w x w (a free reshape of M x N). The register tile
/// then reads its K x w panel of B contiguously, where it read w columns of
/// rows N apart (which map to the same cache sets when N is a large power
/// of two). Only for matmuls whose n is larger than a cache block and a
/// multiple of w; the copy costs one pass over B. A right operand read
/// transposed (N x K) is packed likewise wherever n is a multiple of w and
/// k at least w, whatever the caches; any other contraction reading its
/// right operand transposed, batched ones included, gets a transposed copy
/// (transposeRightOperand). Returns whether it rewrote `op`.
static bool packRightOperand(RewriterBase &rewriter, linalg::GenericOp op,
                             const Config &config, unsigned lanes) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
    return false;
  FailureOr<linalg::ContractionDimensions> dims = orientedContractionDims(op);
  if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 ||
      dims->k.size() != 1)
    return false;
  unsigned m = dims->m[0], n = dims->n[0], k = dims->k[0];
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return false;
  MLIRContext *ctx = op.getContext();
  auto dim = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
  // B is read as (batch..., k, n), or transposed as (batch..., n, k) (a
  // gradient's W^T): the panels are the same, the copy transposes.
  OpOperand *right = nullptr, *left = nullptr;
  bool transposed = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    unsigned rank = map.getNumResults();
    if (!right && rank >= 2 && map.isProjectedPermutation() &&
        ((map.getResult(rank - 2) == dim(k) &&
          map.getResult(rank - 1) == dim(n)) ||
         (map.getResult(rank - 2) == dim(n) &&
          map.getResult(rank - 1) == dim(k)))) {
      right = input;
      transposed = map.getResult(rank - 2) == dim(n);
    } else {
      left = input;
    }
  }
  if (!right || !left)
    return false;
  // A single column (n = 1) is contiguous along k either way.
  bool copyTransposed = transposed && ranges[n] > 1;
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap initMap = op.getMatchingIndexingMap(init);
  int64_t w = registerTileWidth(config, lanes);
  bool panelsFit =
      dims->batch.empty() && op.getNumLoops() == 3 &&
      op.getMatchingIndexingMap(right).getNumResults() == 2 &&
      initMap.getNumResults() == 2 && initMap.getResult(0) == dim(m) &&
      initMap.getResult(1) == dim(n) && ranges[n] % w == 0 && ranges[k] >= w;
  bool wide = false;
  if (panelsFit) {
    CacheBlocks blocks =
        cacheBlocks(config, std::min<int64_t>(ranges[m], config.registerRows),
                    w, elementBytes(op), ranges[k], ranges[n]);
    wide = ranges[n] > std::max<int64_t>(blocks.nMax, w);
  }
  if (!panelsFit || (!wide && !transposed)) {
    if (!copyTransposed)
      return false;
    transposeRightOperand(rewriter, op, right);
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
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : generics)
      if (std::optional<int64_t> lanes = laneCount(op, config))
        (void)packRightOperand(rewriter, op, config, *lanes);
  }
};
} // namespace
