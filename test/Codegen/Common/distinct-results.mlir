// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-distinct-results))' --split-input-file | FileCheck %s
// The whole lowering of a function returning one value twice runs (it
// crashed in buffer-results-to-out-params):
// RUN: harp-opt %s --harp-to-llvm --split-input-file -o /dev/null

// A value returned twice: the repeat is a copy; the first use and other
// values stay.
// CHECK-LABEL: func.func @twice
// CHECK-SAME: (%[[X:.*]]: tensor<3xf64>)
// CHECK: %[[Y:.*]] = harp.map_reduce
// CHECK: %[[E:.*]] = tensor.empty() : tensor<3xf64>
// CHECK: %[[C:.*]] = linalg.copy ins(%[[Y]] : tensor<3xf64>) outs(%[[E]] : tensor<3xf64>) -> tensor<3xf64>
// CHECK: return %[[Y]], %[[C]], %[[X]] : tensor<3xf64>, tensor<3xf64>, tensor<3xf64>
func.func @twice(%x: tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>, tensor<3xf64>) {
  %y = harp.map_reduce ins(%x : tensor<3xf64>) {
  ^bb0(%a: f64):
    %r = arith.negf %a : f64
    harp.yield %r : f64
  } : tensor<3xf64>
  return %y, %y, %x : tensor<3xf64>, tensor<3xf64>, tensor<3xf64>
}

// -----

// An argument returned twice, and a 0-d tensor three times.
// CHECK-LABEL: func.func @arguments
// CHECK-COUNT-3: linalg.copy
// CHECK-NOT: linalg.copy
// CHECK: return
func.func @arguments(%x: tensor<2xf32>, %s: tensor<f32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  return %x, %x, %s, %s, %s : tensor<2xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}
