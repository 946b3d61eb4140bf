//===- HarpOps.h - harp operations ------------------------------*- C++ -*-===//

#ifndef HARP_DIALECT_HARP_IR_HARPOPS_H
#define HARP_DIALECT_HARP_IR_HARPOPS_H

#include "harp/Dialect/Harp/IR/HarpAttrs.h"
#include "harp/Dialect/Harp/IR/HarpDialect.h"

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

#endif // HARP_DIALECT_HARP_IR_HARPOPS_H
