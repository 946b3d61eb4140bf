// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vector-cleanup))' --split-input-file | FileCheck %s

// harp-vector-cleanup stops a strided convolution's tap loops (kq, then r
// inside it, as harp-tile-and-vectorize leaves them) before the taps whose
// filter element is the zero padding harp-rewrite-windows added to whole
// phases: only where that element is the factor of a product added to the
// accumulator, and nothing else changes.

// A 7-tap filter padded to 4 phase groups of stride 2 ([4, 2]): kq runs
// over the 3 whole groups, and the last group is peeled off with r < 1,
// so the padded tap (kq 3, r 1) is never computed.
// CHECK-LABEL: func.func @seven_taps
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK: %[[W:.*]] = tensor.expand_shape
// CHECK: %[[WHOLE:.*]] = scf.for %[[KQ:.*]] = %[[C0]] to %[[C3]] step %[[C1]]
// CHECK: scf.for %[[R:.*]] = %[[C0]] to %[[C2]] step %[[C1]]
// CHECK: vector.transfer_read %[[W]][%[[C0]], %[[KQ]], %[[R]]]
// CHECK: %[[LAST:.*]] = scf.for %[[R1:.*]] = %[[C0]] to %[[C1]] step %[[C1]] iter_args(%{{.*}} = %[[WHOLE]])
// CHECK: vector.transfer_read %{{.*}}[%[[R1]], %[[C3]]]
// CHECK: vector.transfer_read %[[W]][%[[C0]], %[[C3]], %[[R1]]]
// CHECK: return %[[LAST]]
func.func @seven_taps(%x: tensor<2x20xf32>, %w: tensor<8x7xf32>, %acc0: vector<8xf32>) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cs = arith.constant 2 : index
  %ckq = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %padded = tensor.pad %w low[0, 0] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<8x7xf32> to tensor<8x8xf32>
  %e = tensor.expand_shape %padded [[0], [1, 2]] output_shape [8, 4, 2] : tensor<8x8xf32> into tensor<8x4x2xf32>
  %res = scf.for %kq = %c0 to %ckq step %c1 iter_args(%a = %acc0) -> (vector<8xf32>) {
    %r2 = scf.for %r = %c0 to %cs step %c1 iter_args(%b = %a) -> (vector<8xf32>) {
      %xv = vector.transfer_read %x[%r, %kq], %zero {in_bounds = [true]} : tensor<2x20xf32>, vector<8xf32>
      %wv = vector.transfer_read %e[%c0, %kq, %r], %zero {in_bounds = [true], permutation_map = affine_map<(d0, d1, d2) -> (d0)>} : tensor<8x4x2xf32>, vector<8xf32>
      %m = arith.mulf %xv, %wv fastmath<contract> : vector<8xf32>
      %s = arith.addf %b, %m fastmath<contract> : vector<8xf32>
      scf.yield %s : vector<8xf32>
    }
    scf.yield %r2 : vector<8xf32>
  }
  return %res : vector<8xf32>
}

// -----

// 4 taps padded to 3 groups of 2: the last group is all padding and is
// dropped; nothing is peeled.
// CHECK-LABEL: func.func @whole_group_padded
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[RES:.*]] = scf.for %{{.*}} = %{{.*}} to %[[C2]]
// CHECK-COUNT-1: vector.transfer_read %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}]
// CHECK: return %[[RES]]
func.func @whole_group_padded(%x: tensor<2x20xf32>, %w: tensor<8x4xf32>, %acc0: vector<8xf32>) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cs = arith.constant 2 : index
  %ckq = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %padded = tensor.pad %w low[0, 0] high[0, 2] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<8x4xf32> to tensor<8x6xf32>
  %e = tensor.expand_shape %padded [[0], [1, 2]] output_shape [8, 3, 2] : tensor<8x6xf32> into tensor<8x3x2xf32>
  %res = scf.for %kq = %c0 to %ckq step %c1 iter_args(%a = %acc0) -> (vector<8xf32>) {
    %r2 = scf.for %r = %c0 to %cs step %c1 iter_args(%b = %a) -> (vector<8xf32>) {
      %xv = vector.transfer_read %x[%r, %kq], %zero {in_bounds = [true]} : tensor<2x20xf32>, vector<8xf32>
      %wv = vector.transfer_read %e[%c0, %kq, %r], %zero {in_bounds = [true], permutation_map = affine_map<(d0, d1, d2) -> (d0)>} : tensor<8x3x2xf32>, vector<8xf32>
      %m = arith.mulf %xv, %wv fastmath<contract> : vector<8xf32>
      %s = arith.addf %b, %m fastmath<contract> : vector<8xf32>
      scf.yield %s : vector<8xf32>
    }
    scf.yield %r2 : vector<8xf32>
  }
  return %res : vector<8xf32>
}

// -----

// Stride 3, 5 taps padded to 2 groups of 3: one whole group, then r < 2.
// CHECK-LABEL: func.func @stride_three
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK: %[[WHOLE:.*]] = scf.for %{{.*}} to %[[C1]] step %[[C1]]
// CHECK: scf.for %{{.*}} to %[[C3]] step %[[C1]]
// CHECK: scf.for %{{.*}} to %[[C2]] step %[[C1]] iter_args(%{{.*}} = %[[WHOLE]])
func.func @stride_three(%x: tensor<3x20xf32>, %w: tensor<8x5xf32>, %acc0: vector<8xf32>) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cs = arith.constant 3 : index
  %ckq = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %padded = tensor.pad %w low[0, 0] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<8x5xf32> to tensor<8x6xf32>
  %e = tensor.expand_shape %padded [[0], [1, 2]] output_shape [8, 2, 3] : tensor<8x6xf32> into tensor<8x2x3xf32>
  %res = scf.for %kq = %c0 to %ckq step %c1 iter_args(%a = %acc0) -> (vector<8xf32>) {
    %r2 = scf.for %r = %c0 to %cs step %c1 iter_args(%b = %a) -> (vector<8xf32>) {
      %xv = vector.transfer_read %x[%r, %kq], %zero {in_bounds = [true]} : tensor<3x20xf32>, vector<8xf32>
      %wv = vector.transfer_read %e[%c0, %kq, %r], %zero {in_bounds = [true], permutation_map = affine_map<(d0, d1, d2) -> (d0)>} : tensor<8x2x3xf32>, vector<8xf32>
      %m = arith.mulf %xv, %wv fastmath<contract> : vector<8xf32>
      %s = arith.addf %b, %m fastmath<contract> : vector<8xf32>
      scf.yield %s : vector<8xf32>
    }
    scf.yield %r2 : vector<8xf32>
  }
  return %res : vector<8xf32>
}

// -----

// The product added as one multiply-add.
// CHECK-LABEL: func.func @fma
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK: scf.for %{{.*}} to %[[C3]]
// CHECK: math.fma
// CHECK: math.fma
func.func @fma(%x: tensor<2x20xf32>, %w: tensor<8x7xf32>, %acc0: vector<8xf32>) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cs = arith.constant 2 : index
  %ckq = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %padded = tensor.pad %w low[0, 0] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<8x7xf32> to tensor<8x8xf32>
  %e = tensor.expand_shape %padded [[0], [1, 2]] output_shape [8, 4, 2] : tensor<8x8xf32> into tensor<8x4x2xf32>
  %res = scf.for %kq = %c0 to %ckq step %c1 iter_args(%a = %acc0) -> (vector<8xf32>) {
    %r2 = scf.for %r = %c0 to %cs step %c1 iter_args(%b = %a) -> (vector<8xf32>) {
      %xv = vector.transfer_read %x[%r, %kq], %zero {in_bounds = [true]} : tensor<2x20xf32>, vector<8xf32>
      %wv = vector.transfer_read %e[%c0, %kq, %r], %zero {in_bounds = [true], permutation_map = affine_map<(d0, d1, d2) -> (d0)>} : tensor<8x4x2xf32>, vector<8xf32>
      %s = math.fma %xv, %wv, %b : vector<8xf32>
      scf.yield %s : vector<8xf32>
    }
    scf.yield %r2 : vector<8xf32>
  }
  return %res : vector<8xf32>
}

// -----

// Padded with ones: every tap counts.
// CHECK-LABEL: func.func @nonzero_padding
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: scf.for %{{.*}} to %[[C4]]
// CHECK-COUNT-1: scf.for
// CHECK-NOT: scf.for
func.func @nonzero_padding(%x: tensor<2x20xf32>, %w: tensor<8x7xf32>, %acc0: vector<8xf32>) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cs = arith.constant 2 : index
  %ckq = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %padded = tensor.pad %w low[0, 0] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %one : f32
  } : tensor<8x7xf32> to tensor<8x8xf32>
  %e = tensor.expand_shape %padded [[0], [1, 2]] output_shape [8, 4, 2] : tensor<8x8xf32> into tensor<8x4x2xf32>
  %res = scf.for %kq = %c0 to %ckq step %c1 iter_args(%a = %acc0) -> (vector<8xf32>) {
    %r2 = scf.for %r = %c0 to %cs step %c1 iter_args(%b = %a) -> (vector<8xf32>) {
      %xv = vector.transfer_read %x[%r, %kq], %zero {in_bounds = [true]} : tensor<2x20xf32>, vector<8xf32>
      %wv = vector.transfer_read %e[%c0, %kq, %r], %zero {in_bounds = [true], permutation_map = affine_map<(d0, d1, d2) -> (d0)>} : tensor<8x4x2xf32>, vector<8xf32>
      %m = arith.mulf %xv, %wv fastmath<contract> : vector<8xf32>
      %s = arith.addf %b, %m fastmath<contract> : vector<8xf32>
      scf.yield %s : vector<8xf32>
    }
    scf.yield %r2 : vector<8xf32>
  }
  return %res : vector<8xf32>
}

// -----

// A maximum of products: a skipped tap would have been a max with 0.
// CHECK-LABEL: func.func @not_a_sum
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: scf.for %{{.*}} to %[[C4]]
func.func @not_a_sum(%x: tensor<2x20xf32>, %w: tensor<8x7xf32>, %acc0: vector<8xf32>) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cs = arith.constant 2 : index
  %ckq = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %padded = tensor.pad %w low[0, 0] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<8x7xf32> to tensor<8x8xf32>
  %e = tensor.expand_shape %padded [[0], [1, 2]] output_shape [8, 4, 2] : tensor<8x8xf32> into tensor<8x4x2xf32>
  %res = scf.for %kq = %c0 to %ckq step %c1 iter_args(%a = %acc0) -> (vector<8xf32>) {
    %r2 = scf.for %r = %c0 to %cs step %c1 iter_args(%b = %a) -> (vector<8xf32>) {
      %xv = vector.transfer_read %x[%r, %kq], %zero {in_bounds = [true]} : tensor<2x20xf32>, vector<8xf32>
      %wv = vector.transfer_read %e[%c0, %kq, %r], %zero {in_bounds = [true], permutation_map = affine_map<(d0, d1, d2) -> (d0)>} : tensor<8x4x2xf32>, vector<8xf32>
      %m = arith.mulf %xv, %wv : vector<8xf32>
      %s = arith.maximumf %b, %m : vector<8xf32>
      scf.yield %s : vector<8xf32>
    }
    scf.yield %r2 : vector<8xf32>
  }
  return %res : vector<8xf32>
}

// -----

// The filter element also feeds another term of the sum.
// CHECK-LABEL: func.func @filter_read_twice
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: scf.for %{{.*}} to %[[C4]]
func.func @filter_read_twice(%x: tensor<2x20xf32>, %w: tensor<8x7xf32>, %acc0: vector<8xf32>) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cs = arith.constant 2 : index
  %ckq = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %padded = tensor.pad %w low[0, 0] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<8x7xf32> to tensor<8x8xf32>
  %e = tensor.expand_shape %padded [[0], [1, 2]] output_shape [8, 4, 2] : tensor<8x8xf32> into tensor<8x4x2xf32>
  %res = scf.for %kq = %c0 to %ckq step %c1 iter_args(%a = %acc0) -> (vector<8xf32>) {
    %r2 = scf.for %r = %c0 to %cs step %c1 iter_args(%b = %a) -> (vector<8xf32>) {
      %xv = vector.transfer_read %x[%r, %kq], %zero {in_bounds = [true]} : tensor<2x20xf32>, vector<8xf32>
      %wv = vector.transfer_read %e[%c0, %kq, %r], %zero {in_bounds = [true], permutation_map = affine_map<(d0, d1, d2) -> (d0)>} : tensor<8x4x2xf32>, vector<8xf32>
      %m = arith.mulf %xv, %wv : vector<8xf32>
      %t = arith.addf %b, %m : vector<8xf32>
      %s = arith.addf %t, %wv : vector<8xf32>
      scf.yield %s : vector<8xf32>
    }
    scf.yield %r2 : vector<8xf32>
  }
  return %res : vector<8xf32>
}

// -----

// The sum also takes in the image alone: a skipped tap would drop it.
// CHECK-LABEL: func.func @image_term
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: scf.for %{{.*}} to %[[C4]]
func.func @image_term(%x: tensor<2x20xf32>, %w: tensor<8x7xf32>, %acc0: vector<8xf32>) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cs = arith.constant 2 : index
  %ckq = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %padded = tensor.pad %w low[0, 0] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<8x7xf32> to tensor<8x8xf32>
  %e = tensor.expand_shape %padded [[0], [1, 2]] output_shape [8, 4, 2] : tensor<8x8xf32> into tensor<8x4x2xf32>
  %res = scf.for %kq = %c0 to %ckq step %c1 iter_args(%a = %acc0) -> (vector<8xf32>) {
    %r2 = scf.for %r = %c0 to %cs step %c1 iter_args(%b = %a) -> (vector<8xf32>) {
      %xv = vector.transfer_read %x[%r, %kq], %zero {in_bounds = [true]} : tensor<2x20xf32>, vector<8xf32>
      %wv = vector.transfer_read %e[%c0, %kq, %r], %zero {in_bounds = [true], permutation_map = affine_map<(d0, d1, d2) -> (d0)>} : tensor<8x4x2xf32>, vector<8xf32>
      %m = arith.mulf %xv, %wv : vector<8xf32>
      %t = arith.addf %m, %xv : vector<8xf32>
      %s = arith.addf %b, %t : vector<8xf32>
      scf.yield %s : vector<8xf32>
    }
    scf.yield %r2 : vector<8xf32>
  }
  return %res : vector<8xf32>
}

// -----

// The kq loop adds to its values outside the r loop too: a group of
// padded taps still adds the image there, so every kq stays.
// CHECK-LABEL: func.func @outer_term
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[RES:.*]] = scf.for %{{.*}} to %[[C4]]
// CHECK: return %[[RES]]
func.func @outer_term(%x: tensor<2x20xf32>, %w: tensor<8x4xf32>, %acc0: vector<8xf32>) -> vector<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %w low[0, 0] high[0, 4] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<8x4xf32> to tensor<8x8xf32>
  %e = tensor.expand_shape %padded [[0], [1, 2]] output_shape [8, 4, 2] : tensor<8x8xf32> into tensor<8x4x2xf32>
  %res = scf.for %kq = %c0 to %c4 step %c1 iter_args(%a = %acc0) -> (vector<8xf32>) {
    %r2 = scf.for %r = %c0 to %c2 step %c1 iter_args(%b = %a) -> (vector<8xf32>) {
      %xv = vector.transfer_read %x[%r, %kq], %zero {in_bounds = [true]} : tensor<2x20xf32>, vector<8xf32>
      %wv = vector.transfer_read %e[%c0, %kq, %r], %zero {in_bounds = [true], permutation_map = affine_map<(d0, d1, d2) -> (d0)>} : tensor<8x4x2xf32>, vector<8xf32>
      %m = arith.mulf %xv, %wv : vector<8xf32>
      %s = arith.addf %b, %m : vector<8xf32>
      scf.yield %s : vector<8xf32>
    }
    %xo = vector.transfer_read %x[%c0, %kq], %zero {in_bounds = [true]} : tensor<2x20xf32>, vector<8xf32>
    %t = arith.addf %r2, %xo : vector<8xf32>
    scf.yield %t : vector<8xf32>
  }
  return %res : vector<8xf32>
}
