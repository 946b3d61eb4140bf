// harp-to-llvm hands the caches to harp-vectorize: the target's (this
// machine's) with cpu=, or l1-cache / l2-cache, which override them, so the
// k and n blocks of a matmul below are the same on every machine.
// AVX2 (6 x 16 tiles), 32 KiB L1, 512 KiB L2: k blocks of 512 (a 6 x 512
// slice of A in half of L1), n blocks of 128 columns (8 packed panels of
// 16: a 512 x 128 block of B in half of L2).
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v3 l1-cache=32768 l2-cache=524288})' --mlir-print-ir-after=harp-vector-cleanup -o /dev/null 2>&1 | FileCheck %s --check-prefixes=CHECK,V3
// AVX-512 (8 x 32 tiles), 32 KiB L1, 1 MiB L2: k blocks of 512, n blocks
// of 256 columns (8 panels of 32).
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v4 l1-cache=32768 l2-cache=1048576})' --mlir-print-ir-after=harp-vector-cleanup -o /dev/null 2>&1 | FileCheck %s --check-prefixes=CHECK,V4

// CHECK-LABEL: func.func @matmul
// V3: scf.for {{.*}} to %c128 step %c8
// V3: scf.for {{.*}} to %c1024 step %c512
// V3: vector<6x16xf32>
// V4: scf.for {{.*}} to %c64 step %c8
// V4: scf.for {{.*}} to %c1024 step %c512
// V4: vector<8x32xf32>
func.func @matmul(%a: tensor<48x1024xf32>, %b: tensor<1024x2048xf32>) -> tensor<48x2048xf32> {
  %ab = harp.view %a <(d0, d1, d2) -> (d0, d2)> : tensor<48x1024xf32> -> tensor<48x2048x1024xf32>
  %bb = harp.view %b <(d0, d1, d2) -> (d2, d1)> : tensor<1024x2048xf32> -> tensor<48x2048x1024xf32>
  %c = harp.map_reduce ins(%ab, %bb : tensor<48x2048x1024xf32>, tensor<48x2048x1024xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<48x2048xf32>
  return %c : tensor<48x2048xf32>
}
