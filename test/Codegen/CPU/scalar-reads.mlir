// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-vector-cleanup),canonicalize)' | FileCheck %s

// A 0-d read broadcast into a vector (what the permutation-map lowering
// leaves of a broadcasting read) becomes the element and a broadcast: the
// LLVM lowering of a transfer needs a unit innermost stride, which a
// column of a tensor (an LSTM's step output in its concatenation) lacks.

// CHECK-LABEL: func.func @column_element
// CHECK-SAME: (%[[T:.*]]: tensor<3x8xf64>, %[[I:.*]]: index)
// CHECK: %[[C7:.*]] = arith.constant 7 : index
// CHECK: %[[E:.*]] = tensor.extract %[[T]][%[[I]], %[[C7]]] : tensor<3x8xf64>
// CHECK: %[[B:.*]] = vector.broadcast %[[E]] : f64 to vector<3xf64>
// CHECK-NOT: vector.transfer_read
// CHECK: return %[[B]]
func.func @column_element(%t: tensor<3x8xf64>, %i: index) -> vector<3xf64> {
  %c7 = arith.constant 7 : index
  %pad = arith.constant 0.0 : f64
  %r = vector.transfer_read %t[%i, %c7], %pad : tensor<3x8xf64>, vector<f64>
  %b = vector.broadcast %r : vector<f64> to vector<3xf64>
  return %b : vector<3xf64>
}

// -----

// A broadcasting read along a strided column: the same, through the
// permutation-map lowering.

// CHECK-LABEL: func.func @broadcast_read
// CHECK: %[[E:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<3xf64, strided<[8], offset: 7>>
// CHECK: vector.broadcast %[[E]] : f64 to vector<4xf64>
// CHECK-NOT: vector.transfer_read
func.func @broadcast_read(%m: memref<3xf64, strided<[8], offset: 7>>, %i: index) -> vector<4xf64> {
  %pad = arith.constant 0.0 : f64
  %r = vector.transfer_read %m[%i], %pad {in_bounds = [true], permutation_map = affine_map<(d0) -> (0)>} : memref<3xf64, strided<[8], offset: 7>>, vector<4xf64>
  return %r : vector<4xf64>
}

// -----

// Reads of more than one element are left to the vector lowering.

// CHECK-LABEL: func.func @row_read
// CHECK: vector.transfer_read
// CHECK-NOT: tensor.extract
func.func @row_read(%t: tensor<3x8xf64>, %i: index) -> vector<8xf64> {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f64
  %r = vector.transfer_read %t[%i, %c0], %pad {in_bounds = [true]} : tensor<3x8xf64>, vector<8xf64>
  return %r : vector<8xf64>
}
