// RUN: harp-opt %s --harp-autodiff --split-input-file | FileCheck %s

// Views' adjoints, read from the generated functions. The forward views are
// cloned first; each check follows the cotangent.

// Transpose: the inverse view.
// CHECK-LABEL: func.func private @__harp_grad_transpose_1
// CHECK-SAME: (%{{.*}}: tensor<3x4xf32>, %[[S:.*]]: tensor<4x3xf32>)
// CHECK: %[[G:.*]] = harp.view %[[S]] <(d0, d1) -> (d1, d0)> : tensor<4x3xf32> -> tensor<3x4xf32>
// CHECK: return %{{.*}}, %[[G]]
func.func @transpose(%x: tensor<3x4xf32>) -> tensor<4x3xf32> {
  %t = harp.view %x <(d0, d1) -> (d1, d0)> : tensor<3x4xf32> -> tensor<4x3xf32>
  return %t : tensor<4x3xf32>
}
func.func @use_transpose(%x: tensor<3x4xf32>, %s: tensor<4x3xf32>) -> tensor<3x4xf32> {
  %y, %g = harp.autodiff @transpose(%x) seed(%s : tensor<4x3xf32>) wrt [0] : (tensor<3x4xf32>) -> (tensor<4x3xf32>, tensor<3x4xf32>)
  return %g : tensor<3x4xf32>
}

// -----

// Broadcast: a sum over the broadcast dim.
// CHECK-LABEL: func.func private @__harp_grad_broadcast_1
// CHECK-SAME: (%{{.*}}: tensor<4xf32>, %[[S:.*]]: tensor<3x4xf32>)
// CHECK: %[[T:.*]] = harp.view %[[S]] <(d0, d1) -> (d1, d0)> : tensor<3x4xf32> -> tensor<4x3xf32>
// CHECK: %[[G:.*]] = harp.map_reduce ins(%[[T]] : tensor<4x3xf32>)
// CHECK: reduce(sum, dims = [1]) : tensor<4xf32>
// CHECK: return %{{.*}}, %[[G]]
func.func @broadcast(%x: tensor<4xf32>) -> tensor<3x4xf32> {
  %b = harp.view %x <(d0, d1) -> (d1)> : tensor<4xf32> -> tensor<3x4xf32>
  return %b : tensor<3x4xf32>
}
func.func @use_broadcast(%x: tensor<4xf32>, %s: tensor<3x4xf32>) -> tensor<4xf32> {
  %y, %g = harp.autodiff @broadcast(%x) seed(%s : tensor<3x4xf32>) wrt [0] : (tensor<4xf32>) -> (tensor<3x4xf32>, tensor<4xf32>)
  return %g : tensor<4xf32>
}

// -----

// Slice with a step: the cotangent placed back, zero between the picks (the
// divisibility constraint implies the range ones, which canonicalization
// drops).
// CHECK-LABEL: func.func private @__harp_grad_slice_1
// CHECK-SAME: (%{{.*}}: tensor<9xf32>, %[[S:.*]]: tensor<3xf32>)
// CHECK: %[[G:.*]] = harp.view %[[S]] <(d0) -> ((d0 - 1) floordiv 3), mask_eq = (d0) -> (d0 - ((d0 - 1) floordiv 3) * 3 - 1)> : tensor<3xf32> -> tensor<9xf32>
// CHECK: return %{{.*}}, %[[G]]
func.func @slice(%x: tensor<9xf32>) -> tensor<3xf32> {
  %v = harp.view %x <(d0) -> (d0 * 3 + 1)> : tensor<9xf32> -> tensor<3xf32>
  return %v : tensor<3xf32>
}
func.func @use_slice(%x: tensor<9xf32>, %s: tensor<3xf32>) -> tensor<9xf32> {
  %y, %g = harp.autodiff @slice(%x) seed(%s : tensor<3xf32>) wrt [0] : (tensor<9xf32>) -> (tensor<3xf32>, tensor<9xf32>)
  return %g : tensor<9xf32>
}

// -----

// Flip: the same flip.
// CHECK-LABEL: func.func private @__harp_grad_flip_1
// CHECK: harp.view %{{.*}} <(d0) -> (-d0 + 4)> : tensor<5xf32> -> tensor<5xf32>
func.func @flip(%x: tensor<5xf32>) -> tensor<5xf32> {
  %v = harp.view %x <(d0) -> (4 - d0)> : tensor<5xf32> -> tensor<5xf32>
  return %v : tensor<5xf32>
}
func.func @use_flip(%x: tensor<5xf32>, %s: tensor<5xf32>) -> tensor<5xf32> {
  %y, %g = harp.autodiff @flip(%x) seed(%s : tensor<5xf32>) wrt [0] : (tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>)
  return %g : tensor<5xf32>
}

// -----

// Pad: a slice of the cotangent (its mask holds on the whole source).
// CHECK-LABEL: func.func private @__harp_grad_pad_1
// CHECK-SAME: (%{{.*}}: tensor<4xf32>, %[[S:.*]]: tensor<6xf32>)
// CHECK: %[[G:.*]] = harp.view %[[S]] <(d0) -> (d0 + 1)> : tensor<6xf32> -> tensor<4xf32>
func.func @pad(%x: tensor<4xf32>) -> tensor<6xf32> {
  %v = harp.view %x <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = -inf> : tensor<4xf32> -> tensor<6xf32>
  return %v : tensor<6xf32>
}
func.func @use_pad(%x: tensor<4xf32>, %s: tensor<6xf32>) -> tensor<4xf32> {
  %y, %g = harp.autodiff @pad(%x) seed(%s : tensor<6xf32>) wrt [0] : (tensor<4xf32>) -> (tensor<6xf32>, tensor<4xf32>)
  return %g : tensor<4xf32>
}

// -----

// Reshape: the inverse reshape.
// CHECK-LABEL: func.func private @__harp_grad_reshape_1
// CHECK-SAME: (%{{.*}}: tensor<3x4xf32>, %[[S:.*]]: tensor<2x6xf32>)
// CHECK: harp.view %[[S]] <(d0, d1) -> ((d0 * 4 + d1) floordiv 6, (d0 * 4 + d1) mod 6)> : tensor<2x6xf32> -> tensor<3x4xf32>
func.func @reshape(%x: tensor<3x4xf32>) -> tensor<2x6xf32> {
  %v = harp.view %x <(d0, d1) -> ((d0 * 6 + d1) floordiv 4, (d0 * 6 + d1) mod 4)> : tensor<3x4xf32> -> tensor<2x6xf32>
  return %v : tensor<2x6xf32>
}
func.func @use_reshape(%x: tensor<3x4xf32>, %s: tensor<2x6xf32>) -> tensor<3x4xf32> {
  %y, %g = harp.autodiff @reshape(%x) seed(%s : tensor<2x6xf32>) wrt [0] : (tensor<3x4xf32>) -> (tensor<2x6xf32>, tensor<3x4xf32>)
  return %g : tensor<3x4xf32>
}

// -----

// Unfold (overlapping windows, s = 2 o + k) over a long input: a fold per
// phase of s, no division. The even elements s = 2 m read the
// taps k = 2 t of windows o = m - t, the odd ones s = 2 m + 1 the tap k = 1
// of window m; each phase is a plain window sum, and the two are stacked
// and interleaved back by one view, copied once.
// CHECK-LABEL: func.func private @__harp_grad_unfold_1
// CHECK-SAME: (%{{.*}}: tensor<21847xf32>, %[[S:.*]]: tensor<10923x3xf32>)
// CHECK: %[[EVEN:.*]] = harp.view %[[S]] <(d0, d1) -> (d0 - d1, d1 * 2), mask_ge = (d0, d1) -> (d0 - d1, -d0 + d1 + 10922)> : tensor<10923x3xf32> -> tensor<10924x2xf32>
// CHECK: %[[E:.*]] = harp.map_reduce ins(%[[EVEN]] : tensor<10924x2xf32>)
// CHECK: reduce(sum, dims = [1]) : tensor<10924xf32>
// CHECK: %[[ODD:.*]] = harp.view %[[S]] <(d0, d1) -> (d0 - d1, d1 * 2 + 1), mask_ge = (d0, d1) -> (-d0 + d1 + 10922)> : tensor<10923x3xf32> -> tensor<10924x1xf32>
// CHECK: %[[O:.*]] = harp.map_reduce ins(%[[ODD]] : tensor<10924x1xf32>)
// CHECK: reduce(sum, dims = [1]) : tensor<10924xf32>
// CHECK: %[[E1:.*]] = harp.view %[[E]] <(d0, d1) -> (d1)> : tensor<10924xf32> -> tensor<1x10924xf32>
// CHECK: %[[O1:.*]] = harp.view %[[O]] <(d0, d1) -> (d1)> : tensor<10924xf32> -> tensor<1x10924xf32>
// CHECK: %[[STACK:.*]] = harp.concat dim(0) %[[E1]], %[[O1]] : (tensor<1x10924xf32>, tensor<1x10924xf32>) -> tensor<2x10924xf32>
// CHECK: %[[BACK:.*]] = harp.view %[[STACK]] <(d0) -> (d0 mod 2, d0 floordiv 2)> : tensor<2x10924xf32> -> tensor<21847xf32>
// CHECK: harp.contiguous %[[BACK]] : tensor<21847xf32>
// CHECK-NOT: harp.scatter_add
func.func @unfold(%x: tensor<21847xf32>) -> tensor<10923x3xf32> {
  %v = harp.view %x <(d0, d1) -> (d0 * 2 + d1)> : tensor<21847xf32> -> tensor<10923x3xf32>
  return %v : tensor<10923x3xf32>
}
func.func @use_unfold(%x: tensor<21847xf32>, %s: tensor<10923x3xf32>) -> tensor<21847xf32> {
  %y, %g = harp.autodiff @unfold(%x) seed(%s : tensor<10923x3xf32>) wrt [0] : (tensor<21847xf32>) -> (tensor<10923x3xf32>, tensor<21847xf32>)
  return %g : tensor<21847xf32>
}

// -----

// A small window (under 2^15 elements) keeps the one fold: each phase would
// be a kernel to compile for a fold of microseconds. Each source element s
// reads window o = (s - k) / 2 for every tap k where that is an integer in
// range, summed over the taps.
// CHECK-LABEL: func.func private @__harp_grad_small_unfold_1
// CHECK-SAME: (%{{.*}}: tensor<10xf32>, %[[S:.*]]: tensor<4x3xf32>)
// CHECK: %[[F:.*]] = harp.view %[[S]] <(d0, d1) -> ((d0 - d1) floordiv 2, d1), mask_ge = (d0, d1) -> ((d0 - d1) floordiv 2, -((d0 - d1) floordiv 2) + 3), mask_eq = (d0, d1) -> ((d0 - d1) mod 2)> : tensor<4x3xf32> -> tensor<10x3xf32>
// CHECK: harp.map_reduce ins(%[[F]] : tensor<10x3xf32>)
// CHECK: reduce(sum, dims = [1]) : tensor<10xf32>
// CHECK-NOT: harp.concat
func.func @small_unfold(%x: tensor<10xf32>) -> tensor<4x3xf32> {
  %v = harp.view %x <(d0, d1) -> (d0 * 2 + d1)> : tensor<10xf32> -> tensor<4x3xf32>
  return %v : tensor<4x3xf32>
}
func.func @use_small_unfold(%x: tensor<10xf32>, %s: tensor<4x3xf32>) -> tensor<10xf32> {
  %y, %g = harp.autodiff @small_unfold(%x) seed(%s : tensor<4x3xf32>) wrt [0] : (tensor<10xf32>) -> (tensor<4x3xf32>, tensor<10xf32>)
  return %g : tensor<10xf32>
}

// Windows of 2 with a stride of 3 (s = 3 o + k): phase 0 takes tap 0,
// phase 1 tap 1 and phase 2 none (zeros); no window covers s = 3 m + 2.
// CHECK-LABEL: func.func private @__harp_grad_gaps_1
// CHECK-SAME: (%{{.*}}: tensor<49152xf32>, %[[S:.*]]: tensor<16384x2xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<1x16384xf32>
// CHECK: harp.view %[[S]] <(d0, d1) -> (d0 - d1, d1 * 3)> : tensor<16384x2xf32> -> tensor<16384x1xf32>
// CHECK: harp.view %[[S]] <(d0, d1) -> (d0 - d1, d1 * 3 + 1)> : tensor<16384x2xf32> -> tensor<16384x1xf32>
// CHECK: %[[STACK:.*]] = harp.concat dim(0) %{{.*}}, %{{.*}}, %[[ZERO]] : (tensor<1x16384xf32>, tensor<1x16384xf32>, tensor<1x16384xf32>) -> tensor<3x16384xf32>
// CHECK: %[[BACK:.*]] = harp.view %[[STACK]] <(d0) -> (d0 mod 3, d0 floordiv 3)> : tensor<3x16384xf32> -> tensor<49152xf32>
// CHECK: harp.contiguous %[[BACK]] : tensor<49152xf32>
func.func @gaps(%x: tensor<49152xf32>) -> tensor<16384x2xf32> {
  %v = harp.view %x <(d0, d1) -> (d0 * 3 + d1)> : tensor<49152xf32> -> tensor<16384x2xf32>
  return %v : tensor<16384x2xf32>
}
func.func @use_gaps(%x: tensor<49152xf32>, %s: tensor<16384x2xf32>) -> tensor<49152xf32> {
  %y, %g = harp.autodiff @gaps(%x) seed(%s : tensor<16384x2xf32>) wrt [0] : (tensor<49152xf32>) -> (tensor<16384x2xf32>, tensor<49152xf32>)
  return %g : tensor<49152xf32>
}

// -----

// A diagonal reads one result dim in two source indices: scatter-add to
// the linear source index.
// CHECK-LABEL: func.func private @__harp_grad_diagonal_1
// CHECK: %[[IDX:.*]] = harp.map_reduce {
// CHECK: harp.index 0
// CHECK: } : tensor<3xi64>
// CHECK: harp.scatter_add %{{.*}} into %{{.*}}[%{{.*}}] dim(0) : tensor<3xf32> into tensor<9xf32>[tensor<3xi64>]
func.func @diagonal(%x: tensor<3x3xf32>) -> tensor<3xf32> {
  %v = harp.view %x <(d0) -> (d0, d0)> : tensor<3x3xf32> -> tensor<3xf32>
  return %v : tensor<3xf32>
}
func.func @use_diagonal(%x: tensor<3x3xf32>, %s: tensor<3xf32>) -> tensor<3x3xf32> {
  %y, %g = harp.autodiff @diagonal(%x) seed(%s : tensor<3xf32>) wrt [0] : (tensor<3x3xf32>) -> (tensor<3xf32>, tensor<3x3xf32>)
  return %g : tensor<3x3xf32>
}

// -----

// A triangular mask: the cotangent through the same mask.
// CHECK-LABEL: func.func private @__harp_grad_tril_1
// CHECK-SAME: (%{{.*}}: tensor<3x3xf32>, %[[S:.*]]: tensor<3x3xf32>)
// CHECK: harp.view %[[S]] <(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d0 - d1)> : tensor<3x3xf32> -> tensor<3x3xf32>
func.func @tril(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %v = harp.view %x <(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d0 - d1), pad = -inf> : tensor<3x3xf32> -> tensor<3x3xf32>
  return %v : tensor<3x3xf32>
}
func.func @use_tril(%x: tensor<3x3xf32>, %s: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %y, %g = harp.autodiff @tril(%x) seed(%s : tensor<3x3xf32>) wrt [0] : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>)
  return %g : tensor<3x3xf32>
}
