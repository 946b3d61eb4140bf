// RUN: harp-opt %s --canonicalize --split-input-file | FileCheck %s

// View composition, layout simplification, identity views, folding of views
// of constants, and repeated materialisation.

// CHECK-LABEL: func.func @identity_view
// CHECK-SAME: (%[[X:.*]]: tensor<3x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @identity_view(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = harp.view %x <(d0, d1) -> (d0, d1)> : tensor<3x4xf32> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_twice
// CHECK-SAME: (%[[X:.*]]: tensor<3x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_twice(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = harp.view %x <(d0, d1) -> (d1, d0)> : tensor<3x4xf32> -> tensor<4x3xf32>
  %1 = harp.view %0 <(d0, d1) -> (d1, d0)> : tensor<4x3xf32> -> tensor<3x4xf32>
  return %1 : tensor<3x4xf32>
}

// -----

// A reshape 3x4 -> 2x6 and back: the composed floordiv/mod arithmetic
// simplifies to the identity with the known index ranges.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<3x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_round_trip(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = harp.view %x <(d0, d1) -> ((d0 * 6 + d1) floordiv 4, (d0 * 6 + d1) mod 4)>
      : tensor<3x4xf32> -> tensor<2x6xf32>
  %1 = harp.view %0 <(d0, d1) -> ((d0 * 4 + d1) floordiv 6, (d0 * 4 + d1) mod 6)>
      : tensor<2x6xf32> -> tensor<3x4xf32>
  return %1 : tensor<3x4xf32>
}

// -----

// Flatten then unflatten into a different factorisation: one view remains
// with the index arithmetic of the composition.
// CHECK-LABEL: func.func @reshape_chain
// CHECK-NEXT: %[[V:.*]] = harp.view %{{.*}} <(d0, d1) -> ((d0 * 6 + d1) floordiv 4, (d0 * 6 + d1) mod 4)> : tensor<3x4xf32> -> tensor<2x6xf32>
// CHECK-NEXT: return %[[V]]
func.func @reshape_chain(%x: tensor<3x4xf32>) -> tensor<2x6xf32> {
  %0 = harp.view %x <(d0) -> (d0 floordiv 4, d0 mod 4)> : tensor<3x4xf32> -> tensor<12xf32>
  %1 = harp.view %0 <(d0, d1) -> (d0 * 6 + d1)> : tensor<12xf32> -> tensor<2x6xf32>
  return %1 : tensor<2x6xf32>
}

// -----

// A strided slice of a flip of a broadcast composes into one view.
// CHECK-LABEL: func.func @three_views
// CHECK-NEXT: %[[V:.*]] = harp.view %{{.*}} <(d0, d1) -> (d1 * -2 + 7)> : tensor<8xf32> -> tensor<5x4xf32>
// CHECK-NEXT: return %[[V]]
func.func @three_views(%v: tensor<8xf32>) -> tensor<5x4xf32> {
  %0 = harp.view %v <(d0, d1) -> (d1)> : tensor<8xf32> -> tensor<5x8xf32>
  %1 = harp.view %0 <(d0, d1) -> (d0, 7 - d1)> : tensor<5x8xf32> -> tensor<5x8xf32>
  %2 = harp.view %1 <(d0, d1) -> (d0, d1 * 2)> : tensor<5x8xf32> -> tensor<5x4xf32>
  return %2 : tensor<5x4xf32>
}

// -----

// Padding then 3-wide windows (a padded unfold): the inner mask is read
// through the outer map.
// CHECK-LABEL: func.func @pad_then_unfold
// CHECK-NEXT: %[[V:.*]] = harp.view %{{.*}} <(d0, d1) -> (d0 + d1 - 1), mask_ge = (d0, d1) -> (d0 + d1 - 1, -d0 - d1 + 4)> : tensor<4xf32> -> tensor<4x3xf32>
// CHECK-NEXT: return %[[V]]
func.func @pad_then_unfold(%v: tensor<4xf32>) -> tensor<4x3xf32> {
  %0 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4)>
      : tensor<4xf32> -> tensor<6xf32>
  %1 = harp.view %0 <(d0, d1) -> (d0 + d1)> : tensor<6xf32> -> tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}

// -----

// Two masks with the same pad: their conjunction (tril of a padded matrix).
// CHECK-LABEL: func.func @same_pad_masks
// CHECK-NEXT: %[[V:.*]] = harp.view %{{.*}} <(d0, d1) -> (d0, d1 - 1), mask_ge = (d0, d1) -> (d0 - d1, d1 - 1)> : tensor<4x3xf32> -> tensor<4x4xf32>
// CHECK-NEXT: return %[[V]]
func.func @same_pad_masks(%x: tensor<4x3xf32>) -> tensor<4x4xf32> {
  %0 = harp.view %x <(d0, d1) -> (d0, d1 - 1), mask_ge = (d0, d1) -> (d1 - 1)>
      : tensor<4x3xf32> -> tensor<4x4xf32>
  %1 = harp.view %0 <(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d0 - d1)>
      : tensor<4x4xf32> -> tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}

// -----

// Different pads cannot share one mask: both views stay.
// CHECK-LABEL: func.func @different_pads
// CHECK-NEXT: %[[A:.*]] = harp.view %{{.*}} mask_ge = (d0) -> (d0 - 1)> : tensor<4xf32> -> tensor<5xf32>
// CHECK-NEXT: %[[B:.*]] = harp.view %[[A]] <(d0) -> (d0), mask_ge = (d0) -> (-d0 + 3), pad = -inf> : tensor<5xf32> -> tensor<5xf32>
// CHECK-NEXT: return %[[B]]
func.func @different_pads(%v: tensor<4xf32>) -> tensor<5xf32> {
  %0 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1)>
      : tensor<4xf32> -> tensor<5xf32>
  %1 = harp.view %0 <(d0) -> (d0), mask_ge = (d0) -> (3 - d0), pad = -inf>
      : tensor<5xf32> -> tensor<5xf32>
  return %1 : tensor<5xf32>
}

// -----

// A mask that holds on the whole result box is dropped with its pad; then
// the view is the identity and disappears.
// CHECK-LABEL: func.func @mask_always_true
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @mask_always_true(%v: tensor<4xf32>) -> tensor<4xf32> {
  %0 = harp.view %v <(d0) -> (d0), mask_ge = (d0) -> (d0, 3 - d0), pad = -inf>
      : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Constraints implied by the box go; duplicates go; the rest stays.
// CHECK-LABEL: func.func @mask_pruned
// CHECK-NEXT: harp.view %{{.*}} <(d0) -> (d0 - 2), mask_ge = (d0) -> (d0 - 2)> : tensor<4xf32> -> tensor<6xf32>
func.func @mask_pruned(%v: tensor<4xf32>) -> tensor<6xf32> {
  %0 = harp.view %v <(d0) -> (d0 - 2), mask_ge = (d0) -> (d0 - 2, d0, d0 - 2, 5 - d0)>
      : tensor<4xf32> -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// A mask that holds nowhere: the view is a fill with its pad.
// CHECK-LABEL: func.func @mask_always_false
// CHECK-NEXT: %[[C:.*]] = arith.constant dense<0xFF800000> : tensor<3xf32>
// CHECK-NEXT: return %[[C]]
func.func @mask_always_false(%v: tensor<4xf32>) -> tensor<3xf32> {
  %0 = harp.view %v <(d0) -> (d0), mask_ge = (d0) -> (d0 - 5), pad = -inf>
      : tensor<4xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @mask_always_false_complex
// CHECK-NEXT: %[[C:.*]] = arith.constant dense<(1.000000e+00,0.000000e+00)> : tensor<2xcomplex<f32>>
// CHECK-NEXT: return %[[C]]
func.func @mask_always_false_complex(%v: tensor<4xcomplex<f32>>) -> tensor<2xcomplex<f32>> {
  %0 = harp.view %v <(d0) -> (d0), mask_eq = (d0) -> (d0 + 1), pad = one>
      : tensor<4xcomplex<f32>> -> tensor<2xcomplex<f32>>
  return %0 : tensor<2xcomplex<f32>>
}

// -----

// A broadcast of a splat is a bigger splat.
// CHECK-LABEL: func.func @view_of_splat
// CHECK-NEXT: %[[C:.*]] = arith.constant dense<2.500000e+00> : tensor<8x4xf32>
// CHECK-NEXT: return %[[C]]
func.func @view_of_splat() -> tensor<8x4xf32> {
  %c = arith.constant dense<2.5> : tensor<4xf32>
  %0 = harp.view %c <(d0, d1) -> (d1)> : tensor<4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

// Padding a splat with its own value is still a splat.
// CHECK-LABEL: func.func @pad_splat_with_itself
// CHECK-NEXT: %[[C:.*]] = arith.constant dense<1> : tensor<6xi32>
// CHECK-NEXT: return %[[C]]
func.func @pad_splat_with_itself() -> tensor<6xi32> {
  %c = arith.constant dense<1> : tensor<4xi32>
  %0 = harp.view %c <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, 4 - d0), pad = one>
      : tensor<4xi32> -> tensor<6xi32>
  return %0 : tensor<6xi32>
}

// -----

// CHECK-LABEL: func.func @transpose_constant
// CHECK-NEXT: %[[C:.*]] = arith.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi64>
// CHECK-NEXT: return %[[C]]
func.func @transpose_constant() -> tensor<3x2xi64> {
  %c = arith.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %0 = harp.view %c <(d0, d1) -> (d1, d0)> : tensor<2x3xi64> -> tensor<3x2xi64>
  return %0 : tensor<3x2xi64>
}

// -----

// Padding with -inf, a flip and a reshape of constants.
// CHECK-LABEL: func.func @pad_flip_reshape_constant
// CHECK-DAG: arith.constant dense<[0xFF800000, 1.000000e+00, 2.000000e+00, 3.000000e+00, 0xFF800000]> : tensor<5xf32>
// CHECK-DAG: arith.constant dense<[3.000000e+00, 2.000000e+00, 1.000000e+00]> : tensor<3xf32>
// CHECK-DAG: arith.constant dense<{{\[}}[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8>
func.func @pad_flip_reshape_constant() -> (tensor<5xf32>, tensor<3xf32>, tensor<3x2xi8>) {
  %c = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %0 = harp.view %c <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, 3 - d0), pad = -inf>
      : tensor<3xf32> -> tensor<5xf32>
  %1 = harp.view %c <(d0) -> (2 - d0)> : tensor<3xf32> -> tensor<3xf32>
  %i = arith.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi8>
  %2 = harp.view %i <(d0, d1) -> ((d0 * 2 + d1) floordiv 3, (d0 * 2 + d1) mod 3)>
      : tensor<2x3xi8> -> tensor<3x2xi8>
  return %0, %1, %2 : tensor<5xf32>, tensor<3xf32>, tensor<3x2xi8>
}

// -----

// Non-splat constants beyond 65536 result elements stay views.
// CHECK-LABEL: func.func @large_constant_view
// CHECK: harp.view
func.func @large_constant_view() -> tensor<300x300xi32> {
  %c = arith.constant dense<[1, 2, 3]> : tensor<3xi32>
  %0 = harp.view %c <(d0, d1) -> (d1 mod 3)> : tensor<3xi32> -> tensor<300x300xi32>
  return %0 : tensor<300x300xi32>
}

// -----

// CHECK-LABEL: func.func @contiguous_twice
// CHECK-NEXT: %[[C:.*]] = harp.contiguous %{{.*}} : tensor<4xf32>
// CHECK-NEXT: return %[[C]]
func.func @contiguous_twice(%v: tensor<4xf32>) -> tensor<4xf32> {
  %0 = harp.contiguous %v : tensor<4xf32>
  %1 = harp.contiguous %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @contiguous_constant
// CHECK-NEXT: %[[C:.*]] = arith.constant dense<3.000000e+00> : tensor<4xf32>
// CHECK-NEXT: return %[[C]]
func.func @contiguous_constant() -> tensor<4xf32> {
  %c = arith.constant dense<3.0> : tensor<4xf32>
  %0 = harp.contiguous %c : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Views are pure: an unused one is erased.
// CHECK-LABEL: func.func @dead_view
// CHECK-NOT: harp.view
func.func @dead_view(%v: tensor<4xf32>) {
  %0 = harp.view %v <(d0) -> (3 - d0)> : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// Two zero pads of 1 (4 -> 6 -> 8): the outer pad's constraints are implied
// by the inner ones read through the map, and go.
// CHECK-LABEL: func.func @pad_twice
// CHECK-NEXT: %[[V:.*]] = harp.view %{{.*}} <(d0) -> (d0 - 2), mask_ge = (d0) -> (d0 - 2, -d0 + 5)> : tensor<4xf32> -> tensor<8xf32>
// CHECK-NEXT: return %[[V]]
func.func @pad_twice(%v: tensor<4xf32>) -> tensor<8xf32> {
  %0 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, 4 - d0)>
      : tensor<4xf32> -> tensor<6xf32>
  %1 = harp.view %0 <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, 6 - d0)>
      : tensor<6xf32> -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// `pad = 0` and `pad = 0.0` are the zero pad: the two views compose.
// CHECK-LABEL: func.func @pad_spellings
// CHECK-NEXT: %[[V:.*]] = harp.view %{{.*}} <(d0) -> (-d0 + 4), mask_ge = (d0) -> (-d0 + 4, d0 - 1)> : tensor<4xf32> -> tensor<6xf32>
// CHECK-NEXT: return %[[V]]
func.func @pad_spellings(%v: tensor<4xf32>) -> tensor<6xf32> {
  %0 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, 4 - d0), pad = 0>
      : tensor<4xf32> -> tensor<6xf32>
  %1 = harp.view %0 <(d0) -> (5 - d0), mask_ge = (d0) -> (4 - d0), pad = 0.0>
      : tensor<6xf32> -> tensor<6xf32>
  return %1 : tensor<6xf32>
}

// -----

// map_reduce drops operands its region never reads and merges repeated ones.
// CHECK-LABEL: func.func @map_reduce_operands
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>)
// CHECK-NEXT: harp.map_reduce ins(%[[X]] : tensor<4xf32>) {
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32):
// CHECK-NEXT: arith.mulf %[[A]], %[[A]] : f32
func.func @map_reduce_operands(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = harp.map_reduce ins(%x, %y, %x : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: f32, %unused: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    harp.yield %m : f32
  } : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A reduction keeps one operand to define its domain, even unread.
// CHECK-LABEL: func.func @reduction_keeps_domain
// CHECK-NEXT: harp.map_reduce ins(%{{.*}} : tensor<4x3xf32>) {
// CHECK: } reduce(sum, dims = [1]) : tensor<4xf32>
func.func @reduction_keeps_domain(%x: tensor<4x3xf32>, %y: tensor<4x3xf32>) -> tensor<4xf32> {
  %0 = harp.map_reduce ins(%x, %y : tensor<4x3xf32>, tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %one = arith.constant 1.0 : f32
    harp.yield %one : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Without a reduction, unread operands all go: the result shape is the domain.
// CHECK-LABEL: func.func @all_unread
// CHECK-NEXT: harp.map_reduce {
func.func @all_unread(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = harp.map_reduce ins(%x : tensor<4xf32>) {
  ^bb0(%a: f32):
    %one = arith.constant 1.0 : f32
    harp.yield %one : f32
  } : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A map_reduce copying its operand is the operand; with a reduction it is not.
// CHECK-LABEL: func.func @identity_map_reduce
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>)
// CHECK-NEXT: %[[S:.*]] = harp.map_reduce ins(%[[X]] : tensor<4x3xf32>)
// CHECK: reduce(sum, dims = [1])
// CHECK: return %[[X]], %[[S]]
func.func @identity_map_reduce(%x: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>) {
  %0 = harp.map_reduce ins(%x : tensor<4x3xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } : tensor<4x3xf32>
  %1 = harp.map_reduce ins(%x : tensor<4x3xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<4xf32>
}

// -----

// A map_reduce whose only use is a permutation view computes its result in
// the permuted order: a linear layer's weight gradient (x^T @ dY)^T becomes
// dY^T @ x, its operands read through the permutation, the reduced dims
// after the parallel ones.
// CHECK-LABEL: func.func @computed_through_permutation
// CHECK-SAME: (%[[X:.*]]: tensor<5x6x8xf32>, %[[DY:.*]]: tensor<5x6x4xf32>)
// CHECK-DAG: %[[A:.*]] = harp.view %[[X]] <(d0, d1, d2, d3) -> (d2, d3, d1)> : tensor<5x6x8xf32> -> tensor<4x8x5x6xf32>
// CHECK-DAG: %[[B:.*]] = harp.view %[[DY]] <(d0, d1, d2, d3) -> (d2, d3, d0)> : tensor<5x6x4xf32> -> tensor<4x8x5x6xf32>
// CHECK: %[[R:.*]] = harp.map_reduce ins(%[[A]], %[[B]] : tensor<4x8x5x6xf32>, tensor<4x8x5x6xf32>)
// CHECK: reduce(sum, dims = [2, 3]) : tensor<4x8xf32>
// CHECK-NOT: harp.view
// CHECK: return %[[R]]
func.func @computed_through_permutation(%x: tensor<5x6x8xf32>, %dy: tensor<5x6x4xf32>) -> tensor<4x8xf32> {
  %a = harp.view %x <(d0, d1, d2, d3) -> (d2, d3, d0)> : tensor<5x6x8xf32> -> tensor<8x4x5x6xf32>
  %b = harp.view %dy <(d0, d1, d2, d3) -> (d2, d3, d1)> : tensor<5x6x4xf32> -> tensor<8x4x5x6xf32>
  %s = harp.map_reduce ins(%a, %b : tensor<8x4x5x6xf32>, tensor<8x4x5x6xf32>) {
  ^bb0(%p: f32, %q: f32):
    %m = arith.mulf %p, %q : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2, 3]) : tensor<8x4xf32>
  %t = harp.view %s <(d0, d1) -> (d1, d0)> : tensor<8x4xf32> -> tensor<4x8xf32>
  return %t : tensor<4x8xf32>
}

// -----

// Under keepdim the reduced dims move with the view; the index ops of the
// body name the permuted domain's dims.
// CHECK-LABEL: func.func @computed_through_permutation_keepdim
// CHECK: %[[V:.*]] = harp.view %{{.*}} <(d0, d1) -> (d1, d0)> : tensor<4x3xf32> -> tensor<3x4xf32>
// CHECK: harp.map_reduce ins(%[[V]] : tensor<3x4xf32>)
// CHECK: harp.index 1
// CHECK: reduce(max, dims = [0], keepdim) : tensor<1x4xf32>
// CHECK-NOT: harp.view
func.func @computed_through_permutation_keepdim(%x: tensor<4x3xf32>) -> tensor<1x4xf32> {
  %s = harp.map_reduce ins(%x : tensor<4x3xf32>) {
  ^bb0(%p: f32):
    %i = harp.index 0
    %c = arith.index_cast %i : index to i32
    %f = arith.sitofp %c : i32 to f32
    %m = arith.addf %p, %f : f32
    harp.yield %m : f32
  } reduce(max, dims = [1], keepdim) : tensor<4x1xf32>
  %t = harp.view %s <(d0, d1) -> (d1, d0)> : tensor<4x1xf32> -> tensor<1x4xf32>
  return %t : tensor<1x4xf32>
}

// -----

// Not where the map_reduce has other uses (its result is needed in its own
// order too), where the view is no permutation, or where the map_reduce
// reads an operand through a window (a convolution: its code depends on
// the order it computes in).
// CHECK-LABEL: func.func @not_computed_through_permutation
// CHECK: %[[S:.*]] = harp.map_reduce
// CHECK: harp.view %[[S]] <(d0, d1) -> (d1, d0)>
// CHECK: %[[E:.*]] = harp.map_reduce
// CHECK: harp.view %[[E]] <(d0, d1) -> (d1, 0)>
func.func @not_computed_through_permutation(%x: tensor<4x3xf32>) -> (tensor<3x4xf32>, tensor<4x3xf32>, tensor<3x4xf32>) {
  %s = harp.map_reduce ins(%x : tensor<4x3xf32>) {
  ^bb0(%p: f32):
    %m = arith.mulf %p, %p : f32
    harp.yield %m : f32
  } : tensor<4x3xf32>
  %t = harp.view %s <(d0, d1) -> (d1, d0)> : tensor<4x3xf32> -> tensor<3x4xf32>
  %e = harp.map_reduce ins(%x : tensor<4x3xf32>) {
  ^bb0(%p: f32):
    %m = arith.addf %p, %p : f32
    harp.yield %m : f32
  } : tensor<4x3xf32>
  %u = harp.view %e <(d0, d1) -> (d1, 0)> : tensor<4x3xf32> -> tensor<3x4xf32>
  return %t, %s, %u : tensor<3x4xf32>, tensor<4x3xf32>, tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func.func @window_not_computed_through_permutation
// CHECK: %[[C:.*]] = harp.map_reduce
// CHECK: reduce(sum, dims = [2])
// CHECK: harp.view %[[C]] <(d0, d1) -> (d1, d0)>
func.func @window_not_computed_through_permutation(%x: tensor<6x10xf32>, %w: tensor<3xf32>) -> tensor<8x6xf32> {
  %xw = harp.view %x <(d0, d1, d2) -> (d0, d1 + d2)> : tensor<6x10xf32> -> tensor<6x8x3xf32>
  %wb = harp.view %w <(d0, d1, d2) -> (d2)> : tensor<3xf32> -> tensor<6x8x3xf32>
  %c = harp.map_reduce ins(%xw, %wb : tensor<6x8x3xf32>, tensor<6x8x3xf32>) {
  ^bb0(%p: f32, %q: f32):
    %m = arith.mulf %p, %q : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<6x8xf32>
  %t = harp.view %c <(d0, d1) -> (d1, d0)> : tensor<6x8xf32> -> tensor<8x6xf32>
  return %t : tensor<8x6xf32>
}
