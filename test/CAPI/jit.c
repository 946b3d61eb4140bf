// RUN: harp-capi-jit-test 2>&1 | FileCheck %s

// An embedder drives harp through the C API alone: registers harp's passes,
// builds harp-to-llvm into an upstream pass manager and runs it, then
// compiles a module with harp's JIT and calls it on its own buffers.

#include "harp-c/Dialects.h"
#include "harp-c/Jit.h"
#include "harp-c/Passes.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Transforms.h"

#include <stdio.h>
#include <string.h>

static void printError(MlirStringRef str, void *userData) {
  (void)userData;
  printf("error: %.*s\n", (int)str.length, str.data);
}

// out[i, j] = x[j, i] * 2 + y[i, j], on a 3x5 result (odd sizes).
static const char *kModule =
    "func.func @scale_add(%x: tensor<5x3xf32>, %y: tensor<3x5xf32>)"
    "    -> tensor<3x5xf32> {\n"
    "  %t = harp.view %x <(d0, d1) -> (d1, d0)>\n"
    "      : tensor<5x3xf32> -> tensor<3x5xf32>\n"
    "  %s = harp.map_reduce ins(%t, %y : tensor<3x5xf32>, tensor<3x5xf32>) {\n"
    "  ^bb0(%a: f32, %b: f32):\n"
    "    %two = arith.constant 2.0 : f32\n"
    "    %m = arith.mulf %a, %two : f32\n"
    "    %c = arith.addf %m, %b : f32\n"
    "    harp.yield %c : f32\n"
    "  } : tensor<3x5xf32>\n"
    "  return %s : tensor<3x5xf32>\n"
    "}\n";

static int countOps(MlirOperation op, const char *name) {
  int n = 0;
  MlirIdentifier id = mlirOperationGetName(op);
  MlirStringRef s = mlirIdentifierStr(id);
  if (s.length == strlen(name) && !strncmp(s.data, name, s.length))
    ++n;
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); ++r) {
    MlirRegion region = mlirOperationGetRegion(op, r);
    for (MlirBlock b = mlirRegionGetFirstBlock(region); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      for (MlirOperation o = mlirBlockGetFirstOperation(b);
           !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o))
        n += countOps(o, name);
  }
  return n;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  MlirContext ctx = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  harpRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  mlirContextSetAllowUnregisteredDialects(ctx, false);

  // Passes: a textual pipeline names harp's passes once registered. The
  // context knows only the dialects harp IR is written with: harp-to-llvm
  // brings what it lowers through.
  mlirRegisterTransformsPasses();
  mlirRegisterHarpPasses();
  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kModule));
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  MlirLogicalResult parsed = mlirOpPassManagerAddPipeline(
      opm, mlirStringRefCreateFromCString("canonicalize,harp-fuse"),
      printError, NULL);
  // CHECK: textual pipeline with harp-fuse: 1
  printf("textual pipeline with harp-fuse: %d\n",
         mlirLogicalResultIsSuccess(parsed));
  mlirPassManagerDestroy(pm);

  // A bad option is an error through the callback, not an abort.
  pm = mlirPassManagerCreate(ctx);
  // CHECK: error: harp-to-llvm: invalid options 'vectorize=maybe'
  // CHECK: bad option rejected: 1
  printf("bad option rejected: %d\n",
         mlirLogicalResultIsFailure(harpBuildHarpToLLVMPipeline(
             mlirPassManagerGetAsOpPassManager(pm),
             mlirStringRefCreateFromCString("vectorize=maybe"), printError,
             NULL)));
  mlirPassManagerDestroy(pm);

  pm = mlirPassManagerCreate(ctx);
  MlirLogicalResult built = harpBuildHarpToLLVMPipeline(
      mlirPassManagerGetAsOpPassManager(pm),
      mlirStringRefCreateFromCString("vectorize=true cpu=x86-64-v2"),
      printError, NULL);
  // CHECK: harp-to-llvm built: 1, ran: 1
  MlirLogicalResult ran =
      mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module));
  printf("harp-to-llvm built: %d, ran: %d\n", mlirLogicalResultIsSuccess(built),
         mlirLogicalResultIsSuccess(ran));
  // CHECK: llvm.func ops: {{[1-9]}}
  // CHECK: harp ops left: 0
  printf("llvm.func ops: %d\n",
         countOps(mlirModuleGetOperation(module), "llvm.func"));
  printf("harp ops left: %d\n",
         countOps(mlirModuleGetOperation(module), "harp.map_reduce") +
             countOps(mlirModuleGetOperation(module), "harp.view"));
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);

  // JIT: compile a module of this context and call it on our buffers.
  module = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kModule));
  HarpJit jit = harpJitCreate(mlirStringRefCreateFromCString(""));
  HarpExecutable exe = harpJitCompileModule(jit, module, printError, NULL);
  // CHECK: compiled: 1
  printf("compiled: %d\n", exe.ptr != NULL);
  float x[15], y[15], out[15];
  for (int i = 0; i < 15; ++i) {
    x[i] = (float)i;
    y[i] = 0.5f * (float)i;
  }
  int64_t xShape[] = {5, 3}, yShape[] = {3, 5};
  HarpBuffer inputs[] = {{x, HarpF32, 2, xShape}, {y, HarpF32, 2, yShape}};
  HarpBuffer result = {out, HarpF32, 2, yShape};
  MlirLogicalResult called = harpExecutableCall(
      exe, mlirStringRefCreateFromCString("scale_add"), inputs, 2, &result, 1,
      printError, NULL);
  int wrong = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j)
      wrong += out[i * 5 + j] != x[j * 3 + i] * 2 + y[i * 5 + j];
  // CHECK: called: 1, wrong elements: 0
  printf("called: %d, wrong elements: %d\n", mlirLogicalResultIsSuccess(called),
         wrong);
  // CHECK: out[2][4] = 35
  printf("out[2][4] = %g\n", out[14]);

  // A shape mismatch is an error naming the function, not a crash.
  HarpBuffer swapped[] = {{y, HarpF32, 2, yShape}, {x, HarpF32, 2, xShape}};
  // CHECK: error: {{.*}}scale_add{{.*}}
  // CHECK: mismatch rejected: 1
  printf("mismatch rejected: %d\n",
         mlirLogicalResultIsFailure(harpExecutableCall(
             exe, mlirStringRefCreateFromCString("scale_add"), swapped, 2,
             &result, 1, printError, NULL)));
  // CHECK: error: {{.*}}
  // CHECK: invalid IR rejected: 1
  HarpExecutable bad = harpJitCompile(
      jit, mlirStringRefCreateFromCString("func.func @f() { harp.nope }"),
      printError, NULL);
  printf("invalid IR rejected: %d\n", bad.ptr == NULL);

  harpExecutableDestroy(exe);
  harpJitDestroy(jit);
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  return 0;
}
