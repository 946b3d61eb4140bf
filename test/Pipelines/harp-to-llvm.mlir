// RUN: harp-opt %s --harp-to-llvm --split-input-file | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{fuse=false})' --split-input-file | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{threads=true})' --split-input-file | FileCheck %s --check-prefix=THREADS
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v2})' --split-input-file | FileCheck %s --check-prefix=NOFMA
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v3 fma=false})' --split-input-file | FileCheck %s --check-prefix=NOFMA
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v3})' --split-input-file | FileCheck %s --check-prefix=AVX2

// THREADS-LABEL: llvm.func @matmul_row_sum
// THREADS: omp.parallel
// THREADS: omp.wsloop
// THREADS: llvm.return

// The whole pipeline on a transpose feeding an add: the view is an index
// map, the result is written straight into the caller's buffer (the last
// argument of the C interface): no allocation, no copy, one loop nest.

// CHECK-LABEL: llvm.func @transpose_add
// CHECK-NOT: llvm.call @malloc
// CHECK-NOT: memrefCopy
// CHECK-NOT: "llvm.intr.memcpy"
// CHECK: llvm.return
// CHECK: llvm.func @_mlir_ciface_transpose_add(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK-NOT: harp.
// CHECK-NOT: linalg.
// CHECK-NOT: memref.
func.func @transpose_add(%x: tensor<3x4xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %t = harp.view %x <(d0, d1) -> (d1, d0)> : tensor<3x4xf32> -> tensor<4x3xf32>
  %s = harp.map_reduce ins(%t, %y : tensor<4x3xf32>, tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    harp.yield %c : f32
  } : tensor<4x3xf32>
  return %s : tensor<4x3xf32>
}

// -----

// Math functions without an LLVM intrinsic become libm calls; on f32,
// harp-vectorize replaces erf, tanh, exp, log, ... by polynomials first, so
// f64 is where the call is left.
// CHECK-LABEL: llvm.func @erf_f64
// CHECK: llvm.call @erf(
func.func @erf_f64(%x: tensor<8xf64>) -> tensor<8xf64> {
  %y = harp.map_reduce ins(%x : tensor<8xf64>) {
  ^bb0(%a: f64):
    %e = math.erf %a : f64
    harp.yield %e : f64
  } : tensor<8xf64>
  return %y : tensor<8xf64>
}

// -----

// f32 erf: a polynomial on vectors, no call.
// CHECK-LABEL: llvm.func @erf_f32
// CHECK-NOT: llvm.call @erff
// CHECK: llvm.intr.fma{{.*}}vector<8xf32>
// CHECK: llvm.return
// For a CPU without FMA (x86-64-v2, or fma=false) its multiply-adds are
// split: LLVM would make each llvm.intr.fma one fmaf call per element.
// NOFMA-LABEL: llvm.func @erf_f32
// NOFMA-NOT: llvm.intr.fma
// NOFMA-NOT: llvm.call @erff
// NOFMA: llvm.fmul
// NOFMA-NOT: llvm.intr.fma
// NOFMA: llvm.return
// AVX2-LABEL: llvm.func @erf_f32
// AVX2: llvm.intr.fma{{.*}}vector<8xf32>
// AVX2: llvm.return
func.func @erf_f32(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = harp.map_reduce ins(%x : tensor<8xf32>) {
  ^bb0(%a: f32):
    %e = math.erf %a : f32
    harp.yield %e : f32
  } : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Private helpers get no C interface.
// CHECK-LABEL: llvm.func @entry
// CHECK-NOT: _mlir_ciface_helper
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @entry(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Code generation (harp-vectorize): the body of the matmul's k loop is one
// contractible multiply and add per row of its 8x32 register tile (LLVM
// makes each two 16-lane FMAs); the row sum ends in a horizontal reduction
// per row.
// CHECK-LABEL: llvm.func @matmul_row_sum
// CHECK-COUNT-8: llvm.fmul {{.*}} {fastmathFlags = #llvm.fastmath<contract>} : vector<32xf32>
// CHECK-COUNT-8: llvm.fadd {{.*}} {fastmathFlags = #llvm.fastmath<contract>} : vector<32xf32>
// CHECK: llvm.intr.vector.reduce.fadd
// CHECK: llvm.return
func.func @matmul_row_sum(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64xf32> {
  %av = harp.view %a <(d0, d1, d2) -> (d0, d2)> : tensor<64x64xf32> -> tensor<64x64x64xf32>
  %bv = harp.view %b <(d0, d1, d2) -> (d2, d1)> : tensor<64x64xf32> -> tensor<64x64x64xf32>
  %mm = harp.map_reduce ins(%av, %bv : tensor<64x64x64xf32>, tensor<64x64x64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<64x64xf32>
  %s = harp.map_reduce ins(%mm : tensor<64x64xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = [1]) : tensor<64xf32>
  return %s : tensor<64xf32>
}
