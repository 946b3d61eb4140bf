// RUN: harp-opt %s --harp-autodiff | FileCheck %s

// x feeds two map_reduce ops and a view: its cotangents are summed.

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = harp.map_reduce ins(%x : tensor<4xf32>) {
  ^bb0(%v: f32):
    %e = math.exp %v : f32
    harp.yield %e : f32
  } : tensor<4xf32>
  %r = harp.view %x <(d0) -> (3 - d0)> : tensor<4xf32> -> tensor<4xf32>
  %b = harp.map_reduce ins(%a, %x, %r : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%p: f32, %q: f32, %t: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %m, %t : f32
    harp.yield %s : f32
  } : tensor<4xf32>
  return %b : tensor<4xf32>
}

func.func @main(%x: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %y, %g = harp.autodiff @f(%x) seed(%s : tensor<4xf32>) wrt [0] : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %g : tensor<4xf32>
}

// CHECK-LABEL: func.func private @__harp_grad_f_1
// Three contributions (through exp, directly, through the flip) added up.
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[S:.*]]: tensor<4xf32>)
// CHECK: %[[TOEXP:.*]] = harp.map_reduce ins(%[[X]], %[[S]] :
// CHECK: %[[DIRECT:.*]] = harp.map_reduce ins(%{{.*}}, %[[S]] :
// CHECK: %[[FLIP:.*]] = harp.view %[[S]] <(d0) -> (-d0 + 3)>
// CHECK: %[[SUM1:.*]] = harp.map_reduce ins(%[[DIRECT]], %[[FLIP]] :
// CHECK: arith.addf
// CHECK: %[[EXP:.*]] = harp.map_reduce ins(%[[X]], %[[TOEXP]] :
// CHECK: math.exp
// CHECK: %[[SUM2:.*]] = harp.map_reduce ins(%[[SUM1]], %[[EXP]] :
// CHECK: arith.addf
// CHECK: return %{{.*}}, %[[SUM2]]
