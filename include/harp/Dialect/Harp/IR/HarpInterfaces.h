//===- HarpInterfaces.h - harp op interfaces --------------------*- C++ -*-===//

#ifndef HARP_DIALECT_HARP_IR_HARPINTERFACES_H
#define HARP_DIALECT_HARP_IR_HARPINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "harp/Dialect/Harp/IR/HarpInterfaces.h.inc"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::harp {
/// Registers the scalar derivative rules of the arith, math and complex ops
/// allowed in map_reduce regions.
void registerScalarDerivativeModels(DialectRegistry &registry);
} // namespace mlir::harp

#endif // HARP_DIALECT_HARP_IR_HARPINTERFACES_H
