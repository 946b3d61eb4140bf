// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-forward-fills,canonicalize))' --split-input-file | FileCheck %s

// A matmul's register tiles read their accumulators from the zero fill
// through parallel tile loops: they start from zero, and the fill, which
// the tiles overwrite entirely, is gone.
// CHECK-LABEL: func.func @accumulate
// CHECK-DAG: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<8x16xf32>
// CHECK-DAG: %[[EMPTY:.*]] = tensor.empty() : tensor<32x64xf32>
// CHECK-NOT: vector.transfer_write %{{.*}} : vector<1x16xf32>
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %[[EMPTY]])
// CHECK: scf.for
// CHECK-NOT: vector.transfer_read
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %[[ZERO]]) -> (vector<8x16xf32>)
func.func @accumulate(%a: vector<8x16xf32>) -> tensor<32x64xf32> {
  %kc0 = arith.constant 0 : index
  %kc1 = arith.constant 1 : index
  %kc3 = arith.constant 3 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  %zeros = arith.constant dense<0.0> : vector<1x16xf32>
  %empty = tensor.empty() : tensor<32x64xf32>
  %fill = scf.for %i = %c0 to %c32 step %c1 iter_args(%t = %empty) -> (tensor<32x64xf32>) {
    %r = scf.for %j = %c0 to %c64 step %c16 iter_args(%u = %t) -> (tensor<32x64xf32>) {
      %w = vector.transfer_write %zeros, %u[%i, %j] {in_bounds = [true, true]} : vector<1x16xf32>, tensor<32x64xf32>
      scf.yield %w : tensor<32x64xf32>
    } {harp.parallel}
    scf.yield %r : tensor<32x64xf32>
  } {harp.parallel}
  %c = scf.for %i = %c0 to %c32 step %c8 iter_args(%t = %fill) -> (tensor<32x64xf32>) {
    %r = scf.for %j = %c0 to %c64 step %c16 iter_args(%u = %t) -> (tensor<32x64xf32>) {
      %acc = vector.transfer_read %u[%i, %j], %pad {in_bounds = [true, true]} : tensor<32x64xf32>, vector<8x16xf32>
      %s = scf.for %kk = %kc0 to %kc3 step %kc1 iter_args(%ss = %acc) -> (vector<8x16xf32>) {
        %p = arith.addf %ss, %a fastmath<contract> : vector<8x16xf32>
        scf.yield %p : vector<8x16xf32>
      }
      %w = vector.transfer_write %s, %u[%i, %j] {in_bounds = [true, true]} : vector<8x16xf32>, tensor<32x64xf32>
      scf.yield %w : tensor<32x64xf32>
    } {harp.parallel}
    scf.yield %r : tensor<32x64xf32>
  } {harp.parallel}
  return %c : tensor<32x64xf32>
}

// -----

// A k block carries the accumulators through a loop that is not parallel:
// its second iteration reads what the first wrote. Nothing changes.
// CHECK-LABEL: func.func @k_blocked
// CHECK: linalg.fill
// CHECK: vector.transfer_read
func.func @k_blocked(%a: vector<8x16xf32>, %zero: f32) -> tensor<8x16xf32> {
  %kc0 = arith.constant 0 : index
  %kc1 = arith.constant 1 : index
  %kc3 = arith.constant 3 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %pad = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<8x16xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<8x16xf32>) -> tensor<8x16xf32>
  %c = scf.for %k = %c0 to %c4 step %c1 iter_args(%t = %fill) -> (tensor<8x16xf32>) {
    %acc = vector.transfer_read %t[%c0, %c0], %pad {in_bounds = [true, true]} : tensor<8x16xf32>, vector<8x16xf32>
    %s = scf.for %kk = %kc0 to %kc3 step %kc1 iter_args(%ss = %acc) -> (vector<8x16xf32>) {
      %p = arith.addf %ss, %a fastmath<contract> : vector<8x16xf32>
      scf.yield %p : vector<8x16xf32>
    }
    %w = vector.transfer_write %s, %t[%c0, %c0] {in_bounds = [true, true]} : vector<8x16xf32>, tensor<8x16xf32>
    scf.yield %w : tensor<8x16xf32>
  }
  return %c : tensor<8x16xf32>
}

// -----

// A scalar fill, a peeled loop and its remainder: the remainder reads
// columns the main loop does not write (48..56), so it starts from the
// scalar too, and together they write every column.
// CHECK-LABEL: func.func @peeled
// CHECK-SAME: %[[A:.*]]: vector<4x16xf32>, %[[B:.*]]: vector<4x8xf32>, %[[S:.*]]: f32
// CHECK-NOT: linalg.fill
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<4x56xf32>
// CHECK-NOT: linalg.fill
// CHECK: %[[MAIN:.*]] = scf.for %{{.*}} iter_args(%{{.*}} = %[[EMPTY]])
// CHECK: %[[SPLAT16:.*]] = vector.broadcast %[[S]] : f32 to vector<4x16xf32>
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %[[SPLAT16]]) -> (vector<4x16xf32>)
// CHECK: %[[SPLAT8:.*]] = vector.broadcast %[[S]] : f32 to vector<4x8xf32>
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %[[SPLAT8]]) -> (vector<4x8xf32>)
// CHECK: vector.transfer_write %{{.*}}, %[[MAIN]][%{{.*}}, %c48]
func.func @peeled(%a: vector<4x16xf32>, %b: vector<4x8xf32>, %s: f32) -> tensor<4x56xf32> {
  %kc0 = arith.constant 0 : index
  %kc1 = arith.constant 1 : index
  %kc3 = arith.constant 3 : index
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c48 = arith.constant 48 : index
  %pad = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x56xf32>
  %fill = linalg.fill ins(%s : f32) outs(%empty : tensor<4x56xf32>) -> tensor<4x56xf32>
  %main = scf.for %j = %c0 to %c48 step %c16 iter_args(%t = %fill) -> (tensor<4x56xf32>) {
    %acc = vector.transfer_read %t[%c0, %j], %pad {in_bounds = [true, true]} : tensor<4x56xf32>, vector<4x16xf32>
    %x = scf.for %kk = %kc0 to %kc3 step %kc1 iter_args(%ss = %acc) -> (vector<4x16xf32>) {
      %p = arith.addf %ss, %a fastmath<contract> : vector<4x16xf32>
      scf.yield %p : vector<4x16xf32>
    }
    %w = vector.transfer_write %x, %t[%c0, %j] {in_bounds = [true, true]} : vector<4x16xf32>, tensor<4x56xf32>
    scf.yield %w : tensor<4x56xf32>
  } {harp.parallel}
  %acc = vector.transfer_read %main[%c0, %c48], %pad {in_bounds = [true, true]} : tensor<4x56xf32>, vector<4x8xf32>
  %y = scf.for %kk = %kc0 to %kc3 step %kc1 iter_args(%ss = %acc) -> (vector<4x8xf32>) {
    %p = arith.addf %ss, %b fastmath<contract> : vector<4x8xf32>
    scf.yield %p : vector<4x8xf32>
  }
  %r = vector.transfer_write %y, %main[%c0, %c48] {in_bounds = [true, true]} : vector<4x8xf32>, tensor<4x56xf32>
  return %r : tensor<4x56xf32>
}

// -----

// The remainder reads columns the main loop wrote (40..48): it keeps its
// read. The main loop's reads are forwarded; the fill, still read, stays.
// CHECK-LABEL: func.func @overlap
// CHECK: linalg.fill
// CHECK: scf.for
// CHECK-NOT: vector.transfer_read
// CHECK: scf.yield
// CHECK: vector.transfer_read %{{.*}}[%c0, %c40]
func.func @overlap(%a: vector<4x16xf32>, %b: vector<4x8xf32>, %s: f32) -> tensor<4x56xf32> {
  %kc0 = arith.constant 0 : index
  %kc1 = arith.constant 1 : index
  %kc3 = arith.constant 3 : index
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c40 = arith.constant 40 : index
  %c48 = arith.constant 48 : index
  %pad = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x56xf32>
  %fill = linalg.fill ins(%s : f32) outs(%empty : tensor<4x56xf32>) -> tensor<4x56xf32>
  %main = scf.for %j = %c0 to %c48 step %c16 iter_args(%t = %fill) -> (tensor<4x56xf32>) {
    %acc = vector.transfer_read %t[%c0, %j], %pad {in_bounds = [true, true]} : tensor<4x56xf32>, vector<4x16xf32>
    %x = scf.for %kk = %kc0 to %kc3 step %kc1 iter_args(%ss = %acc) -> (vector<4x16xf32>) {
      %p = arith.addf %ss, %a fastmath<contract> : vector<4x16xf32>
      scf.yield %p : vector<4x16xf32>
    }
    %w = vector.transfer_write %x, %t[%c0, %j] {in_bounds = [true, true]} : vector<4x16xf32>, tensor<4x56xf32>
    scf.yield %w : tensor<4x56xf32>
  } {harp.parallel}
  %acc = vector.transfer_read %main[%c0, %c40], %pad {in_bounds = [true, true]} : tensor<4x56xf32>, vector<4x8xf32>
  %y = scf.for %kk = %kc0 to %kc3 step %kc1 iter_args(%ss = %acc) -> (vector<4x8xf32>) {
    %p = arith.addf %ss, %b fastmath<contract> : vector<4x8xf32>
    scf.yield %p : vector<4x8xf32>
  }
  %r = vector.transfer_write %y, %main[%c0, %c40] {in_bounds = [true, true]} : vector<4x8xf32>, tensor<4x56xf32>
  return %r : tensor<4x56xf32>
}

// -----

// Tiles of 8 columns every 16 leave gaps: the reads start from zero, the
// fill stays for the columns nothing writes.
// CHECK-LABEL: func.func @gaps
// CHECK: %[[FILL:.*]] = linalg.fill
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %[[FILL]])
// CHECK-NOT: vector.transfer_read
// CHECK: return
func.func @gaps(%a: vector<4x8xf32>) -> tensor<4x64xf32> {
  %kc0 = arith.constant 0 : index
  %kc1 = arith.constant 1 : index
  %kc3 = arith.constant 3 : index
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %pad = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x64xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x64xf32>) -> tensor<4x64xf32>
  %main = scf.for %j = %c0 to %c64 step %c16 iter_args(%t = %fill) -> (tensor<4x64xf32>) {
    %acc = vector.transfer_read %t[%c0, %j], %pad {in_bounds = [true, true]} : tensor<4x64xf32>, vector<4x8xf32>
    %x = scf.for %kk = %kc0 to %kc3 step %kc1 iter_args(%ss = %acc) -> (vector<4x8xf32>) {
      %p = arith.addf %ss, %a fastmath<contract> : vector<4x8xf32>
      scf.yield %p : vector<4x8xf32>
    }
    %w = vector.transfer_write %x, %t[%c0, %j] {in_bounds = [true, true]} : vector<4x8xf32>, tensor<4x64xf32>
    scf.yield %w : tensor<4x64xf32>
  } {harp.parallel}
  return %main : tensor<4x64xf32>
}

// -----

// The fill is returned as well: it stays, and so does the loop's init.
// A read that may run past the tensor's end keeps its padding: untouched.
// CHECK-LABEL: func.func @fill_returned
// CHECK: %[[FILL:.*]] = linalg.fill
// CHECK: vector.transfer_read %{{.*}}[%c4], %{{.*}} : tensor<16xf32>, vector<16xf32>
// CHECK: return %[[FILL]]
func.func @fill_returned(%a: vector<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, vector<16xf32>) {
  %kc0 = arith.constant 0 : index
  %kc1 = arith.constant 1 : index
  %kc3 = arith.constant 3 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %pad = arith.constant 1.0 : f32
  %empty = tensor.empty() : tensor<16xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<16xf32>) -> tensor<16xf32>
  %c4 = arith.constant 4 : index
  %edge = vector.transfer_read %fill[%c4], %pad : tensor<16xf32>, vector<16xf32>
  %r = scf.for %i = %c0 to %c1 step %c1 iter_args(%t = %fill) -> (tensor<16xf32>) {
    %acc = vector.transfer_read %t[%c0], %pad {in_bounds = [true]} : tensor<16xf32>, vector<16xf32>
    %x = scf.for %kk = %kc0 to %kc3 step %kc1 iter_args(%ss = %acc) -> (vector<16xf32>) {
      %p = arith.addf %ss, %a fastmath<contract> : vector<16xf32>
      scf.yield %p : vector<16xf32>
    }
    %w = vector.transfer_write %x, %t[%c0] {in_bounds = [true]} : vector<16xf32>, tensor<16xf32>
    scf.yield %w : tensor<16xf32>
  } {harp.parallel}
  return %fill, %r, %edge : tensor<16xf32>, tensor<16xf32>, vector<16xf32>
}

// -----

// Row results written element by element cover the tensor: a row loop
// inserting each row's value into a filled vector drops the fill.
// CHECK-LABEL: func.func @row_inserts
// CHECK-NOT: linalg.fill
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<7xf32>
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %[[EMPTY]])
// CHECK: tensor.insert
func.func @row_inserts(%v: f32) -> tensor<7xf32> {
  %kc0 = arith.constant 0 : index
  %kc1 = arith.constant 1 : index
  %kc3 = arith.constant 3 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %ninf = arith.constant 0xFF800000 : f32
  %empty = tensor.empty() : tensor<7xf32>
  %fill = linalg.fill ins(%ninf : f32) outs(%empty : tensor<7xf32>) -> tensor<7xf32>
  %r = scf.for %i = %c0 to %c7 step %c1 iter_args(%t = %fill) -> (tensor<7xf32>) {
    %x = tensor.insert %v into %t[%i] : tensor<7xf32>
    scf.yield %x : tensor<7xf32>
  } {harp.parallel}
  return %r : tensor<7xf32>
}

// -----

// A cache block: a slice of the accumulator taken, updated by register
// tiles and put back where it was taken. The tiles start from zero, and
// the blocks together write every element, so the fill (a reshape of it)
// is gone.
// The fill becomes empty under its reshape, which stays: folded, the
// result would bufferize apart from the caller's buffer.
// CHECK-LABEL: func.func @cache_blocks
// CHECK-NOT: linalg.fill
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<16x32xf32>
// CHECK-NEXT: %[[PANELS:.*]] = tensor.expand_shape %[[EMPTY]]
// CHECK-NEXT: scf.for %{{.*}} iter_args(%[[T:.*]] = %[[PANELS]])
// CHECK: tensor.extract_slice %[[T]]
// CHECK-NOT: vector.transfer_read
// CHECK: tensor.insert_slice
func.func @cache_blocks(%a: vector<8x8xf32>) -> tensor<16x4x8xf32> {
  %kc0 = arith.constant 0 : index
  %kc1 = arith.constant 1 : index
  %kc3 = arith.constant 3 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %pad = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<16x32xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<16x32xf32>) -> tensor<16x32xf32>
  %panels = tensor.expand_shape %fill [[0], [1, 2]] output_shape [16, 4, 8] : tensor<16x32xf32> into tensor<16x4x8xf32>
  %r = scf.for %n = %c0 to %c4 step %c2 iter_args(%t = %panels) -> (tensor<16x4x8xf32>) {
    %block = tensor.extract_slice %t[0, %n, 0] [16, 2, 8] [1, 1, 1] : tensor<16x4x8xf32> to tensor<16x2x8xf32>
    %b = scf.for %m = %c0 to %c16 step %c8 iter_args(%u = %block) -> (tensor<16x2x8xf32>) {
      %p = scf.for %j = %c0 to %c2 step %c1 iter_args(%v = %u) -> (tensor<16x2x8xf32>) {
        %acc = vector.transfer_read %v[%m, %j, %c0], %pad {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2) -> (d0, d2)>} : tensor<16x2x8xf32>, vector<8x8xf32>
        %x = scf.for %kk = %kc0 to %kc3 step %kc1 iter_args(%ss = %acc) -> (vector<8x8xf32>) {
          %p = arith.addf %ss, %a fastmath<contract> : vector<8x8xf32>
          scf.yield %p : vector<8x8xf32>
        }
        %x3 = vector.shape_cast %x : vector<8x8xf32> to vector<8x1x8xf32>
        %w = vector.transfer_write %x3, %v[%m, %j, %c0] {in_bounds = [true, true, true]} : vector<8x1x8xf32>, tensor<16x2x8xf32>
        scf.yield %w : tensor<16x2x8xf32>
      } {harp.parallel}
      scf.yield %p : tensor<16x2x8xf32>
    } {harp.parallel}
    %put = tensor.insert_slice %b into %t[0, %n, 0] [16, 2, 8] [1, 1, 1] : tensor<16x2x8xf32> into tensor<16x4x8xf32>
    scf.yield %put : tensor<16x4x8xf32>
  } {harp.parallel}
  return %r : tensor<16x4x8xf32>
}

// -----

// The same blocks over half the panels: the tiles still start from zero,
// but the other half keeps the fill's zeros.
// CHECK-LABEL: func.func @half_the_blocks
// CHECK: %[[FILL:.*]] = linalg.fill
// CHECK-NOT: vector.transfer_read
// CHECK: tensor.insert_slice %{{.*}} into %[[FILL]]
func.func @half_the_blocks(%a: vector<8x8xf32>) -> tensor<16x4x8xf32> {
  %kc0 = arith.constant 0 : index
  %kc1 = arith.constant 1 : index
  %kc3 = arith.constant 3 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %pad = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<16x32xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<16x32xf32>) -> tensor<16x32xf32>
  %panels = tensor.expand_shape %fill [[0], [1, 2]] output_shape [16, 4, 8] : tensor<16x32xf32> into tensor<16x4x8xf32>
  %r = scf.for %n = %c0 to %c2 step %c2 iter_args(%t = %panels) -> (tensor<16x4x8xf32>) {
    %block = tensor.extract_slice %t[0, %n, 0] [16, 2, 8] [1, 1, 1] : tensor<16x4x8xf32> to tensor<16x2x8xf32>
    %b = scf.for %m = %c0 to %c16 step %c8 iter_args(%u = %block) -> (tensor<16x2x8xf32>) {
      %p = scf.for %j = %c0 to %c2 step %c1 iter_args(%v = %u) -> (tensor<16x2x8xf32>) {
        %acc = vector.transfer_read %v[%m, %j, %c0], %pad {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2) -> (d0, d2)>} : tensor<16x2x8xf32>, vector<8x8xf32>
        %x = scf.for %kk = %kc0 to %kc3 step %kc1 iter_args(%ss = %acc) -> (vector<8x8xf32>) {
          %p = arith.addf %ss, %a fastmath<contract> : vector<8x8xf32>
          scf.yield %p : vector<8x8xf32>
        }
        %x3 = vector.shape_cast %x : vector<8x8xf32> to vector<8x1x8xf32>
        %w = vector.transfer_write %x3, %v[%m, %j, %c0] {in_bounds = [true, true, true]} : vector<8x1x8xf32>, tensor<16x2x8xf32>
        scf.yield %w : tensor<16x2x8xf32>
      } {harp.parallel}
      scf.yield %p : tensor<16x2x8xf32>
    } {harp.parallel}
    %put = tensor.insert_slice %b into %t[0, %n, 0] [16, 2, 8] [1, 1, 1] : tensor<16x2x8xf32> into tensor<16x4x8xf32>
    scf.yield %put : tensor<16x4x8xf32>
  } {harp.parallel}
  return %r : tensor<16x4x8xf32>
}

// -----

// A reduction's partial sums (no multiply-add into them) are not a
// contraction's accumulators: read as they were.
// CHECK-LABEL: func.func @partial_sums
// CHECK: linalg.fill
// CHECK: vector.transfer_read
func.func @partial_sums(%a: vector<16xf32>) -> vector<16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %pad = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<16xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<16xf32>) -> tensor<16xf32>
  %acc = vector.transfer_read %fill[%c0], %pad {in_bounds = [true]} : tensor<16xf32>, vector<16xf32>
  %r = scf.for %k = %c0 to %c3 step %c1 iter_args(%s = %acc) -> (vector<16xf32>) {
    %p = arith.addf %s, %a : vector<16xf32>
    scf.yield %p : vector<16xf32>
  }
  return %r : vector<16xf32>
}

// -----

// The fill has another reader besides the reshape the tiles write through:
// the tiles start from zero, but the fill stays.
// CHECK-LABEL: func.func @fill_read_elsewhere
// CHECK: %[[FILL:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8x8xf32>)
// CHECK: return %{{.*}}, %[[FILL]]
func.func @fill_read_elsewhere(%a: vector<8x8xf32>) -> (tensor<8x1x8xf32>, tensor<8x8xf32>) {
  %kc0 = arith.constant 0 : index
  %kc1 = arith.constant 1 : index
  %kc3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %pad = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<8x8xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<8x8xf32>) -> tensor<8x8xf32>
  %panels = tensor.expand_shape %fill [[0], [1, 2]] output_shape [8, 1, 8] : tensor<8x8xf32> into tensor<8x1x8xf32>
  %r = scf.for %j = %kc0 to %kc1 step %kc1 iter_args(%t = %panels) -> (tensor<8x1x8xf32>) {
    %acc = vector.transfer_read %t[%kc0, %j, %kc0], %pad {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2) -> (d0, d2)>} : tensor<8x1x8xf32>, vector<8x8xf32>
    %s = scf.for %kk = %kc0 to %kc3 step %kc1 iter_args(%ss = %acc) -> (vector<8x8xf32>) {
      %p = arith.addf %ss, %a fastmath<contract> : vector<8x8xf32>
      scf.yield %p : vector<8x8xf32>
    }
    %s3 = vector.shape_cast %s : vector<8x8xf32> to vector<8x1x8xf32>
    %w = vector.transfer_write %s3, %t[%kc0, %j, %kc0] {in_bounds = [true, true, true]} : vector<8x1x8xf32>, tensor<8x1x8xf32>
    scf.yield %w : tensor<8x1x8xf32>
  } {harp.parallel}
  return %r, %fill : tensor<8x1x8xf32>, tensor<8x8xf32>
}

// -----

// The row put back is not into the tensor it was taken from: a write of
// the whole row came between, and the row put back holds the fill's zeros
// in the columns its own write (4 of 8) left alone. Both writes together
// cover the tensor, but the fill stays.
// CHECK-LABEL: func.func @put_back_elsewhere
// CHECK: linalg.fill
// CHECK: tensor.insert_slice
func.func @put_back_elsewhere(%a: vector<4xf32>, %b: vector<8xf32>) -> tensor<2x8xf32> {
  %kc0 = arith.constant 0 : index
  %kc1 = arith.constant 1 : index
  %kc2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x8xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x8xf32>) -> tensor<2x8xf32>
  %r = scf.for %i = %kc0 to %kc2 step %kc1 iter_args(%t = %fill) -> (tensor<2x8xf32>) {
    %row = tensor.extract_slice %t[%i, 0] [1, 8] [1, 1] : tensor<2x8xf32> to tensor<1x8xf32>
    %t2 = vector.transfer_write %b, %t[%i, %kc0] {in_bounds = [true]} : vector<8xf32>, tensor<2x8xf32>
    %w = vector.transfer_write %a, %row[%kc0, %kc0] {in_bounds = [true]} : vector<4xf32>, tensor<1x8xf32>
    %put = tensor.insert_slice %w into %t2[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<2x8xf32>
    scf.yield %put : tensor<2x8xf32>
  } {harp.parallel}
  return %r : tensor<2x8xf32>
}
