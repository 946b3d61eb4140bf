// The CPU named by harp-to-llvm's `cpu` option sets harp-vectorize's vector
// width; `vector-bits` overrides it; an unknown CPU is an error.
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v2})' | FileCheck %s --check-prefixes=CHECK,V2
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v3})' | FileCheck %s --check-prefixes=CHECK,V3
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v4})' | FileCheck %s --check-prefixes=CHECK,V4
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=znver3})' | FileCheck %s --check-prefixes=CHECK,V3
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v4 vector-bits=128})' | FileCheck %s --check-prefixes=CHECK,V2
// RUN: not harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=pentium-9000})' 2>&1 | FileCheck %s --check-prefix=BAD

// Every profile lowers to LLVM with its C interface.
// CHECK-LABEL: llvm.func @add
// V2: llvm.fadd {{.*}} : vector<2xf64>
// V3: llvm.fadd {{.*}} : vector<4xf64>
// V4: llvm.fadd {{.*}} : vector<8xf64>
// CHECK: llvm.func @_mlir_ciface_add
// BAD: harp-to-llvm: unknown CPU 'pentium-9000' (expected native, x86-64-v2, x86-64-v3, x86-64-v4 or a CPU name LLVM knows, such as znver3)
func.func @add(%x: tensor<64xf64>) -> tensor<64xf64> {
  %y = harp.map_reduce ins(%x, %x : tensor<64xf64>, tensor<64xf64>) {
  ^bb0(%a: f64, %b: f64):
    %s = arith.addf %a, %b : f64
    harp.yield %s : f64
  } : tensor<64xf64>
  return %y : tensor<64xf64>
}
