// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-tile-and-vectorize),canonicalize,cse)' --split-input-file | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-tile-and-vectorize{vector-bits=256}),canonicalize,cse)' --split-input-file | FileCheck %s --check-prefix=AVX2
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-tile-and-vectorize{vector-bits=128}),canonicalize,cse)' --split-input-file | FileCheck %s --check-prefix=SSE

// harp-tile-and-vectorize on a gathering kernel whose reads divide its
// vector dim by d (a multiple of the vector length that divides the dim):
// the dim is split into (v / d, v mod d), so each read is a contiguous
// vector load along v mod d instead of a gather of computed indices.

// The gradient of a q, k split through heads of 32 (`c floordiv 32`,
// `c mod 32`), concatenated along the last dim: the result is computed as
// 3 x 5 x 8 x 32 and collapsed back; both sources are read with vector
// loads, their masks compare the split index.
// CHECK-LABEL: func.func @concat_heads
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0], [1], [2, 3]] output_shape [3, 5, 8, 32] : tensor<3x5x256xf32> into tensor<3x5x8x32xf32>
// CHECK: vector.transfer_read %arg0{{.*}} : tensor<3x5x4x32xf32>, vector<16xf32>
// CHECK: vector.transfer_read %arg1{{.*}} : tensor<3x5x4x32xf32>, vector<16xf32>
// CHECK-NOT: vector.gather
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : tensor<3x5x8x32xf32> into tensor<3x5x256xf32>
// AVX2-LABEL: func.func @concat_heads
// AVX2: vector.transfer_read %arg0{{.*}} : tensor<3x5x4x32xf32>, vector<8xf32>
// AVX2-NOT: vector.gather
// SSE-LABEL: func.func @concat_heads
// SSE: vector.transfer_read %arg0{{.*}} : tensor<3x5x4x32xf32>, vector<4xf32>
// SSE-NOT: vector.gather
func.func @concat_heads(%q: tensor<3x5x4x32xf32>, %k: tensor<3x5x4x32xf32>, %init: tensor<3x5x256xf32>) -> tensor<3x5x256xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c31 = arith.constant 31 : index
  %zero = arith.constant 0.0 : f32
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%init : tensor<3x5x256xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %h = affine.apply affine_map<()[s0] -> (s0 floordiv 32)>()[%i2]
    %h0 = arith.maxsi %h, %c0 : index
    %h1 = arith.minsi %h0, %c3 : index
    %e = affine.apply affine_map<()[s0] -> (s0 mod 32)>()[%i2]
    %e0 = arith.maxsi %e, %c0 : index
    %e1 = arith.minsi %e0, %c31 : index
    %a = tensor.extract %q[%i0, %i1, %h1, %e1] : tensor<3x5x4x32xf32>
    %m = affine.apply affine_map<()[s0] -> (-s0 + 127)>()[%i2]
    %in = arith.cmpi sge, %m, %c0 : index
    %av = arith.select %in, %a, %zero : f32
    %hk = affine.apply affine_map<()[s0] -> (s0 floordiv 32 - 4)>()[%i2]
    %hk0 = arith.maxsi %hk, %c0 : index
    %hk1 = arith.minsi %hk0, %c3 : index
    %ek = affine.apply affine_map<()[s0] -> (s0 mod 32)>()[%i2]
    %ek0 = arith.maxsi %ek, %c0 : index
    %ek1 = arith.minsi %ek0, %c31 : index
    %b = tensor.extract %k[%i0, %i1, %hk1, %ek1] : tensor<3x5x4x32xf32>
    %mk = affine.apply affine_map<()[s0] -> (s0 - 128)>()[%i2]
    %ink = arith.cmpi sge, %mk, %c0 : index
    %bv = arith.select %ink, %b, %zero : f32
    %r = arith.addf %av, %bv : f32
    linalg.yield %r : f32
  } -> tensor<3x5x256xf32>
  return %0 : tensor<3x5x256xf32>
}

// -----

// Heads of 8: a multiple of 4 lanes (128-bit vectors), not of 8 or 16. The
// wider vectors keep the dim whole and gather; 128-bit ones split it.
// CHECK-LABEL: func.func @narrow_heads
// CHECK-NOT: tensor.expand_shape
// CHECK: vector.gather
// AVX2-LABEL: func.func @narrow_heads
// AVX2: vector.gather
// SSE-LABEL: func.func @narrow_heads
// SSE: tensor.expand_shape %{{.*}} output_shape [6, 8]
// SSE-NOT: vector.gather
func.func @narrow_heads(%q: tensor<6x8xf32>, %init: tensor<48xf32>) -> tensor<48xf32> {
  %c0 = arith.constant 0 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%init : tensor<48xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %h = affine.apply affine_map<()[s0] -> (s0 floordiv 8)>()[%i]
    %h0 = arith.maxsi %h, %c0 : index
    %h1 = arith.minsi %h0, %c5 : index
    %e = affine.apply affine_map<()[s0] -> (s0 mod 8)>()[%i]
    %e0 = arith.maxsi %e, %c0 : index
    %e1 = arith.minsi %e0, %c7 : index
    %a = tensor.extract %q[%h1, %e1] : tensor<6x8xf32>
    linalg.yield %a : f32
  } -> tensor<48xf32>
  return %0 : tensor<48xf32>
}

// -----

// A read of v divided by anything else than the split's d (here an offset
// that is no multiple of it) leaves the kernel as it is.
// CHECK-LABEL: func.func @offset_division
// CHECK-NOT: tensor.expand_shape
// CHECK: vector.gather
// SSE-LABEL: func.func @offset_division
// SSE-NOT: tensor.expand_shape
// SSE: vector.gather
func.func @offset_division(%q: tensor<9x32xf32>, %init: tensor<256xf32>) -> tensor<256xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c31 = arith.constant 31 : index
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%init : tensor<256xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %h = affine.apply affine_map<()[s0] -> ((s0 + 3) floordiv 32)>()[%i]
    %h0 = arith.maxsi %h, %c0 : index
    %h1 = arith.minsi %h0, %c8 : index
    %e = affine.apply affine_map<()[s0] -> ((s0 + 3) mod 32)>()[%i]
    %e0 = arith.maxsi %e, %c0 : index
    %e1 = arith.minsi %e0, %c31 : index
    %a = tensor.extract %q[%h1, %e1] : tensor<9x32xf32>
    linalg.yield %a : f32
  } -> tensor<256xf32>
  return %0 : tensor<256xf32>
}
