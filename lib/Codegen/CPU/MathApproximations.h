//===- MathApproximations.h - f32 math functions as polynomials -*- C++ -*-===//
//
// The polynomial and rational approximations harp-vector-cleanup puts in
// place of `math` functions on f32, so that they vectorize instead of
// becoming one libm call per element: harp's own tanh, sin and cos, MLIR's
// for the others, and their fused multiply-adds split where the target has
// no FMA.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_LIB_CODEGEN_CPU_MATHAPPROXIMATIONS_H
#define HARP_LIB_CODEGEN_CPU_MATHAPPROXIMATIONS_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::harp::cpu {

/// Adds the patterns that replace tanh, sin, cos, exp, exp2, expm1, log,
/// log2, log1p, erf, erfc, atan, atan2, asin, acos and cbrt on f32 scalars
/// and vectors. tanh, sin and cos are harp's (docs/Lowering.md, "Math
/// functions"; sin and cos call libm for the lanes beyond their reduction's
/// range); the others are MLIR's. With `fma` false harp's multiply and add
/// separately (and sin and cos reduce by pieces of pi/2 whose products are
/// exact); MLIR's patterns always make `math.fma`, which
/// `splitApproximationFmas` then splits.
void populateMathApproximationPatterns(RewritePatternSet &patterns, bool fma);

/// Marks the `math.fma` ops in `root` before the approximations run, so that
/// `splitApproximationFmas` leaves them fused.
void markExistingFmas(Operation *root);

/// Replaces every `math.fma` in `root` that `markExistingFmas` did not mark
/// (those the approximations made) by `arith.mulf` + `arith.addf`, and
/// drops the marks. For targets without FMA, where LLVM lowers `math.fma`
/// to one libm `fmaf` call per element; a fused multiply-add the program
/// itself asked for stays one.
void splitApproximationFmas(Operation *root);

} // namespace mlir::harp::cpu

#endif // HARP_LIB_CODEGEN_CPU_MATHAPPROXIMATIONS_H
