// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-pack-contractions{vector-bits=512}))' | FileCheck %s

// A linear layer's weight gradient dW = dY^T @ x sums over the batch and
// the tokens, two loops that every operand reads as consecutive dims:
// harp-pack-contractions collapses them into one k of 1024 first, so that
// the cache blocks (which bound the innermost k) and the packing of the
// right operand see the whole reduction. The left operand, read along m,
// is then copied with k innermost, the right one packed into panels.
// CHECK-LABEL: func.func @weight_gradient
// CHECK-DAG: %[[DY:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<16x64x128xf32> into tensor<1024x128xf32>
// CHECK-DAG: %[[X:.*]] = tensor.collapse_shape %arg1 {{\[}}[0, 1], [2]] : tensor<16x64x512xf32> into tensor<1024x512xf32>
// CHECK: %[[A:.*]] = linalg.generic {{.*}} ins(%[[DY]] : tensor<1024x128xf32>) outs(%{{.*}} : tensor<128x1024xf32>)
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<1024x512xf32>) outs(%{{.*}} : tensor<16x1024x32xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[A]], %[[B]] : tensor<128x1024xf32>, tensor<16x1024x32xf32>)
#a = affine_map<(o, i, b, t) -> (b, t, o)>
#x = affine_map<(o, i, b, t) -> (b, t, i)>
#w = affine_map<(o, i, b, t) -> (o, i)>
func.func @weight_gradient(%dy: tensor<16x64x128xf32>, %x: tensor<16x64x512xf32>, %init: tensor<128x512xf32>) -> tensor<128x512xf32> {
  %r = linalg.generic {indexing_maps = [#a, #x, #w], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%dy, %x : tensor<16x64x128xf32>, tensor<16x64x512xf32>) outs(%init : tensor<128x512xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<128x512xf32>
  return %r : tensor<128x512xf32>
}

// -----

// A batched matmul keeps its batch: m's rows are not consecutive with the
// batch in the right operand, which does not read m.
// CHECK-LABEL: func.func @batched
// CHECK-NOT: tensor.collapse_shape %arg
// CHECK: return
#l = affine_map<(b, m, n, k) -> (b, m, k)>
#r = affine_map<(b, m, n, k) -> (b, k, n)>
#o = affine_map<(b, m, n, k) -> (b, m, n)>
func.func @batched(%a: tensor<4x64x32xf32>, %b: tensor<4x32x64xf32>, %init: tensor<4x64x64xf32>) -> tensor<4x64x64xf32> {
  %r = linalg.generic {indexing_maps = [#l, #r, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<4x64x32xf32>, tensor<4x32x64xf32>) outs(%init : tensor<4x64x64xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x64x64xf32>
  return %r : tensor<4x64x64xf32>
}

// -----

// A per-head weight gradient of attention, dW[o, c] summed over
// dY[t, b, o] x[b, t, c] with the loops (t, b): the left operand, read
// along m, is copied with its k dims in the order the right operand reads
// them ([o, b, t]), the k loops are interchanged into that order, and the
// two become one k of 1024 over x read as 1024 consecutive rows (in the
// loops' order, x's rows would be 64 apart at every k step).
// CHECK-LABEL: func.func @weight_gradient_loops_transposed
// CHECK: %[[A:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<64x16x128xf32>) outs(%{{.*}} : tensor<128x16x64xf32>)
// CHECK-DAG: %[[AK:.*]] = tensor.collapse_shape %[[A]] {{\[}}[0], [1, 2]] : tensor<128x16x64xf32> into tensor<128x1024xf32>
// CHECK-DAG: %[[X:.*]] = tensor.collapse_shape %arg1 {{\[}}[0, 1], [2]] : tensor<16x64x128xf32> into tensor<1024x128xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[AK]], %[[X]] : tensor<128x1024xf32>, tensor<1024x128xf32>)
#dy = affine_map<(o, c, t, b) -> (t, b, o)>
#xt = affine_map<(o, c, t, b) -> (b, t, c)>
#wt = affine_map<(o, c, t, b) -> (o, c)>
func.func @weight_gradient_loops_transposed(%dy: tensor<64x16x128xf32>, %x: tensor<16x64x128xf32>, %init: tensor<128x128xf32>) -> tensor<128x128xf32> {
  %r = linalg.generic {indexing_maps = [#dy, #xt, #wt], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%dy, %x : tensor<64x16x128xf32>, tensor<16x64x128xf32>) outs(%init : tensor<128x128xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<128x128xf32>
  return %r : tensor<128x128xf32>
}
