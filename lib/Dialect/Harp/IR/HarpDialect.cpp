//===- HarpDialect.cpp - harp dialect -------------------------------------===//

#include "harp/Dialect/Harp/IR/HarpDialect.h"
#include "harp/Dialect/Harp/IR/HarpAttrs.h"
#include "harp/Dialect/Harp/IR/HarpOps.h"

#include "mlir/Transforms/InliningUtils.h"

using namespace mlir;
using namespace mlir::harp;

#include "harp/Dialect/Harp/IR/HarpOpsDialect.cpp.inc"

namespace {
/// harp ops are pure values on tensors (or, for harp.autodiff, a reference to
/// a function by name): any of them can be inlined anywhere, so calls
/// between harp functions (the graph importer's) fold with `inline`.
struct HarpInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Operation *, bool) const final {
    return true;
  }
  bool isLegalToInline(Region *, Region *, bool, IRMapping &) const final {
    return true;
  }
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void HarpDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "harp/Dialect/Harp/IR/HarpOps.cpp.inc"
      >();
  addInterfaces<HarpInlinerInterface>();
}

Attribute HarpDialect::lookupLayoutAnalysis(unsigned analysis, Attribute layout,
                                            Attribute shapes) {
  std::lock_guard<std::mutex> lock(layoutAnalysisMutex);
  return layoutAnalyses.lookup({analysis, layout, shapes});
}

void HarpDialect::recordLayoutAnalysis(unsigned analysis, Attribute layout,
                                       Attribute shapes, Attribute result) {
  std::lock_guard<std::mutex> lock(layoutAnalysisMutex);
  layoutAnalyses[{analysis, layout, shapes}] = result;
}

Operation *HarpDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  return arith::ConstantOp::materialize(builder, value, type, loc);
}
