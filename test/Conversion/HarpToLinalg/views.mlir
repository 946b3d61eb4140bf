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

// Sums that are not a mixed radix over their whole dim keep the compound
// index: a window (d0 + d1, overlapping) and a prefix (d0 * 2 + d1 covers
// 6 of 8 elements).
// CHECK-DAG: affine_map<(d0, d1) -> (d0 + d1)>
// CHECK-DAG: affine_map<(d0, d1) -> (d0 * 2 + d1)>
// CHECK-LABEL: func.func @not_mixed_radix
// CHECK-NOT: tensor.expand_shape
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
