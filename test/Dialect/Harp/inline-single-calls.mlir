// RUN: harp-opt %s --harp-inline-single-calls --split-input-file | FileCheck %s
// RUN: harp-opt %s --harp-autodiff --harp-inline-single-calls --split-input-file | FileCheck %s --check-prefix=GRAD

// A private function called once is inlined and erased; one called twice
// stays a function with its two calls; an unused private function is
// erased, an unused public one and a declaration stay.
// CHECK-NOT: func.func private @once
// CHECK-NOT: func.func private @unused
// CHECK-LABEL: func.func private @twice
// CHECK-LABEL: func.func private @declared(tensor<4xf32>) -> tensor<4xf32>
// CHECK-LABEL: func.func @kept
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NOT: call @once
// CHECK: %[[N:.*]] = harp.map_reduce ins(%[[X]] : tensor<4xf32>)
// CHECK: arith.negf
// CHECK: call @twice(%[[N]])
// CHECK: call @twice
// CHECK: call @declared
func.func private @once(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = harp.map_reduce ins(%x : tensor<4xf32>) {
  ^bb0(%a: f32):
    %r = arith.negf %a : f32
    harp.yield %r : f32
  } : tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func private @twice(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = harp.map_reduce ins(%x : tensor<4xf32>) {
  ^bb0(%a: f32):
    %r = arith.mulf %a, %a : f32
    harp.yield %r : f32
  } : tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func private @unused(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func private @declared(tensor<4xf32>) -> tensor<4xf32>
func.func @kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = call @once(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = call @twice(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %c = call @twice(%b) : (tensor<4xf32>) -> tensor<4xf32>
  %d = call @declared(%c) : (tensor<4xf32>) -> tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

// A chain of single calls (main -> outer -> inner) folds into @main.
// CHECK-LABEL: func.func @chain
// CHECK-NOT: call
// CHECK: arith.negf
// CHECK: arith.mulf
// CHECK: return
// CHECK-NEXT: }
// CHECK-NEXT: }
func.func private @inner(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = harp.map_reduce ins(%x : tensor<4xf32>) {
  ^bb0(%a: f32):
    %r = arith.mulf %a, %a : f32
    harp.yield %r : f32
  } : tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func private @outer(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = harp.map_reduce ins(%x : tensor<4xf32>) {
  ^bb0(%a: f32):
    %r = arith.negf %a : f32
    harp.yield %r : f32
  } : tensor<4xf32>
  %z = call @inner(%y) : (tensor<4xf32>) -> tensor<4xf32>
  return %z : tensor<4xf32>
}
func.func @chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = call @outer(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// After harp-autodiff, the gradient function is inlined into the caller,
// so its results are the caller's; the differentiated function, which the
// gradient recomputes, is erased. Without harp-autodiff, @loss stays: a
// harp.autodiff names it, and only calls are inlined.
// CHECK-LABEL: func.func private @loss
// CHECK: harp.autodiff @loss
// GRAD-LABEL: func.func @chain
// GRAD-NOT: func.func private
// GRAD-LABEL: func.func @grad
// GRAD-NOT: call
// GRAD: harp.map_reduce
// GRAD: return
// GRAD-NOT: func.func
func.func private @loss(%x: tensor<4xf32>) -> tensor<f32> {
  %s = harp.map_reduce ins(%x : tensor<4xf32>) {
  ^bb0(%a: f32):
    %r = arith.mulf %a, %a : f32
    harp.yield %r : f32
  } reduce(sum, dims = [0]) : tensor<f32>
  return %s : tensor<f32>
}
func.func @grad(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %l, %g = harp.autodiff @loss(%x) wrt [0] : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  return %l, %g : tensor<f32>, tensor<4xf32>
}
