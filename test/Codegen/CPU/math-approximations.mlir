// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vector-cleanup))' --split-input-file | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vector-cleanup{fma=false}))' --split-input-file | FileCheck %s --check-prefix=NOFMA

// harp-vector-cleanup replaces math functions on f32 by polynomial
// approximations.

// MLIR's approximations (exp here) are multiply-adds too: without FMA they
// are split, so that LLVM does not make each one a libm fmaf call per
// element; the math.fma the program wrote stays fused.
// CHECK-LABEL: func.func @exp_and_fma
// CHECK-NOT: math.exp
// CHECK: math.fma
// NOFMA-LABEL: func.func @exp_and_fma
// NOFMA-SAME: (%[[X:.*]]: vector<8xf32>, %[[A:.*]]: vector<8xf32>, %[[B:.*]]: vector<8xf32>)
// NOFMA-NOT: math.exp
// NOFMA-NOT: math.fma
// NOFMA: %[[F:.*]] = math.fma %[[A]], %[[B]], %{{.*}} : vector<8xf32>
// NOFMA-NOT: math.fma
// NOFMA-NOT: harp.kept_fma
// NOFMA: return %[[F]]
func.func @exp_and_fma(%x: vector<8xf32>, %a: vector<8xf32>, %b: vector<8xf32>) -> vector<8xf32> {
  %e = math.exp %x : vector<8xf32>
  %f = math.fma %a, %b, %e : vector<8xf32>
  return %f : vector<8xf32>
}
