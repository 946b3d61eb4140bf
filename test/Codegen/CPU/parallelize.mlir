// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-parallelize))' --split-input-file | FileCheck %s

// The outermost marked loop of a nest becomes scf.parallel; the marked loop
// inside it stays a sequential scf.for, and the marks are removed.
// CHECK-LABEL: func.func @nest
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
