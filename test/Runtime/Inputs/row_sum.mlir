func.func @row_sum(%x: tensor<64x4096xf32>) -> tensor<64xf32> {
  %s = harp.map_reduce ins(%x : tensor<64x4096xf32>) {
  ^bb0(%a: f32):
    %sq = arith.mulf %a, %a : f32
    harp.yield %sq : f32
  } reduce(sum, dims = [1]) : tensor<64xf32>
  return %s : tensor<64xf32>
}
