// Cache blocks of a contraction follow from the caches (harp-vectorize's
// l1-cache and l2-cache; docs/Lowering.md): the k block is the largest
// divisor of k in [kMax / 2, kMax], kMax = L1 / 2 / (rows x 4 bytes) (the
// register tile's slice of the left operand in half of L1); the n block, a
// multiple of the register tile's width, keeps a k x n block of the right
// operand in half of L2.
//
// 48 KiB L1, 1 MiB L2, 8 x 32 f32 tiles: kMax = 24576 / 32 = 768 -> 512;
// nMax = 524288 / (512 x 4) = 256 -> 256.
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{pack=false}),canonicalize,cse)' | FileCheck %s --check-prefixes=CHECK,L48K
// 16 KiB L1: kMax = 8192 / 32 = 256 -> 256; nMax = 524288 / 1024 = 512
// -> 512.
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{pack=false l1-cache=16384}),canonicalize,cse)' | FileCheck %s --check-prefixes=CHECK,L16K
// AVX2 with 16 registers (6 x 16 tiles), 32 KiB L1, 1 MiB L2:
// kMax = 16384 / 24 = 682 -> 512; nMax = 524288 / 2048 = 256 -> 256.
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{pack=false vector-bits=256 register-rows=6 l1-cache=32768 l2-cache=1048576}),canonicalize,cse)' | FileCheck %s --check-prefixes=CHECK,AVX2
// Given blocks win where they divide the dims.
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{pack=false cache-k=64 cache-n=256}),canonicalize,cse)' | FileCheck %s --check-prefixes=CHECK,FIXED

// CHECK-LABEL: func.func @matmul
// L48K: scf.for {{.*}} to %c2048 step %c256
// L48K: scf.for {{.*}} to %c1024 step %c512
// L48K: vector<8x32xf32>
// L16K: scf.for {{.*}} to %c2048 step %c512
// L16K: scf.for {{.*}} to %c1024 step %c256
// L16K: vector<8x32xf32>
// AVX2: scf.for {{.*}} to %c2048 step %c256
// AVX2: scf.for {{.*}} to %c1024 step %c512
// AVX2: vector<6x16xf32>
// FIXED: scf.for {{.*}} to %c2048 step %c256
// FIXED: scf.for {{.*}} to %c1024 step %c64
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @matmul(%x: tensor<48x1024xf32>, %y: tensor<1024x2048xf32>, %z: tensor<48x2048xf32>) -> tensor<48x2048xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<48x1024xf32>, tensor<1024x2048xf32>) outs(%z : tensor<48x2048xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<48x2048xf32>
  return %r : tensor<48x2048xf32>
}

// A prime k (1031) has no dividing block: the k loop runs whole.
// CHECK-LABEL: func.func @prime_k
// CHECK-NOT: step %c1031
// CHECK-NOT: to %c1031 step %c{{[0-9][0-9]+}}
// CHECK: to %c1031 step %c1 iter_args
func.func @prime_k(%x: tensor<48x1031xf32>, %y: tensor<1031x2048xf32>, %z: tensor<48x2048xf32>) -> tensor<48x2048xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<48x1031xf32>, tensor<1031x2048xf32>) outs(%z : tensor<48x2048xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<48x2048xf32>
  return %r : tensor<48x2048xf32>
}

// Halves of m for threads where m (100) is no multiple of two register
// tiles: two halves of whole tiles (48 rows) above the k block, the 4 rows
// left a peeled remainder block that gets register tiles of its own (not
// one vector of the whole block).
// CHECK-LABEL: func.func @uneven_halves
// CHECK: scf.for {{.*}} to %c96 step %c48
// L48K: vector<8x32xf32>
// L16K: vector<8x32xf32>
// AVX2: vector<6x16xf32>
// FIXED: vector<8x32xf32>
// CHECK-NOT: vector<4x256x
// L48K: vector<4x32xf32>
// L16K: vector<4x32xf32>
// AVX2: vector<4x16xf32>
// FIXED: vector<4x32xf32>
// CHECK: return
func.func @uneven_halves(%x: tensor<100x1024xf32>, %y: tensor<1024x256xf32>, %z: tensor<100x256xf32>) -> tensor<100x256xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<100x1024xf32>, tensor<1024x256xf32>) outs(%z : tensor<100x256xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<100x256xf32>
  return %r : tensor<100x256xf32>
}
