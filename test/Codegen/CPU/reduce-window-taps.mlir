// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize),canonicalize,cse)' | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{vector-bits=256}),canonicalize,cse)' | FileCheck %s --check-prefix=AVX2
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{vector-bits=128}),canonicalize,cse)' | FileCheck %s --check-prefix=SSE

// A reduction whose contiguous input dim is shorter than a vector (a 2x2
// pooling window's taps) is vectorized along the result's contiguous dim
// where that has more outputs than the row has taps: each tap one strided
// read across outputs, combined element-wise, no horizontal reduction per
// output (a 2x2 max pool of 64 x 64 x 8 x 8: 0.229 ms as rows of two,
// 0.058 ms this way, AMD EPYC Zen 5).
// CHECK-LABEL: func.func @max_pool_2x2
// CHECK-NOT: vector.multi_reduction
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>)
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>)
// CHECK: vector.transfer_read {{.*}}permutation_map{{.*}} : tensor<2x3x5x2x19x2xf32>, vector<16xf32>
// CHECK-NEXT: arith.maximumf {{.*}} : vector<16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<16xf32>, tensor<2x3x5x19xf32>
// CHECK: vector.transfer_read {{.*}}permutation_map{{.*}} : tensor<2x3x5x2x19x2xf32>, vector<3xf32>
// CHECK-NEXT: arith.maximumf {{.*}} : vector<3xf32>
// CHECK-NOT: vector.multi_reduction
// CHECK: vector.transfer_write {{.*}} : vector<3xf32>, tensor<2x3x5x19xf32>
// AVX2-LABEL: func.func @max_pool_2x2
// AVX2-NOT: vector.multi_reduction
// AVX2: vector.transfer_read {{.*}}permutation_map{{.*}} : tensor<2x3x5x2x19x2xf32>, vector<8xf32>
// AVX2-NOT: vector.multi_reduction
// AVX2: vector.transfer_read {{.*}}permutation_map{{.*}} : tensor<2x3x5x2x19x2xf32>, vector<3xf32>
// AVX2-NOT: vector.multi_reduction
// AVX2-LABEL: func.func @short_rows
// SSE-LABEL: func.func @max_pool_2x2
// SSE-NOT: vector.multi_reduction
// SSE: vector.transfer_read {{.*}}permutation_map{{.*}} : tensor<2x3x5x2x19x2xf32>, vector<4xf32>
// SSE-NOT: vector.multi_reduction
// SSE: vector.transfer_read {{.*}}permutation_map{{.*}} : tensor<2x3x5x2x19x2xf32>, vector<3xf32>
// SSE-NOT: vector.multi_reduction
// SSE-LABEL: func.func @short_rows
//
// Rows stay rows where the result has fewer outputs along its contiguous
// dim than a row has elements (3 rows of 8), and where its outputs lie
// apart in the input (a batch norm's channel sums over rows of 8: reads
// across 20 channels would be gathers 24 elements apart).
// CHECK-LABEL: func.func @short_rows
// CHECK: vector.transfer_read {{.*}} : tensor<3x8xf32>, vector<8xf32>
// CHECK: vector.multi_reduction <add>, {{.*}} [0] : vector<8xf32> to f32
// CHECK-LABEL: func.func @channel_sums
// CHECK-NOT: permutation_map
// CHECK: vector.transfer_read {{.*}} : tensor<4x20x3x8xf32>, vector<8xf32>
// CHECK: vector.multi_reduction <add>, {{.*}} [0] : vector<8xf32> to f32
#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d4)>
func.func @max_pool_2x2(%x: tensor<2x3x5x2x19x2xf32>) -> tensor<2x3x5x19xf32> {
  %cst = arith.constant 0xFF800000 : f32
  %0 = tensor.empty() : tensor<2x3x5x19xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x3x5x19xf32>) -> tensor<2x3x5x19xf32>
  %2 = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel", "reduction"]} ins(%x : tensor<2x3x5x2x19x2xf32>) outs(%1 : tensor<2x3x5x19xf32>) {
  ^bb0(%in: f32, %out: f32):
    %3 = arith.maximumf %out, %in : f32
    linalg.yield %3 : f32
  } -> tensor<2x3x5x19xf32>
  return %2 : tensor<2x3x5x19xf32>
}

#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @short_rows(%x: tensor<3x8xf32>) -> tensor<3xf32> {
  %cst = arith.constant 0.0 : f32
  %0 = tensor.empty() : tensor<3xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<3xf32>) -> tensor<3xf32>
  %2 = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x8xf32>) outs(%1 : tensor<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %3 = arith.addf %out, %in : f32
    linalg.yield %3 : f32
  } -> tensor<3xf32>
  return %2 : tensor<3xf32>
}

#nchw = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#channel = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @channel_sums(%x: tensor<4x20x3x8xf32>) -> tensor<20xf32> {
  %cst = arith.constant 0.0 : f32
  %0 = tensor.empty() : tensor<20xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<20xf32>) -> tensor<20xf32>
  %2 = linalg.generic {indexing_maps = [#nchw, #channel], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%x : tensor<4x20x3x8xf32>) outs(%1 : tensor<20xf32>) {
  ^bb0(%in: f32, %out: f32):
    %3 = arith.addf %out, %in : f32
    linalg.yield %3 : f32
  } -> tensor<20xf32>
  return %2 : tensor<20xf32>
}
