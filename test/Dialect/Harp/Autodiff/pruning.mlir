// RUN: harp-opt %s --harp-autodiff | FileCheck %s

// Only what depends on a wrt argument gets a cotangent: @f's second result
// depends on %y alone, so differentiating w.r.t. %x builds nothing for it,
// and nothing at all for %y.

func.func @f(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = harp.map_reduce ins(%x, %y : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%p: f32, %q: f32):
    %m = arith.mulf %p, %q : f32
    harp.yield %m : f32
  } : tensor<4xf32>
  %b = harp.map_reduce ins(%y : tensor<4xf32>) {
  ^bb0(%q: f32):
    %e = math.exp %q : f32
    harp.yield %e : f32
  } : tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>, %s: tensor<4xf32>, %t: tensor<4xf32>) -> tensor<4xf32> {
  %a, %b, %g = harp.autodiff @f(%x, %y) seed(%s, %t : tensor<4xf32>, tensor<4xf32>) wrt [0] : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %g : tensor<4xf32>
}

// CHECK-LABEL: func.func private @__harp_grad_f_10
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>, %[[S:.*]]: tensor<4xf32>, %[[T:.*]]: tensor<4xf32>)
// The two forward kernels and one gradient kernel; %t is never read.
// CHECK: harp.map_reduce ins(%[[X]], %[[Y]] :
// CHECK: math.exp
// CHECK: %[[G:.*]] = harp.map_reduce ins(%[[Y]], %[[S]] :
// CHECK-NOT: harp.map_reduce
// CHECK: return
// CHECK-NOT: %[[T]]
