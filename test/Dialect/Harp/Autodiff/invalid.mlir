// RUN: harp-opt %s --harp-autodiff -split-input-file -verify-diagnostics

func.func @loop(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'func.call' op differentiates @loop, which calls itself recursively; harp-autodiff cannot differentiate recursion}}
  %y = func.call @loop(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @recursion(%x: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %y, %g = harp.autodiff @loop(%x) seed(%s : tensor<4xf32>) wrt [0] : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %g : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = harp.map_reduce ins(%x : tensor<4xf32>) {
  ^bb0(%a: f32):
    // expected-error @+1 {{'math.atan2' op has no derivative rule; harp-autodiff cannot differentiate through it}}
    %r = math.atan2 %a, %a : f32
    harp.yield %r : f32
  } : tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @no_scalar_rule(%x: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %y, %g = harp.autodiff @f(%x) seed(%s : tensor<4xf32>) wrt [0] : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %g : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'arith.negf' op has no derivative rule; harp-autodiff cannot differentiate through it}}
  %y = arith.negf %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

func.func @no_tensor_rule(%x: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %y, %g = harp.autodiff @f(%x) seed(%s : tensor<4xf32>) wrt [0] : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %g : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op has a value of type 'f32'; harp-autodiff differentiates functions of tensors (use a 0-d tensor for a scalar)}}
func.func @scalar(%x: f32) -> f32 {
  return %x : f32
}

func.func @scalar_function(%x: f32) -> f32 {
  %y, %g = harp.autodiff @scalar(%x) wrt [0] : (f32) -> (f32, f32)
  return %g : f32
}

// -----

// expected-error @+1 {{'func.func' op has several blocks; harp-autodiff differentiates straight-line functions}}
func.func @branchy(%x: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^next
^next:
  return %x : tensor<4xf32>
}

func.func @multi_block(%x: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %y, %g = harp.autodiff @branchy(%x) seed(%s : tensor<4xf32>) wrt [0] : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %g : tensor<4xf32>
}

// -----

func.func @umax(%x: tensor<4xf32>) -> tensor<f32> {
  %y = harp.map_reduce ins(%x : tensor<4xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [0]) : tensor<f32>
  return %y : tensor<f32>
}

// The same callee differentiated twice gets one gradient function.
func.func @twice(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %y1, %g1 = harp.autodiff @umax(%x) wrt [0] : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  %y2, %g2 = harp.autodiff @umax(%x) wrt [0] : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  return %g1, %g2 : tensor<4xf32>, tensor<4xf32>
}
