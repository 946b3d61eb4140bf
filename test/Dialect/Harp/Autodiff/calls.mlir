// RUN: harp-opt %s --harp-autodiff | FileCheck %s

// A call is differentiated through the callee's own gradient function,
// generated once for the arguments that need it.

func.func private @square(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = harp.map_reduce ins(%x : tensor<4xf32>) {
  ^bb0(%a: f32):
    %m = arith.mulf %a, %a : f32
    harp.yield %m : f32
  } : tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @twice(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = func.call @square(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = func.call @square(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

func.func @main(%x: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %y, %g = harp.autodiff @twice(%x) seed(%s : tensor<4xf32>) wrt [0] : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %g : tensor<4xf32>
}

// CHECK-LABEL: func.func private @__harp_grad_twice_1
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[S:.*]]: tensor<4xf32>)
// CHECK: %[[A:.*]] = call @square(%[[X]])
// CHECK: %[[B:.*]] = call @square(%[[A]])
// CHECK: %[[GB:.*]]:2 = call @__harp_grad_square_1(%[[A]], %[[S]])
// CHECK: %[[GA:.*]]:2 = call @__harp_grad_square_1(%[[X]], %[[GB]]#1)
// CHECK: return %[[B]], %[[GA]]#1

// CHECK-LABEL: func.func private @__harp_grad_square_1
// CHECK: arith.addf
