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
