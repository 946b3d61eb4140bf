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

// -----

// Values are compared and costed once each: a chain of 40 squarings
// (`t * t`, each read twice) ending in an exp is matched and stored, in
// time linear in the chain (comparing or costing it as a tree would take
// 2^40 steps). The same chain without the exp is not costly and stays.
// CHECK-LABEL: func.func @long_shared_chain
// CHECK: ["parallel", "parallel"]} ins({{.*}}) outs(%{{.*}} : tensor<1x10xf32>)
// CHECK: math.exp
// CHECK: ["parallel", "reduction"]} ins(%{{.*}} : tensor<1x10xf32>)
// CHECK: arith.divf
// CHECK-NOT: math.exp
// CHECK-LABEL: func.func @long_cheap_chain
// CHECK: ["parallel", "reduction"]
// CHECK-COUNT-40: arith.mulf
// CHECK: ["parallel", "parallel"]
// CHECK-COUNT-40: arith.mulf
func.func @long_shared_chain(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %s = harp.map_reduce ins(%x : tensor<4x10xf32>) {
  ^bb0(%a: f32):
    %r0 = arith.mulf %a, %a : f32
    %r1 = arith.mulf %r0, %r0 : f32
    %r2 = arith.mulf %r1, %r1 : f32
    %r3 = arith.mulf %r2, %r2 : f32
    %r4 = arith.mulf %r3, %r3 : f32
    %r5 = arith.mulf %r4, %r4 : f32
    %r6 = arith.mulf %r5, %r5 : f32
    %r7 = arith.mulf %r6, %r6 : f32
    %r8 = arith.mulf %r7, %r7 : f32
    %r9 = arith.mulf %r8, %r8 : f32
    %r10 = arith.mulf %r9, %r9 : f32
    %r11 = arith.mulf %r10, %r10 : f32
    %r12 = arith.mulf %r11, %r11 : f32
    %r13 = arith.mulf %r12, %r12 : f32
    %r14 = arith.mulf %r13, %r13 : f32
    %r15 = arith.mulf %r14, %r14 : f32
    %r16 = arith.mulf %r15, %r15 : f32
    %r17 = arith.mulf %r16, %r16 : f32
    %r18 = arith.mulf %r17, %r17 : f32
    %r19 = arith.mulf %r18, %r18 : f32
    %r20 = arith.mulf %r19, %r19 : f32
    %r21 = arith.mulf %r20, %r20 : f32
    %r22 = arith.mulf %r21, %r21 : f32
    %r23 = arith.mulf %r22, %r22 : f32
    %r24 = arith.mulf %r23, %r23 : f32
    %r25 = arith.mulf %r24, %r24 : f32
    %r26 = arith.mulf %r25, %r25 : f32
    %r27 = arith.mulf %r26, %r26 : f32
    %r28 = arith.mulf %r27, %r27 : f32
    %r29 = arith.mulf %r28, %r28 : f32
    %r30 = arith.mulf %r29, %r29 : f32
    %r31 = arith.mulf %r30, %r30 : f32
    %r32 = arith.mulf %r31, %r31 : f32
    %r33 = arith.mulf %r32, %r32 : f32
    %r34 = arith.mulf %r33, %r33 : f32
    %r35 = arith.mulf %r34, %r34 : f32
    %r36 = arith.mulf %r35, %r35 : f32
    %r37 = arith.mulf %r36, %r36 : f32
    %r38 = arith.mulf %r37, %r37 : f32
    %r39 = arith.mulf %r38, %r38 : f32
    %e = math.exp %r39 : f32
    harp.yield %e : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<4xf32> -> tensor<4x10xf32>
  %y = harp.map_reduce ins(%sb, %x : tensor<4x10xf32>, tensor<4x10xf32>) {
  ^bb0(%c: f32, %b: f32):
    %s0 = arith.mulf %b, %b : f32
    %s1 = arith.mulf %s0, %s0 : f32
    %s2 = arith.mulf %s1, %s1 : f32
    %s3 = arith.mulf %s2, %s2 : f32
    %s4 = arith.mulf %s3, %s3 : f32
    %s5 = arith.mulf %s4, %s4 : f32
    %s6 = arith.mulf %s5, %s5 : f32
    %s7 = arith.mulf %s6, %s6 : f32
    %s8 = arith.mulf %s7, %s7 : f32
    %s9 = arith.mulf %s8, %s8 : f32
    %s10 = arith.mulf %s9, %s9 : f32
    %s11 = arith.mulf %s10, %s10 : f32
    %s12 = arith.mulf %s11, %s11 : f32
    %s13 = arith.mulf %s12, %s12 : f32
    %s14 = arith.mulf %s13, %s13 : f32
    %s15 = arith.mulf %s14, %s14 : f32
    %s16 = arith.mulf %s15, %s15 : f32
    %s17 = arith.mulf %s16, %s16 : f32
    %s18 = arith.mulf %s17, %s17 : f32
    %s19 = arith.mulf %s18, %s18 : f32
    %s20 = arith.mulf %s19, %s19 : f32
    %s21 = arith.mulf %s20, %s20 : f32
    %s22 = arith.mulf %s21, %s21 : f32
    %s23 = arith.mulf %s22, %s22 : f32
    %s24 = arith.mulf %s23, %s23 : f32
    %s25 = arith.mulf %s24, %s24 : f32
    %s26 = arith.mulf %s25, %s25 : f32
    %s27 = arith.mulf %s26, %s26 : f32
    %s28 = arith.mulf %s27, %s27 : f32
    %s29 = arith.mulf %s28, %s28 : f32
    %s30 = arith.mulf %s29, %s29 : f32
    %s31 = arith.mulf %s30, %s30 : f32
    %s32 = arith.mulf %s31, %s31 : f32
    %s33 = arith.mulf %s32, %s32 : f32
    %s34 = arith.mulf %s33, %s33 : f32
    %s35 = arith.mulf %s34, %s34 : f32
    %s36 = arith.mulf %s35, %s35 : f32
    %s37 = arith.mulf %s36, %s36 : f32
    %s38 = arith.mulf %s37, %s37 : f32
    %s39 = arith.mulf %s38, %s38 : f32
    %e = math.exp %s39 : f32
    %q = arith.divf %e, %c : f32
    harp.yield %q : f32
  } : tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}
func.func @long_cheap_chain(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %s = harp.map_reduce ins(%x : tensor<4x10xf32>) {
  ^bb0(%a: f32):
    %r0 = arith.mulf %a, %a : f32
    %r1 = arith.mulf %r0, %r0 : f32
    %r2 = arith.mulf %r1, %r1 : f32
    %r3 = arith.mulf %r2, %r2 : f32
    %r4 = arith.mulf %r3, %r3 : f32
    %r5 = arith.mulf %r4, %r4 : f32
    %r6 = arith.mulf %r5, %r5 : f32
    %r7 = arith.mulf %r6, %r6 : f32
    %r8 = arith.mulf %r7, %r7 : f32
    %r9 = arith.mulf %r8, %r8 : f32
    %r10 = arith.mulf %r9, %r9 : f32
    %r11 = arith.mulf %r10, %r10 : f32
    %r12 = arith.mulf %r11, %r11 : f32
    %r13 = arith.mulf %r12, %r12 : f32
    %r14 = arith.mulf %r13, %r13 : f32
    %r15 = arith.mulf %r14, %r14 : f32
    %r16 = arith.mulf %r15, %r15 : f32
    %r17 = arith.mulf %r16, %r16 : f32
    %r18 = arith.mulf %r17, %r17 : f32
    %r19 = arith.mulf %r18, %r18 : f32
    %r20 = arith.mulf %r19, %r19 : f32
    %r21 = arith.mulf %r20, %r20 : f32
    %r22 = arith.mulf %r21, %r21 : f32
    %r23 = arith.mulf %r22, %r22 : f32
    %r24 = arith.mulf %r23, %r23 : f32
    %r25 = arith.mulf %r24, %r24 : f32
    %r26 = arith.mulf %r25, %r25 : f32
    %r27 = arith.mulf %r26, %r26 : f32
    %r28 = arith.mulf %r27, %r27 : f32
    %r29 = arith.mulf %r28, %r28 : f32
    %r30 = arith.mulf %r29, %r29 : f32
    %r31 = arith.mulf %r30, %r30 : f32
    %r32 = arith.mulf %r31, %r31 : f32
    %r33 = arith.mulf %r32, %r32 : f32
    %r34 = arith.mulf %r33, %r33 : f32
    %r35 = arith.mulf %r34, %r34 : f32
    %r36 = arith.mulf %r35, %r35 : f32
    %r37 = arith.mulf %r36, %r36 : f32
    %r38 = arith.mulf %r37, %r37 : f32
    %r39 = arith.mulf %r38, %r38 : f32
    harp.yield %r39 : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<4xf32> -> tensor<4x10xf32>
  %y = harp.map_reduce ins(%sb, %x : tensor<4x10xf32>, tensor<4x10xf32>) {
  ^bb0(%c: f32, %b: f32):
    %s0 = arith.mulf %b, %b : f32
    %s1 = arith.mulf %s0, %s0 : f32
    %s2 = arith.mulf %s1, %s1 : f32
    %s3 = arith.mulf %s2, %s2 : f32
    %s4 = arith.mulf %s3, %s3 : f32
    %s5 = arith.mulf %s4, %s4 : f32
    %s6 = arith.mulf %s5, %s5 : f32
    %s7 = arith.mulf %s6, %s6 : f32
    %s8 = arith.mulf %s7, %s7 : f32
    %s9 = arith.mulf %s8, %s8 : f32
    %s10 = arith.mulf %s9, %s9 : f32
    %s11 = arith.mulf %s10, %s10 : f32
    %s12 = arith.mulf %s11, %s11 : f32
    %s13 = arith.mulf %s12, %s12 : f32
    %s14 = arith.mulf %s13, %s13 : f32
    %s15 = arith.mulf %s14, %s14 : f32
    %s16 = arith.mulf %s15, %s15 : f32
    %s17 = arith.mulf %s16, %s16 : f32
    %s18 = arith.mulf %s17, %s17 : f32
    %s19 = arith.mulf %s18, %s18 : f32
    %s20 = arith.mulf %s19, %s19 : f32
    %s21 = arith.mulf %s20, %s20 : f32
    %s22 = arith.mulf %s21, %s21 : f32
    %s23 = arith.mulf %s22, %s22 : f32
    %s24 = arith.mulf %s23, %s23 : f32
    %s25 = arith.mulf %s24, %s24 : f32
    %s26 = arith.mulf %s25, %s25 : f32
    %s27 = arith.mulf %s26, %s26 : f32
    %s28 = arith.mulf %s27, %s27 : f32
    %s29 = arith.mulf %s28, %s28 : f32
    %s30 = arith.mulf %s29, %s29 : f32
    %s31 = arith.mulf %s30, %s30 : f32
    %s32 = arith.mulf %s31, %s31 : f32
    %s33 = arith.mulf %s32, %s32 : f32
    %s34 = arith.mulf %s33, %s33 : f32
    %s35 = arith.mulf %s34, %s34 : f32
    %s36 = arith.mulf %s35, %s35 : f32
    %s37 = arith.mulf %s36, %s36 : f32
    %s38 = arith.mulf %s37, %s37 : f32
    %s39 = arith.mulf %s38, %s38 : f32
    %q = arith.subf %s39, %c : f32
    harp.yield %q : f32
  } : tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}

// -----

// With contractions=false, an epilogue that reads a row sum and a matmul
// gets the row sum fused into its row loop, not the matmul: it stays a
// kernel of its own ahead of the loop (the gradient of attention's input
// sums three projections' products; fused, each row was a
// matrix-vector product).
// NOCONTRACT-LABEL: func.func @sum_beside_matmul
// NOCONTRACT: %[[MM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<4x3xf32>, tensor<3x5xf32>)
// NOCONTRACT: scf.for
// NOCONTRACT-NOT: ["parallel", "parallel", "reduction"]
// NOCONTRACT: tensor.extract_slice %[[MM]]
// NOCONTRACT-NOT: ["parallel", "parallel", "reduction"]
// NOCONTRACT: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<1x5xf32>)
// NOCONTRACT-NOT: ["parallel", "parallel", "reduction"]
// NOCONTRACT: tensor.insert_slice
func.func @sum_beside_matmul(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>, %x: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %av = harp.view %a <(d0, d1, d2) -> (d0, d2)> : tensor<4x3xf32> -> tensor<4x5x3xf32>
  %bv = harp.view %b <(d0, d1, d2) -> (d2, d1)> : tensor<3x5xf32> -> tensor<4x5x3xf32>
  %mm = harp.map_reduce ins(%av, %bv : tensor<4x5x3xf32>, tensor<4x5x3xf32>) {
  ^bb0(%p: f32, %q: f32):
    %m = arith.mulf %p, %q : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<4x5xf32>
  %s = harp.map_reduce ins(%x : tensor<4x5xf32>) {
  ^bb0(%p: f32):
    harp.yield %p : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<4xf32> -> tensor<4x5xf32>
  %y = harp.map_reduce ins(%mm, %sb : tensor<4x5xf32>, tensor<4x5xf32>) {
  ^bb0(%p: f32, %q: f32):
    %r = arith.addf %p, %q : f32
    harp.yield %r : f32
  } : tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

// A batch norm's per-channel statistic (a sum over n, h, w) read by the
// (n, c, h, w) normalization: each channel's sum is read by the n x h row
// tiles of that channel, so fused into rows it would be computed N x H
// times. The sum keeps its kernel and the normalization reads it.
// CHECK-LABEL: func.func @channel_statistic
// CHECK-NOT: scf.for
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "reduction", "reduction"]
// CHECK-NOT: scf.for
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[SUM]] : tensor<2x3x4x5xf32>, tensor<3xf32>)
// CHECK-NOT: scf.for
func.func @channel_statistic(%x: tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32> {
  %xv = harp.view %x <(c, n, h, w) -> (n, c, h, w)> : tensor<2x3x4x5xf32> -> tensor<3x2x4x5xf32>
  %s = harp.map_reduce ins(%xv : tensor<3x2x4x5xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1, 2, 3]) : tensor<3xf32>
  %sb = harp.view %s <(n, c, h, w) -> (c)> : tensor<3xf32> -> tensor<2x3x4x5xf32>
  %y = harp.map_reduce ins(%x, %sb : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    harp.yield %d : f32
  } : tensor<2x3x4x5xf32>
  return %y : tensor<2x3x4x5xf32>
}

// -----

// An epilogue reading a row's own reduction (fused) and a statistic shared
// by all rows (a column of sums over rows): only the row's reduction moves
// into the row loop; the shared one is computed once, before it.
// CHECK-LABEL: func.func @row_and_shared_statistics
// CHECK: %[[COLS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4x6xf32>) outs(%{{.*}} : tensor<6xf32>)
// CHECK: scf.for
// CHECK: %[[ROW:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<1x6xf32>) outs(%{{.*}} : tensor<1xf32>)
// CHECK: %[[SHARED:.*]] = tensor.extract_slice %[[COLS]][0] [6] [1]
// CHECK-NOT: linalg.generic {{.*}} outs(%{{.*}} : tensor<6xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[ROW]], %[[SHARED]] : tensor<1x6xf32>, tensor<1xf32>, tensor<6xf32>)
func.func @row_and_shared_statistics(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %r = harp.map_reduce ins(%x : tensor<4x6xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(max, dims = [1]) : tensor<4xf32>
  %xt = harp.view %x <(j, i) -> (i, j)> : tensor<4x6xf32> -> tensor<6x4xf32>
  %c = harp.map_reduce ins(%xt : tensor<6x4xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : tensor<6xf32>
  %rb = harp.view %r <(i, j) -> (i)> : tensor<4xf32> -> tensor<4x6xf32>
  %cb = harp.view %c <(i, j) -> (j)> : tensor<6xf32> -> tensor<4x6xf32>
  %y = harp.map_reduce ins(%x, %rb, %cb : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %d: f32):
    %e = arith.subf %a, %b : f32
    %f = arith.mulf %e, %d : f32
    harp.yield %f : f32
  } : tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// A convolution (a sum of products read through windows, which linalg's
// contraction interface does not recognize) is a contraction too: with
// contractions=false it keeps its own kernel, where harp-vectorize tiles
// it over output channels and rows, instead of being computed one output
// row at a time in its epilogue's row loop.
// NOCONTRACT-LABEL: func.func @convolution_epilogue
// NOCONTRACT-NOT: scf.for
// NOCONTRACT: %[[CONV:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]
// NOCONTRACT-NOT: scf.for
// NOCONTRACT: linalg.generic {{.*}} ins(%[[CONV]] : tensor<2x3x20xf32>)
// NOCONTRACT-NOT: scf.for
// CHECK-LABEL: func.func @convolution_epilogue
// CHECK: scf.for
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]
func.func @convolution_epilogue(%x: tensor<2x4x22xf32>, %w: tensor<3x4x3xf32>) -> tensor<2x3x20xf32> {
  %xw = harp.view %x <(n, f, o, c, k) -> (n, c, o + k)> : tensor<2x4x22xf32> -> tensor<2x3x20x4x3xf32>
  %wb = harp.view %w <(n, f, o, c, k) -> (f, c, k)> : tensor<3x4x3xf32> -> tensor<2x3x20x4x3xf32>
  %conv = harp.map_reduce ins(%xw, %wb : tensor<2x3x20x4x3xf32>, tensor<2x3x20x4x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %p = arith.mulf %a, %b : f32
    harp.yield %p : f32
  } reduce(sum, dims = [3, 4]) : tensor<2x3x20xf32>
  %y = harp.map_reduce ins(%conv : tensor<2x3x20xf32>) {
  ^bb0(%a: f32):
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %a, %zero : f32
    harp.yield %r : f32
  } : tensor<2x3x20xf32>
  return %y : tensor<2x3x20xf32>
}

// -----

// The reduction's zero accumulator, which it shares with another reduction
// (CSE merges equal fills), is filled again in each row: a slice of the
// shared fill taken inside the loop became a copy of the whole tensor per
// row once bufferized. The row's fill starts from an empty tensor of the
// row's shape, not a slice of the whole one (which bufferized to an
// allocation of the whole tensor per row).
// CHECK-LABEL: func.func @shared_fill
// NOCONTRACT-LABEL: func.func @shared_fill
// CHECK: linalg.fill {{.*}} -> tensor<4xf32>
// CHECK: scf.for
// CHECK-NOT: tensor.extract_slice %{{.*}} : tensor<4xf32> to tensor<1xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1xf32>
// CHECK: %[[F:.*]] = linalg.fill {{.*}} outs(%[[E]] : tensor<1xf32>) -> tensor<1xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-SAME: outs(%[[F]] : tensor<1xf32>)
func.func @shared_fill(%x: tensor<4x6xf32>, %y: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x6xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%y : tensor<4x6xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x6xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s, %x : tensor<4xf32>, tensor<4x6xf32>) outs(%e2 : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %q = arith.divf %b, %a : f32
    linalg.yield %q : f32
  } -> tensor<4x6xf32>
  return %o, %t : tensor<4x6xf32>, tensor<4xf32>
}
