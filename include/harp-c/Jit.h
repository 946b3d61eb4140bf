/*===- harp-c/Jit.h - C API for harp's JIT ------------------------*- C -*-===*\
|*                                                                            *|
|* Compiles harp IR for this machine and calls its functions on the           *|
|* caller's buffers (dense, row-major):                                       *|
|*                                                                            *|
|*   HarpJit jit = harpJitCreate(mlirStringRefCreate("", 0));                 *|
|*   HarpExecutable exe = harpJitCompile(jit, source, onError, NULL);         *|
|*   int64_t shape[] = {4};                                                   *|
|*   HarpBuffer in = {x, HarpF32, 1, shape}, out = {y, HarpF32, 1, shape};    *|
|*   harpExecutableCall(exe, name, &in, 1, &out, 1, onError, NULL);           *|
|*   harpExecutableDestroy(exe);                                              *|
|*   harpJitDestroy(jit);                                                     *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef HARP_C_JIT_H
#define HARP_C_JIT_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct HarpJit {
  void *ptr;
} HarpJit;

typedef struct HarpExecutable {
  void *ptr;
} HarpExecutable;

/// Element types of buffers (i1 is one byte per element).
typedef enum HarpElementKind {
  HarpF16,
  HarpBF16,
  HarpF32,
  HarpF64,
  HarpI1,
  HarpI8,
  HarpI16,
  HarpI32,
  HarpI64,
  HarpC64,
  HarpC128
} HarpElementKind;

/// A dense row-major buffer the caller owns.
typedef struct HarpBuffer {
  void *data;
  HarpElementKind kind;
  intptr_t rank;
  const int64_t *shape;
} HarpBuffer;

/// A JIT compiling for the CPU `cpu` ("native", "x86-64-v2", "x86-64-v3",
/// "x86-64-v4" or an LLVM CPU name; empty: $HARP_CPU, else native), with
/// harp's default options and its on-disk cache.
MLIR_CAPI_EXPORTED HarpJit harpJitCreate(MlirStringRef cpu);
MLIR_CAPI_EXPORTED void harpJitDestroy(HarpJit jit);

/// Parses, verifies, lowers and compiles harp IR text. On failure the
/// diagnostics go to `errorCallback` (may be NULL) and the result's ptr is
/// NULL.
MLIR_CAPI_EXPORTED HarpExecutable
harpJitCompile(HarpJit jit, MlirStringRef source,
               MlirStringCallback errorCallback, void *userData);
/// harpJitCompile of `module` (printed; the module is not modified and may
/// live in any context).
MLIR_CAPI_EXPORTED HarpExecutable
harpJitCompileModule(HarpJit jit, MlirModule module,
                     MlirStringCallback errorCallback, void *userData);
MLIR_CAPI_EXPORTED void harpExecutableDestroy(HarpExecutable executable);

/// Calls the public function `name` on `inputs`, writing its results into
/// `results` (which must not overlap the inputs or each other). Counts,
/// element types and shapes are checked against the function's signature;
/// a mismatch is reported through `errorCallback` and fails.
MLIR_CAPI_EXPORTED MlirLogicalResult harpExecutableCall(
    HarpExecutable executable, MlirStringRef name, const HarpBuffer *inputs,
    intptr_t numInputs, const HarpBuffer *results, intptr_t numResults,
    MlirStringCallback errorCallback, void *userData);

#ifdef __cplusplus
}
#endif

#endif /* HARP_C_JIT_H */
