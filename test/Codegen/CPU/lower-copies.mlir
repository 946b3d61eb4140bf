// harp-lower-copies: strided copies of static shape become loops of vector
// transfers, one vector of the target's width at a time and a shorter one
// for the rest of a row.
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-lower-copies))' | FileCheck %s
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-lower-copies{vector-bits=256 parallel-bytes=1024}))' | FileCheck %s --check-prefix=AVX2
// RUN: not harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-lower-copies{vector-bits=4}))' 2>&1 | FileCheck %s --check-prefix=BITS

// BITS: error: harp-lower-copies: vector-bits must be at least 8, got 4

// Rows of 56 floats into a padded image's interior (58 wide): three
// vectors of 16 in a loop and one of 8 (with 256-bit vectors: six of 8,
// no rest). The unit batch dim gets no loop. 12.5 KB move: below the
// default 64 KiB, the channel loop is not marked parallel; with
// parallel-bytes=1024 it is.
// CHECK-LABEL: func.func @padded_interior
// CHECK-NOT: memref.copy
// CHECK: scf.for %[[C:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT: scf.for %[[R:.*]] = %c0 to %c14 step %c1 {
// CHECK-NEXT: scf.for %[[J:.*]] = %c0 to %c48 step %c16 {
// CHECK-NEXT: %[[V:.*]] = vector.transfer_read %arg0[%c0, %[[C]], %[[R]], %[[J]]], %{{.*}} {in_bounds = [true]} : memref<1x4x14x56xf32>, vector<16xf32>
// CHECK-NEXT: vector.transfer_write %[[V]], %arg1[%c0, %[[C]], %[[R]], %[[J]]] {in_bounds = [true]} : vector<16xf32>, memref<1x4x14x56xf32, strided<[3248, 812, 58, 1], offset: 59>>
// CHECK-NEXT: }
// CHECK-NEXT: %[[T:.*]] = vector.transfer_read %arg0[%c0, %[[C]], %[[R]], %c48], %{{.*}} {in_bounds = [true]} : memref<1x4x14x56xf32>, vector<8xf32>
// CHECK-NEXT: vector.transfer_write %[[T]], %arg1[%c0, %[[C]], %[[R]], %c48] {in_bounds = [true]}
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NOT: harp.parallel
// CHECK: return
// AVX2-LABEL: func.func @padded_interior
// AVX2: scf.for %{{.*}} = %c0 to %c56 step %c8 {
// AVX2-NEXT: vector.transfer_read {{.*}} vector<8xf32>
// AVX2-NEXT: vector.transfer_write {{.*}} : vector<8xf32>
// AVX2-NEXT: }
// AVX2-NEXT: }
// AVX2-NEXT: } {harp.parallel}
func.func @padded_interior(%src: memref<1x4x14x56xf32>, %dst: memref<1x4x14x56xf32, strided<[3248, 812, 58, 1], offset: 59>>) {
  memref.copy %src, %dst : memref<1x4x14x56xf32> to memref<1x4x14x56xf32, strided<[3248, 812, 58, 1], offset: 59>>
  return
}

// -----

// A grid's rows copied out, one vector per row (16 floats), 64 KiB moved:
// the row loop is marked parallel.
// CHECK-LABEL: func.func @grid_rows
// CHECK: scf.for %[[R:.*]] = %c0 to %c1024 step %c1 {
// CHECK-NEXT: vector.transfer_read %arg0[%[[R]], %c0], %{{.*}} {in_bounds = [true]} : memref<1024x16xf32, strided<[18, 1]>>, vector<16xf32>
// CHECK-NEXT: vector.transfer_write {{.*}}
// CHECK-NEXT: } {harp.parallel}
func.func @grid_rows(%src: memref<1024x16xf32, strided<[18, 1]>>, %dst: memref<1024x16xf32>) {
  memref.copy %src, %dst : memref<1024x16xf32, strided<[18, 1]>> to memref<1024x16xf32>
  return
}

// -----

// Rows shorter than a vector: one short vector each (i8: 64 lanes).
// CHECK-LABEL: func.func @short_rows
// CHECK: scf.for %[[R:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT: vector.transfer_read {{.*}} : memref<3x5xi8, strided<[7, 1]>>, vector<5xi8>
// CHECK-NEXT: vector.transfer_write {{.*}}
func.func @short_rows(%src: memref<3x5xi8, strided<[7, 1]>>, %dst: memref<3x5xi8>) {
  memref.copy %src, %dst : memref<3x5xi8, strided<[7, 1]>> to memref<3x5xi8>
  return
}

// -----

// A column (elements 8 apart): element by element.
// CHECK-LABEL: func.func @column
// CHECK: scf.for %[[I:.*]] = %c0 to %c6 step %c1 {
// CHECK-NEXT: %[[E:.*]] = memref.load %arg0[%[[I]]] : memref<6xf64, strided<[8]>>
// CHECK-NEXT: memref.store %[[E]], %arg1[%[[I]]]
// CHECK-LABEL: func.func @transposed
// CHECK: scf.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT: scf.for %[[J:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT: memref.load %arg0[%[[I]], %[[J]]] : memref<4x3xf32, strided<[1, 4]>>
// CHECK-NEXT: memref.store
func.func @column(%src: memref<6xf64, strided<[8]>>, %dst: memref<6xf64>) {
  memref.copy %src, %dst : memref<6xf64, strided<[8]>> to memref<6xf64>
  return
}
func.func @transposed(%src: memref<4x3xf32, strided<[1, 4]>>, %dst: memref<4x3xf32>) {
  memref.copy %src, %dst : memref<4x3xf32, strided<[1, 4]>> to memref<4x3xf32>
  return
}

// -----

// Left alone: a contiguous copy (one memcpy), dynamic shapes, booleans
// (a bit each in a vector), a copy of no elements is removed.
// CHECK-LABEL: func.func @left_alone
// CHECK: memref.copy %arg0, %arg1 : memref<4x8xf32> to memref<4x8xf32>
// CHECK: memref.copy %arg2, %arg3 : memref<?x8xf32, strided<[9, 1]>> to memref<?x8xf32>
// CHECK: memref.copy %arg4, %arg5 : memref<4x8xi1, strided<[9, 1]>> to memref<4x8xi1>
// CHECK-NOT: memref.copy
// CHECK: return
func.func @left_alone(%a: memref<4x8xf32>, %b: memref<4x8xf32>,
                      %c: memref<?x8xf32, strided<[9, 1]>>, %d: memref<?x8xf32>,
                      %e: memref<4x8xi1, strided<[9, 1]>>, %f: memref<4x8xi1>,
                      %g: memref<0x8xf32, strided<[9, 1]>>, %h: memref<0x8xf32>) {
  memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  memref.copy %c, %d : memref<?x8xf32, strided<[9, 1]>> to memref<?x8xf32>
  memref.copy %e, %f : memref<4x8xi1, strided<[9, 1]>> to memref<4x8xi1>
  memref.copy %g, %h : memref<0x8xf32, strided<[9, 1]>> to memref<0x8xf32>
  return
}

// -----

// A padded image on buffers: the fill of the whole buffer becomes fills of
// the border only (rows 0 and 9, then columns 0 and 9 of rows 1 to 8), and
// the interior is copied in.
// CHECK-LABEL: func.func @padded_fill
// CHECK: %[[B:.*]] = memref.alloc() : memref<2x10x10xf32>
// CHECK-NOT: linalg.map
// CHECK: %[[T:.*]] = memref.subview %[[B]][0, 0, 0] [2, 1, 10] [1, 1, 1]
// CHECK-NEXT: linalg.fill ins(%[[ZERO:.*]] : f32) outs(%[[T]]
// CHECK-NEXT: %[[BOT:.*]] = memref.subview %[[B]][0, 9, 0] [2, 1, 10] [1, 1, 1]
// CHECK-NEXT: linalg.fill ins(%[[ZERO]] : f32) outs(%[[BOT]]
// CHECK-NEXT: %[[L:.*]] = memref.subview %[[B]][0, 1, 0] [2, 8, 1] [1, 1, 1]
// CHECK-NEXT: linalg.fill ins(%[[ZERO]] : f32) outs(%[[L]]
// CHECK-NEXT: %[[R:.*]] = memref.subview %[[B]][0, 1, 9] [2, 8, 1] [1, 1, 1]
// CHECK-NEXT: linalg.fill ins(%[[ZERO]] : f32) outs(%[[R]]
// CHECK-NOT: linalg.fill
// CHECK: vector.transfer_read %arg0
// CHECK: return %[[B]]
func.func @padded_fill(%src: memref<2x8x8xf32>) -> memref<2x10x10xf32> {
  %zero = arith.constant 0.0 : f32
  %b = memref.alloc() : memref<2x10x10xf32>
  linalg.map outs(%b : memref<2x10x10xf32>)
    (%init: f32) {
      linalg.yield %zero : f32
    }
  %in = memref.subview %b[0, 1, 1] [2, 8, 8] [1, 1, 1] : memref<2x10x10xf32> to memref<2x8x8xf32, strided<[100, 10, 1], offset: 11>>
  memref.copy %src, %in : memref<2x8x8xf32> to memref<2x8x8xf32, strided<[100, 10, 1], offset: 11>>
  return %b : memref<2x10x10xf32>
}

// -----

// The fill stays whole where the copy reads the filled buffer itself, or
// where something between the fill and the copy touches memory.
// CHECK-LABEL: func.func @fill_kept
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[B:.*]] : memref<10x10xf32>)
// CHECK-NOT: linalg.fill
// CHECK: vector.transfer_read
// CHECK-LABEL: func.func @fill_kept_effect
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<10x10xf32>)
// CHECK-NEXT: memref.store
func.func @fill_kept() -> memref<10x10xf32> {
  %one = arith.constant 1.0 : f32
  %b = memref.alloc() : memref<10x10xf32>
  linalg.fill ins(%one : f32) outs(%b : memref<10x10xf32>)
  %from = memref.subview %b[0, 0] [4, 4] [1, 1] : memref<10x10xf32> to memref<4x4xf32, strided<[10, 1]>>
  %to = memref.subview %b[5, 5] [4, 4] [1, 1] : memref<10x10xf32> to memref<4x4xf32, strided<[10, 1], offset: 55>>
  memref.copy %from, %to : memref<4x4xf32, strided<[10, 1]>> to memref<4x4xf32, strided<[10, 1], offset: 55>>
  return %b : memref<10x10xf32>
}
func.func @fill_kept_effect(%src: memref<4x4xf32>) -> memref<10x10xf32> {
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %b = memref.alloc() : memref<10x10xf32>
  linalg.fill ins(%one : f32) outs(%b : memref<10x10xf32>)
  memref.store %one, %src[%c0, %c0] : memref<4x4xf32>
  %to = memref.subview %b[5, 5] [4, 4] [1, 1] : memref<10x10xf32> to memref<4x4xf32, strided<[10, 1], offset: 55>>
  memref.copy %src, %to : memref<4x4xf32> to memref<4x4xf32, strided<[10, 1], offset: 55>>
  return %b : memref<10x10xf32>
}
