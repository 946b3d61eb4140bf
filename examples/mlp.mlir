// A two-layer network's forward pass, written with harp's primitives:
//   probs = softmax(relu(x @ W1 + b1) @ W2 + b2)
// Matmuls are broadcast views multiplied and summed; biases are broadcast
// views; softmax is two reductions and two element-wise maps.

func.func @mlp(%x: tensor<8x64xf32>, %w1: tensor<64x32xf32>, %b1: tensor<32xf32>,
               %w2: tensor<32x10xf32>, %b2: tensor<10xf32>) -> tensor<8x10xf32> {
  // Layer 1: h = relu(x @ W1 + b1), domain (batch, hidden, in).
  %xb = harp.view %x <(i, j, k) -> (i, k)> : tensor<8x64xf32> -> tensor<8x32x64xf32>
  %w1b = harp.view %w1 <(i, j, k) -> (k, j)> : tensor<64x32xf32> -> tensor<8x32x64xf32>
  %xw = harp.map_reduce ins(%xb, %w1b : tensor<8x32x64xf32>, tensor<8x32x64xf32>) {
  ^bb0(%a: f32, %b: f32):
    %p = arith.mulf %a, %b : f32
    harp.yield %p : f32
  } reduce(sum, dims = [2]) : tensor<8x32xf32>
  %b1b = harp.view %b1 <(i, j) -> (j)> : tensor<32xf32> -> tensor<8x32xf32>
  %h = harp.map_reduce ins(%xw, %b1b : tensor<8x32xf32>, tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %zero : f32
    harp.yield %r : f32
  } : tensor<8x32xf32>

  // Layer 2: logits = h @ W2 + b2.
  %hb = harp.view %h <(i, j, k) -> (i, k)> : tensor<8x32xf32> -> tensor<8x10x32xf32>
  %w2b = harp.view %w2 <(i, j, k) -> (k, j)> : tensor<32x10xf32> -> tensor<8x10x32xf32>
  %hw = harp.map_reduce ins(%hb, %w2b : tensor<8x10x32xf32>, tensor<8x10x32xf32>) {
  ^bb0(%a: f32, %b: f32):
    %p = arith.mulf %a, %b : f32
    harp.yield %p : f32
  } reduce(sum, dims = [2]) : tensor<8x10xf32>
  %b2b = harp.view %b2 <(i, j) -> (j)> : tensor<10xf32> -> tensor<8x10xf32>
  %logits = harp.map_reduce ins(%hw, %b2b : tensor<8x10xf32>, tensor<8x10xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    harp.yield %s : f32
  } : tensor<8x10xf32>

  // Softmax over classes.
  %m = harp.map_reduce ins(%logits : tensor<8x10xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(max, dims = [1]) : tensor<8xf32>
  %mb = harp.view %m <(i, j) -> (i)> : tensor<8xf32> -> tensor<8x10xf32>
  %e = harp.map_reduce ins(%logits, %mb : tensor<8x10xf32>, tensor<8x10xf32>) {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    %x2 = math.exp %d : f32
    harp.yield %x2 : f32
  } : tensor<8x10xf32>
  %s = harp.map_reduce ins(%e : tensor<8x10xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : tensor<8xf32>
  %sb = harp.view %s <(i, j) -> (i)> : tensor<8xf32> -> tensor<8x10xf32>
  %probs = harp.map_reduce ins(%e, %sb : tensor<8x10xf32>, tensor<8x10xf32>) {
  ^bb0(%a: f32, %b: f32):
    %q = arith.divf %a, %b : f32
    harp.yield %q : f32
  } : tensor<8x10xf32>
  return %probs : tensor<8x10xf32>
}
