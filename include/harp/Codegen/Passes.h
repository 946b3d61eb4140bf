//===- Passes.h - harp's code generation passes -----------------*- C++ -*-===//
//
// Code generation works on linalg, vector, scf and gpu rather than on harp
// ops: what every target shares (Common), CPUs and GPUs.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_CODEGEN_PASSES_H
#define HARP_CODEGEN_PASSES_H

#include "harp/Codegen/CPU/Passes.h"
#include "harp/Codegen/Common/Passes.h"
#include "harp/Codegen/GPU/Passes.h"

namespace mlir::harp {

/// Registers every code generation pass and the harp-vectorize pipeline.
inline void registerHarpCodegenPasses() {
  registerHarpCodegenCommonPasses();
  registerHarpCodegenCPUPasses();
  registerHarpCodegenGPUPasses();
  registerHarpVectorizePipeline();
}

} // namespace mlir::harp

#endif // HARP_CODEGEN_PASSES_H
