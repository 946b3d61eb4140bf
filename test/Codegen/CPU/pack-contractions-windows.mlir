// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-pack-contractions{vector-bits=512}))' --mlir-print-local-scope | FileCheck %s
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-pack-contractions{vector-bits=256}))' --mlir-print-local-scope | FileCheck %s
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-pack-contractions{vector-bits=128}))' --mlir-print-local-scope | FileCheck %s

// harp-pack-contractions on windows. Correlations: sums of products that read one
// operand through a window whose reduced dim is the long one (a
// convolution's weight gradient). The windowed operand is copied into a
// column tensor (the filter's dims flattened into rows, the reduced dims
// as columns), the sum becomes a matmul over (rows, output channels,
// reduced dims), whose right operand (dY, contiguous along a reduced dim)
// the pass then copies with its channels innermost, and the result is
// added to the kernel's init in the kernel's order.

#dy = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, f, oh, ow)>
#x = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, c, oh + kh, ow + kw)>
#w = affine_map<(f, c, kh, kw, n, oh, ow) -> (f, c, kh, kw)>

// CHECK-LABEL: func.func @weight_gradient
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x9x9xf32>, %[[DY:.*]]: tensor<2x5x7x7xf32>, %[[INIT:.*]]: tensor<5x3x3x3xf32>)
// CHECK: %[[COLS:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d0, d1 + d4, d2 + d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[X]] : tensor<2x3x9x9xf32>) outs(%{{.*}} : tensor<3x3x3x2x7x7xf32>)
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[COLS]] {{\[}}[0, 1, 2], [3], [4], [5]] : tensor<3x3x3x2x7x7xf32> into tensor<27x2x7x7xf32>
// CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<27x5xf32>)
// The matmul's reduced rows and columns (oh, ow) are consecutive in both
// operands: one k dim of 49.
// CHECK: %[[DYC:.*]] = tensor.collapse_shape %[[DY]] {{\[}}[0], [1], [2, 3]] : tensor<2x5x7x7xf32> into tensor<2x5x49xf32>
// CHECK: %[[FLATC:.*]] = tensor.collapse_shape %[[FLAT]] {{\[}}[0], [1], [2, 3]] : tensor<27x2x7x7xf32> into tensor<27x2x49xf32>
// CHECK: %[[DYT:.*]] = linalg.generic {{.*}} ins(%[[DYC]] : tensor<2x5x49xf32>) outs(%{{.*}} : tensor<2x49x5xf32>)
// CHECK: %[[MM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d2, d3, d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%[[DYT]], %[[FLATC]] : tensor<2x49x5xf32>, tensor<27x2x49xf32>) outs(%[[ZERO]] : tensor<27x5xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[R:.*]] = tensor.expand_shape %[[MM]] {{\[}}[0, 1, 2], [3]] output_shape [3, 3, 3, 5] : tensor<27x5xf32> into tensor<3x3x3x5xf32>
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d1, d2, d3, d0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], {{.*}} ins(%[[INIT]], %[[R]] : tensor<5x3x3x3xf32>, tensor<3x3x3x5xf32>)
// CHECK: arith.addf
// CHECK: return %[[SUM]]
func.func @weight_gradient(%x: tensor<2x3x9x9xf32>, %dy: tensor<2x5x7x7xf32>, %init: tensor<5x3x3x3xf32>) -> tensor<5x3x3x3xf32> {
  %0 = linalg.generic {indexing_maps = [#dy, #x, #w], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%dy, %x : tensor<2x5x7x7xf32>, tensor<2x3x9x9xf32>) outs(%init : tensor<5x3x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<5x3x3x3xf32>
  return %0 : tensor<5x3x3x3xf32>
}

// -----

// A strided 1x1 convolution's weight gradient reads every other pixel
// (2 oh, 2 ow: one reduced dim, scaled): the column tensor holds those
// pixels.
// CHECK-LABEL: func.func @strided_pointwise_gradient
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d0, d2 * 2, d3 * 2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>]{{.*}} outs(%{{.*}} : tensor<4x2x3x3xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]} {{.*}} outs(%{{.*}} : tensor<4x6xf32>)
#dy1 = affine_map<(f, c, n, oh, ow) -> (n, f, oh, ow)>
#x1 = affine_map<(f, c, n, oh, ow) -> (n, c, 2 * oh, 2 * ow)>
#w1 = affine_map<(f, c, n, oh, ow) -> (f, c)>
func.func @strided_pointwise_gradient(%x: tensor<2x4x6x6xf32>, %dy: tensor<2x6x3x3xf32>, %init: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %0 = linalg.generic {indexing_maps = [#dy1, #x1, #w1], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%dy, %x : tensor<2x6x3x3xf32>, tensor<2x4x6x6xf32>) outs(%init : tensor<6x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<6x4xf32>
  return %0 : tensor<6x4xf32>
}

// -----

// A convolution reads its image through the same window, but its long dim
// (oh) is the parallel one and the filter's (kh) is reduced: it keeps its
// window, for harp-rewrite-windows and register tiles over rows.
// CHECK-LABEL: func.func @convolution_untouched
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x3x9x9xf32>, tensor<5x3x3x3xf32>) outs(%{{.*}} : tensor<2x5x7x7xf32>)
#xc = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, c, oh + kh, ow + kw)>
#wc = affine_map<(n, f, oh, ow, c, kh, kw) -> (f, c, kh, kw)>
#yc = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, f, oh, ow)>
func.func @convolution_untouched(%x: tensor<2x3x9x9xf32>, %w: tensor<5x3x3x3xf32>, %init: tensor<2x5x7x7xf32>) -> tensor<2x5x7x7xf32> {
  %0 = linalg.generic {indexing_maps = [#xc, #wc, #yc], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<2x3x9x9xf32>, tensor<5x3x3x3xf32>) outs(%init : tensor<2x5x7x7xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x5x7x7xf32>
  return %0 : tensor<2x5x7x7xf32>
}

// -----

// A depthwise convolution's weight gradient: the channel is read by both
// operands and the result (a batch dim of the correlation), which the
// matmul form has no place for. It is left as it is.
// CHECK-LABEL: func.func @depthwise_gradient_untouched
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<4x3x3xf32>)
// CHECK-NOT: linalg.generic
#dyd = affine_map<(c, kh, kw, n, oh, ow) -> (n, c, oh, ow)>
#xd = affine_map<(c, kh, kw, n, oh, ow) -> (n, c, oh + kh, ow + kw)>
#wd = affine_map<(c, kh, kw, n, oh, ow) -> (c, kh, kw)>
func.func @depthwise_gradient_untouched(%x: tensor<2x4x9x9xf32>, %dy: tensor<2x4x7x7xf32>, %init: tensor<4x3x3xf32>) -> tensor<4x3x3xf32> {
  %0 = linalg.generic {indexing_maps = [#dyd, #xd, #wd], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%dy, %x : tensor<2x4x7x7xf32>, tensor<2x4x9x9xf32>) outs(%init : tensor<4x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x3x3xf32>
  return %0 : tensor<4x3x3xf32>
}

// -----

// Not a sum of products (a max over the window): left alone.
// CHECK-LABEL: func.func @window_max_untouched
// CHECK-NOT: tensor.collapse_shape
#dym = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, f, oh, ow)>
#xm = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, c, oh + kh, ow + kw)>
#wm = affine_map<(f, c, kh, kw, n, oh, ow) -> (f, c, kh, kw)>
func.func @window_max_untouched(%x: tensor<2x3x9x9xf32>, %dy: tensor<2x5x7x7xf32>, %init: tensor<5x3x3x3xf32>) -> tensor<5x3x3x3xf32> {
  %0 = linalg.generic {indexing_maps = [#dym, #xm, #wm], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%dy, %x : tensor<2x5x7x7xf32>, tensor<2x3x9x9xf32>) outs(%init : tensor<5x3x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.maximumf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<5x3x3x3xf32>
  return %0 : tensor<5x3x3x3xf32>
}

// -----

// A 1-d convolution over a transposed embedding reads its window (o + k)
// on the operand's middle dim, the channels (reduced) innermost: each
// lane of an output vector would be a load a row apart. The operand is
// copied with the window's dim innermost (a permutation) and the
// convolution reads the copy as an ordinary one.
// CHECK-LABEL: func.func @transposed_window
// CHECK-SAME: (%[[E:.*]]: tensor<2x12x4xf32>, %[[W:.*]]: tensor<6x4x3xf32>
// CHECK: %[[T:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>]{{.*}} ins(%[[E]] : tensor<2x12x4xf32>) outs(%{{.*}} : tensor<2x4x12xf32>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d2 + d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]{{.*}} ins(%[[T]], %[[W]] : tensor<2x4x12xf32>, tensor<6x4x3xf32>)
#et = affine_map<(n, f, o, c, k) -> (n, o + k, c)>
#wt = affine_map<(n, f, o, c, k) -> (f, c, k)>
#yt = affine_map<(n, f, o, c, k) -> (n, f, o)>
func.func @transposed_window(%e: tensor<2x12x4xf32>, %w: tensor<6x4x3xf32>, %init: tensor<2x6x10xf32>) -> tensor<2x6x10xf32> {
  %0 = linalg.generic {indexing_maps = [#et, #wt, #yt], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%e, %w : tensor<2x12x4xf32>, tensor<6x4x3xf32>) outs(%init : tensor<2x6x10xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x6x10xf32>
  return %0 : tensor<2x6x10xf32>
}

// -----

// A windowed operand contiguous along a row dim (channels last: a conv1d
// over a transposed embedding reads E[n, t + k, c]) keeps its rows
// innermost: the column tensor is Xc[n, t, k, c] (each (n, t) a
// contiguous block of E), the right operand of R^T[f, (k, c)]; the other
// operand, dY[n, f, t], becomes the left one, copied as [f, n, t] so that
// its reduced dims are one k (collapsed with Xc's into 14).
// CHECK-LABEL: func.func @channels_last_weight_gradient
// CHECK: %[[COLS:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1 + d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], {{.*}} ins(%arg0 : tensor<2x9x6xf32>) outs(%{{.*}} : tensor<2x7x3x6xf32>)
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[COLS]] {{\[}}[0], [1], [2, 3]] : tensor<2x7x3x6xf32> into tensor<2x7x18xf32>
// CHECK: %[[DYT:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, {{.*}} ins(%arg1 : tensor<2x5x7xf32>) outs(%{{.*}} : tensor<5x2x7xf32>)
// CHECK-DAG: %[[A:.*]] = tensor.collapse_shape %[[DYT]] {{\[}}[0], [1, 2]] : tensor<5x2x7xf32> into tensor<5x14xf32>
// CHECK-DAG: %[[B:.*]] = tensor.collapse_shape %[[FLAT]] {{\[}}[0, 1], [2]] : tensor<2x7x18xf32> into tensor<14x18xf32>
// CHECK: %[[MM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[A]], %[[B]] : tensor<5x14xf32>, tensor<14x18xf32>)
// CHECK: %[[R:.*]] = tensor.expand_shape %[[MM]] {{\[}}[0], [1, 2]] output_shape [5, 3, 6] : tensor<5x18xf32> into tensor<5x3x6xf32>
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], {{.*}} ins(%arg2, %[[R]] : tensor<5x6x3xf32>, tensor<5x3x6xf32>)
#dyc = affine_map<(f, c, k, n, t) -> (n, f, t)>
#ec = affine_map<(f, c, k, n, t) -> (n, t + k, c)>
#wc = affine_map<(f, c, k, n, t) -> (f, c, k)>
func.func @channels_last_weight_gradient(%e: tensor<2x9x6xf32>, %dy: tensor<2x5x7xf32>, %init: tensor<5x6x3xf32>) -> tensor<5x6x3xf32> {
  %0 = linalg.generic {indexing_maps = [#dyc, #ec, #wc], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%dy, %e : tensor<2x5x7xf32>, tensor<2x9x6xf32>) outs(%init : tensor<5x6x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<5x6x3xf32>
  return %0 : tensor<5x6x3xf32>
}

// -----

// Rows of whole vectors (ow = 32 at 4, 8 and 16 lanes) whose tile of one
// image fits L1: harp-tile-and-vectorize reads the correlation in place
// (correlationTile), so no column tensor is made.
// CHECK-LABEL: func.func @weight_gradient_in_place
// CHECK-NOT: tensor.collapse_shape
// CHECK: %[[R:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%arg1, %arg0 : tensor<2x5x7x32xf32>, tensor<2x3x9x34xf32>)
// CHECK-NEXT: ^bb0
// CHECK: return %[[R]]
#dy = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, f, oh, ow)>
#x = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, c, oh + kh, ow + kw)>
#w = affine_map<(f, c, kh, kw, n, oh, ow) -> (f, c, kh, kw)>
func.func @weight_gradient_in_place(%x: tensor<2x3x9x34xf32>, %dy: tensor<2x5x7x32xf32>, %init: tensor<5x3x3x3xf32>) -> tensor<5x3x3x3xf32> {
  %0 = linalg.generic {indexing_maps = [#dy, #x, #w], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%dy, %x : tensor<2x5x7x32xf32>, tensor<2x3x9x34xf32>) outs(%init : tensor<5x3x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<5x3x3x3xf32>
  return %0 : tensor<5x3x3x3xf32>
}

// -----

// Rows of 30 (no whole number of vectors at any of the widths) and rows
// whose tile of one image outgrows L1 (4 x 66 x 66 floats of X, 70 KB)
// keep the column tensor.
// CHECK-LABEL: func.func @weight_gradient_partial_rows
// CHECK: tensor.collapse_shape
// CHECK-LABEL: func.func @weight_gradient_large_image
// CHECK: tensor.collapse_shape
#dy = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, f, oh, ow)>
#x = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, c, oh + kh, ow + kw)>
#w = affine_map<(f, c, kh, kw, n, oh, ow) -> (f, c, kh, kw)>
func.func @weight_gradient_partial_rows(%x: tensor<2x3x9x32xf32>, %dy: tensor<2x5x7x30xf32>, %init: tensor<5x3x3x3xf32>) -> tensor<5x3x3x3xf32> {
  %0 = linalg.generic {indexing_maps = [#dy, #x, #w], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%dy, %x : tensor<2x5x7x30xf32>, tensor<2x3x9x32xf32>) outs(%init : tensor<5x3x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<5x3x3x3xf32>
  return %0 : tensor<5x3x3x3xf32>
}
func.func @weight_gradient_large_image(%x: tensor<2x8x66x66xf32>, %dy: tensor<2x8x64x64xf32>, %init: tensor<8x8x3x3xf32>) -> tensor<8x8x3x3xf32> {
  %0 = linalg.generic {indexing_maps = [#dy, #x, #w], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%dy, %x : tensor<2x8x64x64xf32>, tensor<2x8x66x66xf32>) outs(%init : tensor<8x8x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x8x3x3xf32>
  return %0 : tensor<8x8x3x3xf32>
}

// -----

// A strided weight gradient (X[n, c, 2 oh + kh, 2 ow + kw]) whose dY is the
// larger operand, rows of whole vectors (16): X's rows are read every
// other element, so it keeps the column tensor rather than register tiles
// of dot products.
// CHECK-LABEL: func.func @strided_weight_gradient_keeps_columns
// CHECK: tensor.collapse_shape
#dys = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, f, oh, ow)>
#xs = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, c, 2 * oh + kh, 2 * ow + kw)>
#ws = affine_map<(f, c, kh, kw, n, oh, ow) -> (f, c, kh, kw)>
func.func @strided_weight_gradient_keeps_columns(%x: tensor<2x3x33x33xf32>, %dy: tensor<2x16x16x16xf32>, %init: tensor<16x3x3x3xf32>) -> tensor<16x3x3x3xf32> {
  %0 = linalg.generic {indexing_maps = [#xs, #dys, #ws], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %dy : tensor<2x3x33x33xf32>, tensor<2x16x16x16xf32>) outs(%init : tensor<16x3x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<16x3x3x3xf32>
  return %0 : tensor<16x3x3x3xf32>
}
