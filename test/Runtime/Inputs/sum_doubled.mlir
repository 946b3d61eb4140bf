func.func @main(%x: tensor<4096xf32>) -> tensor<f32> {
  %v = harp.view %x <(d0, d1) -> (d0 * 64 + d1)> : tensor<4096xf32> -> tensor<64x64xf32>
  %s = harp.map_reduce ins(%v : tensor<64x64xf32>) {
  ^bb0(%a: f32):
    %b = arith.addf %a, %a : f32
    harp.yield %b : f32
  } reduce(sum, dims = [0, 1]) : tensor<f32>
  return %s : tensor<f32>
}
