// 37 rows of 100003: each row's sum split over 28 blocks whose threads fold
// 4 accumulators while a whole step of 4 fits, then the rest
// (scripts/gpu-check.sh compares the GPU with the CPU on it).
func.func @long_row_sum(%x: tensor<37x100003xf32>) -> tensor<37xf32> {
  %s = harp.map_reduce ins(%x : tensor<37x100003xf32>) {
  ^bb0(%a: f32):
    %c = arith.constant 1.0 : f32
    %p = arith.addf %a, %c : f32
    harp.yield %p : f32
  } reduce(sum, dims = [1]) : tensor<37xf32>
  return %s : tensor<37xf32>
}
