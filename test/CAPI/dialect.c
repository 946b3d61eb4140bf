// RUN: harp-capi-test 2>&1 | FileCheck %s

// An embedding compiler's view of harp: only the upstream MLIR C API and
// harp's dialect handle.

#include "harp-c/Dialects.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"

#include <stdio.h>
#include <stdlib.h>

static void printToStdout(MlirStringRef str, void *userData) {
  (void)userData;
  fwrite(str.data, 1, str.length, stdout);
}

static const char *kModule =
    "func.func @transpose_add(%x: tensor<3x4xf32>, %y: tensor<4x3xf32>)"
    "    -> tensor<4x3xf32> {\n"
    "  %t = harp.view %x <(d0, d1) -> (d1, d0)>\n"
    "      : tensor<3x4xf32> -> tensor<4x3xf32>\n"
    "  %s = harp.map_reduce ins(%t, %y : tensor<4x3xf32>, tensor<4x3xf32>) {\n"
    "  ^bb0(%a: f32, %b: f32):\n"
    "    %c = arith.addf %a, %b : f32\n"
    "    harp.yield %c : f32\n"
    "  } : tensor<4x3xf32>\n"
    "  return %s : tensor<4x3xf32>\n"
    "}\n";

// A view that reads past its source: the verifier must reject it.
static const char *kInvalid =
    "func.func @bad(%x: tensor<4xf32>) -> tensor<5xf32> {\n"
    "  %v = harp.view %x <(d0) -> (d0)>\n"
    "      : tensor<4xf32> -> tensor<5xf32>\n"
    "  return %v : tensor<5xf32>\n"
    "}\n";

// Prints diagnostics to stdout, in order with the rest of the output.
static MlirLogicalResult printDiagnostic(MlirDiagnostic diagnostic,
                                         void *userData) {
  (void)userData;
  printf("error: ");
  mlirDiagnosticPrint(diagnostic, printToStdout, NULL);
  printf("\n");
  return mlirLogicalResultSuccess();
}

int main(void) {
  MlirContext ctx = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  harpRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);

  MlirDialectHandle harp = mlirGetDialectHandle__harp__();
  MlirDialect dialect = mlirDialectHandleLoadDialect(harp, ctx);
  MlirStringRef ns = mlirDialectGetNamespace(dialect);
  // CHECK: loaded dialect: harp
  printf("loaded dialect: %.*s\n", (int)ns.length, ns.data);

  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kModule));
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "failed to parse harp IR\n");
    return 1;
  }
  MlirOperation op = mlirModuleGetOperation(module);
  // CHECK: verified: 1
  printf("verified: %d\n", mlirOperationVerify(op));
  // CHECK: func.func @transpose_add
  // CHECK: harp.view %{{.*}} <(d0, d1) -> (d1, d0)>
  // CHECK: harp.map_reduce ins(
  // CHECK: arith.addf
  // CHECK: harp.yield
  mlirOperationPrint(op, printToStdout, NULL);
  printf("\n");
  mlirModuleDestroy(module);

  mlirContextAttachDiagnosticHandler(ctx, printDiagnostic, NULL, NULL);
  // CHECK: error: 'harp.view' op reads out of bounds: result index [4] reads index 4 of source dim 0, which has size 4
  // CHECK: invalid module rejected: 1
  MlirModule bad =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kInvalid));
  printf("invalid module rejected: %d\n", mlirModuleIsNull(bad));

  mlirContextDestroy(ctx);
  return 0;
}
