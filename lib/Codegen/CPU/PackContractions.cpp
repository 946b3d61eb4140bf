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
