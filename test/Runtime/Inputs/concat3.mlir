func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %c: tensor<2x3xf32>) -> tensor<6x3xf32> {
  %0 = harp.concat dim(0) %a, %b, %c : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
  return %0 : tensor<6x3xf32>
}
