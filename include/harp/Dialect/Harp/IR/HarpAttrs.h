//===- HarpAttrs.h - harp attributes and enums ------------------*- C++ -*-===//

#ifndef HARP_DIALECT_HARP_IR_HARPATTRS_H
#define HARP_DIALECT_HARP_IR_HARPATTRS_H

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IntegerSet.h"

#include "harp/Dialect/Harp/IR/HarpEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "harp/Dialect/Harp/IR/HarpAttrs.h.inc"

#endif // HARP_DIALECT_HARP_IR_HARPATTRS_H
