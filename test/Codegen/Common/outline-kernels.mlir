// RUN: harp-opt %s --harp-outline-kernels --split-input-file | FileCheck %s
// Run twice, the pass changes nothing more: each kernel function holds one
// kernel already.
// RUN: harp-opt %s --harp-outline-kernels --harp-outline-kernels --split-input-file | FileCheck %s
// RUN: harp-opt %s --harp-outline-kernels="merge=false" --split-input-file | FileCheck %s --check-prefix=NOMERGE

// Each loop nest moves into a function of its own, after its caller and in
// program order, called in its place. The kernel takes the values it uses
// from outside (buffers, a scalar) as arguments; constants are
// rematerialized inside, so its loop bounds stay constant. What is not a
// loop nest (the allocation, the deallocation) stays in the caller.
// CHECK-LABEL: func.func @two_kernels(
// CHECK-SAME: %[[A:.*]]: memref<8x16xf32>, %[[B:.*]]: memref<8x16xf32>, %[[S:.*]]: f32)
// CHECK: %[[T:.*]] = memref.alloc() : memref<8x16xf32>
// CHECK-NEXT: call @two_kernels_kernel0(%[[A]], %[[S]], %[[T]]) : (memref<8x16xf32>, f32, memref<8x16xf32>) -> ()
// CHECK-NEXT: call @two_kernels_kernel1(%[[T]], %[[B]]) : (memref<8x16xf32>, memref<8x16xf32>) -> ()
// CHECK-NEXT: memref.dealloc %[[T]]
// CHECK-NEXT: return
// CHECK: func.func private @two_kernels_kernel0(%[[KA:.*]]: memref<8x16xf32>, %[[KS:.*]]: f32, %[[KT:.*]]: memref<8x16xf32>)
// CHECK-SAME: attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: scf.for %{{.*}} = %[[C0]] to %[[C8]] step %[[C1]]
// CHECK: memref.load %[[KA]]
// CHECK: arith.mulf %{{.*}}, %[[KS]]
// CHECK: memref.store %{{.*}}, %[[KT]]
// CHECK: return
// CHECK: func.func private @two_kernels_kernel1(
// CHECK: scf.for
// CHECK: arith.addf
func.func @two_kernels(%a: memref<8x16xf32>, %b: memref<8x16xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %t = memref.alloc() : memref<8x16xf32>
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %x = memref.load %a[%i, %j] : memref<8x16xf32>
      %y = arith.mulf %x, %s : f32
      memref.store %y, %t[%i, %j] : memref<8x16xf32>
    }
  }
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %x = memref.load %t[%i, %j] : memref<8x16xf32>
      %y = arith.addf %x, %x : f32
      memref.store %y, %b[%i, %j] : memref<8x16xf32>
    }
  }
  memref.dealloc %t : memref<8x16xf32>
  return
}

// -----

// A kernel with results (a loop carrying a sum) returns them; a global's
// address is rematerialized like a constant.
// CHECK-LABEL: func.func @carried(
// CHECK: %[[SUM:.*]] = call @carried_kernel0(%{{.*}}) : (memref<16xf32>) -> f32
// CHECK-NEXT: %[[TWICE:.*]] = call @carried_kernel1(%[[SUM]]) : (f32) -> f32
// CHECK-NEXT: return %[[TWICE]] : f32
// CHECK: func.func private @carried_kernel0(%{{.*}}: memref<16xf32>) -> f32
// CHECK: %[[R:.*]] = scf.for
// CHECK: return %[[R]] : f32
// CHECK: func.func private @carried_kernel1(%{{.*}}: f32) -> f32
// CHECK: memref.get_global @table
// CHECK: scf.for
memref.global "private" constant @table : memref<4xf32> = dense<1.0>
func.func @carried(%a: memref<16xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %table = memref.get_global @table : memref<4xf32>
  %sum = scf.for %i = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> f32 {
    %x = memref.load %a[%i] : memref<16xf32>
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  %twice = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %sum) -> f32 {
    %x = memref.load %table[%i] : memref<4xf32>
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  return %twice : f32
}

// -----

// The same kernel twice (as a layer repeated, or in two functions) is one
// function, called twice; a kernel that differs in a constant is another.
// CHECK-LABEL: func.func @repeated(
// CHECK: call @repeated_kernel0(%{{.*}}, %{{.*}})
// CHECK-NEXT: call @repeated_kernel0(%{{.*}}, %{{.*}})
// CHECK-NEXT: call @repeated_kernel2(%{{.*}}, %{{.*}})
// CHECK: func.func private @repeated_kernel0(
// CHECK-NOT: func.func private @repeated_kernel1(
// CHECK: func.func private @repeated_kernel2(
// CHECK: arith.constant 3.000000e+00 : f32
// CHECK-LABEL: func.func @again(
// CHECK: call @repeated_kernel0(
// CHECK-NOT: func.func private @again_kernel0(
// NOMERGE-LABEL: func.func @repeated(
// NOMERGE: call @repeated_kernel0(
// NOMERGE-NEXT: call @repeated_kernel1(
// NOMERGE-NEXT: call @repeated_kernel2(
// NOMERGE: func.func private @repeated_kernel1(
// NOMERGE: func.func @again(
// NOMERGE: call @again_kernel0(
func.func @repeated(%a: memref<32xf32>, %b: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %two = arith.constant 2.0 : f32
  %three = arith.constant 3.0 : f32
  scf.for %i = %c0 to %c32 step %c1 {
    %x = memref.load %a[%i] : memref<32xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %b[%i] : memref<32xf32>
  }
  scf.for %i = %c0 to %c32 step %c1 {
    %x = memref.load %b[%i] : memref<32xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %a[%i] : memref<32xf32>
  }
  scf.for %i = %c0 to %c32 step %c1 {
    %x = memref.load %a[%i] : memref<32xf32>
    %y = arith.mulf %x, %three : f32
    memref.store %y, %b[%i] : memref<32xf32>
  }
  return
}
func.func @again(%a: memref<32xf32>, %b: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c32 step %c1 {
    %x = memref.load %a[%i] : memref<32xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %b[%i] : memref<32xf32>
  }
  %zero = arith.constant 0.0 : f32
  memref.store %zero, %a[%c0] : memref<32xf32>
  return
}

// -----

// A function that is one kernel (and what a kernel rematerializes:
// constants, a poison value) and its return is a kernel function already; a
// declaration is left alone.
// CHECK-LABEL: func.func @single(
// CHECK-NEXT: arith.constant
// CHECK: scf.for
// CHECK-NOT: call
// CHECK-NOT: @single_kernel0
// CHECK-LABEL: func.func @single_with_poison(
// CHECK-NOT: call
// CHECK-NOT: @single_with_poison_kernel0
// CHECK: func.func private @external(memref<8xf32>)
func.func @single(%a: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %zero, %a[%i] : memref<8xf32>
  }
  return
}
func.func @single_with_poison(%a: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %p = llvm.mlir.poison : f32
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %p, %a[%i] : memref<8xf32>
  }
  return
}
func.func private @external(memref<8xf32>)

// -----

// A kernel that would pass a value of a type other than a builtin one
// stays where it is (func-to-llvm converts a dialect's types only where it
// converts their ops: an MPI communicator); the next kernel is outlined.
// CHECK-LABEL: func.func @foreign_type(
// CHECK-SAME: %[[P:.*]]: !llvm.ptr
// CHECK: scf.for
// CHECK: llvm.load %[[P]]
// CHECK: call @foreign_type_kernel1(
// CHECK-NOT: @foreign_type_kernel0
func.func @foreign_type(%p: !llvm.ptr, %a: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %x = llvm.load %p : !llvm.ptr -> f32
    memref.store %x, %a[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %a[%i] : memref<8xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %a[%i] : memref<8xf32>
  }
  return
}

// -----

// A copy is a kernel too (expanded inline, 1,000 small copies were one
// block LLVM schedules in quadratic time). Its memrefs are passed with
// their static offsets made dynamic, so the pieces of a concatenation,
// copied into different places of one buffer, share one kernel function.
// CHECK-LABEL: func.func @concat(
// CHECK-SAME: %[[A:.*]]: memref<2x3xf32>, %[[B:.*]]: memref<2x3xf32>
// CHECK: %[[T:.*]] = memref.alloc() : memref<4x3xf32>
// CHECK: %[[V0:.*]] = memref.subview %[[T]][0, 0]
// CHECK: %[[S0:.*]] = memref.cast %[[A]] : memref<2x3xf32> to memref<2x3xf32, strided<[3, 1], offset: ?>>
// CHECK: %[[D0:.*]] = memref.cast %[[V0]] : memref<2x3xf32, strided<[3, 1]>> to memref<2x3xf32, strided<[3, 1], offset: ?>>
// CHECK: call @concat_kernel0(%[[S0]], %[[D0]]) : (memref<2x3xf32, strided<[3, 1], offset: ?>>, memref<2x3xf32, strided<[3, 1], offset: ?>>) -> ()
// CHECK: %[[V1:.*]] = memref.subview %[[T]][2, 0]
// CHECK: %[[S1:.*]] = memref.cast %[[B]]
// CHECK: %[[D1:.*]] = memref.cast %[[V1]] : memref<2x3xf32, strided<[3, 1], offset: 6>> to memref<2x3xf32, strided<[3, 1], offset: ?>>
// CHECK: call @concat_kernel0(%[[S1]], %[[D1]])
// CHECK: func.func private @concat_kernel0(%[[S:.*]]: memref<2x3xf32, strided<[3, 1], offset: ?>>, %[[D:.*]]: memref<2x3xf32, strided<[3, 1], offset: ?>>)
// CHECK-NEXT: memref.copy %[[S]], %[[D]]
// CHECK-NOT: func.func private @concat_kernel1
// NOMERGE-LABEL: func.func @concat(
// NOMERGE: call @concat_kernel0(
// NOMERGE: call @concat_kernel1(
func.func @concat(%a: memref<2x3xf32>, %b: memref<2x3xf32>) -> memref<4x3xf32> {
  %t = memref.alloc() : memref<4x3xf32>
  %v0 = memref.subview %t[0, 0] [2, 3] [1, 1] : memref<4x3xf32> to memref<2x3xf32, strided<[3, 1]>>
  memref.copy %a, %v0 : memref<2x3xf32> to memref<2x3xf32, strided<[3, 1]>>
  %v1 = memref.subview %t[2, 0] [2, 3] [1, 1] : memref<4x3xf32> to memref<2x3xf32, strided<[3, 1], offset: 6>>
  memref.copy %b, %v1 : memref<2x3xf32> to memref<2x3xf32, strided<[3, 1], offset: 6>>
  return %t : memref<4x3xf32>
}
