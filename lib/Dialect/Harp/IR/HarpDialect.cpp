//===- HarpDialect.cpp - harp dialect -------------------------------------===//

#include "harp/Dialect/Harp/IR/HarpDialect.h"
#include "harp/Dialect/Harp/IR/HarpAttrs.h"
#include "harp/Dialect/Harp/IR/HarpOps.h"

using namespace mlir;
using namespace mlir::harp;

#include "harp/Dialect/Harp/IR/HarpOpsDialect.cpp.inc"

void HarpDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "harp/Dialect/Harp/IR/HarpOps.cpp.inc"
      >();
}

Operation *HarpDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  return arith::ConstantOp::materialize(builder, value, type, loc);
}
