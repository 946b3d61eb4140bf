// RUN: harp-opt %s --canonicalize --cse --split-input-file | FileCheck %s

// Constants in map_reduce bodies: splat operands read as constants, and
// powers with a constant exponent strength-reduced.

// A splat constant operand (here a broadcast scalar, once its view folds)
// is a constant in the body, and the operand goes; a non-splat constant, a
// complex splat and the one splat a reduction reads stay (read, see
// @reduction_of_splats).
// CHECK-LABEL: func.func @splat_operands
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Z:.*]]: tensor<4xcomplex<f32>>)
// CHECK-DAG: %[[S:.*]] = arith.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK-DAG: %[[ZC:.*]] = arith.constant dense<(1.000000e+00,2.000000e+00)> : tensor<4xcomplex<f32>>
// CHECK-DAG: %[[TABLE:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]>
// CHECK: harp.map_reduce ins(%[[X]], %[[TABLE]] : tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[T:.*]]: f32):
// CHECK-DAG: %[[H:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[M:.*]] = arith.mulf %[[A]], %[[H]]
// CHECK: arith.addf %[[M]], %[[T]]
// CHECK: harp.map_reduce ins(%[[Z]], %[[ZC]] : tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>)
// CHECK: harp.map_reduce ins(%[[S]] : tensor<4xf32>)
// CHECK-NEXT: ^bb0(%[[D:.*]]: f32):
// CHECK-NEXT: harp.yield %[[D]]
// CHECK: reduce(sum, dims = [0])
func.func @splat_operands(%x: tensor<4xf32>, %z: tensor<4xcomplex<f32>>) -> (tensor<4xf32>, tensor<4xcomplex<f32>>, tensor<f32>) {
  %half = arith.constant dense<0.5> : tensor<f32>
  %hb = harp.view %half <(i) -> ()> : tensor<f32> -> tensor<4xf32>
  %table = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = harp.map_reduce ins(%x, %hb, %table : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: f32, %h: f32, %t: f32):
    %m = arith.mulf %a, %h : f32
    %s = arith.addf %m, %t : f32
    harp.yield %s : f32
  } : tensor<4xf32>
  %zt = arith.constant dense<(1.0, 2.0)> : tensor<4xcomplex<f32>>
  %1 = harp.map_reduce ins(%z, %zt : tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>) {
  ^bb0(%a: complex<f32>, %b: complex<f32>):
    %p = complex.mul %a, %b : complex<f32>
    harp.yield %p : complex<f32>
  } : tensor<4xcomplex<f32>>
  %two = arith.constant dense<2.0> : tensor<4xf32>
  %2 = harp.map_reduce ins(%two : tensor<4xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [0]) : tensor<f32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xcomplex<f32>>, tensor<f32>
}

// -----

// powf with a constant exponent in a body: an integer or half-integer of
// magnitude at most 4 becomes multiplications by squaring, a square root
// that keeps pow's values at -0 and -inf, and a division for a negative
// exponent; any other exponent, or a powf outside a body, stays.
// CHECK-LABEL: func.func @powers
// CHECK-SAME: (%[[X:.*]]: tensor<8xf64>)
// CHECK: ^bb0(%[[A:.*]]: f64):
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f64
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK-DAG: %[[NINF:.*]] = arith.constant 0xFFF0000000000000 : f64
// CHECK-DAG: %[[INF:.*]] = arith.constant 0x7FF0000000000000 : f64
// CHECK-DAG: %[[Y:.*]] = arith.constant 4.500000e+00 : f64
// CHECK-DAG: %[[SQ:.*]] = arith.mulf %[[A]], %[[A]] : f64
// CHECK-DAG: %[[CUBE:.*]] = arith.mulf %[[SQ]], %[[A]] : f64
// CHECK-DAG: %[[FOURTH:.*]] = arith.mulf %[[SQ]], %[[SQ]] : f64
// CHECK-DAG: %[[RCUBE:.*]] = arith.divf %[[ONE]], %[[CUBE]] : f64
// CHECK-DAG: %[[SQRT:.*]] = math.sqrt %[[A]] : f64
// CHECK-DAG: %[[PLUS0:.*]] = arith.addf %[[SQRT]], %[[ZERO]] : f64
// CHECK-DAG: %[[ISNINF:.*]] = arith.cmpf oeq, %[[A]], %[[NINF]] : f64
// CHECK-DAG: %[[ROOT:.*]] = arith.select %[[ISNINF]], %[[INF]], %[[PLUS0]] : f64
// CHECK-DAG: %[[ABS:.*]] = math.absf %[[A]] : f64
// CHECK-DAG: %[[THREEHALVES:.*]] = arith.mulf %[[ABS]], %[[ROOT]] : f64
// CHECK-DAG: %[[RROOT:.*]] = arith.divf %[[ONE]], %[[ROOT]] : f64
// CHECK-DAG: %[[OTHER:.*]] = math.powf %[[A]], %[[Y]] : f64
// CHECK: %[[S1:.*]] = arith.addf %[[A]], %[[ONE]] : f64
// CHECK: %[[S2:.*]] = arith.addf %[[S1]], %[[FOURTH]] : f64
// CHECK: %[[S3:.*]] = arith.addf %[[S2]], %[[RCUBE]] : f64
// CHECK: %[[S4:.*]] = arith.addf %[[S3]], %[[THREEHALVES]] : f64
// CHECK: %[[S5:.*]] = arith.addf %[[S4]], %[[RROOT]] : f64
// CHECK: %[[S6:.*]] = arith.addf %[[S5]], %[[OTHER]] : f64
// CHECK: harp.yield %[[S6]]
// CHECK: func.func @outside
// CHECK: math.powf
func.func @powers(%x: tensor<8xf64>) -> tensor<8xf64> {
  %0 = harp.map_reduce ins(%x : tensor<8xf64>) {
  ^bb0(%a: f64):
    %e0 = arith.constant 0.0 : f64
    %e1 = arith.constant 1.0 : f64
    %e4 = arith.constant 4.0 : f64
    %em3 = arith.constant -3.0 : f64
    %e15 = arith.constant 1.5 : f64
    %emh = arith.constant -0.5 : f64
    %e45 = arith.constant 4.5 : f64
    %p0 = math.powf %a, %e0 : f64
    %p1 = math.powf %a, %e1 : f64
    %p4 = math.powf %a, %e4 : f64
    %pm3 = math.powf %a, %em3 : f64
    %p15 = math.powf %a, %e15 : f64
    %pmh = math.powf %a, %emh : f64
    %p45 = math.powf %a, %e45 : f64
    %s1 = arith.addf %p0, %p1 : f64
    %s2 = arith.addf %s1, %p4 : f64
    %s3 = arith.addf %s2, %pm3 : f64
    %s4 = arith.addf %s3, %p15 : f64
    %s5 = arith.addf %s4, %pmh : f64
    %s6 = arith.addf %s5, %p45 : f64
    harp.yield %s6 : f64
  } : tensor<8xf64>
  return %0 : tensor<8xf64>
}
func.func @outside(%a: f32) -> f32 {
  %e = arith.constant 2.0 : f32
  %p = math.powf %a, %e : f32
  return %p : f32
}

// -----

// A reduction keeps reading its last operand even when it is a splat: a
// reduced value that reads nothing was combined once, not once per
// element, by linalg's vectorizer (sum(ones(4, 5), dim 1) gave 1). The
// first splat is read as a constant (1 * b folds to b), the second stays
// an operand the body reads.
// CHECK-LABEL: func.func @reduction_of_splats
// CHECK-DAG: %[[ONES:.*]] = arith.constant dense<1.000000e+00> : tensor<4x5xf32>
// CHECK-DAG: %[[TWOS:.*]] = arith.constant dense<2.000000e+00> : tensor<4x5xf32>
// CHECK: harp.map_reduce ins(%[[ONES]], %[[TWOS]] : tensor<4x5xf32>, tensor<4x5xf32>)
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %[[B:.*]]: f32):
// CHECK-NEXT: harp.yield %[[B]] : f32
// CHECK-NEXT: } reduce(sum, dims = [1])
func.func @reduction_of_splats() -> tensor<4xf32> {
  %ones = arith.constant dense<1.0> : tensor<4x5xf32>
  %twos = arith.constant dense<2.0> : tensor<4x5xf32>
  %0 = harp.map_reduce ins(%ones, %twos : tensor<4x5xf32>, tensor<4x5xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    harp.yield %m : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  return %0 : tensor<4xf32>
}
