// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-parallelize{min-work=0}))' --split-input-file | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-parallelize))' --split-input-file | FileCheck %s --check-prefix=WORK

// With min-work=0 every marked loop worth a fork by its trip count runs on
// threads; by default (WORK) only nests of at least 262,144 lane
// operations do.

// The outermost marked loop of a nest becomes scf.parallel; the marked loop
// inside it stays a sequential scf.for, and the marks are removed.
// CHECK-LABEL: func.func @nest
// WORK-LABEL: func.func @nest
// WORK-NOT: scf.parallel
// WORK: return
// CHECK: scf.parallel (%[[I:.*]]) = (%c0) to (%c64) step (%c8)
// CHECK: scf.for {{.*}} step %c16
// CHECK-NOT: harp.parallel
// CHECK: memref.store
func.func @nest(%out: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %v = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c64 step %c8 {
    scf.for %j = %c0 to %c64 step %c16 {
      memref.store %v, %out[%i, %j] : memref<64x64xf32>
    } {harp.parallel}
  } {harp.parallel}
  return
}

// -----

// A marked loop inside an unmarked (reduction) loop stays sequential: no
// fork per iteration of the outer loop. So does an unmarked loop, a loop
// that still carries a value, and one too short to be worth a fork.
// CHECK-LABEL: func.func @stays_sequential
// WORK-LABEL: func.func @stays_sequential
// WORK-NOT: scf.parallel
// WORK: return
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @stays_sequential(%out: memref<64xf32>, %init: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %v = arith.constant 1.0 : f32
  scf.for %k = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %c64 step %c1 {
      memref.store %v, %out[%j] : memref<64xf32>
    } {harp.parallel}
  }
  scf.for %j = %c0 to %c64 step %c1 {
    memref.store %v, %out[%j] : memref<64xf32>
  }
  %s = scf.for %j = %c0 to %c64 step %c1 iter_args(%a = %init) -> (f32) {
    %n = arith.addf %a, %v : f32
    scf.yield %n : f32
  } {harp.parallel}
  scf.for %j = %c0 to %c4 step %c1 {
    memref.store %v, %out[%j] : memref<64xf32>
  } {harp.parallel}
  return %s : f32
}

// -----

// Work counts the lanes of vector ops times the trips of the loops around
// them: 64 x 64 iterations of a 16-lane load, add and store are 196,608
// lane operations, below the default; 128 x 64 are 393,216, above it.
// CHECK-LABEL: func.func @vector_lanes
// WORK-LABEL: func.func @vector_lanes
// WORK: scf.for {{.*}} to %c64
// WORK: scf.parallel ({{.*}}) = ({{.*}}) to (%c128)
func.func @vector_lanes(%a: memref<128x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c1024 = arith.constant 1024 : index
  %z = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %c1024 step %c16 {
      %v = vector.transfer_read %a[%i, %j], %z : memref<128x1024xf32>, vector<16xf32>
      %w = arith.addf %v, %v : vector<16xf32>
      vector.transfer_write %w, %a[%i, %j] : vector<16xf32>, memref<128x1024xf32>
    }
  } {harp.parallel}
  scf.for %i = %c0 to %c128 step %c1 {
    scf.for %j = %c0 to %c1024 step %c16 {
      %v = vector.transfer_read %a[%i, %j], %z : memref<128x1024xf32>, vector<16xf32>
      %w = arith.addf %v, %v : vector<16xf32>
      vector.transfer_write %w, %a[%i, %j] : vector<16xf32>, memref<128x1024xf32>
    }
  } {harp.parallel}
  return
}

// -----

// A linalg op on buffers counts its iterations (here 8 x 256 x 256 of a
// matmul tile: 524,288), a copy its elements (8 x 1024, too few). A loop
// of unknown trip count, or one whose nest calls a function, counts as
// enough.
// CHECK-LABEL: func.func @ops_on_buffers
// WORK-LABEL: func.func @ops_on_buffers
// WORK: scf.parallel
// WORK: linalg.matmul
// WORK: scf.for
// WORK: memref.copy
// WORK: scf.parallel
// WORK: func.call @tile
// WORK: scf.parallel
// WORK-NEXT: memref.store
func.func private @tile(index)
func.func @ops_on_buffers(%a: memref<64x256xf32>, %b: memref<256x256xf32>,
                          %c: memref<64x256xf32>, %s: memref<64x1024xf32>,
                          %d: memref<64x1024xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c64 step %c8 {
    %ta = memref.subview %a[%i, 0] [8, 256] [1, 1] : memref<64x256xf32> to memref<8x256xf32, strided<[256, 1], offset: ?>>
    %tc = memref.subview %c[%i, 0] [8, 256] [1, 1] : memref<64x256xf32> to memref<8x256xf32, strided<[256, 1], offset: ?>>
    linalg.matmul ins(%ta, %b : memref<8x256xf32, strided<[256, 1], offset: ?>>, memref<256x256xf32>)
                  outs(%tc : memref<8x256xf32, strided<[256, 1], offset: ?>>)
  } {harp.parallel}
  scf.for %i = %c0 to %c64 step %c8 {
    %ts = memref.subview %s[%i, 0] [8, 1024] [1, 1] : memref<64x1024xf32> to memref<8x1024xf32, strided<[1024, 1], offset: ?>>
    %td = memref.subview %d[%i, 0] [8, 1024] [1, 1] : memref<64x1024xf32> to memref<8x1024xf32, strided<[1024, 1], offset: ?>>
    memref.copy %ts, %td : memref<8x1024xf32, strided<[1024, 1], offset: ?>> to memref<8x1024xf32, strided<[1024, 1], offset: ?>>
  } {harp.parallel}
  scf.for %i = %c0 to %c64 step %c8 {
    func.call @tile(%i) : (index) -> ()
  } {harp.parallel}
  scf.for %i = %c0 to %n step %c8 {
    memref.store %one, %s[%i, %c0] : memref<64x1024xf32>
  } {harp.parallel}
  return
}
