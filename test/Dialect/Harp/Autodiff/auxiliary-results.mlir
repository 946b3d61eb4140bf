// RUN: harp-opt %s --harp-autodiff | FileCheck %s
// RUN: harp-opt %s --verify-roundtrip

// Unseeded, a callee's first result is the loss (cotangent 1) and its other
// results are auxiliary outputs: returned with the loss and the gradients,
// computed in the same forward, but never differentiated (no cotangent
// argument, nothing accumulated for them). A training step's batch
// statistics come back so, with the loss they share the forward with.

func.func @loss(%x: tensor<4x3xf32>, %w: tensor<3xf32>) -> (tensor<f32>, tensor<3xf32>) {
  %wb = harp.view %w <(i, j) -> (j)> : tensor<3xf32> -> tensor<4x3xf32>
  %y = harp.map_reduce ins(%x, %wb : tensor<4x3xf32>, tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    harp.yield %m : f32
  } : tensor<4x3xf32>
  %l = harp.map_reduce ins(%y : tensor<4x3xf32>) {
  ^bb0(%a: f32):
    %t = math.tanh %a : f32
    harp.yield %t : f32
  } reduce(sum, dims = [0, 1]) : tensor<f32>
  %yt = harp.view %y <(j, i) -> (i, j)> : tensor<4x3xf32> -> tensor<3x4xf32>
  %stat = harp.map_reduce ins(%yt : tensor<3x4xf32>) {
  ^bb0(%a: f32):
    %e = math.exp %a : f32
    harp.yield %e : f32
  } reduce(sum, dims = [1]) : tensor<3xf32>
  return %l, %stat : tensor<f32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @main
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[R:.*]]:3 = call @__harp_grad_loss_01_s1(%{{.*}}, %{{.*}}, %[[ONE]])
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @main(%x: tensor<4x3xf32>, %w: tensor<3xf32>) -> (tensor<f32>, tensor<3xf32>, tensor<3xf32>) {
  %l, %stat, %g = harp.autodiff @loss(%x, %w) wrt [1] : (tensor<4x3xf32>, tensor<3xf32>) -> (tensor<f32>, tensor<3xf32>, tensor<3xf32>)
  return %l, %stat, %g : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}

// One cotangent argument (the loss's); the statistic's exp is computed for
// the result and nothing in the reverse sweep reads it.
// CHECK-LABEL: func.func private @__harp_grad_loss_01_s1
// CHECK-SAME: (%{{.*}}: tensor<4x3xf32>, %{{.*}}: tensor<3xf32>, %{{.*}}: tensor<f32>) -> (tensor<f32>, tensor<3xf32>, tensor<3xf32>)
// CHECK: math.tanh
// CHECK: math.exp
// CHECK-NOT: math.exp
// CHECK: return
