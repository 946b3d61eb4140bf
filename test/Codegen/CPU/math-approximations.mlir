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

// -----

// sin: x reduced by k = roundeven(x 2/pi) (k + 0: -0 becomes +0) and pi/2
// in three pieces, each rounded down (with FMA, three multiply-adds), to
// |r| <= pi/4; both polynomials; the quadrant k mod 4 picks and negates;
// sin(+-0) is x itself. Lanes beyond 2^17 (and NaN: the comparison is
// unordered) compute 0 and come from libm, lane by lane, only when the
// vector has one.
// CHECK-LABEL: func.func @sin_vector
// CHECK-SAME: (%[[X:.*]]: vector<8xf32>)
// CHECK-DAG: %[[BOUND:.*]] = arith.constant dense<1.310720e+05> : vector<8xf32>
// CHECK-DAG: %[[P1:.*]] = arith.constant dense<1.57079625> : vector<8xf32>
// CHECK-DAG: %[[P2:.*]] = arith.constant dense<7.54978942E-8> : vector<8xf32>
// CHECK-DAG: %[[P3:.*]] = arith.constant dense<5.39030253E-15> : vector<8xf32>
// CHECK: %[[ABS:.*]] = math.absf %[[X]]
// CHECK: %[[LARGE:.*]] = arith.cmpf ugt, %[[ABS]], %[[BOUND]]
// CHECK: %[[IN:.*]] = arith.select %[[LARGE]], %{{.*}}, %[[X]]
// CHECK: %[[SCALED:.*]] = arith.mulf %[[IN]]
// CHECK: %[[ROUND:.*]] = math.roundeven %[[SCALED]]
// CHECK: %[[K:.*]] = arith.addf %[[ROUND]]
// CHECK: %[[MK:.*]] = arith.negf %[[K]]
// CHECK: %[[R1:.*]] = math.fma %[[MK]], %[[P1]], %[[IN]]
// CHECK: %[[R2:.*]] = math.fma %[[MK]], %[[P2]], %[[R1]]
// CHECK: %[[R:.*]] = math.fma %[[MK]], %[[P3]], %[[R2]]
// CHECK: %[[Q:.*]] = arith.fptosi %[[K]] : vector<8xf32> to vector<8xi32>
// CHECK: arith.andi %[[Q]]
// CHECK: %[[ODD:.*]] = arith.select
// CHECK: arith.andi %[[Q]]
// CHECK: %[[SIGNED:.*]] = arith.select
// CHECK: %[[ZERO:.*]] = arith.cmpf oeq, %[[X]]
// CHECK: %[[FAST:.*]] = arith.select %[[ZERO]], %[[X]], %[[SIGNED]]
// CHECK: %[[ANY:.*]] = vector.reduction <or>, %[[LARGE]]
// CHECK: %[[Y:.*]] = scf.if %[[ANY]] -> (vector<8xf32>)
// CHECK: %[[LANES:.*]] = scf.for
// CHECK: vector.extract
// CHECK: math.sin %{{.*}} {harp.libm} : f32
// CHECK: vector.insert
// CHECK: arith.select %[[LARGE]], %[[LANES]], %[[FAST]]
// CHECK: } else {
// CHECK: scf.yield %[[FAST]]
// CHECK: return %[[Y]]
// Without FMA: four pieces of 12 bits, multiplied and subtracted, up to
// 4096.
// NOFMA-LABEL: func.func @sin_vector
// NOFMA-DAG: arith.constant dense<4.096000e+03> : vector<8xf32>
// NOFMA-DAG: %[[C1:.*]] = arith.constant dense<1.5703125> : vector<8xf32>
// NOFMA-DAG: %[[C2:.*]] = arith.constant dense<4.83751297E-4> : vector<8xf32>
// NOFMA-DAG: %[[C3:.*]] = arith.constant dense<7.54953362E-8> : vector<8xf32>
// NOFMA-DAG: %[[C4:.*]] = arith.constant dense<2.56334407E-12> : vector<8xf32>
// NOFMA-NOT: math.fma
// NOFMA: %[[K:.*]] = arith.addf
// NOFMA: %[[M1:.*]] = arith.mulf %[[K]], %[[C1]]
// NOFMA: %[[R1:.*]] = arith.subf %{{.*}}, %[[M1]]
// NOFMA: %[[M2:.*]] = arith.mulf %[[K]], %[[C2]]
// NOFMA: %[[R2:.*]] = arith.subf %[[R1]], %[[M2]]
// NOFMA: %[[M3:.*]] = arith.mulf %[[K]], %[[C3]]
// NOFMA: %[[R3:.*]] = arith.subf %[[R2]], %[[M3]]
// NOFMA: %[[M4:.*]] = arith.mulf %[[K]], %[[C4]]
// NOFMA: arith.subf %[[R3]], %[[M4]]
// NOFMA-NOT: math.fma
// NOFMA: return
func.func @sin_vector(%x: vector<8xf32>) -> vector<8xf32> {
  %t = math.sin %x : vector<8xf32>
  return %t : vector<8xf32>
}

// -----

// cos: the quadrant of k + 1, no zero select; a scalar branches to libm
// on its own bound. An n-D vector's lanes go to libm flattened.
// CHECK-LABEL: func.func @cos_scalar
// CHECK-SAME: (%[[X:.*]]: f32)
// CHECK: %[[LARGE:.*]] = arith.cmpf ugt
// CHECK: %[[Q:.*]] = arith.fptosi
// CHECK: arith.addi %[[Q]]
// CHECK-NOT: arith.cmpf oeq
// CHECK: %[[Y:.*]] = scf.if %[[LARGE]] -> (f32)
// CHECK: math.cos %[[X]] {harp.libm} : f32
// CHECK: return %[[Y]]
// CHECK-LABEL: func.func @cos_tile
// CHECK: vector.shape_cast %{{.*}} : vector<2x8xi1> to vector<16xi1>
// CHECK: vector.reduction <or>
// CHECK: vector.shape_cast %{{.*}} : vector<2x8xf32> to vector<16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c1
// CHECK: math.cos %{{.*}} {harp.libm} : f32
// CHECK: vector.shape_cast %{{.*}} : vector<16xf32> to vector<2x8xf32>
func.func @cos_scalar(%x: f32) -> f32 {
  %t = math.cos %x : f32
  return %t : f32
}

func.func @cos_tile(%x: vector<2x8xf32>) -> vector<2x8xf32> {
  %t = math.cos %x : vector<2x8xf32>
  return %t : vector<2x8xf32>
}

// -----

// tan: the same reduction; sin(r) / cos(r) for even k, -cos(r) / sin(r)
// for odd k (the quadrant's low bit picks numerator and denominator);
// tan(+-0) is x itself; libm for the lanes beyond the bound.
// CHECK-LABEL: func.func @tan_vector
// CHECK-SAME: (%[[X:.*]]: vector<8xf32>)
// CHECK: %[[LARGE:.*]] = arith.cmpf ugt
// CHECK: math.roundeven
// CHECK: %[[Q:.*]] = arith.fptosi
// CHECK: %[[LOW:.*]] = arith.andi %[[Q]]
// CHECK: %[[ODD:.*]] = arith.cmpi ne, %[[LOW]]
// CHECK: %[[NEGCOS:.*]] = arith.negf %[[COS:.*]] : vector<8xf32>
// CHECK: %[[NUM:.*]] = arith.select %[[ODD]], %[[NEGCOS]], %[[SIN:.*]] : vector<8xi1>, vector<8xf32>
// CHECK: %[[DEN:.*]] = arith.select %[[ODD]], %[[SIN]], %[[COS]] : vector<8xi1>, vector<8xf32>
// CHECK: %[[TAN:.*]] = arith.divf %[[NUM]], %[[DEN]]
// CHECK: %[[ZERO:.*]] = arith.cmpf oeq, %[[X]]
// CHECK: %[[FAST:.*]] = arith.select %[[ZERO]], %[[X]], %[[TAN]]
// CHECK: scf.if
// CHECK: math.tan %{{.*}} {harp.libm} : f32
// CHECK: arith.select %[[LARGE]], %{{.*}}, %[[FAST]]
// CHECK-NOT: math.tan %{{.*}} : vector
// NOFMA-LABEL: func.func @tan_vector
// NOFMA-NOT: math.fma
// NOFMA: arith.divf
// NOFMA: return
func.func @tan_vector(%x: vector<8xf32>) -> vector<8xf32> {
  %t = math.tan %x : vector<8xf32>
  return %t : vector<8xf32>
}

// -----

// f64 sin and cos are left to libm.
// CHECK-LABEL: func.func @sin_cos_f64
// CHECK: math.sin %{{.*}} : vector<4xf64>
// CHECK: math.cos %{{.*}} : vector<4xf64>
// CHECK-NOT: math.roundeven
func.func @sin_cos_f64(%x: vector<4xf64>) -> vector<4xf64> {
  %s = math.sin %x : vector<4xf64>
  %c = math.cos %s : vector<4xf64>
  return %c : vector<4xf64>
}
