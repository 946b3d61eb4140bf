// RUN: harp-opt %s --harp-autodiff --split-input-file | FileCheck %s

// concat: slices of the cotangent (views, no copy).
// CHECK-LABEL: func.func private @__harp_grad_concat_11
// CHECK-SAME: (%{{.*}}: tensor<2x3xf32>, %{{.*}}: tensor<2x4xf32>, %[[S:.*]]: tensor<2x7xf32>)
// CHECK-DAG: %[[A:.*]] = harp.view %[[S]] <(d0, d1) -> (d0, d1)> : tensor<2x7xf32> -> tensor<2x3xf32>
// CHECK-DAG: %[[B:.*]] = harp.view %[[S]] <(d0, d1) -> (d0, d1 + 3)> : tensor<2x7xf32> -> tensor<2x4xf32>
// CHECK: return %{{.*}}, %[[A]], %[[B]]
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<2x7xf32> {
  %c = harp.concat dim(1) %a, %b : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>
  return %c : tensor<2x7xf32>
}
func.func @use_concat(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>, %s: tensor<2x7xf32>) -> (tensor<2x3xf32>, tensor<2x4xf32>) {
  %y, %ga, %gb = harp.autodiff @concat(%a, %b) seed(%s : tensor<2x7xf32>) wrt [0, 1] : (tensor<2x3xf32>, tensor<2x4xf32>) -> (tensor<2x7xf32>, tensor<2x3xf32>, tensor<2x4xf32>)
  return %ga, %gb : tensor<2x3xf32>, tensor<2x4xf32>
}

// -----

// gather: scatter_add of the cotangent into zeros; the index gets nothing.
// CHECK-LABEL: func.func private @__harp_grad_gather_10
// CHECK-SAME: (%{{.*}}: tensor<4x5xf32>, %[[I:.*]]: tensor<4x2xi64>, %[[S:.*]]: tensor<4x2xf32>)
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<4x5xf32>
// CHECK: harp.scatter_add %[[S]] into %[[Z]][%[[I]]] dim(1)
func.func @gather(%x: tensor<4x5xf32>, %i: tensor<4x2xi64>) -> tensor<4x2xf32> {
  %g = harp.gather %x[%i] dim(1) : (tensor<4x5xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
  return %g : tensor<4x2xf32>
}
func.func @use_gather(%x: tensor<4x5xf32>, %i: tensor<4x2xi64>, %s: tensor<4x2xf32>) -> tensor<4x5xf32> {
  %y, %gx = harp.autodiff @gather(%x, %i) seed(%s : tensor<4x2xf32>) wrt [0] : (tensor<4x5xf32>, tensor<4x2xi64>) -> (tensor<4x2xf32>, tensor<4x5xf32>)
  return %gx : tensor<4x5xf32>
}

// -----

// scatter_add: dest gets the cotangent itself, src a gather of it (zero
// where the index does not reach).
// CHECK-LABEL: func.func private @__harp_grad_scatter_110
// CHECK-SAME: (%{{.*}}: tensor<3x4xf32>, %{{.*}}: tensor<5x4xf32>, %[[I:.*]]: tensor<2x4xi64>, %[[S:.*]]: tensor<5x4xf32>)
// CHECK: %[[G:.*]] = harp.gather %[[S]][%[[I]]] dim(0) : (tensor<5x4xf32>, tensor<2x4xi64>) -> tensor<2x4xf32>
// CHECK: %[[P:.*]] = harp.view %[[G]] <(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (-d0 + 1)> : tensor<2x4xf32> -> tensor<3x4xf32>
// CHECK: return %{{.*}}, %[[P]], %[[S]]
func.func @scatter(%src: tensor<3x4xf32>, %dest: tensor<5x4xf32>, %i: tensor<2x4xi64>) -> tensor<5x4xf32> {
  %r = harp.scatter_add %src into %dest[%i] dim(0) : tensor<3x4xf32> into tensor<5x4xf32>[tensor<2x4xi64>]
  return %r : tensor<5x4xf32>
}
func.func @use_scatter(%src: tensor<3x4xf32>, %dest: tensor<5x4xf32>, %i: tensor<2x4xi64>, %s: tensor<5x4xf32>) -> (tensor<3x4xf32>, tensor<5x4xf32>) {
  %y, %gs, %gd = harp.autodiff @scatter(%src, %dest, %i) seed(%s : tensor<5x4xf32>) wrt [0, 1] : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<2x4xi64>) -> (tensor<5x4xf32>, tensor<3x4xf32>, tensor<5x4xf32>)
  return %gs, %gd : tensor<3x4xf32>, tensor<5x4xf32>
}

// -----

// contiguous passes the cotangent through; rand has no operand to send to.
// CHECK-LABEL: func.func private @__harp_grad_noisy_1
// CHECK-SAME: (%{{.*}}: tensor<4xf32>, %[[S:.*]]: tensor<4xf32>)
// CHECK: harp.rand seed(3)
// CHECK: %[[G:.*]] = harp.map_reduce ins(%{{.*}}, %[[S]] :
// CHECK: return %{{.*}}, %[[G]]
func.func @noisy(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = harp.contiguous %x : tensor<4xf32>
  %r = harp.rand seed(3) : tensor<4xf32>
  %y = harp.map_reduce ins(%c, %r : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    harp.yield %m : f32
  } : tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @use_noisy(%x: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %y, %g = harp.autodiff @noisy(%x) seed(%s : tensor<4xf32>) wrt [0] : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %g : tensor<4xf32>
}
