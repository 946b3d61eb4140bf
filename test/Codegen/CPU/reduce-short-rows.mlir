// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize),canonicalize,cse)' | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{vector-bits=256}),canonicalize,cse)' | FileCheck %s --check-prefix=AVX2

// Row reductions along the contiguous dim, planned with reduction-vectors
// (4) x lanes per tile: 64 lanes with 512-bit vectors, 32 with 256-bit.
// A row shorter than two tiles (76) is one tile and a peeled remainder,
// each reduced in registers: no partial accumulators, which cost a scratch
// row, its fill and a merge per output (a text classifier's max over 76
// time steps took 0.28 ms instead of 0.14, AMD EPYC Zen 5). A row of two
// tiles or more (130) keeps a vector of partial accumulators across them.
// CHECK-LABEL: func.func @row_max
// CHECK: scf.for
// CHECK-NOT: tensor.empty
// CHECK: vector.transfer_read {{.*}} : tensor<96x76xf32>, vector<64xf32>
// CHECK: vector.multi_reduction <maximumf>, {{.*}} [0] : vector<64xf32> to f32
// CHECK-NEXT: vector.transfer_read {{.*}} : tensor<96x76xf32>, vector<12xf32>
// CHECK-NEXT: vector.multi_reduction <maximumf>, {{.*}} [0] : vector<12xf32> to f32
// CHECK: scf.for
// CHECK: tensor.empty() : tensor<1x64xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<64xf32>)
// CHECK: vector.transfer_read {{.*}} : tensor<96x130xf32>, vector<64xf32>
// AVX2-LABEL: func.func @row_max
// AVX2: tensor.empty() : tensor<1x32xf32>
// AVX2: vector.transfer_read {{.*}} : tensor<96x76xf32>, vector<32xf32>
// AVX2: tensor.empty() : tensor<1x32xf32>
// AVX2: vector.transfer_read {{.*}} : tensor<96x130xf32>, vector<32xf32>
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @row_max(%arg0: tensor<96x76xf32>, %arg1: tensor<96x130xf32>) -> (tensor<96xf32>, tensor<96xf32>) {
  %cst = arith.constant 0xFF800000 : f32
  %0 = tensor.empty() : tensor<96xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<96xf32>) -> tensor<96xf32>
  %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<96x76xf32>) outs(%1 : tensor<96xf32>) {
  ^bb0(%in: f32, %out: f32):
    %3 = arith.maximumf %out, %in : f32
    linalg.yield %3 : f32
  } -> tensor<96xf32>
  %4 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg1 : tensor<96x130xf32>) outs(%1 : tensor<96xf32>) {
  ^bb0(%in: f32, %out: f32):
    %5 = arith.maximumf %out, %in : f32
    linalg.yield %5 : f32
  } -> tensor<96xf32>
  return %2, %4 : tensor<96xf32>, tensor<96xf32>
}
