//===- Passes.h - harp conversion passes ------------------------*- C++ -*-===//

#ifndef HARP_CONVERSION_PASSES_H
#define HARP_CONVERSION_PASSES_H

#include "harp/Conversion/HarpToLinalg/HarpToLinalg.h"

#include "mlir/Pass/Pass.h"

namespace mlir::harp {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "harp/Conversion/Passes.h.inc"

} // namespace mlir::harp

#endif // HARP_CONVERSION_PASSES_H
