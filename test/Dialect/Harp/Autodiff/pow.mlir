// RUN: harp-opt %s --harp-autodiff | FileCheck %s

// d/dx x^y = y x^(y-1), but 0 where y == 0; d/dy x^y = x^y log x, but 0
// where x == 0 and y >= 0 (PyTorch's rules: 0 * inf would be NaN there).

func.func @f(%x: tensor<3xf64>, %y: tensor<3xf64>) -> tensor<3xf64> {
  %z = harp.map_reduce ins(%x, %y : tensor<3xf64>, tensor<3xf64>) {
  ^bb0(%a: f64, %b: f64):
    %p = math.powf %a, %b : f64
    harp.yield %p : f64
  } : tensor<3xf64>
  return %z : tensor<3xf64>
}

func.func @main(%x: tensor<3xf64>, %y: tensor<3xf64>, %s: tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>, tensor<3xf64>) {
  %r, %gx, %gy = harp.autodiff @f(%x, %y) seed(%s : tensor<3xf64>) wrt [0, 1] : (tensor<3xf64>, tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>, tensor<3xf64>)
  return %r, %gx, %gy : tensor<3xf64>, tensor<3xf64>, tensor<3xf64>
}

// CHECK-LABEL: func.func private @__harp_grad_f
// CHECK: math.powf
// d/dx:
// CHECK: ^bb0(%[[A:.*]]: f64, %[[B:.*]]: f64, %[[S:.*]]: f64):
// CHECK: %[[PM1:.*]] = math.powf %[[A]], %{{.*}} : f64
// CHECK: %[[DX:.*]] = arith.mulf %[[B]], %[[PM1]] : f64
// CHECK: %[[YZERO:.*]] = arith.cmpf oeq, %[[B]], %[[ZERO:.*]] : f64
// CHECK: %[[T:.*]] = arith.mulf %[[S]], %[[DX]] : f64
// CHECK: %[[GX:.*]] = arith.select %[[YZERO]], %[[ZERO]], %[[T]] : f64
// CHECK: harp.yield %[[GX]] : f64
// d/dy:
// CHECK: ^bb0(%[[A2:.*]]: f64, %[[B2:.*]]: f64, %[[S2:.*]]: f64):
// CHECK: %[[P:.*]] = math.powf %[[A2]], %[[B2]] : f64
// CHECK: %[[LOG:.*]] = math.log %[[A2]] : f64
// CHECK: %[[DY:.*]] = arith.mulf %[[P]], %[[LOG]] : f64
// CHECK: %[[XZERO:.*]] = arith.cmpf oeq, %[[A2]], %[[ZERO2:.*]] : f64
// CHECK: %[[YNONNEG:.*]] = arith.cmpf oge, %[[B2]], %[[ZERO2]] : f64
// CHECK: %[[BASEZERO:.*]] = arith.andi %[[XZERO]], %[[YNONNEG]] : i1
// CHECK: %[[U:.*]] = arith.mulf %[[S2]], %[[DY]] : f64
// CHECK: %[[GY:.*]] = arith.select %[[BASEZERO]], %[[ZERO2]], %[[U]] : f64
// CHECK: harp.yield %[[GY]] : f64
