//===- HarpDialect.h - harp dialect -----------------------------*- C++ -*-===//

#ifndef HARP_DIALECT_HARP_IR_HARPDIALECT_H
#define HARP_DIALECT_HARP_IR_HARPDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Dialect.h"
#include "llvm/ADT/DenseMap.h"

#include <mutex>
#include <tuple>

#include "harp/Dialect/Harp/IR/HarpOpsDialect.h.inc"

#endif // HARP_DIALECT_HARP_IR_HARPDIALECT_H
