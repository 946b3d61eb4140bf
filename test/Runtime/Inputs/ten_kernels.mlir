func.func @main(%x: tensor<37x53xf32>) -> tensor<37x53xf32> {
  %y0 = harp.map_reduce ins(%x : tensor<37x53xf32>) {
  ^bb0(%a: f32):
    %c = arith.constant 2.0 : f32
    %m = arith.mulf %a, %c : f32
    harp.yield %m : f32
  } : tensor<37x53xf32>
  %y1 = harp.map_reduce ins(%y0 : tensor<37x53xf32>) {
  ^bb0(%a: f32):
    %c = arith.constant 3.0 : f32
    %m = arith.mulf %a, %c : f32
    harp.yield %m : f32
  } : tensor<37x53xf32>
  %y2 = harp.map_reduce ins(%y1 : tensor<37x53xf32>) {
  ^bb0(%a: f32):
    %c = arith.constant 4.0 : f32
    %m = arith.mulf %a, %c : f32
    harp.yield %m : f32
  } : tensor<37x53xf32>
  %y3 = harp.map_reduce ins(%y2 : tensor<37x53xf32>) {
  ^bb0(%a: f32):
    %c = arith.constant 5.0 : f32
    %m = arith.mulf %a, %c : f32
    harp.yield %m : f32
  } : tensor<37x53xf32>
  %y4 = harp.map_reduce ins(%y3 : tensor<37x53xf32>) {
  ^bb0(%a: f32):
    %c = arith.constant 6.0 : f32
    %m = arith.mulf %a, %c : f32
    harp.yield %m : f32
  } : tensor<37x53xf32>
  %y5 = harp.map_reduce ins(%y4 : tensor<37x53xf32>) {
  ^bb0(%a: f32):
    %c = arith.constant 7.0 : f32
    %m = arith.mulf %a, %c : f32
    harp.yield %m : f32
  } : tensor<37x53xf32>
  %y6 = harp.map_reduce ins(%y5 : tensor<37x53xf32>) {
  ^bb0(%a: f32):
    %c = arith.constant 8.0 : f32
    %m = arith.mulf %a, %c : f32
    harp.yield %m : f32
  } : tensor<37x53xf32>
  %y7 = harp.map_reduce ins(%y6 : tensor<37x53xf32>) {
  ^bb0(%a: f32):
    %c = arith.constant 9.0 : f32
    %m = arith.mulf %a, %c : f32
    harp.yield %m : f32
  } : tensor<37x53xf32>
  %y8 = harp.map_reduce ins(%y7 : tensor<37x53xf32>) {
  ^bb0(%a: f32):
    %c = arith.constant 10.0 : f32
    %m = arith.mulf %a, %c : f32
    harp.yield %m : f32
  } : tensor<37x53xf32>
  %y9 = harp.map_reduce ins(%y8 : tensor<37x53xf32>) {
  ^bb0(%a: f32):
    %c = arith.constant 11.0 : f32
    %m = arith.mulf %a, %c : f32
    harp.yield %m : f32
  } : tensor<37x53xf32>
  return %y9 : tensor<37x53xf32>
}
