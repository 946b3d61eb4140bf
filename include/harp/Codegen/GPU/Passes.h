//===- Passes.h - harp code generation for GPUs -----------------*- C++ -*-===//
//
// Passes that map linalg kernels on buffers onto GPU launches and keep the
// host's buffers on the device.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_CODEGEN_GPU_PASSES_H
#define HARP_CODEGEN_GPU_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::harp {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "harp/Codegen/GPU/Passes.h.inc"

} // namespace mlir::harp

#endif // HARP_CODEGEN_GPU_PASSES_H
