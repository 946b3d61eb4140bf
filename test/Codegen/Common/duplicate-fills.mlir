// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-duplicate-fills))' --split-input-file | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-duplicate-fills{max-ops=1}))' --split-input-file | FileCheck %s --check-prefix=SMALL
// Bufferized after it, the two matmuls that shared a fill copy nothing:
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-duplicate-fills),one-shot-bufferize{bufferize-function-boundaries})' --split-input-file | FileCheck %s --check-prefix=BUF

// One zero fill accumulates two matmuls: the second gets a fill of its
// own, placed right after the shared one.
// CHECK-LABEL: func.func @two_matmuls
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<4x4xf32>)
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK: %[[Z2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<4x4xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32>) outs(%[[Z]] : tensor<4x4xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32>) outs(%[[Z2]] : tensor<4x4xf32>)
// SMALL-LABEL: func.func @two_matmuls
// SMALL-COUNT-1: linalg.fill
// SMALL-NOT: linalg.fill
// BUF-LABEL: func.func @two_matmuls
// BUF-NOT: memref.copy
// BUF-COUNT-2: linalg.fill
// BUF-NOT: memref.copy
// BUF: return
func.func @two_matmuls(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %a = linalg.matmul ins(%x, %y : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = linalg.matmul ins(%y, %x : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %a, %b : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// The vectorized form: a loop nest of constant vector writes, reshaped, is
// the init of two tile loops. The whole chain (empty, loop nest, reshape)
// is rebuilt for the second loop.
// CHECK-LABEL: func.func @fill_loops
// CHECK: %[[F:.*]] = scf.for
// CHECK: %[[R:.*]] = tensor.expand_shape %[[F]]
// CHECK: tensor.empty() : tensor<8x16xf32>
// CHECK: %[[F2:.*]] = scf.for
// CHECK: %[[R2:.*]] = tensor.expand_shape %[[F2]]
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[R]])
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[R2]])
// SMALL-LABEL: func.func @fill_loops
// SMALL-COUNT-1: tensor.expand_shape
// SMALL-NOT: tensor.expand_shape
func.func @fill_loops(%v: vector<16xf32>) -> (tensor<8x2x8xf32>, tensor<8x2x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zeros = arith.constant dense<0.0> : vector<16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %f = scf.for %i = %c0 to %c8 step %c1 iter_args(%t = %e) -> (tensor<8x16xf32>) {
    %w = vector.transfer_write %zeros, %t[%i, %c0] {in_bounds = [true]} : vector<16xf32>, tensor<8x16xf32>
    scf.yield %w : tensor<8x16xf32>
  }
  %r = tensor.expand_shape %f [[0], [1, 2]] output_shape [8, 2, 8] : tensor<8x16xf32> into tensor<8x2x8xf32>
  %a = scf.for %i = %c0 to %c8 step %c1 iter_args(%t = %r) -> (tensor<8x2x8xf32>) {
    %x = vector.extract_strided_slice %v {offsets = [0], sizes = [8], strides = [1]} : vector<16xf32> to vector<8xf32>
    %w = vector.transfer_write %x, %t[%i, %c0, %c0] {in_bounds = [true]} : vector<8xf32>, tensor<8x2x8xf32>
    scf.yield %w : tensor<8x2x8xf32>
  }
  %b = scf.for %i = %c0 to %c8 step %c1 iter_args(%t = %r) -> (tensor<8x2x8xf32>) {
    %x = vector.extract_strided_slice %v {offsets = [8], sizes = [8], strides = [1]} : vector<16xf32> to vector<8xf32>
    %w = vector.transfer_write %x, %t[%i, %c1, %c0] {in_bounds = [true]} : vector<8xf32>, tensor<8x2x8xf32>
    scf.yield %w : tensor<8x2x8xf32>
  }
  return %a, %b : tensor<8x2x8xf32>, tensor<8x2x8xf32>
}

// -----

// A reader and one writer: the writer gets its own fill, the reader keeps
// the shared one (written in place, it would see the matmul's sums).
// CHECK-LABEL: func.func @reader_and_writer
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: %[[Z2:.*]] = linalg.fill
// CHECK: linalg.matmul {{.*}} outs(%[[Z2]] : tensor<4x4xf32>)
// CHECK: linalg.add ins(%[[Z]], %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32>)
func.func @reader_and_writer(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%one : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %a = linalg.matmul ins(%x, %x : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %b = linalg.add ins(%z, %x : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %a, %b : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Left alone: a shared init computed from an argument (rebuilding it would
// compute it twice), and a fill with one writer and nothing else.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-1: linalg.fill
// CHECK-NOT: linalg.fill
// CHECK-NOT: linalg.exp
// CHECK: return
func.func @left_alone(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %ex = linalg.exp ins(%x : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %a = linalg.matmul ins(%x, %x : tensor<4x4xf32>, tensor<4x4xf32>) outs(%ex : tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = linalg.matmul ins(%x, %x : tensor<4x4xf32>, tensor<4x4xf32>) outs(%ex : tensor<4x4xf32>) -> tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = linalg.matmul ins(%x, %x : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %a, %b, %c : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A slice of a fill written back where it was taken bufferizes in place:
// the extract_slice and the insert_slice are neither readers nor writers,
// so the fill is not rebuilt.
// CHECK-LABEL: func.func @slice_written_back
// CHECK-COUNT-1: linalg.fill
// CHECK-NOT: linalg.fill
// CHECK: return
func.func @slice_written_back(%x: tensor<2x4xf32>) -> tensor<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %s = tensor.extract_slice %z[1, 1] [2, 4] [1, 1] : tensor<4x6xf32> to tensor<2x4xf32>
  %a = linalg.add ins(%s, %x : tensor<2x4xf32>, tensor<2x4xf32>) outs(%s : tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = tensor.insert_slice %a into %z[1, 1] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

// A reshape of a fill is a writer when its result is written: the fill
// written directly and through a reshape is rebuilt for the direct writer
// (the reshape, first, keeps it).
// CHECK-LABEL: func.func @through_reshape
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: %[[Z2:.*]] = linalg.fill
// CHECK: %[[R:.*]] = tensor.expand_shape %[[Z]]
// CHECK: linalg.matmul {{.*}} outs(%[[Z2]] : tensor<4x4xf32>)
// CHECK: linalg.add {{.*}} outs(%[[R]] : tensor<2x2x4xf32>)
// SMALL-LABEL: func.func @through_reshape
// SMALL-COUNT-1: linalg.fill
// SMALL-NOT: linalg.fill
func.func @through_reshape(%x: tensor<4x4xf32>, %y: tensor<2x2x4xf32>) -> (tensor<2x2x4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = tensor.expand_shape %z [[0, 1], [2]] output_shape [2, 2, 4] : tensor<4x4xf32> into tensor<2x2x4xf32>
  %a = linalg.matmul ins(%x, %x : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = linalg.add ins(%y, %y : tensor<2x2x4xf32>, tensor<2x2x4xf32>) outs(%r : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  return %b, %a : tensor<2x2x4xf32>, tensor<4x4xf32>
}
