// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-full-rank-writes))' --split-input-file | FileCheck %s

// A rank-reduced write into a tensor gets the tensor's rank: unit dims
// added by a shape_cast, an identity map, every dim in bounds as before.
// CHECK-LABEL: func.func @row_of_a_tile
// CHECK-SAME: (%[[V:.*]]: vector<4xf64>, %[[T:.*]]: tensor<1x5xf64>
// CHECK: %[[C:.*]] = vector.shape_cast %[[V]] : vector<4xf64> to vector<1x4xf64>
// CHECK: vector.transfer_write %[[C]], %[[T]][%{{.*}}, %{{.*}}] {in_bounds = [true, true]} : vector<1x4xf64>, tensor<1x5xf64>
func.func @row_of_a_tile(%v: vector<4xf64>, %t: tensor<1x5xf64>) -> tensor<1x5xf64> {
  %c0 = arith.constant 0 : index
  %w = vector.transfer_write %v, %t[%c0, %c0] {in_bounds = [true]} : vector<4xf64>, tensor<1x5xf64>
  return %w : tensor<1x5xf64>
}

// -----

// A middle dim missing from the vector: vector<2x8> into dims 0 and 2; an
// out-of-bounds dim stays out of bounds.
// CHECK-LABEL: func.func @missing_middle_dim
// CHECK: vector.shape_cast %{{.*}} : vector<2x8xf32> to vector<2x1x8xf32>
// CHECK: vector.transfer_write {{.*}} {in_bounds = [true, true, false]} : vector<2x1x8xf32>, tensor<2x3x7xf32>
func.func @missing_middle_dim(%v: vector<2x8xf32>, %t: tensor<2x3x7xf32>, %i: index) -> tensor<2x3x7xf32> {
  %c0 = arith.constant 0 : index
  %w = vector.transfer_write %v, %t[%c0, %i, %c0] {in_bounds = [true, false], permutation_map = affine_map<(d0, d1, d2) -> (d0, d2)>} : vector<2x8xf32>, tensor<2x3x7xf32>
  return %w : tensor<2x3x7xf32>
}

// -----

// A transposing map: the vector is transposed into the tensor's dim order.
// CHECK-LABEL: func.func @transposed
// CHECK: %[[T:.*]] = vector.transpose %{{.*}}, [1, 0] : vector<4x2xf32> to vector<2x4xf32>
// CHECK: %[[C:.*]] = vector.shape_cast %[[T]] : vector<2x4xf32> to vector<2x4x1xf32>
// CHECK: vector.transfer_write %[[C]], {{.*}} {in_bounds = [true, true, true]} : vector<2x4x1xf32>, tensor<2x4x3xf32>
func.func @transposed(%u: vector<4x2xf32>, %t3: tensor<2x4x3xf32>) -> tensor<2x4x3xf32> {
  %c0 = arith.constant 0 : index
  %b = vector.transfer_write %u, %t3[%c0, %c0, %c0] {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2) -> (d1, d0)>} : vector<4x2xf32>, tensor<2x4x3xf32>
  return %b : tensor<2x4x3xf32>
}

// -----

// Left alone: full-rank writes, masked writes, writes into buffers.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: vector.shape_cast
// CHECK: vector.transfer_write %{{.*}} : vector<1x4xf64>, tensor<1x5xf64>
// CHECK: vector.transfer_write %{{.*}}, %{{.*}} : vector<4xf64>, tensor<1x5xf64>
// CHECK: vector.transfer_write %{{.*}} : vector<4xf64>, memref<1x5xf64>
func.func @left_alone(%v: vector<1x4xf64>, %s: vector<4xf64>, %mask: vector<4xi1>,
                      %t: tensor<1x5xf64>, %m: memref<1x5xf64>)
    -> (tensor<1x5xf64>, tensor<1x5xf64>) {
  %c0 = arith.constant 0 : index
  %a = vector.transfer_write %v, %t[%c0, %c0] {in_bounds = [true, true]} : vector<1x4xf64>, tensor<1x5xf64>
  %b = vector.transfer_write %s, %t[%c0, %c0], %mask : vector<4xf64>, tensor<1x5xf64>
  vector.transfer_write %s, %m[%c0, %c0] {in_bounds = [true]} : vector<4xf64>, memref<1x5xf64>
  return %a, %b : tensor<1x5xf64>, tensor<1x5xf64>
}
