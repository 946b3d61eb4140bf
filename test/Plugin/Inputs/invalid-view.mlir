// Input of mlir-opt-plugin.mlir: a view whose result shape its map cannot give.
func.func @bad(%v: tensor<4xf32>) -> tensor<4x4xf32> {
  %0 = harp.view %v <(d0) -> (d0)> : tensor<4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
