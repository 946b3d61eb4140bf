// RUN: harp-opt %s --harp-merge-gpu-modules --split-input-file | FileCheck %s

// Three kernels outlined into modules of their own, two of them named alike,
// two reading an equal constant under one name and one a different constant
// under that name: one module, the clashing kernel and global renamed, the
// equal global kept once, every launch pointed at the merged module.
// CHECK-LABEL: gpu.module @f_kernel
// CHECK: memref.global "private" constant @c : memref<2xf32> = dense<[1.000000e+00, 2.000000e+00]>
// CHECK: gpu.func @f_kernel(
// CHECK: memref.get_global @c :
// CHECK: gpu.func @f_kernel_0(
// CHECK: memref.get_global @c :
// CHECK: memref.global "private" constant @c_0 : memref<2xf32> = dense<[3.000000e+00, 4.000000e+00]>
// CHECK: gpu.func @g_kernel(
// CHECK: memref.get_global @c_0 :
// CHECK-NOT: gpu.module
// CHECK-LABEL: func.func @f(
// CHECK: gpu.launch_func @f_kernel::@f_kernel blocks
// CHECK: gpu.launch_func @f_kernel::@f_kernel_0 blocks
// CHECK: gpu.launch_func @f_kernel::@g_kernel blocks
module attributes {gpu.container_module} {
  gpu.module @f_kernel {
    memref.global "private" constant @c : memref<2xf32> = dense<[1.0, 2.0]>
    gpu.func @f_kernel(%out: memref<2xf32>) kernel {
      %g = memref.get_global @c : memref<2xf32>
      gpu.return
    }
  }
  gpu.module @f_kernel_0 {
    memref.global "private" constant @c : memref<2xf32> = dense<[1.0, 2.0]>
    gpu.func @f_kernel(%out: memref<2xf32>) kernel {
      %g = memref.get_global @c : memref<2xf32>
      gpu.return
    }
  }
  gpu.module @g_kernel {
    memref.global "private" constant @c : memref<2xf32> = dense<[3.0, 4.0]>
    gpu.func @g_kernel(%out: memref<2xf32>) kernel {
      %g = memref.get_global @c : memref<2xf32>
      gpu.return
    }
  }
  func.func @f(%out: memref<2xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @f_kernel::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%out : memref<2xf32>)
    gpu.launch_func @f_kernel_0::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%out : memref<2xf32>)
    gpu.launch_func @g_kernel::@g_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%out : memref<2xf32>)
    return
  }
}

// -----

// Modules compiled for other targets stay apart.
// CHECK-LABEL: gpu.module @a [#nvvm.target<chip = "sm_90">]
// CHECK: gpu.func @a(
// CHECK-NOT: gpu.func
// CHECK-LABEL: gpu.module @b [#nvvm.target<chip = "sm_80">]
// CHECK: gpu.launch_func @a::@a
// CHECK: gpu.launch_func @b::@b
module attributes {gpu.container_module} {
  gpu.module @a [#nvvm.target<chip = "sm_90">] {
    gpu.func @a() kernel {
      gpu.return
    }
  }
  gpu.module @b [#nvvm.target<chip = "sm_80">] {
    gpu.func @b() kernel {
      gpu.return
    }
  }
  func.func @f() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @a::@a blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @b::@b blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}
