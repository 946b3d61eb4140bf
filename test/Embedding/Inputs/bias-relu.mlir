// Input of consumer.test: a bias add and a relu, two map_reduce ops that
// harp-fuse makes one.
func.func @bias_relu(%x: tensor<8x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %bb = harp.view %b <(i, j) -> (j)> : tensor<32xf32> -> tensor<8x32xf32>
  %s = harp.map_reduce ins(%x, %bb : tensor<8x32xf32>, tensor<8x32xf32>) {
  ^bb0(%a: f32, %c: f32):
    %t = arith.addf %a, %c : f32
    harp.yield %t : f32
  } : tensor<8x32xf32>
  %r = harp.map_reduce ins(%s : tensor<8x32xf32>) {
  ^bb0(%a: f32):
    %zero = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %zero : f32
    harp.yield %m : f32
  } : tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
