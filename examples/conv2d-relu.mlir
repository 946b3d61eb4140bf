// A 3x3 convolution with padding 1 followed by ReLU, written with harp's
// primitives: a pad view, an unfold (im2col) view and broadcast views feed one
// multiply-and-sum map_reduce. No padded or im2col buffer exists: the views
// are index arithmetic. `harp-opt --canonicalize` composes the three views on
// the input into one masked view.

func.func @conv2d_relu(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>)
    -> tensor<1x3x5x5xf32> {
  // Zero padding of 1 on each side of H and W.
  %xp = harp.view %x <(n, c, h, w) -> (n, c, h - 1, w - 1),
      mask_ge = (n, c, h, w) -> (h - 1, -h + 5, w - 1, -w + 5)>
      : tensor<1x2x5x5xf32> -> tensor<1x2x7x7xf32>
  // 3x3 windows at stride 1: (n, c, oh, ow, kh, kw).
  %win = harp.view %xp <(n, c, oh, ow, kh, kw) -> (n, c, oh + kh, ow + kw)>
      : tensor<1x2x7x7xf32> -> tensor<1x2x5x5x3x3xf32>
  // Iteration domain (n, f, oh, ow, c, kh, kw).
  %xb = harp.view %win
      <(n, f, oh, ow, c, kh, kw) -> (n, c, oh, ow, kh, kw)>
      : tensor<1x2x5x5x3x3xf32> -> tensor<1x3x5x5x2x3x3xf32>
  %wb = harp.view %w <(n, f, oh, ow, c, kh, kw) -> (f, c, kh, kw)>
      : tensor<3x2x3x3xf32> -> tensor<1x3x5x5x2x3x3xf32>
  %conv = harp.map_reduce ins(%xb, %wb : tensor<1x3x5x5x2x3x3xf32>,
                                         tensor<1x3x5x5x2x3x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %p = arith.mulf %a, %b : f32
    harp.yield %p : f32
  } reduce(sum, dims = [4, 5, 6]) : tensor<1x3x5x5xf32>
  %relu = harp.map_reduce ins(%conv : tensor<1x3x5x5xf32>) {
  ^bb0(%v: f32):
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %v, %zero : f32
    harp.yield %r : f32
  } : tensor<1x3x5x5xf32>
  return %relu : tensor<1x3x5x5xf32>
}
