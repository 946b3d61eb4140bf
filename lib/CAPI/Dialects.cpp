//===- Dialects.cpp - C API for the harp dialect --------------------------===//

#include "harp-c/Dialects.h"

#include "harp/Dialect/Harp/IR/HarpDialect.h"
#include "harp/InitAllHarp.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Harp, harp, mlir::harp::HarpDialect)

void harpRegisterAllDialects(MlirDialectRegistry registry) {
  mlir::harp::registerHarpDialects(*unwrap(registry));
}
