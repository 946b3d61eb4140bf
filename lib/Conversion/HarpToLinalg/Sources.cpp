//===- Sources.cpp - harp.rand and harp.arange ----------------------------===//

#include "KernelBuilder.h"

#include "harp/Conversion/HarpToLinalg/HarpToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::harp;

namespace {
/// Philox-2x32-10 on the element's row-major linear index: the numbers depend
/// on (seed, index) only, so any tiling or thread count gives the same ones.
/// The key is the seed's low word; its high word is mixed into the counter.
/// A run-time seed is read once, before the kernel, and used in its body.
struct RandToGeneric : OpRewritePattern<RandOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RandOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    auto floatType = cast<FloatType>(type.getElementType());
    ArrayRef<int64_t> shape = type.getShape();
    Value dynamicSeed;
    if (Value operand = op.getDynamicSeed())
      dynamicSeed = tensor::ExtractOp::create(rewriter, op.getLoc(), operand,
                                              ValueRange());
    uint64_t seed = dynamicSeed ? 0 : static_cast<uint64_t>(*op.getSeed());
    Value result = lowering::buildKernel(
        rewriter, op.getLoc(), shape, {}, {}, std::nullopt, floatType,
        [&](OpBuilder &b, Location loc, ValueRange,
            ValueRange indices) -> Value {
          Type i32 = b.getI32Type(), i64 = b.getI64Type();
          auto c32 = [&](uint32_t v) -> Value {
            return arith::ConstantOp::create(
                b, loc, b.getIntegerAttr(i32, static_cast<int64_t>(v)));
          };
          auto c64 = [&](int64_t v) -> Value {
            return arith::ConstantOp::create(b, loc, b.getIntegerAttr(i64, v));
          };
          // Row-major linear index.
          Value linear = c64(0);
          for (auto [d, size] : llvm::enumerate(shape)) {
            Value at = arith::IndexCastOp::create(b, loc, i64, indices[d]);
            linear = arith::AddIOp::create(
                b, loc, arith::MulIOp::create(b, loc, linear, c64(size)), at);
          }
          Value x0 = arith::TruncIOp::create(b, loc, i32, linear);
          Value x1 = arith::TruncIOp::create(
              b, loc, i32, arith::ShRUIOp::create(b, loc, linear, c64(32)));
          // The key of each round: a constant, or the run-time seed's low
          // word plus the round's multiple of the Weyl constant.
          Value seedLow, seedHigh;
          if (dynamicSeed) {
            seedLow = arith::TruncIOp::create(b, loc, i32, dynamicSeed);
            seedHigh = arith::TruncIOp::create(
                b, loc, i32,
                arith::ShRUIOp::create(b, loc, dynamicSeed, c64(32)));
          } else {
            seedHigh = c32(static_cast<uint32_t>(seed >> 32));
          }
          x1 = arith::XOrIOp::create(b, loc, x1, seedHigh);
          uint32_t key = static_cast<uint32_t>(seed);
          auto roundKey = [&](int round) -> Value {
            uint32_t offset = static_cast<uint32_t>(round) * 0x9E3779B9u;
            if (!dynamicSeed)
              return c32(key + offset);
            return round == 0
                       ? seedLow
                       : arith::AddIOp::create(b, loc, seedLow, c32(offset));
          };
          for (int round = 0; round < 10; ++round) {
            Value product = arith::MulIOp::create(
                b, loc, arith::ExtUIOp::create(b, loc, i64, x0),
                c64(0xD256D193));
            Value hi = arith::TruncIOp::create(
                b, loc, i32, arith::ShRUIOp::create(b, loc, product, c64(32)));
            Value lo = arith::TruncIOp::create(b, loc, i32, product);
            x0 = arith::XOrIOp::create(
                b, loc, arith::XOrIOp::create(b, loc, hi, roundKey(round)), x1);
            x1 = lo;
          }
          // Take as many random bits as the type has mantissa bits (plus
          // the implicit one): every value k * 2^-bits is exact, and < 1.
          unsigned bits = floatType.getFPMantissaWidth();
          Value word;
          if (bits > 32) {
            Value hi64 = arith::ShLIOp::create(
                b, loc, arith::ExtUIOp::create(b, loc, i64, x0),
                c64(bits - 32));
            Value lo64 = arith::ShRUIOp::create(
                b, loc, arith::ExtUIOp::create(b, loc, i64, x1),
                c64(64 - bits));
            word = arith::OrIOp::create(b, loc, hi64, lo64);
          } else {
            word = arith::ShRUIOp::create(b, loc, x0, c32(32 - bits));
          }
          Type compute = bits > 24 ? b.getF64Type() : b.getF32Type();
          Value asFloat = arith::UIToFPOp::create(b, loc, compute, word);
          Value scale = arith::ConstantOp::create(
              b, loc, b.getFloatAttr(compute, std::ldexp(1.0, -int(bits))));
          Value unit = arith::MulFOp::create(b, loc, asFloat, scale);
          if (compute != floatType)
            unit = arith::TruncFOp::create(b, loc, floatType, unit);
          return unit;
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// result[i] = start + i * step, in the element type.
struct ArangeToGeneric : OpRewritePattern<ArangeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ArangeOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    Type elementType = type.getElementType();
    Value result = lowering::buildKernel(
        rewriter, op.getLoc(), type.getShape(), {}, {}, std::nullopt,
        elementType,
        [&](OpBuilder &b, Location loc, ValueRange,
            ValueRange indices) -> Value {
          Value start = arith::ConstantOp::create(b, loc, op.getStart());
          Value step = arith::ConstantOp::create(b, loc, op.getStep());
          if (isa<FloatType>(elementType)) {
            Value i = arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                                 indices.front());
            Value f = arith::SIToFPOp::create(b, loc, elementType, i);
            return arith::AddFOp::create(
                b, loc, start, arith::MulFOp::create(b, loc, f, step));
          }
          Value i =
              arith::IndexCastOp::create(b, loc, elementType, indices.front());
          return arith::AddIOp::create(b, loc, start,
                                       arith::MulIOp::create(b, loc, i, step));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};
} // namespace

void mlir::harp::populateSourcesToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<RandToGeneric, ArangeToGeneric>(patterns.getContext());
}
