// RUN: harp-opt %s --harp-to-gpu | FileCheck %s
// RUN: harp-opt %s --harp-to-gpu | %extract_ptx | FileCheck %s --check-prefix=PTX
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-gpu{chip=sm_80 block-size=128})' | %extract_ptx | FileCheck %s --check-prefix=SM80

// The whole pipeline: host functions in the LLVM dialect with harp's C
// interface, launching kernels embedded as PTX for sm_90 in gpu.binary ops.

// CHECK-LABEL: llvm.func @gelu(
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @gelu_kernel::@gelu_kernel blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) : i64 args(%{{.*}} : !llvm.ptr, %{{.*}} : !llvm.ptr)
// CHECK: llvm.call @mgpuStreamSynchronize
// CHECK: llvm.func @_mlir_ciface_gelu(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK: gpu.binary @gelu_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">, {{.*}}assembly = "
// CHECK-LABEL: llvm.func @softmax(
// All kernels of the module are in one binary (harp-merge-gpu-modules): one
// ptxas run, one module load.
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @gelu_kernel::@softmax_kernel blocks
// CHECK-COUNT-4: gpu.launch_func <%{{.*}} : !llvm.ptr> @gelu_kernel::@softmax_kernel_{{[0-3]}} blocks
// CHECK-NOT: gpu.launch_func
// CHECK: llvm.func @_mlir_ciface_softmax
// CHECK-NOT: gpu.binary
// CHECK-NOT: harp.
// CHECK-NOT: linalg.
// CHECK-NOT: memref.

// GELU: one element per thread, tanh from libdevice (no call left), kernel
// arguments are bare pointers.
// PTX: .target sm_90
// PTX: .visible .entry gelu_kernel(
// PTX-NEXT: .param .u64 .ptr .align 1 gelu_kernel_param_0,
// PTX-NEXT: .param .u64 .ptr .align 1 gelu_kernel_param_1
// PTX: .maxntid 256, 1, 1
// PTX: mov.u32 {{.*}}%ctaid.x
// PTX: mov.u32 {{.*}}%tid.x
// PTX: ld.global
// PTX-NOT: call
// PTX: st.global
func.func @gelu(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %y = harp.map_reduce ins(%x : tensor<4096xf32>) {
  ^bb0(%a: f32):
    %c = arith.constant 0.7978845608 : f32
    %h = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %ax = arith.mulf %a, %c : f32
    %t = math.tanh %ax : f32
    %p = arith.addf %t, %one : f32
    %q = arith.mulf %a, %p : f32
    %r = arith.mulf %q, %h : f32
    harp.yield %r : f32
  } : tensor<4096xf32>
  return %y : tensor<4096xf32>
}

// Row softmax, 512 rows of 1024, five kernels: the max and the sum (with
// the exp fused into it) are block-per-row
// reductions (warp shuffles, then shared memory), the fills of their
// accumulators and the normalisation are element-wise kernels.
// PTX: .visible .entry softmax_kernel{{(_[0-3])?}}(
// PTX: .visible .entry softmax_kernel{{(_[0-3])?}}(
// PTX: .shared .align 4 .b8 __wg_softmax_kernel
// PTX: shfl.sync.bfly.b32
// PTX: bar.sync
// PTX: max.NaN.f32
// PTX: .visible .entry softmax_kernel{{(_[0-3])?}}(
// PTX: .visible .entry softmax_kernel{{(_[0-3])?}}(
// PTX: ex2.approx
// PTX: shfl.sync.bfly.b32
// PTX: .visible .entry softmax_kernel{{(_[0-3])?}}(
// PTX: div.rn.f32
func.func @softmax(%x: tensor<512x1024xf32>) -> tensor<512x1024xf32> {
  %m = harp.map_reduce ins(%x : tensor<512x1024xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(max, dims = [1], keepdim) : tensor<512x1xf32>
  %mb = harp.view %m <(d0, d1) -> (d0, 0)> : tensor<512x1xf32> -> tensor<512x1024xf32>
  %e = harp.map_reduce ins(%x, %mb : tensor<512x1024xf32>, tensor<512x1024xf32>) {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    harp.yield %ex : f32
  } : tensor<512x1024xf32>
  %s = harp.map_reduce ins(%e : tensor<512x1024xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1], keepdim) : tensor<512x1xf32>
  %sb = harp.view %s <(d0, d1) -> (d0, 0)> : tensor<512x1xf32> -> tensor<512x1024xf32>
  %y = harp.map_reduce ins(%e, %sb : tensor<512x1024xf32>, tensor<512x1024xf32>) {
  ^bb0(%a: f32, %b: f32):
    %q = arith.divf %a, %b : f32
    harp.yield %q : f32
  } : tensor<512x1024xf32>
  return %y : tensor<512x1024xf32>
}

// SM80: .target sm_80
// SM80: .maxntid 128, 1, 1

// A large element-wise kernel (2^20 outputs): 4 outputs per thread, their 4
// loads issued before any store (the stores may alias them).
// PTX-LABEL: .visible .entry scale_kernel(
// PTX: ld.global.b32 %{{.*}}, [%[[IN:rd[0-9]+]]];
// PTX-NEXT: ld.global.b32 %{{.*}}, [%[[IN]]+1024];
// PTX-NEXT: ld.global.b32 %{{.*}}, [%[[IN]]+2048];
// PTX-NEXT: ld.global.b32 %{{.*}}, [%[[IN]]+3072];
// PTX-NOT: ld.global
// PTX: st.global.b32 [%[[OUT:rd[0-9]+]]], %{{.*}};
// PTX-NEXT: st.global.b32 [%[[OUT]]+1024], %{{.*}};
// PTX-NEXT: st.global.b32 [%[[OUT]]+2048], %{{.*}};
// PTX-NEXT: st.global.b32 [%[[OUT]]+3072], %{{.*}};
// PTX-NEXT: ret;
func.func @scale(%x: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %y = harp.map_reduce ins(%x : tensor<1048576xf32>) {
  ^bb0(%a: f32):
    %c = arith.constant 2.0 : f32
    %one = arith.constant 1.0 : f32
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %m, %one : f32
    harp.yield %s : f32
  } : tensor<1048576xf32>
  return %y : tensor<1048576xf32>
}
