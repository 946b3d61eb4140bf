// RUN: harp-opt %s --convert-harp-to-linalg -split-input-file -verify-diagnostics

func.func @loss(%x: tensor<4xf32>) -> tensor<f32> {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

func.func @grad(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'harp.autodiff' op must be replaced by the harp-autodiff pass before lowering}}
  %l, %g = harp.autodiff @loss(%x) wrt [0] : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  return %g : tensor<4xf32>
}
