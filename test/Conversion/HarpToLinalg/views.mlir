// RUN: harp-opt %s --convert-harp-to-linalg --split-input-file | FileCheck %s

// Views are materialised only where something other than a map_reduce
// reads them; contiguous copies out a view and is otherwise the identity.

// A view returned from the function is copied out once.
// CHECK-DAG: #[[T:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @returned_view
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[T]], #{{.*}}]
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[A]] : f32
// CHECK: return %[[G]]
func.func @returned_view(%x: tensor<3x4xf32>) -> tensor<4x3xf32> {
  %t = harp.view %x <(d0, d1) -> (d1, d0)> : tensor<3x4xf32> -> tensor<4x3xf32>
  return %t : tensor<4x3xf32>
}

// -----

// One view read by a map_reduce and returned: the map_reduce reads through
// it, and one copy serves the return.
// CHECK-LABEL: func.func @shared_view
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: linalg.generic
func.func @shared_view(%x: tensor<3x4xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %t = harp.view %x <(d0, d1) -> (d1, d0)> : tensor<3x4xf32> -> tensor<4x3xf32>
  %n = harp.map_reduce ins(%t : tensor<4x3xf32>) {
  ^bb0(%a: f32):
    %b = arith.negf %a : f32
    harp.yield %b : f32
  } : tensor<4x3xf32>
  return %t, %n : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// contiguous of a view: the view is copied out and the consumer reads the
// copy, not through the view (two kernels).
// CHECK-DAG: #[[T:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @contiguous_view
// CHECK: %[[C:.*]] = linalg.generic {indexing_maps = [#[[T]], #[[ID]]]
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ID]]], {{.*}} ins(%[[C]] :
func.func @contiguous_view(%x: tensor<3x4xf32>) -> tensor<4x3xf32> {
  %t = harp.view %x <(d0, d1) -> (d1, d0)> : tensor<3x4xf32> -> tensor<4x3xf32>
  %c = harp.contiguous %t : tensor<4x3xf32>
  %n = harp.map_reduce ins(%c : tensor<4x3xf32>) {
  ^bb0(%a: f32):
    %b = arith.negf %a : f32
    harp.yield %b : f32
  } : tensor<4x3xf32>
  return %n : tensor<4x3xf32>
}

// -----

// contiguous of a plain value is the value.
// CHECK-LABEL: func.func @contiguous_value
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @contiguous_value(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = harp.contiguous %x : tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

// Two masked views with different pads cannot be one read: the inner one is
// copied out, the outer one read through in the kernel.
// CHECK-LABEL: func.func @two_pads
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: linalg.generic
func.func @two_pads(%v: tensor<4xf32>) -> tensor<8xf32> {
  %a = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4)> : tensor<4xf32> -> tensor<6xf32>
  %b = harp.view %a <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 6), pad = -inf> : tensor<6xf32> -> tensor<8xf32>
  %s = harp.map_reduce ins(%b : tensor<8xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } : tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

// A dim read at a mixed-radix sum of loop indices (attention heads split
// from one dim: h * 16 + d with d < 16) is expanded into one dim per index,
// so the kernel reads it by bare indices and stays a contraction.
// CHECK-DAG: #[[Q:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[V:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d1, d3)>
// CHECK-LABEL: func.func @split_heads
// CHECK: %[[E:.*]] = tensor.expand_shape %arg1 {{\[}}[0], [1], [2, 3]] output_shape [8, 64, 4, 16] : tensor<8x64x64xf32> into tensor<8x64x4x16xf32>
// CHECK: linalg.generic {indexing_maps = [#[[Q]], #[[V]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %[[E]] :
func.func @split_heads(%a: tensor<8x4x64x64xf32>, %v: tensor<8x64x64xf32>) -> tensor<8x4x64x16xf32> {
  %0 = harp.view %a <(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)> : tensor<8x4x64x64xf32> -> tensor<8x4x64x16x64xf32>
  %1 = harp.view %v <(d0, d1, d2, d3, d4) -> (d0, d4, d1 * 16 + d3)> : tensor<8x64x64xf32> -> tensor<8x4x64x16x64xf32>
  %2 = harp.map_reduce ins(%0, %1 : tensor<8x4x64x16x64xf32>, tensor<8x4x64x16x64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } reduce(sum, dims = [4]) : tensor<8x4x64x16xf32>
  return %2 : tensor<8x4x64x16xf32>
}

// -----

// A read at a constant plus a mixed radix (the keys' rows of a fused q/k/v
// projection weight, heads split from one dim: h * 16 + d + 64) is cut to
// the rows it reads, then expanded: the kernel reads bare indices.
// CHECK-DAG: #[[SH:.*]] = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
// CHECK-LABEL: func.func @shifted_heads
// CHECK: %[[S:.*]] = tensor.extract_slice %arg0[64, 0] [64, 8] [1, 1] : tensor<192x8xf32> to tensor<64x8xf32>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[S]] {{\[\[}}0, 1], [2]] output_shape [4, 16, 8]
// CHECK: linalg.generic {indexing_maps = [#[[SH]], #{{.*}}], {{.*}} ins(%[[E]] : tensor<4x16x8xf32>)
func.func @shifted_heads(%w: tensor<192x8xf32>) -> tensor<8xf32> {
  %v = harp.view %w <(d0, d1, d2) -> (d1 * 16 + d2 + 64, d0)> : tensor<192x8xf32> -> tensor<8x4x16xf32>
  %s = harp.map_reduce ins(%v : tensor<8x4x16xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1, 2]) : tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

// A window (d0 + d1, overlapping) is no mixed radix and keeps its compound
// index. A prefix (d0 * 2 + d1 covers 6 of 8 elements) is cut to the part
// it reads, which it then covers: sliced, then expanded.
// CHECK-DAG: affine_map<(d0, d1) -> (d0 + d1)>
// CHECK-LABEL: func.func @not_mixed_radix
// CHECK-NOT: tensor.expand_shape
// CHECK: %[[S:.*]] = tensor.extract_slice %arg1[0] [6] [1] : tensor<8xf32> to tensor<6xf32>
// CHECK: tensor.expand_shape %[[S]] {{\[\[}}0, 1]] output_shape [3, 2] : tensor<6xf32> into tensor<3x2xf32>
// CHECK: return
func.func @not_mixed_radix(%x: tensor<10xf32>, %y: tensor<8xf32>) -> (tensor<4xf32>, tensor<3xf32>) {
  %w = harp.view %x <(d0, d1) -> (d0 + d1)> : tensor<10xf32> -> tensor<4x7xf32>
  %s = harp.map_reduce ins(%w : tensor<4x7xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  %p = harp.view %y <(d0, d1) -> (d0 * 2 + d1)> : tensor<8xf32> -> tensor<3x2xf32>
  %t = harp.map_reduce ins(%p : tensor<3x2xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : tensor<3xf32>
  return %s, %t : tensor<4xf32>, tensor<3xf32>
}

// -----

// A view that merges dims read with floordiv and mod (the gradient of
// attention heads, [16, 4, 64, 16] read as [64, 1024] by the loops (h d,
// n l)) splits those loops, d0 into (4, 16) and d2 into (16, 64), so every
// map reads bare indices; the other operand's merged dim is expanded, and
// the result is collapsed back to [64, 64].
// CHECK-DAG: #[[O:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d3, d0, d4, d1)>
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4, d2)>
// CHECK-DAG: #[[R:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @merged_heads
// CHECK: %[[E:.*]] = tensor.expand_shape %arg1 {{\[}}[0, 1], [2]] output_shape [16, 64, 64]
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[O]], #[[X]], #[[R]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%arg0, %[[E]] : tensor<16x4x64x16xf32>, tensor<16x64x64xf32>) outs(%{{.*}} : tensor<4x16x64xf32>)
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[G]] {{\[}}[0, 1], [2]] : tensor<4x16x64xf32> into tensor<64x64xf32>
// CHECK: return %[[C]]
func.func @merged_heads(%o: tensor<16x4x64x16xf32>, %x: tensor<1024x64xf32>) -> tensor<64x64xf32> {
  %0 = harp.view %o <(d0, d1, d2) -> ((d0 + d2 * 64) floordiv 4096, d0 floordiv 16, d2 mod 64, d0 mod 16)> : tensor<16x4x64x16xf32> -> tensor<64x64x1024xf32>
  %1 = harp.view %x <(d0, d1, d2) -> (d2, d1)> : tensor<1024x64xf32> -> tensor<64x64x1024xf32>
  %2 = harp.map_reduce ins(%0, %1 : tensor<64x64x1024xf32>, tensor<64x64x1024xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<64x64xf32>
  return %2 : tensor<64x64xf32>
}

// -----

// The body still sees the original index: harp.index 0 of a split loop is
// recomposed from its parts. A division no split resolves (7 does not
// divide 10) keeps the loops as they are.
// CHECK-DAG: #[[SEVEN:.*]] = affine_map<(d0) -> (d0 floordiv 7, d0 mod 7)>
// CHECK-LABEL: func.func @split_index
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK: %[[HI:.*]] = linalg.index 0 : index
// CHECK: %[[LO:.*]] = linalg.index 1 : index
// CHECK: affine.apply #{{.*}}(%[[HI]], %[[LO]])
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1]] : tensor<3x4xf32> into tensor<12xf32>
// CHECK-LABEL: func.func @unsplittable
// CHECK-NOT: collapse_shape
// CHECK: linalg.generic {indexing_maps = [#[[SEVEN]],
func.func @split_index(%x: tensor<3x4xf32>) -> tensor<12xf32> {
  %v = harp.view %x <(d0) -> (d0 floordiv 4, d0 mod 4)> : tensor<3x4xf32> -> tensor<12xf32>
  %r = harp.map_reduce ins(%v : tensor<12xf32>) {
  ^bb0(%a: f32):
    %i = harp.index 0
    %c = arith.index_cast %i : index to i64
    %f = arith.sitofp %c : i64 to f32
    %s = arith.addf %a, %f : f32
    harp.yield %s : f32
  } : tensor<12xf32>
  return %r : tensor<12xf32>
}
func.func @unsplittable(%x: tensor<2x7xf32>) -> tensor<10xf32> {
  %v = harp.view %x <(d0) -> (d0 floordiv 7, d0 mod 7)> : tensor<2x7xf32> -> tensor<10xf32>
  %r = harp.map_reduce ins(%v : tensor<10xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } : tensor<10xf32>
  return %r : tensor<10xf32>
}
