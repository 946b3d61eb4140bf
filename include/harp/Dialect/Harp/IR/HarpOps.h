//===- HarpOps.h - harp operations ------------------------------*- C++ -*-===//

#ifndef HARP_DIALECT_HARP_IR_HARPOPS_H
#define HARP_DIALECT_HARP_IR_HARPOPS_H

#include "harp/Dialect/Harp/IR/HarpAttrs.h"
#include "harp/Dialect/Harp/IR/HarpDialect.h"
#include "harp/Dialect/Harp/IR/HarpInterfaces.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "harp/Dialect/Harp/IR/HarpOps.h.inc"

namespace mlir {
class OpBuilder;
} // namespace mlir

namespace mlir::harp {

/// Follows the chain of harp.view ops that produces `value` back to the
/// tensor it reads, composing their layouts. Returns that tensor and the
/// composed layout (null when `value` is not a view). Stops where two masks
/// with different pads meet: the inner view is then the returned tensor.
std::pair<Value, ViewAttr> stripViews(Value value);

/// `expr` evaluated on index values with arith ops (the ops map_reduce
/// regions may use): floordiv, ceildiv and affine (non-negative) mod.
Value buildIndexExpr(OpBuilder &b, Location loc, AffineExpr expr,
                     ArrayRef<Value> dims);

/// An i1 that holds where every constraint of `mask` holds at `dims`.
Value buildMaskCondition(OpBuilder &b, Location loc, IntegerSet mask,
                         ArrayRef<Value> dims);

/// Creates the body block of `op` (one argument per operand, of its element
/// type) and sets `b`'s insertion point to its start.
Block *createBodyBlock(OpBuilder &b, MapReduceOp op);

/// A zero-filled constant of `type` (complex element types included).
Value buildZeros(OpBuilder &b, Location loc, RankedTensorType type);

/// A scalar constant of `attr`'s type, complex numbers included
/// (arith.constant or complex.constant).
Value buildScalarConstant(OpBuilder &b, Location loc, TypedAttr attr);

} // namespace mlir::harp

#endif // HARP_DIALECT_HARP_IR_HARPOPS_H
