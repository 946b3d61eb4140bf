// The module test/Runtime/library.test compiles into libraries: a layer, a
// function of several results (one 0-d), an integer function and a training
// step whose gradient harp.autodiff computes. Sizes are primes and vector
// widths +- 1, so that every kernel has remainders.

// relu(x @ w + b)
func.func @affine(%x: tensor<3x17xf32>, %w: tensor<17x7xf32>, %b: tensor<7xf32>)
    -> tensor<3x7xf32> {
  %xb = harp.view %x <(i, j, k) -> (i, k)> : tensor<3x17xf32> -> tensor<3x7x17xf32>
  %wb = harp.view %w <(i, j, k) -> (k, j)> : tensor<17x7xf32> -> tensor<3x7x17xf32>
  %xw = harp.map_reduce ins(%xb, %wb : tensor<3x7x17xf32>, tensor<3x7x17xf32>) {
  ^bb0(%a: f32, %c: f32):
    %p = arith.mulf %a, %c : f32
    harp.yield %p : f32
  } reduce(sum, dims = [2]) : tensor<3x7xf32>
  %bb = harp.view %b <(i, j) -> (j)> : tensor<7xf32> -> tensor<3x7xf32>
  %y = harp.map_reduce ins(%xw, %bb : tensor<3x7xf32>, tensor<3x7xf32>) {
  ^bb0(%a: f32, %c: f32):
    %s = arith.addf %a, %c : f32
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %zero : f32
    harp.yield %r : f32
  } : tensor<3x7xf32>
  return %y : tensor<3x7xf32>
}

// The sum of exp(x) (0-d) and x's reverse scaled by it.
func.func @moments(%x: tensor<15xf64>) -> (tensor<f64>, tensor<15xf64>) {
  %s = harp.map_reduce ins(%x : tensor<15xf64>) {
  ^bb0(%a: f64):
    %e = math.exp %a : f64
    harp.yield %e : f64
  } reduce(sum, dims = [0]) : tensor<f64>
  %r = harp.view %x <(i) -> (-i + 14)> : tensor<15xf64> -> tensor<15xf64>
  %sb = harp.view %s <(i) -> ()> : tensor<f64> -> tensor<15xf64>
  %y = harp.map_reduce ins(%r, %sb : tensor<15xf64>, tensor<15xf64>) {
  ^bb0(%a: f64, %c: f64):
    %p = arith.mulf %a, %c : f64
    harp.yield %p : f64
  } : tensor<15xf64>
  return %s, %y : tensor<f64>, tensor<15xf64>
}

// 3 x + 1 in 64-bit integers.
func.func @affine_int(%x: tensor<9xi64>) -> tensor<9xi64> {
  %y = harp.map_reduce ins(%x : tensor<9xi64>) {
  ^bb0(%a: i64):
    %three = arith.constant 3 : i64
    %one = arith.constant 1 : i64
    %m = arith.muli %a, %three : i64
    %s = arith.addi %m, %one : i64
    harp.yield %s : i64
  } : tensor<9xi64>
  return %y : tensor<9xi64>
}

// The squared error of x @ w against y.
func.func private @loss(%x: tensor<5x3xf32>, %w: tensor<3xf32>, %y: tensor<5xf32>)
    -> tensor<f32> {
  %wb = harp.view %w <(i, j) -> (j)> : tensor<3xf32> -> tensor<5x3xf32>
  %xw = harp.map_reduce ins(%x, %wb : tensor<5x3xf32>, tensor<5x3xf32>) {
  ^bb0(%a: f32, %c: f32):
    %p = arith.mulf %a, %c : f32
    harp.yield %p : f32
  } reduce(sum, dims = [1]) : tensor<5xf32>
  %l = harp.map_reduce ins(%xw, %y : tensor<5xf32>, tensor<5xf32>) {
  ^bb0(%a: f32, %c: f32):
    %d = arith.subf %a, %c : f32
    %q = arith.mulf %d, %d : f32
    harp.yield %q : f32
  } reduce(sum, dims = [0]) : tensor<f32>
  return %l : tensor<f32>
}

// One step of gradient descent: the loss and the updated weights.
func.func @train_step(%x: tensor<5x3xf32>, %w: tensor<3xf32>, %y: tensor<5xf32>)
    -> (tensor<f32>, tensor<3xf32>) {
  %l, %g = harp.autodiff @loss(%x, %w, %y) wrt [1]
      : (tensor<5x3xf32>, tensor<3xf32>, tensor<5xf32>) -> (tensor<f32>, tensor<3xf32>)
  %w2 = harp.map_reduce ins(%w, %g : tensor<3xf32>, tensor<3xf32>) {
  ^bb0(%a: f32, %c: f32):
    %lr = arith.constant 0.01 : f32
    %s = arith.mulf %c, %lr : f32
    %n = arith.subf %a, %s : f32
    harp.yield %n : f32
  } : tensor<3xf32>
  return %l, %w2 : tensor<f32>, tensor<3xf32>
}
