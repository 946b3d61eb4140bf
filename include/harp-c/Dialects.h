/*===- harp-c/Dialects.h - C API for the harp dialect -------------*- C -*-===*\
|*                                                                            *|
|* Lets another MLIR compiler, or any client of the upstream MLIR C API, load *|
|* the harp dialect:                                                          *|
|*                                                                            *|
|*   MlirDialectHandle h = mlirGetDialectHandle__harp__();                    *|
|*   mlirDialectHandleRegisterDialect(h, ctx);                                *|
|*   mlirDialectHandleLoadDialect(h, ctx);                                    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef HARP_C_DIALECTS_H
#define HARP_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Harp, harp);

/// Registers harp and the upstream dialects harp IR is written with (arith,
/// complex, func, math) in `registry`.
MLIR_CAPI_EXPORTED void harpRegisterAllDialects(MlirDialectRegistry registry);

#ifdef __cplusplus
}
#endif

#endif /* HARP_C_DIALECTS_H */
