//===- InitAllHarp.h - register harp and what it works with -----*- C++ -*-===//
//
// One place that lists the dialects and passes a harp tool or an embedding
// compiler registers, as upstream's InitAllDialects.h does for mlir-opt.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_INITALLHARP_H
#define HARP_INITALLHARP_H

#include "harp/Dialect/Harp/IR/HarpDialect.h"
#include "harp/Dialect/Harp/IR/HarpInterfaces.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/DialectRegistry.h"

namespace mlir::harp {

/// harp and the dialects harp IR is written with: enough to parse, verify and
/// print any harp module.
inline void registerHarpDialects(DialectRegistry &registry) {
  registry.insert<HarpDialect, arith::ArithDialect, complex::ComplexDialect,
                  func::FuncDialect, math::MathDialect>();
  registerScalarDerivativeModels(registry);
}

/// Everything harp's pipelines produce on the way to LLVM, with the
/// bufferization models they rely on. Defined in lib/Pipelines.
void registerAllHarpDialects(DialectRegistry &registry);

/// harp's own passes and pipelines (what a tool that has upstream's passes
/// already, such as mlir-opt with harp's plugin, adds). Defined in
/// lib/Pipelines.
void registerHarpPasses();

/// registerHarpPasses() and the upstream passes a harp-opt user composes
/// with them. Defined in lib/Pipelines.
void registerAllHarpPasses();

} // namespace mlir::harp

#endif // HARP_INITALLHARP_H
