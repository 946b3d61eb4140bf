// RUN: harp-opt %s --convert-harp-to-linalg --split-input-file | FileCheck %s

// rand: Philox-2x32-10 on the row-major linear index of each element.
// CHECK-LABEL: func.func @rand
// CHECK: %[[M:.*]] = arith.constant 3528905107 : i64
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<4x8xf32>)
// CHECK-DAG: linalg.index 0
// CHECK-DAG: linalg.index 1
// CHECK-COUNT-10: arith.muli %{{.*}}, %[[M]] : i64
// CHECK: arith.shrui %{{.*}}, %{{.*}} : i32
// CHECK: arith.uitofp %{{.*}} : i32 to f32
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
func.func @rand() -> tensor<4x8xf32> {
  %0 = harp.rand seed(42) : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A run-time seed is read once before the kernel; each round's key is its
// low word plus a constant.
// CHECK-LABEL: func.func @rand_dynamic
// CHECK-SAME: (%[[S:.*]]: tensor<i64>)
// CHECK: %[[V:.*]] = tensor.extract %[[S]][] : tensor<i64>
// CHECK: linalg.generic
// CHECK: %[[LOW:.*]] = arith.trunci %[[V]] : i64 to i32
// CHECK: arith.shrui %[[V]], %{{.*}} : i64
// CHECK-COUNT-9: arith.addi %[[LOW]], %{{.*}} : i32
func.func @rand_dynamic(%seed: tensor<i64>) -> tensor<4x8xf32> {
  %0 = harp.rand seed(%seed) : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// f64 takes 53 bits from both words.
// CHECK-LABEL: func.func @rand_f64
// CHECK: arith.shli %{{.*}}, %{{.*}} : i64
// CHECK: arith.uitofp %{{.*}} : i64 to f64
func.func @rand_f64() -> tensor<3xf64> {
  %0 = harp.rand seed(7) : tensor<3xf64>
  return %0 : tensor<3xf64>
}

// -----

// CHECK-LABEL: func.func @arange_int
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[C:.*]] = arith.index_cast %[[I]] : index to i32
// CHECK: %[[M:.*]] = arith.muli %[[C]], %{{.*}} : i32
// CHECK: arith.addi %[[M]], %{{.*}} : i32
func.func @arange_int() -> tensor<5xi32> {
  %0 = harp.arange start(3 : i32) step(-2 : i32) : tensor<5xi32>
  return %0 : tensor<5xi32>
}

// -----

// CHECK-LABEL: func.func @arange_float
// CHECK: arith.sitofp %{{.*}} : i64 to f32
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @arange_float() -> tensor<4xf32> {
  %0 = harp.arange start(1.0 : f32) step(0.5 : f32) : tensor<4xf32>
  return %0 : tensor<4xf32>
}
