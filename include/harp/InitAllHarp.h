//===- InitAllHarp.h - register harp and what it works with -----*- C++ -*-===//
//
// One place that lists the dialects and passes a harp tool or an embedding
// compiler registers, as upstream's InitAllDialects.h does for mlir-opt.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_INITALLHARP_H
#define HARP_INITALLHARP_H

#include "harp/Dialect/Harp/IR/HarpDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::harp {

/// harp and the dialects harp IR is written with: enough to parse, verify and
/// print any harp module.
inline void registerHarpDialects(DialectRegistry &registry) {
  registry.insert<HarpDialect, arith::ArithDialect, complex::ComplexDialect,
                  func::FuncDialect, math::MathDialect>();
}

/// Everything `harp-opt` understands: harp's dialects plus the upstream
/// dialects its pipelines produce.
inline void registerAllHarpDialects(DialectRegistry &registry) {
  registerHarpDialects(registry);
  registry.insert<tensor::TensorDialect>();
}

/// harp's passes and the upstream passes its pipelines use.
inline void registerAllHarpPasses() { registerTransformsPasses(); }

} // namespace mlir::harp

#endif // HARP_INITALLHARP_H
