// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v4})' --mlir-print-ir-after=harp-tile-and-vectorize -o /dev/null 2>&1 | FileCheck %s

// A 1x1 convolution's weight gradient as the Tensor API builds it: the
// taps (kh, kw) are loops of one iteration, and the image is read through
// an expanded shape that gives them dims of their own.
// harp-pack-contractions drops the unit loops first, so the kernel is a
// plain contraction dW[f, c] over (n, h, w) with a register tile of 8 rows
// x 16 columns. With them, the result's contiguous dim was kw, of one
// iteration: a register tile one column wide (vector<8xf32>), 3-6 GFLOP/s.
// CHECK-LABEL: func.func @main
// CHECK: tensor.collapse_shape %{{.*}} : tensor<32x16x1x1xf32> into tensor<32x16xf32>
// CHECK-NOT: vector<8xf32>
// CHECK: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : vector<8x16xf32>
// CHECK: tensor.expand_shape %{{.*}} : tensor<32x16xf32> into tensor<32x16x1x1xf32>
#x = affine_map<(f, c, kh, kw, n, h, w) -> (n, c, h, kh, w, kw)>
#dy = affine_map<(f, c, kh, kw, n, h, w) -> (n, f, h, w)>
#dw = affine_map<(f, c, kh, kw, n, h, w) -> (f, c, kh, kw)>
func.func @main(%x: tensor<8x16x10x1x10x1xf32>, %dy: tensor<8x32x10x10xf32>) -> tensor<32x16x1x1xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x16x1x1xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<32x16x1x1xf32>) -> tensor<32x16x1x1xf32>
  %r = linalg.generic {indexing_maps = [#x, #dy, #dw], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %dy : tensor<8x16x10x1x10x1xf32>, tensor<8x32x10x10xf32>) outs(%init : tensor<32x16x1x1xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<32x16x1x1xf32>
  return %r : tensor<32x16x1x1xf32>
}
