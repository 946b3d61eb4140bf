// A second-order gradient: @grad_sum (public, so it stays a function) and
// the gradient of @grad_sum both call the gradient function harp.autodiff
// generates for @cube_sum, with the seed (a constant 1.0) as an argument,
// and the callee's kernels read it. The host must hand the constant over
// as device memory.
func.func private @cube_sum(%x: tensor<5xf32>) -> tensor<f32> {
  %y = harp.map_reduce ins(%x : tensor<5xf32>) {
  ^bb0(%a: f32):
    %s = arith.mulf %a, %a : f32
    %c = arith.mulf %s, %a : f32
    harp.yield %c : f32
  } reduce(sum, dims = [0]) : tensor<f32>
  return %y : tensor<f32>
}

// sum(3 x^2)
func.func @grad_sum(%x: tensor<5xf32>) -> tensor<f32> {
  %g:2 = harp.autodiff @cube_sum(%x) wrt [0] : (tensor<5xf32>) -> (tensor<f32>, tensor<5xf32>)
  %s = harp.map_reduce ins(%g#1 : tensor<5xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [0]) : tensor<f32>
  return %s : tensor<f32>
}

// 6 x
func.func @main(%x: tensor<5xf32>) -> tensor<5xf32> {
  %r:2 = harp.autodiff @grad_sum(%x) wrt [0] : (tensor<5xf32>) -> (tensor<f32>, tensor<5xf32>)
  return %r#1 : tensor<5xf32>
}
