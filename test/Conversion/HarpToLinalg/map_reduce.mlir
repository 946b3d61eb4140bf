// RUN: harp-opt %s --convert-harp-to-linalg --split-input-file | FileCheck %s

// Each map_reduce becomes one linalg.generic; views feeding it become
// indexing maps or masked reads in the body, never copies.

// CHECK-DAG: #[[T:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @transpose_add
// CHECK-SAME: (%[[X:.*]]: tensor<3x4xf32>, %[[Y:.*]]: tensor<4x3xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x3xf32>
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[T]], #[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[Y]] : tensor<3x4xf32>, tensor<4x3xf32>) outs(%[[E]] : tensor<4x3xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[S:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK: return %[[G]]
// CHECK-NOT: linalg.generic
// CHECK-NOT: harp.
func.func @transpose_add(%x: tensor<3x4xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %t = harp.view %x <(d0, d1) -> (d1, d0)> : tensor<3x4xf32> -> tensor<4x3xf32>
  %s = harp.map_reduce ins(%t, %y : tensor<4x3xf32>, tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    harp.yield %c : f32
  } : tensor<4x3xf32>
  return %s : tensor<4x3xf32>
}

// -----

// A sum reduction: filled init, reduction iterator, accumulate in the body.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @row_sum
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[F:.*]] = linalg.fill ins(%[[Z]] : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: outs(%[[F]] : tensor<4xf32>)
// CHECK: ^bb0(%[[V:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[SQ:.*]] = arith.mulf %[[V]], %[[V]] : f32
// CHECK: %[[R:.*]] = arith.addf %[[ACC]], %[[SQ]] : f32
// CHECK: linalg.yield %[[R]]
func.func @row_sum(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %s = harp.map_reduce ins(%x : tensor<4x8xf32>) {
  ^bb0(%a: f32):
    %sq = arith.mulf %a, %a : f32
    harp.yield %sq : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// keepdim: the kernel drops the dim, an expand_shape restores it (free).
// CHECK-LABEL: func.func @max_keepdim
// CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[NEG]] : f32)
// CHECK: arith.maximumf
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
func.func @max_keepdim(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %s = harp.map_reduce ins(%x : tensor<4x8xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(max, dims = [1], keepdim) : tensor<4x1xf32>
  return %s : tensor<4x1xf32>
}

// -----

// Integer, boolean and unsigned combiners and their identities.
// CHECK-LABEL: func.func @int_kinds
// CHECK-DAG: arith.constant -2147483648 : i32
// CHECK-DAG: arith.maxsi
// CHECK-DAG: arith.constant true
// CHECK-DAG: arith.andi
// CHECK-DAG: arith.constant -1 : i32
// CHECK-DAG: arith.minui
func.func @int_kinds(%x: tensor<4xi32>, %b: tensor<4xi1>) -> (tensor<i32>, tensor<i1>, tensor<i32>) {
  %m = harp.map_reduce ins(%x : tensor<4xi32>) {
  ^bb0(%a: i32):
    harp.yield %a : i32
  } reduce(max, dims = [0]) : tensor<i32>
  %all = harp.map_reduce ins(%b : tensor<4xi1>) {
  ^bb0(%a: i1):
    harp.yield %a : i1
  } reduce(min, dims = [0]) : tensor<i1>
  %u = harp.map_reduce ins(%x : tensor<4xi32>) {
  ^bb0(%a: i32):
    harp.yield %a : i32
  } reduce(umin, dims = [0]) : tensor<i32>
  return %m, %all, %u : tensor<i32>, tensor<i1>, tensor<i32>
}

// -----

// harp.index becomes linalg.index; no operands: the output sets the domain.
// CHECK-LABEL: func.func @iota
// CHECK: linalg.generic {indexing_maps = [#{{.*}}], iterator_types = ["parallel", "parallel"]} outs(
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[J:.*]] = linalg.index 1 : index
// CHECK: arith.addi %[[I]], %[[J]] : index
func.func @iota() -> tensor<3x5xi64> {
  %0 = harp.map_reduce {
    %i = harp.index 0
    %j = harp.index 1
    %s = arith.addi %i, %j : index
    %v = arith.index_cast %s : index to i64
    harp.yield %v : i64
  } : tensor<3x5xi64>
  return %0 : tensor<3x5xi64>
}

// -----

// A masked view whose mask holds exactly where it reads inside its source
// is a padding: a tensor.pad copy (with the pad value) read through the
// shifted map, no mask in the body.
// CHECK-LABEL: func.func @padded
// CHECK-SAME: (%[[V:.*]]: tensor<4xf32>)
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[P:.*]] = tensor.pad %[[V]] low[1] high[1]
// CHECK: tensor.yield %[[ONE]] : f32
// CHECK: } : tensor<4xf32> to tensor<6xf32>
// CHECK: linalg.generic {{.*}} ins(%[[P]] : tensor<6xf32>)
// CHECK-NOT: arith.select
// CHECK: math.exp
func.func @padded(%v: tensor<4xf32>) -> tensor<6xf32> {
  %p = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = one>
      : tensor<4xf32> -> tensor<6xf32>
  %e = harp.map_reduce ins(%p : tensor<6xf32>) {
  ^bb0(%a: f32):
    %x = math.exp %a : f32
    harp.yield %x : f32
  } : tensor<6xf32>
  return %e : tensor<6xf32>
}

// -----

// Any other mask (here a causal one: it hides in-bounds elements) is read
// in the body: clamped extract, mask, select.
// CHECK-DAG: #[[SHIFT:.*]] = affine_map<(d0) -> (d0 - 1)>
// CHECK-LABEL: func.func @masked
// CHECK-SAME: (%[[V:.*]]: tensor<4xf32>)
// CHECK-NOT: tensor.pad
// CHECK: linalg.generic
// CHECK-NOT: ins(
// CHECK: %[[I:.*]] = linalg.index 0
// CHECK: %[[AT:.*]] = affine.apply #[[SHIFT]](%[[I]])
// CHECK: %[[LO:.*]] = arith.maxsi %[[AT]], %{{.*}} : index
// CHECK: %[[C:.*]] = arith.minsi %[[LO]], %{{.*}} : index
// CHECK: %[[E:.*]] = tensor.extract %[[V]][%[[C]]] : tensor<4xf32>
// CHECK: %[[IN:.*]] = arith.cmpi sge
// CHECK: %[[SEL:.*]] = arith.select %[[IN]], %[[E]], %{{.*}} : f32
// CHECK: math.exp %[[SEL]]
func.func @masked(%v: tensor<4xf32>) -> tensor<4xf32> {
  %p = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 2), pad = one>
      : tensor<4xf32> -> tensor<4xf32>
  %e = harp.map_reduce ins(%p : tensor<4xf32>) {
  ^bb0(%a: f32):
    %x = math.exp %a : f32
    harp.yield %x : f32
  } : tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

// Loops read only through compound indices (the k of an unfold) get a
// tiny carrier operand that states their range.
// CHECK-DAG: #[[WIN:.*]] = affine_map<(d0, d1, d2) -> (d0 * 2 + d2)>
// CHECK-DAG: #[[CARRY:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @unfold_sum
// (The windows reach element 8: the image is cut to its first 9.)
// CHECK: %[[X:.*]] = tensor.extract_slice %arg0[0] [9] [1] : tensor<10xf32> to tensor<9xf32>
// CHECK: %[[K:.*]] = tensor.empty() : tensor<3xi8>
// CHECK: linalg.generic {indexing_maps = [#[[WIN]], #[[CARRY]], #{{.*}}]
// CHECK-SAME: ins(%[[X]], %[[K]] : tensor<9xf32>, tensor<3xi8>)
func.func @unfold_sum(%x: tensor<10xf32>) -> tensor<4x2xf32> {
  %u = harp.view %x <(d0, d1, d2) -> (d0 * 2 + d2)> : tensor<10xf32> -> tensor<4x2x3xf32>
  %s = harp.map_reduce ins(%u : tensor<4x2x3xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [2]) : tensor<4x2xf32>
  return %s : tensor<4x2xf32>
}

// -----

// A view reading a prefix of a larger dim with the bare loop index: the
// source is cut to the loop's size first (extract_slice, no copy).
// CHECK-LABEL: func.func @prefix
// CHECK: %[[S:.*]] = tensor.extract_slice %{{.*}}[0] [3] [1] : tensor<8xf32> to tensor<3xf32>
// CHECK: linalg.generic {{.*}} ins(%[[S]] : tensor<3xf32>)
func.func @prefix(%x: tensor<8xf32>) -> tensor<3xf32> {
  %v = harp.view %x <(d0) -> (d0)> : tensor<8xf32> -> tensor<3xf32>
  %s = harp.map_reduce ins(%v : tensor<3xf32>) {
  ^bb0(%a: f32):
    %n = arith.negf %a : f32
    harp.yield %n : f32
  } : tensor<3xf32>
  return %s : tensor<3xf32>
}

// -----

// A bool operand is read as an i8 copy (made by a kernel over the source,
// here the [4, 5] mask, not the [3, 4, 5] domain) and narrowed in the body,
// so harp-vectorize can vectorize the kernel doing the work.
// CHECK-LABEL: func.func @bool_mask
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x5xi1>) outs(%{{.*}} : tensor<4x5xi8>)
// CHECK: arith.extui %{{.*}} : i1 to i8
// CHECK: linalg.generic {{.*}} ins(%[[W]], %arg1 : tensor<4x5xi8>, tensor<3x4x5xf32>)
// CHECK: %[[B:.*]] = arith.trunci %{{.*}} : i8 to i1
// CHECK: arith.select %[[B]]
func.func @bool_mask(%m: tensor<4x5xi1>, %x: tensor<3x4x5xf32>) -> tensor<3x4x5xf32> {
  %b = harp.view %m <(d0, d1, d2) -> (d1, d2)> : tensor<4x5xi1> -> tensor<3x4x5xi1>
  %r = harp.map_reduce ins(%b, %x : tensor<3x4x5xi1>, tensor<3x4x5xf32>) {
  ^bb0(%c: i1, %v: f32):
    %z = arith.constant 0.0 : f32
    %s = arith.select %c, %v, %z : f32
    harp.yield %s : f32
  } : tensor<3x4x5xf32>
  return %r : tensor<3x4x5xf32>
}

// -----

// A bool computed by an element-wise map_reduce (a one-hot comparison) and
// read by a kernel kept apart from it (a reduction; it is also returned):
// the reader's i8 copy is the comparison again yielding i8, over the
// comparison's own sources, never a copy of the stored i1 tensor (a
// kernel writing i1 stays scalar).
// CHECK-LABEL: func.func @computed_bool
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<6xi64>, tensor<7xi64>) outs(%{{.*}} : tensor<6x7xi8>)
// CHECK-NEXT: ^bb0(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i8):
// CHECK-NEXT: %[[C:.*]] = arith.cmpi eq
// CHECK-NEXT: %[[E:.*]] = arith.extui %[[C]] : i1 to i8
// CHECK-NEXT: linalg.yield %[[E]] : i8
// CHECK: linalg.generic {{.*}} ins(%[[W]], %arg2 : tensor<6x7xi8>, tensor<6x7xf32>)
// CHECK-NOT: ins(%{{.*}} : tensor<6x7xi1>)
// CHECK: return
func.func @computed_bool(%t: tensor<6xi64>, %r: tensor<7xi64>, %x: tensor<6x7xf32>) -> (tensor<6xf32>, tensor<6x7xi1>) {
  %a = harp.view %t <(d0, d1) -> (d0)> : tensor<6xi64> -> tensor<6x7xi64>
  %b = harp.view %r <(d0, d1) -> (d1)> : tensor<7xi64> -> tensor<6x7xi64>
  %m = harp.map_reduce ins(%a, %b : tensor<6x7xi64>, tensor<6x7xi64>) {
  ^bb0(%p: i64, %q: i64):
    %c = arith.cmpi eq, %p, %q : i64
    harp.yield %c : i1
  } : tensor<6x7xi1>
  %y = harp.map_reduce ins(%m, %x : tensor<6x7xi1>, tensor<6x7xf32>) {
  ^bb0(%p: i1, %q: f32):
    %z = arith.constant 0.0 : f32
    %s = arith.select %p, %q, %z : f32
    harp.yield %s : f32
  } reduce(sum, dims = [1]) : tensor<6xf32>
  return %y, %m : tensor<6xf32>, tensor<6x7xi1>
}

// -----

// A convolution's input gradient (harp-fuse's fold of the column tensor):
// the window over the output gradient reads backwards (y - ky), the filter
// forwards. The kernel runs ky and kx backwards, so the window reads
// forwards from the padded gradient (y + ky') and the filter is read
// through a copy of it reversed along its window dims, made once.
// CHECK-DAG: #[[FLIP:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, -d2 + 2, -d3 + 2)>
// CHECK-DAG: #[[ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[FILTER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d6, d1, d4, d5)>
// CHECK-DAG: #[[WINDOW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d6, d2 + d4, d3 + d5)>
// CHECK-LABEL: func.func @conv_input_gradient
// CHECK: %[[PADDED:.*]] = tensor.pad %arg1 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[REVERSED:.*]] = linalg.generic {indexing_maps = [#[[FLIP]], #[[ID4]]], {{.*}}} ins(%arg0 : tensor<4x3x3x3xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[FILTER]], #[[WINDOW]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[REVERSED]], %[[PADDED]] : tensor<4x3x3x3xf32>, tensor<2x4x7x7xf32>)
func.func @conv_input_gradient(%w: tensor<4x3x3x3xf32>, %g: tensor<2x4x5x5xf32>) -> tensor<2x3x5x5xf32> {
  %wv = harp.view %w <(d0, d1, d2, d3, d4, d5, d6) -> (d6, d1, d4, d5)> : tensor<4x3x3x3xf32> -> tensor<2x3x5x5x3x3x4xf32>
  %gv = harp.view %g <(d0, d1, d2, d3, d4, d5, d6) -> (d0, d6, d2 - d4 + 1, d3 - d5 + 1), mask_ge = (d0, d1, d2, d3, d4, d5, d6) -> (d2 - d4 + 1, -d2 + d4 + 3, d3 - d5 + 1, -d3 + d5 + 3)> : tensor<2x4x5x5xf32> -> tensor<2x3x5x5x3x3x4xf32>
  %r = harp.map_reduce ins(%wv, %gv : tensor<2x3x5x5x3x3x4xf32>, tensor<2x3x5x5x3x3x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %b, %a : f32
    harp.yield %m : f32
  } reduce(sum, dims = [4, 5, 6]) : tensor<2x3x5x5xf32>
  return %r : tensor<2x3x5x5xf32>
}

// -----

// The same with the filter read at every second tap (a convolution with
// `w[:, :, ::2, ::2]`, or one phase of a stride-2 one's input gradient):
// reversed, the filter reads `2 - 2 * ky'`; it is read from a compact copy
// of the taps it reads (4x3x2x2, made once), at plain `ky'`, so the kernel
// is a plain convolution that packing and the register tiles take.
// CHECK-DAG: #[[TAPS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * -2 + 2, d3 * -2 + 2)>
// CHECK-DAG: #[[FILTER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d6, d1, d4, d5)>
// CHECK-DAG: #[[WINDOW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d6, d2 + d4, d3 + d5)>
// CHECK-LABEL: func.func @strided_filter_input_gradient
// CHECK: %[[PADDED:.*]] = tensor.pad %arg1 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[COMPACT:.*]] = linalg.generic {indexing_maps = [#[[TAPS]], {{.*}}]{{.*}} ins(%arg0 : tensor<4x3x3x3xf32>) outs(%{{.*}} : tensor<4x3x2x2xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[FILTER]], #[[WINDOW]], {{.*}}]{{.*}} ins(%[[COMPACT]], %[[PADDED]] : tensor<4x3x2x2xf32>, tensor<2x4x7x7xf32>)
func.func @strided_filter_input_gradient(%w: tensor<4x3x3x3xf32>, %g: tensor<2x4x5x5xf32>) -> tensor<2x3x6x6xf32> {
  %wv = harp.view %w <(d0, d1, d2, d3, d4, d5, d6) -> (d6, d1, d4 * 2, d5 * 2)> : tensor<4x3x3x3xf32> -> tensor<2x3x6x6x2x2x4xf32>
  %gv = harp.view %g <(d0, d1, d2, d3, d4, d5, d6) -> (d0, d6, d2 - d4, d3 - d5), mask_ge = (d0, d1, d2, d3, d4, d5, d6) -> (d2 - d4, -d2 + d4 + 4, d3 - d5, -d3 + d5 + 4)> : tensor<2x4x5x5xf32> -> tensor<2x3x6x6x2x2x4xf32>
  %r = harp.map_reduce ins(%wv, %gv : tensor<2x3x6x6x2x2x4xf32>, tensor<2x3x6x6x2x2x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %b, %a : f32
    harp.yield %m : f32
  } reduce(sum, dims = [4, 5, 6]) : tensor<2x3x6x6xf32>
  return %r : tensor<2x3x6x6xf32>
}

// -----

// The region still sees the original index of a reversed loop: 2 - k.
// CHECK-LABEL: func.func @reversed_loop_index
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: linalg.generic
// CHECK: %[[K:.*]] = linalg.index 1 : index
// CHECK: %[[ORIG:.*]] = arith.subi %[[C2]], %[[K]] : index
// CHECK: arith.index_cast %[[ORIG]]
func.func @reversed_loop_index(%x: tensor<9xf32>, %f: tensor<3xf32>) -> tensor<7xf32> {
  %xv = harp.view %x <(d0, d1) -> (d0 - d1 + 2)> : tensor<9xf32> -> tensor<7x3xf32>
  %fv = harp.view %f <(d0, d1) -> (d1)> : tensor<3xf32> -> tensor<7x3xf32>
  %r = harp.map_reduce ins(%xv, %fv : tensor<7x3xf32>, tensor<7x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %k = harp.index 1
    %ki = arith.index_cast %k : index to i32
    %kf = arith.sitofp %ki : i32 to f32
    %m = arith.mulf %a, %b : f32
    %s = arith.mulf %m, %kf : f32
    harp.yield %s : f32
  } reduce(sum, dims = [1]) : tensor<7xf32>
  return %r : tensor<7xf32>
}
