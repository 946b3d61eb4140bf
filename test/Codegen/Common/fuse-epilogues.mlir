// RUN: harp-opt %s --convert-harp-to-linalg --canonicalize --harp-fuse-epilogues=min-row=1 --split-input-file | FileCheck %s
// RUN: harp-opt %s --convert-harp-to-linalg --canonicalize --harp-fuse-epilogues="contractions=false min-row=1" --split-input-file | FileCheck %s --check-prefix=NOCONTRACT
// RUN: harp-opt %s --convert-harp-to-linalg --canonicalize --harp-fuse-epilogues --split-input-file | FileCheck %s --check-prefix=ROW16

// The reduction read only by an element-wise kernel moves into a loop over
// that kernel's rows.
// CHECK-LABEL: func.func @single_reader
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: %[[ROW:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<1xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[ROW]], %{{.*}} : tensor<1xf32>, tensor<1x6xf32>)
// CHECK: tensor.insert_slice %{{.*}}[%[[I]], 0] [1, 6] [1, 1]
func.func @single_reader(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %s = harp.map_reduce ins(%x : tensor<4x6xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<4xf32> -> tensor<4x6xf32>
  %y = harp.map_reduce ins(%sb, %x : tensor<4x6xf32>, tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32):
    %q = arith.divf %b, %a : f32
    harp.yield %q : f32
  } : tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// A reduction with two readers is computed once, in its own kernel.
// CHECK-LABEL: func.func @two_readers
// CHECK-NOT: scf.for
// CHECK-COUNT-3: linalg.generic
func.func @two_readers(%x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4xf32>) {
  %s = harp.map_reduce ins(%x : tensor<4x6xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<4xf32> -> tensor<4x6xf32>
  %y = harp.map_reduce ins(%sb, %x : tensor<4x6xf32>, tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32):
    %q = arith.divf %b, %a : f32
    harp.yield %q : f32
  } : tensor<4x6xf32>
  %n = harp.map_reduce ins(%s : tensor<4xf32>) {
  ^bb0(%a: f32):
    %q = arith.negf %a : f32
    harp.yield %q : f32
  } : tensor<4xf32>
  return %y, %n : tensor<4x6xf32>, tensor<4xf32>
}

// -----

// Element-wise kernels reading no reduction, and rank-1 epilogues (no outer
// dim to tile), stay as they are.
// CHECK-LABEL: func.func @nothing_to_fuse
// CHECK-NOT: scf.for
// CHECK-COUNT-2: linalg.generic
func.func @nothing_to_fuse(%x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<f32>) {
  %e = harp.map_reduce ins(%x : tensor<4x6xf32>) {
  ^bb0(%a: f32):
    %q = math.exp %a : f32
    harp.yield %q : f32
  } : tensor<4x6xf32>
  %s = harp.map_reduce ins(%x : tensor<4x6xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [0, 1]) : tensor<f32>
  return %e, %s : tensor<4x6xf32>, tensor<f32>
}

// -----

// With contractions=false a matmul keeps its own kernel (harp-to-llvm's
// choice when it vectorizes: the whole matmul gets register tiles); a
// reduction that is not a contraction is still fused into its epilogue.
// NOCONTRACT-LABEL: func.func @matmul_epilogue
// NOCONTRACT-NOT: scf.for
// NOCONTRACT: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// NOCONTRACT: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// NOCONTRACT: return
// CHECK-LABEL: func.func @matmul_epilogue
// CHECK: scf.for
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
func.func @matmul_epilogue(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>) -> tensor<4x5xf32> {
  %av = harp.view %a <(d0, d1, d2) -> (d0, d2)> : tensor<4x3xf32> -> tensor<4x5x3xf32>
  %bv = harp.view %b <(d0, d1, d2) -> (d2, d1)> : tensor<3x5xf32> -> tensor<4x5x3xf32>
  %mm = harp.map_reduce ins(%av, %bv : tensor<4x5x3xf32>, tensor<4x5x3xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<4x5xf32>
  %r = harp.map_reduce ins(%mm : tensor<4x5xf32>) {
  ^bb0(%x: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %x, %z : f32
    harp.yield %m : f32
  } : tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}

// NOCONTRACT-LABEL: func.func @row_sum_epilogue
// NOCONTRACT: scf.for
// NOCONTRACT: iterator_types = ["parallel", "reduction"]
func.func @row_sum_epilogue(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %s = harp.map_reduce ins(%x : tensor<4x6xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<4xf32> -> tensor<4x6xf32>
  %y = harp.map_reduce ins(%sb, %x : tensor<4x6xf32>, tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32):
    %q = arith.divf %b, %a : f32
    harp.yield %q : f32
  } : tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// A reduction that reads its input through a flip stays in its own kernel:
// tiling computes a tile's slices from the images of its first and last
// index, which a flip reverses (the fused kernel read one row too few).
// CHECK-LABEL: func.func @flipped_reduction
// CHECK-NOT: scf.for
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
func.func @flipped_reduction(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %f = harp.view %x <(d0, d1) -> (d0, 5 - d1)> : tensor<4x6xf32> -> tensor<4x6xf32>
  %s = harp.map_reduce ins(%f : tensor<4x6xf32>) {
  ^bb0(%a: f32):
    %e = math.exp %a : f32
    harp.yield %e : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<4xf32> -> tensor<4x6xf32>
  %y = harp.map_reduce ins(%sb, %x : tensor<4x6xf32>, tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32):
    %q = arith.divf %b, %a : f32
    harp.yield %q : f32
  } : tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// Rows shorter than min-row (16 by default) are not worth a loop iteration
// and a kernel each; rows of 16 are fused.
// ROW16-LABEL: func.func @short_rows
// ROW16-NOT: scf.for
// ROW16: return
// ROW16-LABEL: func.func @long_rows
// ROW16: scf.for
// CHECK-LABEL: func.func @short_rows
// CHECK: scf.for
// CHECK-LABEL: func.func @long_rows
// CHECK: scf.for
func.func @short_rows(%x: tensor<64x15xf32>) -> tensor<64x15xf32> {
  %s = harp.map_reduce ins(%x : tensor<64x15xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(max, dims = [1]) : tensor<64xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<64xf32> -> tensor<64x15xf32>
  %y = harp.map_reduce ins(%sb, %x : tensor<64x15xf32>, tensor<64x15xf32>) {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %b, %a : f32
    harp.yield %d : f32
  } : tensor<64x15xf32>
  return %y : tensor<64x15xf32>
}
func.func @long_rows(%x: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %s = harp.map_reduce ins(%x : tensor<64x16xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(max, dims = [1]) : tensor<64xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<64xf32> -> tensor<64x16xf32>
  %y = harp.map_reduce ins(%sb, %x : tensor<64x16xf32>, tensor<64x16xf32>) {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %b, %a : f32
    harp.yield %d : f32
  } : tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}

// -----

// An epilogue reading the reduction through windows (overlapping rows)
// keeps the reduction in its own kernel.
// CHECK-LABEL: func.func @windowed_read
// CHECK-NOT: scf.for
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]
func.func @windowed_read(%x: tensor<8x20x4xf32>) -> tensor<8x9x4xf32> {
  %s = harp.map_reduce ins(%x : tensor<8x20x4xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [2]) : tensor<8x20xf32>
  %w = harp.view %s <(d0, d1, d2) -> (d0, d1 * 2 + d2)> : tensor<8x20xf32> -> tensor<8x9x4xf32>
  %y = harp.map_reduce ins(%w : tensor<8x9x4xf32>) {
  ^bb0(%a: f32):
    %e = math.exp %a : f32
    harp.yield %e : f32
  } : tensor<8x9x4xf32>
  return %y : tensor<8x9x4xf32>
}

// -----

// A softmax row (as harp-fuse leaves it: the sum and the division each
// compute exp(x - max)): in the row tile exp is computed once, into the
// output row; the sum reads that row and the division finishes it in place.
// CHECK-LABEL: func.func @softmax_stores_exp
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ROWS:[^ ]*]] =
// CHECK: %[[OUT:.*]] = tensor.extract_slice %[[ROWS]][%{{.*}}, 0] [1, 10] [1, 1] : tensor<4x10xf32> to tensor<1x10xf32>
// CHECK: %[[E:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins({{.*}}) outs(%[[OUT]] : tensor<1x10xf32>)
// CHECK: math.exp
// CHECK: %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[E]] : tensor<1x10xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: arith.addf %[[ACC]], %[[IN]] : f32
// CHECK: linalg.generic {{.*}} ins(%[[S]], {{.*}}) outs(%[[E]] : tensor<1x10xf32>)
// CHECK-NEXT: ^bb0(%[[SUM:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32, %[[EX:.*]]: f32):
// CHECK-NEXT: arith.divf %[[EX]], %[[SUM]] : f32
// CHECK-NOT: math.exp
// CHECK: return
func.func @softmax_stores_exp(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %m = harp.map_reduce ins(%x : tensor<4x10xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(max, dims = [1]) : tensor<4xf32>
  %mb = harp.view %m <(d0, d1) -> (d0)> : tensor<4xf32> -> tensor<4x10xf32>
  %s = harp.map_reduce ins(%x, %mb : tensor<4x10xf32>, tensor<4x10xf32>) {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    harp.yield %e : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<4xf32> -> tensor<4x10xf32>
  %y = harp.map_reduce ins(%sb, %x, %mb : tensor<4x10xf32>, tensor<4x10xf32>, tensor<4x10xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %d = arith.subf %b, %c : f32
    %e = math.exp %d : f32
    %q = arith.divf %e, %a : f32
    harp.yield %q : f32
  } : tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}

// -----

// Not stored: a value that is cheap to compute again (x * 2: no math op,
// no division), a value the epilogue does not compute (log-softmax's
// x - max - log(sum)), and the same expression over another element (the
// epilogue's exp reads x transposed), nor an f32 value into an f16 row.
// CHECK-LABEL: func.func @not_stored_cheap
// CHECK: scf.for
// CHECK: linalg.generic {{.*}} ["parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<1x10xf32>, tensor<1x10xf32>)
// CHECK: arith.mulf
// CHECK: linalg.generic {{.*}} ["parallel", "parallel"]}
// CHECK: arith.mulf
// CHECK-LABEL: func.func @not_stored_other_value
// CHECK: ["parallel", "reduction"]
// CHECK: math.exp
// CHECK: ["parallel", "parallel"]
// CHECK-NOT: math.exp
// CHECK: math.log
// CHECK-LABEL: func.func @not_stored_other_element
// CHECK: ["parallel", "reduction"]
// CHECK: math.exp
// CHECK: ["parallel", "parallel"]
// CHECK: math.exp
// CHECK: return
// CHECK-LABEL: func.func @not_stored_other_type
// CHECK: ["parallel", "reduction"]
// CHECK: math.exp
// CHECK: ["parallel", "parallel"]
// CHECK: math.exp
// CHECK: arith.truncf
// CHECK: return
func.func @not_stored_cheap(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %s = harp.map_reduce ins(%x, %x : tensor<4x10xf32>, tensor<4x10xf32>) {
  ^bb0(%a: f32, %b: f32):
    %t = arith.mulf %a, %b : f32
    harp.yield %t : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<4xf32> -> tensor<4x10xf32>
  %y = harp.map_reduce ins(%sb, %x : tensor<4x10xf32>, tensor<4x10xf32>) {
  ^bb0(%a: f32, %b: f32):
    %t = arith.mulf %b, %b : f32
    %q = arith.subf %t, %a : f32
    harp.yield %q : f32
  } : tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}
func.func @not_stored_other_value(%x: tensor<4x10xf32>, %m: tensor<4xf32>) -> tensor<4x10xf32> {
  %mb = harp.view %m <(d0, d1) -> (d0)> : tensor<4xf32> -> tensor<4x10xf32>
  %s = harp.map_reduce ins(%x, %mb : tensor<4x10xf32>, tensor<4x10xf32>) {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    harp.yield %e : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<4xf32> -> tensor<4x10xf32>
  %y = harp.map_reduce ins(%sb, %x, %mb : tensor<4x10xf32>, tensor<4x10xf32>, tensor<4x10xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %d = arith.subf %b, %c : f32
    %l = math.log %a : f32
    %q = arith.subf %d, %l : f32
    harp.yield %q : f32
  } : tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}
func.func @not_stored_other_element(%x: tensor<4x10xf32>, %xt: tensor<10x4xf32>) -> tensor<4x10xf32> {
  %s = harp.map_reduce ins(%x : tensor<4x10xf32>) {
  ^bb0(%a: f32):
    %e = math.exp %a : f32
    harp.yield %e : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<4xf32> -> tensor<4x10xf32>
  %t = harp.view %xt <(d0, d1) -> (d1, d0)> : tensor<10x4xf32> -> tensor<4x10xf32>
  %y = harp.map_reduce ins(%sb, %t : tensor<4x10xf32>, tensor<4x10xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %b : f32
    %q = arith.divf %e, %a : f32
    harp.yield %q : f32
  } : tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}
func.func @not_stored_other_type(%x: tensor<4x10xf32>) -> tensor<4x10xf16> {
  %s = harp.map_reduce ins(%x : tensor<4x10xf32>) {
  ^bb0(%a: f32):
    %e = math.exp %a : f32
    harp.yield %e : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<4xf32> -> tensor<4x10xf32>
  %y = harp.map_reduce ins(%sb, %x : tensor<4x10xf32>, tensor<4x10xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %b : f32
    %q = arith.divf %e, %a : f32
    %h = arith.truncf %q : f32 to f16
    harp.yield %h : f16
  } : tensor<4x10xf16>
  return %y : tensor<4x10xf16>
}
