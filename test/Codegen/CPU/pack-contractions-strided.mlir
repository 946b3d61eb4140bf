// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-pack-contractions{vector-bits=512}))' --mlir-print-local-scope | FileCheck %s
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-pack-contractions{vector-bits=256}))' --mlir-print-local-scope | FileCheck %s
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-pack-contractions{vector-bits=128}))' --mlir-print-local-scope | FileCheck %s

// harp-pack-contractions on operands read with a stride and no window (a
// strided 1x1 convolution's image): the operand gets a dense copy of what
// it reads, which the sum of products reads as a projected permutation,
// the path with register tiles.

// A 1x1 convolution of stride 2 (after its unit taps are dropped): the
// image is copied as [n, c, oh, ow], the contraction then reads it in
// place (its oh and ow collapse into one dim).
// CHECK-LABEL: func.func @strided_1x1
// CHECK-SAME: (%[[X:.*]]: tensor<3x5x9x9xf32>, %[[W:.*]]: tensor<7x5xf32>
// CHECK: %[[XS:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * 2, d3 * 2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[X]] : tensor<3x5x9x9xf32>) outs(%{{.*}} : tensor<3x5x5x5xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[IN]]
// CHECK: %[[XC:.*]] = tensor.collapse_shape %[[XS]] {{\[}}[0], [1], [2, 3]] : tensor<3x5x5x5xf32> into tensor<3x5x25xf32>
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[XC]], %[[W]] : tensor<3x5x25xf32>, tensor<7x5xf32>)
// CHECK-NOT: * 2
// CHECK: return
func.func @strided_1x1(%x: tensor<3x5x9x9xf32>, %w: tensor<7x5xf32>, %init: tensor<3x7x5x5xf32>) -> tensor<3x7x5x5xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(n, o, oh, ow, c) -> (n, c, oh * 2, ow * 2)>, affine_map<(n, o, oh, ow, c) -> (o, c)>, affine_map<(n, o, oh, ow, c) -> (n, o, oh, ow)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<3x5x9x9xf32>, tensor<7x5xf32>) outs(%init : tensor<3x7x5x5xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x7x5x5xf32>
  return %0 : tensor<3x7x5x5xf32>
}

// -----

// A stride of 3 from an offset (the taps a padded filter keeps), the
// output channels outermost: the copy starts at the offset.
// CHECK-LABEL: func.func @strided_offset
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x11x11xf32>, %[[W:.*]]: tensor<4x3xf32>
// CHECK: %[[XS:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * 3 + 1, d3 * 3 + 2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>]{{.*}} ins(%[[X]] : tensor<2x3x11x11xf32>) outs(%{{.*}} : tensor<2x3x3x3xf32>)
// CHECK-NOT: * 3
// CHECK: return
func.func @strided_offset(%x: tensor<2x3x11x11xf32>, %w: tensor<4x3xf32>, %init: tensor<4x2x3x3xf32>) -> tensor<4x2x3x3xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(o, n, oh, ow, c) -> (n, c, oh * 3 + 1, ow * 3 + 2)>, affine_map<(o, n, oh, ow, c) -> (o, c)>, affine_map<(o, n, oh, ow, c) -> (o, n, oh, ow)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<2x3x11x11xf32>, tensor<4x3xf32>) outs(%init : tensor<4x2x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x2x3x3xf32>
  return %0 : tensor<4x2x3x3xf32>
}

// -----

// Left as it is: an operand read through a window (ow * 2 + k, the
// convolution's own path).
// CHECK-LABEL: func.func @window
// CHECK-NOT: tensor.empty
// CHECK: affine_map<(d0, d1, d2, d3) -> (d0, d1 * 2 + d3)>
// CHECK: return
func.func @window(%x: tensor<4x17xf32>, %w: tensor<5x3xf32>, %init: tensor<4x7x5xf32>) -> tensor<4x7x5xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(n, ow, o, k) -> (n, ow * 2 + k)>, affine_map<(n, ow, o, k) -> (o, k)>, affine_map<(n, ow, o, k) -> (n, ow, o)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<4x17xf32>, tensor<5x3xf32>) outs(%init : tensor<4x7x5xf32>) {
  ^bb0(%p0: f32, %p1: f32, %acc: f32):
    %p = arith.mulf %p0, %p1 : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x7x5xf32>
  return %0 : tensor<4x7x5xf32>
}

// -----

// Not given a dense copy: an operand that reads every dim of the op (each
// of its elements is read once, so a copy would only add a pass).
// CHECK-LABEL: func.func @read_once
// CHECK-NOT: tensor.empty() : tensor<5x16xf32>
// CHECK: return
func.func @read_once(%a: tensor<9x16xf32>, %b: tensor<5x16xf32>, %init: tensor<5xf32>) -> tensor<5xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i * 2, k)>, affine_map<(i, k) -> (i, k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%a, %b : tensor<9x16xf32>, tensor<5x16xf32>) outs(%init : tensor<5xf32>) {
  ^bb0(%p0: f32, %p1: f32, %acc: f32):
    %p = arith.mulf %p0, %p1 : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<5xf32>
  return %0 : tensor<5xf32>
}
