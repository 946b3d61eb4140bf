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

// The module's own function of a runtime name, of another type.
// expected-error @+1 {{'harp_profile_clock' is harp's profiling runtime function of type '() -> i64'; the module defines it otherwise}}
func.func private @harp_profile_clock() -> f32

func.func @user(%m: memref<4xf32>) {
  return
}

