// RUN: harp-opt %s --harp-to-llvm="profile=true vector-bits=256 vector-registers=16" | FileCheck %s
// RUN: harp-opt %s --harp-to-llvm="vector-bits=256 vector-registers=16" | FileCheck %s --check-prefix=OFF

// Through harp-to-llvm{profile=true}: a harp program's kernels reach the LLVM dialect as calls.
// CHECK-LABEL: llvm.func @relu
// CHECK: %[[NAME:.*]] = llvm.mlir.addressof @__harp_profile_0 : !llvm.ptr
// CHECK: %[[WHOLE_NAME:.*]] = llvm.mlir.addressof @__harp_profile_1 : !llvm.ptr
// CHECK: %[[WHOLE:.*]] = llvm.call @harp_profile_clock() : () -> i64
// CHECK-NEXT: %[[START:.*]] = llvm.call @harp_profile_clock() : () -> i64
// The kernel, in a function of its own (harp-outline-kernels), is what is timed.
// CHECK-NEXT: llvm.call @relu_kernel0(
// CHECK-NEXT: llvm.call @harp_profile_record(%[[NAME]], %[[START]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT: llvm.call @harp_profile_record(%[[WHOLE_NAME]], %[[WHOLE]])
// CHECK: llvm.func internal @relu_kernel0(
// CHECK-NOT: harp_profile
// CHECK: llvm.intr.maximum
// CHECK: llvm.func @harp_profile_clock() -> i64
// CHECK: llvm.func @harp_profile_record(!llvm.ptr, i64)
// CHECK: llvm.mlir.global internal constant @__harp_profile_0("@relu #0 scf.for 37 x {{[0-9]+}} (1.96 kflop): writes memref<37x53xf32> at profile-kernels.mlir:{{[0-9]+}}\00")
// CHECK: llvm.mlir.global internal constant @__harp_profile_1("@relu (whole call)\00")
func.func @relu(%x: tensor<37x53xf32>) -> tensor<37x53xf32> {
  %y = harp.map_reduce ins(%x : tensor<37x53xf32>) {
  ^bb0(%a: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %z : f32
    harp.yield %m : f32
  } : tensor<37x53xf32>
  return %y : tensor<37x53xf32>
}

// Without the option nothing is timed.
// OFF-NOT: harp_profile
