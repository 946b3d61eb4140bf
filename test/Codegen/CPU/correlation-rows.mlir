// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize),canonicalize,cse)' --split-input-file | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{vector-bits=256}),canonicalize,cse)' --split-input-file | FileCheck %s --check-prefix=AVX2

// A depthwise convolution's weight gradient is a correlation:
// dW[c, kh, kw] sums X[n, c, oh + kh, ow + kw] dY[n, c, oh, ow] over the
// image (n, oh, ow). With the tap fixed, a row of X along ow is contiguous,
// as is dY's: harp-tile-and-vectorize sums along the rows with vectors of
// partial sums, carried across the outer reduced dims (n, oh; 4 rows of oh
// at once for 4 independent multiply-add chains) and reduced once per tap
// at the end. It is not flattened onto planes (harp-rewrite-windows takes
// convolutions, whose output is the long side of the window).
// CHECK-LABEL: func.func @depthwise_weight_gradient
// CHECK-NOT: tensor.collapse_shape
// CHECK: scf.for {{.*}} to %c8 step %c1
// CHECK: scf.for {{.*}} to %c3 step %c1
// CHECK: scf.for {{.*}} to %c3 step %c1
// CHECK: %[[ACC:.*]] = scf.for {{.*}} to %c4 step %c1 iter_args(%{{.*}}) -> (vector<4x16xf32>)
// CHECK: scf.for {{.*}} to %c16 step %c4 iter_args(%{{.*}}) -> (vector<4x16xf32>)
// CHECK: vector.transfer_read %arg0{{.*}} : tensor<4x8x18x18xf32>, vector<4x16xf32>
// CHECK: vector.transfer_read %arg1{{.*}} : tensor<4x8x16x16xf32>, vector<4x16xf32>
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<contract> : vector<4x16xf32>
// CHECK: vector.multi_reduction <add>, %{{.*}} : vector<1x1x1x1x1x16xf32> to vector<1x1x1xf32>
// CHECK: return
// With 8-lane vectors a row of 16 is two vectors: the same rows of partial
// sums.
// AVX2-LABEL: func.func @depthwise_weight_gradient
// AVX2: scf.for {{.*}} to %c4 step %c1 iter_args(%{{.*}}) -> (vector<4x16xf32>)
// AVX2: scf.for {{.*}} to %c16 step %c4 iter_args(%{{.*}}) -> (vector<4x16xf32>)
#x = affine_map<(c, kh, kw, n, oh, ow) -> (n, c, oh + kh, ow + kw)>
#dy = affine_map<(c, kh, kw, n, oh, ow) -> (n, c, oh, ow)>
#o = affine_map<(c, kh, kw, n, oh, ow) -> (c, kh, kw)>
func.func @depthwise_weight_gradient(%x: tensor<4x8x18x18xf32>, %dy: tensor<4x8x16x16xf32>, %init: tensor<8x3x3xf32>) -> tensor<8x3x3xf32> {
  %r = linalg.generic {indexing_maps = [#x, #dy, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %dy : tensor<4x8x18x18xf32>, tensor<4x8x16x16xf32>) outs(%init : tensor<8x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x3x3xf32>
  return %r : tensor<8x3x3xf32>
}

// -----

// The depthwise convolution itself reduces the short dims (kh, kw) of its
// window: no partial sums, vectors along its output's rows.
// CHECK-LABEL: func.func @depthwise_convolution
// CHECK-NOT: vector.multi_reduction
// CHECK-NOT: -> (vector<4x16xf32>)
// CHECK: return
#x = affine_map<(n, c, oh, ow, kh, kw) -> (n, c, oh + kh, ow + kw)>
#w = affine_map<(n, c, oh, ow, kh, kw) -> (c, kh, kw)>
#y = affine_map<(n, c, oh, ow, kh, kw) -> (n, c, oh, ow)>
func.func @depthwise_convolution(%x: tensor<4x8x18x18xf32>, %w: tensor<8x3x3xf32>, %init: tensor<4x8x16x16xf32>) -> tensor<4x8x16x16xf32> {
  %r = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : tensor<4x8x18x18xf32>, tensor<8x3x3xf32>) outs(%init : tensor<4x8x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8x16x16xf32>
  return %r : tensor<4x8x16x16xf32>
}

// -----

// A convolution's weight gradient, dW[f, c, kh, kw] summing
// X[n, c, oh + kh, ow + kw] dY[n, f, oh, ow] over (n, oh, ow), with rows
// of whole vectors: register tiles of 4 filters x 4 channels, each output
// a vector of partial sums along ow, carried across the rows of the images
// of a block and summed once per block and tap. Blocks: the channels in
// two halves (the threads' loop), then as many images as the tile's rows
// of them fit L1 (both here: 18 KB each); inside, the filter tiles and the
// taps. Both operands are read in place (no column tensor).
// CHECK-LABEL: func.func @weight_gradient_tiles
// CHECK-NOT: tensor.collapse_shape
// CHECK: scf.for {{.*}} to %c8 step %c4
// CHECK: scf.for {{.*}} to %c16 step %c4
// CHECK: scf.for {{.*}} to %c3 step %c1
// CHECK: scf.for {{.*}} to %c3 step %c1
// CHECK: scf.for {{.*}} to %c2 step %c1 iter_args(%{{.*}}) -> (vector<4x4x16xf32>)
// CHECK: scf.for {{.*}} to %c16 step %c1 iter_args(%{{.*}}) -> (vector<4x4x16xf32>)
// CHECK: scf.for {{.*}} to %c32 step %c16 iter_args(%{{.*}}) -> (vector<4x4x16xf32>)
// CHECK: vector.transfer_read %arg0{{.*}} : tensor<2x8x18x34xf32>, vector<4x4x16xf32>
// CHECK: vector.transfer_read %arg1{{.*}} : tensor<2x16x16x32xf32>, vector<4x4x16xf32>
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<contract> : vector<4x4x16xf32>
// CHECK: vector.multi_reduction <add>, %{{.*}} : vector<1x1x1x1x1x1x16xf32> to vector<1x1x1x1xf32>
// CHECK: return
// AVX2-LABEL: func.func @weight_gradient_tiles
// AVX2: scf.for {{.*}} to %c16 step %c1 iter_args(%{{.*}}) -> (vector<4x4x8xf32>)
// AVX2: scf.for {{.*}} to %c32 step %c8 iter_args(%{{.*}}) -> (vector<4x4x8xf32>)
#xw = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, c, oh + kh, ow + kw)>
#dyw = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, f, oh, ow)>
#ow = affine_map<(f, c, kh, kw, n, oh, ow) -> (f, c, kh, kw)>
func.func @weight_gradient_tiles(%x: tensor<2x8x18x34xf32>, %dy: tensor<2x16x16x32xf32>, %init: tensor<16x8x3x3xf32>) -> tensor<16x8x3x3xf32> {
  %r = linalg.generic {indexing_maps = [#xw, #dyw, #ow], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %dy : tensor<2x8x18x34xf32>, tensor<2x16x16x32xf32>) outs(%init : tensor<16x8x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x8x3x3xf32>
  return %r : tensor<16x8x3x3xf32>
}

// -----

// Images whose tile rows take 35 KB (4 x 34 x 34 + 4 x 32 x 32 floats):
// one image per block, the block loop outside the filter tiles.
// CHECK-LABEL: func.func @weight_gradient_image_blocks
// CHECK: scf.for {{.*}} to %c8 step %c4
// CHECK: scf.for {{.*}} to %c2 step %c1
// CHECK: scf.for {{.*}} to %c16 step %c4
// CHECK: scf.for {{.*}} to %c32 step %c1 iter_args(%{{.*}}) -> (vector<4x4x16xf32>)
#xb = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, c, oh + kh, ow + kw)>
#dyb = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, f, oh, ow)>
#ob = affine_map<(f, c, kh, kw, n, oh, ow) -> (f, c, kh, kw)>
func.func @weight_gradient_image_blocks(%x: tensor<2x8x34x34xf32>, %dy: tensor<2x16x32x32xf32>, %init: tensor<16x8x3x3xf32>) -> tensor<16x8x3x3xf32> {
  %r = linalg.generic {indexing_maps = [#xb, #dyb, #ob], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %dy : tensor<2x8x34x34xf32>, tensor<2x16x32x32xf32>) outs(%init : tensor<16x8x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x8x3x3xf32>
  return %r : tensor<16x8x3x3xf32>
}
