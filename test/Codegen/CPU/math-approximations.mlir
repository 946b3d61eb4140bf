// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vector-cleanup))' --split-input-file | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vector-cleanup{fma=false}))' --split-input-file | FileCheck %s --check-prefix=NOFMA
// The harp-vectorize pipeline passes its fma option on to harp-vector-cleanup.
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{fma=false}))' --split-input-file | FileCheck %s --check-prefix=NOFMA
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize))' --split-input-file | FileCheck %s

// harp-vector-cleanup replaces math functions on f32 by polynomial
// approximations. tanh is harp's rational one: x clamped to [-8, 8] (the
// comparisons are unordered, so NaN is kept), y = x * x, then
// x * P(y) / Q(y) with P and Q of degree 4 evaluated side by side, and no
// select for small |x|.
// CHECK-LABEL: func.func @tanh_vector
// CHECK-SAME: (%[[X:.*]]: vector<8xf32>)
// CHECK-DAG: %[[HI:.*]] = arith.constant dense<8.000000e+00> : vector<8xf32>
// CHECK-DAG: %[[LO:.*]] = arith.constant dense<-8.000000e+00> : vector<8xf32>
// CHECK-DAG: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : vector<8xf32>
// CHECK: %[[BELOW:.*]] = arith.cmpf ult, %[[X]], %[[HI]]
// CHECK: %[[X1:.*]] = arith.select %[[BELOW]], %[[X]], %[[HI]]
// CHECK: %[[ABOVE:.*]] = arith.cmpf ugt, %[[X1]], %[[LO]]
// CHECK: %[[XC:.*]] = arith.select %[[ABOVE]], %[[X1]], %[[LO]]
// CHECK: %[[Y:.*]] = arith.mulf %[[XC]], %[[XC]]
// CHECK: %[[P1:.*]] = math.fma %{{.*}}, %[[Y]], %{{.*}}
// CHECK: %[[P2:.*]] = math.fma %[[P1]], %[[Y]], %{{.*}}
// CHECK: %[[P3:.*]] = math.fma %[[P2]], %[[Y]], %{{.*}}
// CHECK: %[[P4:.*]] = math.fma %[[P3]], %[[Y]], %[[ONE]]
// CHECK: %[[NUM:.*]] = arith.mulf %[[XC]], %[[P4]]
// CHECK: %[[Q1:.*]] = math.fma %{{.*}}, %[[Y]], %{{.*}}
// CHECK: %[[Q2:.*]] = math.fma %[[Q1]], %[[Y]], %{{.*}}
// CHECK: %[[Q3:.*]] = math.fma %[[Q2]], %[[Y]], %{{.*}}
// CHECK: %[[Q4:.*]] = math.fma %[[Q3]], %[[Y]], %[[ONE]]
// CHECK: %[[T:.*]] = arith.divf %[[NUM]], %[[Q4]]
// CHECK-NOT: arith.select
// CHECK-NOT: math.absf
// CHECK: return %[[T]]
// Without FMA, each step is a multiply and an add.
// NOFMA-LABEL: func.func @tanh_vector
// NOFMA-NOT: math.fma
// NOFMA: %[[Y:.*]] = arith.mulf
// NOFMA: %[[M:.*]] = arith.mulf %{{.*}}, %[[Y]]
// NOFMA: arith.addf %[[M]], %{{.*}}
// NOFMA-NOT: math.fma
// NOFMA: arith.divf
// NOFMA-NOT: math.fma
// NOFMA: return
func.func @tanh_vector(%x: vector<8xf32>) -> vector<8xf32> {
  %t = math.tanh %x : vector<8xf32>
  return %t : vector<8xf32>
}

// -----

// A scalar (a vector loop's remainder) gets the same rational, so its
// elements round as the vector lanes do.
// CHECK-LABEL: func.func @tanh_scalar
// CHECK-DAG: arith.constant 8.000000e+00 : f32
// CHECK-DAG: arith.constant -8.000000e+00 : f32
// CHECK-NOT: math.tanh
// CHECK-COUNT-8: math.fma
// CHECK: arith.divf
// CHECK-NOT: math.tanh
// CHECK: return
func.func @tanh_scalar(%x: f32) -> f32 {
  %t = math.tanh %x : f32
  return %t : f32
}

// -----

// f64 is left to libm.
// CHECK-LABEL: func.func @tanh_f64
// CHECK: math.tanh %{{.*}} : vector<4xf64>
// CHECK-NOT: arith.divf
func.func @tanh_f64(%x: vector<4xf64>) -> vector<4xf64> {
  %t = math.tanh %x : vector<4xf64>
  return %t : vector<4xf64>
}

// -----

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
