// A contraction blocked along k but not along n gets two halves of its
// rows heading the nest, which harp-parallelize's threads share (the
// default, `row-halves`). Each half reads all of the right operand, so
// without threads (the pipeline turns `row-halves` off) the halves stay
// only where the result and the right operand's k block outgrow half of
// L2: the result's rows are read and written again at every k block.
//
// 48 KiB L1, 2 MiB L2, 8 x 32 f32 tiles.
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{pack=false l2-cache=2097152}),canonicalize,cse)' | FileCheck %s --check-prefixes=CHECK,THREADS
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{pack=false l2-cache=2097152 row-halves=false}),canonicalize,cse)' | FileCheck %s --check-prefixes=CHECK,ONE

#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>

// A weight gradient 96 x 320 over 4864: k blocks of 608, no n block (a
// 608 x 320 block of B is 760 KiB). The 123 KiB result and that block fit
// half of L2: on one thread the k blocks head the nest and B is read once.
// CHECK-LABEL: func.func @small_result
// THREADS: scf.for {{.*}} to %c96 step %c48
// THREADS: scf.for {{.*}} to %c4864 step %c608
// ONE-NOT: step %c48
// ONE: scf.for {{.*}} to %c4864 step %c608
// ONE-NOT: step %c48
// CHECK: vector<8x32xf32>
func.func @small_result(%x: tensor<96x4864xf32>, %y: tensor<4864x320xf32>, %z: tensor<96x320xf32>) -> tensor<96x320xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<96x4864xf32>, tensor<4864x320xf32>) outs(%z : tensor<96x320xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<96x320xf32>
  return %r : tensor<96x320xf32>
}

// 256 x 512 over 4096: k blocks of 512, a 1 MiB block of B beside a
// 512 KiB result: halves with threads or without.
// CHECK-LABEL: func.func @large_result
// CHECK: scf.for {{.*}} to %c256 step %c128
// CHECK: scf.for {{.*}} to %c4096 step %c512
// CHECK: vector<8x32xf32>
func.func @large_result(%x: tensor<256x4096xf32>, %y: tensor<4096x512xf32>, %z: tensor<256x512xf32>) -> tensor<256x512xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<256x4096xf32>, tensor<4096x512xf32>) outs(%z : tensor<256x512xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<256x512xf32>
  return %r : tensor<256x512xf32>
}
