// RUN: harp-opt %s --harp-autodiff --split-input-file | FileCheck %s

// sum: the cotangent is broadcast back over the reduced dim.
// CHECK-LABEL: func.func private @__harp_grad_sum_1
// CHECK-SAME: (%[[X:.*]]: tensor<3x5xf32>, %[[S:.*]]: tensor<3xf32>)
// CHECK: %[[B:.*]] = harp.view %[[S]] <(d0, d1) -> (d0)> : tensor<3xf32> -> tensor<3x5xf32>
// CHECK: harp.map_reduce ins(%[[X]], %[[B]] : tensor<3x5xf32>, tensor<3x5xf32>)
// CHECK: math.cos
func.func @sum(%x: tensor<3x5xf32>) -> tensor<3xf32> {
  %y = harp.map_reduce ins(%x : tensor<3x5xf32>) {
  ^bb0(%a: f32):
    %s = math.sin %a : f32
    harp.yield %s : f32
  } reduce(sum, dims = [1]) : tensor<3xf32>
  return %y : tensor<3xf32>
}
func.func @use_sum(%x: tensor<3x5xf32>, %s: tensor<3xf32>) -> tensor<3x5xf32> {
  %y, %g = harp.autodiff @sum(%x) seed(%s : tensor<3xf32>) wrt [0] : (tensor<3x5xf32>) -> (tensor<3xf32>, tensor<3x5xf32>)
  return %g : tensor<3x5xf32>
}

// -----

// max with keepdim: ties share the cotangent, counted by an extra sum.
// CHECK-LABEL: func.func private @__harp_grad_max_1
// CHECK-SAME: (%[[X:.*]]: tensor<3x5xf32>, %[[S:.*]]: tensor<3x1xf32>)
// CHECK: %[[Y:.*]] = harp.map_reduce ins(%[[X]] : tensor<3x5xf32>)
// CHECK: reduce(max, dims = [1], keepdim)
// CHECK-DAG: %[[YB:.*]] = harp.view %[[Y]] <(d0, d1) -> (d0, 0)>
// CHECK-DAG: %[[SB:.*]] = harp.view %[[S]] <(d0, d1) -> (d0, 0)>
// CHECK: %[[COUNT:.*]] = harp.map_reduce ins(%[[X]], %[[YB]]
// CHECK: arith.cmpf oeq
// CHECK: reduce(sum, dims = [1], keepdim)
// CHECK: %[[CB:.*]] = harp.view %[[COUNT]]
// CHECK: harp.map_reduce ins(%[[X]], %[[SB]], %[[YB]], %[[CB]]
// CHECK: arith.divf
// CHECK: arith.select
func.func @max(%x: tensor<3x5xf32>) -> tensor<3x1xf32> {
  %y = harp.map_reduce ins(%x : tensor<3x5xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(max, dims = [1], keepdim) : tensor<3x1xf32>
  return %y : tensor<3x1xf32>
}
func.func @use_max(%x: tensor<3x5xf32>, %s: tensor<3x1xf32>) -> tensor<3x5xf32> {
  %y, %g = harp.autodiff @max(%x) seed(%s : tensor<3x1xf32>) wrt [0] : (tensor<3x5xf32>) -> (tensor<3x1xf32>, tensor<3x5xf32>)
  return %g : tensor<3x5xf32>
}

// -----

// prod: safe with zeros, from the product of the non-zeros and their count.
// CHECK-LABEL: func.func private @__harp_grad_prod_1
// CHECK: reduce(prod, dims = [0])
// CHECK: reduce(prod, dims = [0])
// CHECK: reduce(sum, dims = [0])
// CHECK: arith.divf
func.func @prod(%x: tensor<4xf32>) -> tensor<f32> {
  %y = harp.map_reduce ins(%x : tensor<4xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(prod, dims = [0]) : tensor<f32>
  return %y : tensor<f32>
}
func.func @use_prod(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y, %g = harp.autodiff @prod(%x) wrt [0] : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  return %g : tensor<4xf32>
}
