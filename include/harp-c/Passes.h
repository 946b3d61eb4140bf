/*===- harp-c/Passes.h - C API for harp's passes and pipelines ----*- C -*-===*\
|*                                                                            *|
|* Registers harp's passes (so that textual pipelines name them) and builds   *|
|* the harp-to-llvm pipeline into a pass manager of the upstream C API:       *|
|*                                                                            *|
|*   mlirRegisterHarpPasses();                                                *|
|*   MlirPassManager pm = mlirPassManagerCreate(ctx);                         *|
|*   harpBuildHarpToLLVMPipeline(mlirPassManagerGetAsOpPassManager(pm),       *|
|*       mlirStringRefCreateFromCString("vectorize=false"), onError, NULL);   *|
|*   mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module));              *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef HARP_C_PASSES_H
#define HARP_C_PASSES_H

#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Registers harp's passes and the harp-to-llvm and harp-to-gpu pipelines
/// with the global registry (for mlirParsePassPipeline and
/// mlirOpPassManagerAddPipeline). Calling it again does nothing.
MLIR_CAPI_EXPORTED void mlirRegisterHarpPasses(void);

/// Appends harp-to-llvm, configured by `options` in the pipeline's textual
/// form ("fuse=false vectorize=true cpu=x86-64-v3"; empty for the
/// defaults), to `pm`, which must run on builtin.module. A bad option is
/// reported through `errorCallback` (may be NULL) and fails.
MLIR_CAPI_EXPORTED MlirLogicalResult
harpBuildHarpToLLVMPipeline(MlirOpPassManager pm, MlirStringRef options,
                            MlirStringCallback errorCallback, void *userData);

#ifdef __cplusplus
}
#endif

#endif /* HARP_C_PASSES_H */
