// RUN: harp-opt %s --harp-autodiff | FileCheck %s

// d/dx exp(x * y) = s * exp(x * y) * y, one map_reduce recomputing the
// region and differentiating it symbolically.

func.func @f(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %z = harp.map_reduce ins(%x, %y : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    %e = math.exp %m : f32
    harp.yield %e : f32
  } : tensor<4xf32>
  return %z : tensor<4xf32>
}

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>, %[[S:.*]]: tensor<4xf32>)
// CHECK: %[[R:.*]]:2 = call @__harp_grad_f_10(%[[X]], %[[Y]], %[[S]])
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>, %s: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r, %gx = harp.autodiff @f(%x, %y) seed(%s : tensor<4xf32>) wrt [0] : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %r, %gx : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func private @__harp_grad_f_10
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>, %[[S:.*]]: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK: %[[PRIMAL:.*]] = harp.map_reduce ins(%[[X]], %[[Y]] :
// CHECK: %[[GRAD:.*]] = harp.map_reduce ins(%[[X]], %[[Y]], %[[S]] :
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT: %[[E:.*]] = math.exp %[[M]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.mulf %[[C]], %[[E]] : f32
// CHECK-NEXT: %[[D:.*]] = arith.mulf %[[T]], %[[B]] : f32
// CHECK-NEXT: harp.yield %[[D]] : f32
// CHECK: return %[[PRIMAL]], %[[GRAD]]
