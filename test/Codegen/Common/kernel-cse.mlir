// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-kernel-cse))' --split-input-file | FileCheck %s
// The same result as upstream CSE, byte for byte:
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-kernel-cse))' --split-input-file > %t.kernel
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(cse))' --split-input-file > %t.upstream
// RUN: diff %t.kernel %t.upstream

// Two loop nests computing the same value are one; a loop with the same
// operands and bounds reading another tensor is not; a loop reading the
// merged one's duplicate is merged next (value numbers see through the
// merge). Inside the loops and at the top level CSE works as upstream's,
// and the pass's attribute is gone after.
// CHECK-LABEL: func.func @kernels
// CHECK-SAME: (%[[A:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NOT: harp.cse_kernel
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8xf32>
// CHECK: %[[L1:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[E]])
// CHECK: vector.transfer_read %[[A]]
// CHECK: arith.addf
// CHECK-NOT: arith.addf
// CHECK: scf.yield
// CHECK: %[[L2:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[E]])
// CHECK: vector.transfer_read %[[B]]
// CHECK: %[[L3:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[E]])
// CHECK: vector.transfer_read %[[L1]]
// CHECK-NOT: scf.for
// CHECK: return %[[L1]], %[[L2]], %[[L1]], %[[L3]], %[[L3]]
func.func @kernels(%a: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %pad = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  // a + a, twice (the second with its own empty tensor and a duplicate add)
  %l1 = scf.for %i = %c0 to %c8 step %c4 iter_args(%t = %e) -> (tensor<8xf32>) {
    %v = vector.transfer_read %a[%i], %pad : tensor<8xf32>, vector<4xf32>
    %s = arith.addf %v, %v : vector<4xf32>
    %s2 = arith.addf %v, %v : vector<4xf32>
    %w = arith.mulf %s, %s2 : vector<4xf32>
    %r = vector.transfer_write %w, %t[%i] : vector<4xf32>, tensor<8xf32>
    scf.yield %r : tensor<8xf32>
  }
  %l2 = scf.for %i = %c0 to %c8 step %c4 iter_args(%t = %e) -> (tensor<8xf32>) {
    %v = vector.transfer_read %b[%i], %pad : tensor<8xf32>, vector<4xf32>
    %s = arith.addf %v, %v : vector<4xf32>
    %w = arith.mulf %s, %s : vector<4xf32>
    %r = vector.transfer_write %w, %t[%i] : vector<4xf32>, tensor<8xf32>
    scf.yield %r : tensor<8xf32>
  }
  %l1b = scf.for %i = %c0 to %c8 step %c4 iter_args(%t = %e2) -> (tensor<8xf32>) {
    %v = vector.transfer_read %a[%i], %pad : tensor<8xf32>, vector<4xf32>
    %s = arith.addf %v, %v : vector<4xf32>
    %s2 = arith.addf %v, %v : vector<4xf32>
    %w = arith.mulf %s, %s2 : vector<4xf32>
    %r = vector.transfer_write %w, %t[%i] : vector<4xf32>, tensor<8xf32>
    scf.yield %r : tensor<8xf32>
  }
  // Reads %l1 and its duplicate %l1b: one loop once %l1b is %l1.
  %l3 = scf.for %i = %c0 to %c8 step %c4 iter_args(%t = %e) -> (tensor<8xf32>) {
    %v = vector.transfer_read %l1[%i], %pad : tensor<8xf32>, vector<4xf32>
    %n = arith.negf %v : vector<4xf32>
    %r = vector.transfer_write %n, %t[%i] : vector<4xf32>, tensor<8xf32>
    scf.yield %r : tensor<8xf32>
  }
  %l3b = scf.for %i = %c0 to %c8 step %c4 iter_args(%t = %e) -> (tensor<8xf32>) {
    %v = vector.transfer_read %l1b[%i], %pad : tensor<8xf32>, vector<4xf32>
    %n = arith.negf %v : vector<4xf32>
    %r = vector.transfer_write %n, %t[%i] : vector<4xf32>, tensor<8xf32>
    scf.yield %r : tensor<8xf32>
  }
  return %l1, %l2, %l1b, %l3, %l3b
      : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Loops with the same operands whose bodies differ stay apart; a loop with
// a memory effect is never merged.
// CHECK-LABEL: func.func @different
// CHECK: scf.for
// CHECK: arith.negf
// CHECK: scf.for
// CHECK: math.absf
func.func @different(%a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %pad = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %l1 = scf.for %i = %c0 to %c8 step %c4 iter_args(%t = %e) -> (tensor<8xf32>) {
    %v = vector.transfer_read %a[%i], %pad : tensor<8xf32>, vector<4xf32>
    %n = arith.negf %v : vector<4xf32>
    %r = vector.transfer_write %n, %t[%i] : vector<4xf32>, tensor<8xf32>
    scf.yield %r : tensor<8xf32>
  }
  %l2 = scf.for %i = %c0 to %c8 step %c4 iter_args(%t = %e) -> (tensor<8xf32>) {
    %v = vector.transfer_read %a[%i], %pad : tensor<8xf32>, vector<4xf32>
    %n = math.absf %v : vector<4xf32>
    %r = vector.transfer_write %n, %t[%i] : vector<4xf32>, tensor<8xf32>
    scf.yield %r : tensor<8xf32>
  }
  return %l1, %l2 : tensor<8xf32>, tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @memory
// CHECK-COUNT-2: scf.for
func.func @memory(%m: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %one, %m[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %one, %m[%i] : memref<8xf32>
  }
  return
}
