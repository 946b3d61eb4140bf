// RUN: harp-opt %s --harp-profile-kernels --split-input-file --verify-diagnostics | FileCheck %s
// Run twice, the pass leaves the functions it profiled as they are.
// RUN: harp-opt %s --harp-profile-kernels --harp-profile-kernels --split-input-file --verify-diagnostics | FileCheck %s

// A loop nest, a copy and a fill are kernels, each bracketed by the clock
// and a record of its name; the subview, the allocation and the
// deallocation are not. The whole call is recorded before the return.
// CHECK-LABEL: func.func @kernels
// CHECK: %[[WHOLE:.*]] = call @harp_profile_clock() : () -> i64
// CHECK: memref.subview
// CHECK: %[[T0:.*]] = call @harp_profile_clock() : () -> i64
// CHECK-NEXT: scf.for
// CHECK: %[[N0:.*]] = llvm.mlir.addressof @__harp_profile_0 : !llvm.ptr
// CHECK-NEXT: call @harp_profile_record(%[[N0]], %[[T0]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT: %[[T1:.*]] = call @harp_profile_clock()
// CHECK-NEXT: memref.copy
// CHECK-NEXT: %[[N1:.*]] = llvm.mlir.addressof @__harp_profile_1
// CHECK-NEXT: call @harp_profile_record(%[[N1]], %[[T1]])
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: %[[T2:.*]] = call @harp_profile_clock()
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: %[[N2:.*]] = llvm.mlir.addressof @__harp_profile_2
// CHECK-NEXT: call @harp_profile_record(%[[N2]], %[[T2]])
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: %[[N3:.*]] = llvm.mlir.addressof @__harp_profile_3
// CHECK-NEXT: call @harp_profile_record(%[[N3]], %[[WHOLE]])
// CHECK-NEXT: return
// A declaration is left alone.
// CHECK: func.func private @external(memref<8x16xf32>)
// CHECK-NOT: harp_profile
// CHECK-LABEL: func.func @no_kernels
// CHECK: call @harp_profile_clock
// CHECK: call @harp_profile_record
// CHECK-NEXT: return
// CHECK: func.func private @harp_profile_clock() -> i64
// CHECK: func.func private @harp_profile_record(!llvm.ptr, i64)
// The names: function and number, op, trip counts of the outer loops,
// buffers written (through the view to the argument), source line.
// CHECK: llvm.mlir.global internal constant @__harp_profile_0("@kernels #0 scf.for 4 x 16 x ?: writes memref<8x16xf32> at model.py:12\00")
// CHECK: llvm.mlir.global internal constant @__harp_profile_1("@kernels #1 memref.copy: writes memref<8x16xf32> at profile-kernels.mlir:{{[0-9]+}}\00")
// CHECK: llvm.mlir.global internal constant @__harp_profile_2("@kernels #2 linalg.fill: writes memref<8x16xf32> at profile-kernels.mlir:{{[0-9]+}}\00")
// CHECK: llvm.mlir.global internal constant @__harp_profile_3("@kernels (whole call)\00")
// CHECK: llvm.mlir.global internal constant @__harp_profile_4("@no_kernels (whole call)\00")
func.func @kernels(%a: memref<8x16xf32>, %b: memref<8x16xf32>, %s: f32, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %v = memref.subview %b[0, 0] [4, 16] [1, 1] : memref<8x16xf32> to memref<4x16xf32, strided<[16, 1]>>
  scf.for %i = %c0 to %c8 step %c2 {
    scf.for %j = %c0 to %c16 step %c1 {
      scf.for %k = %c0 to %n step %c1 {
        %x = memref.load %a[%i, %j] : memref<8x16xf32>
        memref.store %x, %v[%c0, %j] : memref<4x16xf32, strided<[16, 1]>>
      }
    }
  } loc("model.py":12:3)
  memref.copy %a, %b : memref<8x16xf32> to memref<8x16xf32>
  %t = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%s : f32) outs(%t : memref<8x16xf32>)
  memref.dealloc %t : memref<8x16xf32>
  return
}

func.func private @external(memref<8x16xf32>)

func.func @no_kernels(%s: f32) -> f32 {
  %r = arith.addf %s, %s : f32
  return %r : f32
}

// -----

// An scf.if holding only a deallocation is no kernel; one that writes is.
// CHECK-LABEL: func.func @branches
// CHECK: %[[WHOLE:.*]] = call @harp_profile_clock
// CHECK-NEXT: scf.if
// CHECK: %[[T:.*]] = call @harp_profile_clock
// CHECK-NEXT: scf.if
// CHECK: llvm.mlir.addressof @__harp_profile_0
// CHECK: @__harp_profile_0("@branches #0 scf.if: writes memref<4xf32>
func.func @branches(%c: i1, %m: memref<4xf32>, %s: f32) {
  scf.if %c {
    memref.dealloc %m : memref<4xf32>
  }
  scf.if %c {
    %c0 = arith.constant 0 : index
    memref.store %s, %m[%c0] : memref<4xf32>
  }
  return
}

// -----

// The floating-point operations of one call, where the loops around every
// op that computes have constant bounds: each op's lanes times the trip
// counts around it (a multiply-add counts two). 7 x 3 x (16 for the fma
// x 2 + 4 for the mulf + 4 for the addf) = 840; 2 x 60 = 120 for the
// linalg op's 3 x 4 x 5 points of a multiply and an add; a kernel that
// computes nothing, and one inside a loop of run-time bounds, say none;
// large counts take a prefix (10^9 x 4 lanes x 2).
// CHECK: @__harp_profile_0("@flops #0 scf.for 7 x 3 (840 flop): writes memref<16xf32> at
// CHECK: @__harp_profile_1("@flops #1 linalg.generic (120 flop): writes memref<3x4xf32> at
// CHECK: @__harp_profile_2("@flops #2 scf.for 7: writes memref<16xf32> at
// CHECK: @__harp_profile_3("@flops #3 scf.for ?: writes memref<16xf32> at
// CHECK: @__harp_profile_5("@large #0 scf.for 1000 x 1000 x 1000 (8.00 Gflop): writes memref<16xf32> at
func.func @flops(%m: memref<16xf32>, %a: memref<3x5xf32>, %b: memref<5x4xf32>, %c: memref<3x4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %p = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c7 step %c1 {
    scf.for %j = %c0 to %c3 step %c1 {
      %v = vector.transfer_read %m[%c0], %p : memref<16xf32>, vector<16xf32>
      %f = vector.fma %v, %v, %v : vector<16xf32>
      %w = vector.transfer_read %m[%c0], %p : memref<16xf32>, vector<4xf32>
      %x = arith.mulf %w, %w : vector<4xf32>
      %y = arith.addf %x, %w : vector<4xf32>
      vector.transfer_write %f, %m[%c0] : vector<16xf32>, memref<16xf32>
      vector.transfer_write %y, %m[%c0] : vector<4xf32>, memref<16xf32>
    }
  }
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<3x5xf32>, memref<5x4xf32>) outs(%c : memref<3x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %r = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %r : f32
    linalg.yield %s : f32
  }
  scf.for %i = %c0 to %c7 step %c1 {
    %v = vector.transfer_read %m[%c0], %p : memref<16xf32>, vector<16xf32>
    vector.transfer_write %v, %m[%c1] : vector<16xf32>, memref<16xf32>
  }
  scf.for %i = %c0 to %n step %c1 {
    %v = vector.transfer_read %m[%c0], %p : memref<16xf32>, vector<16xf32>
    %f = arith.mulf %v, %v : vector<16xf32>
    vector.transfer_write %f, %m[%c0] : vector<16xf32>, memref<16xf32>
  }
  return
}

func.func @large(%m: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  %p = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c1000 step %c1 {
    scf.for %j = %c0 to %c1000 step %c1 {
      scf.for %k = %c0 to %c1000 step %c1 {
        %v = vector.transfer_read %m[%c0], %p : memref<16xf32>, vector<4xf32>
        %f = math.fma %v, %v, %v : vector<4xf32>
        vector.transfer_write %f, %m[%c0] : vector<4xf32>, memref<16xf32>
      }
    }
  }
  return
}

// -----

// The module's own function of a runtime name, of another type.
// expected-error @+1 {{'harp_profile_clock' is harp's profiling runtime function of type '() -> i64'; the module defines it otherwise}}
func.func private @harp_profile_clock() -> f32

func.func @user(%m: memref<4xf32>) {
  return
}

