// 2^20 + 3 outputs: enough blocks for harp-gpu-kernels to give each thread 4
// outputs, and a partial last block (scripts/gpu-check.sh compares the GPU
// with the CPU on it).
func.func @large_elementwise(%x: tensor<1048579xf32>, %y: tensor<1048579xf32>) -> tensor<1048579xf32> {
  %r = harp.map_reduce ins(%x, %y : tensor<1048579xf32>, tensor<1048579xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %e, %m : f32
    harp.yield %s : f32
  } : tensor<1048579xf32>
  return %r : tensor<1048579xf32>
}
