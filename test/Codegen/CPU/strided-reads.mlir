// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize),canonicalize,cse)' --split-input-file | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{vector-bits=256}),canonicalize,cse)' --split-input-file | FileCheck %s --check-prefix=AVX2
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{vector-bits=128}),canonicalize,cse)' --split-input-file | FileCheck %s --check-prefix=SSE

// harp-vectorize on inputs read with a stride and no window (`d * s + c`):
// each tile reads its input through a strided slice, read as a projected
// permutation, so the tile is vectorized (it stayed scalar loops).

// Every other column from the second one, plus one: a 5 x 37 tile grid
// whose rows leave vector remainders at every width. The vector tile
// reads a strided slice of 16 (8, 4) elements 2 apart.
// CHECK-LABEL: func.func @every_other_column
// (After the tile's unit row is dropped; 37 = 2 x 16 + 5 leaves a tile of
// 5 with 512-bit vectors.)
// CHECK: %[[S:.*]] = tensor.extract_slice %{{.*}}[0] [16] [2] : tensor<31xf32> to tensor<16xf32>
// CHECK: vector.transfer_read %[[S]]{{.*}} : tensor<16xf32>, vector<16xf32>
// CHECK: arith.addf %{{.*}} : vector<16xf32>
// CHECK: %[[R:.*]] = tensor.extract_slice %{{.*}}[0] [5] [2] : tensor<9xf32> to tensor<5xf32>
// CHECK: vector.transfer_read %[[R]]{{.*}} : tensor<5xf32>, vector<5xf32>
// CHECK-NOT: linalg.generic
// AVX2-LABEL: func.func @every_other_column
// AVX2: tensor.extract_slice %{{.*}}[0] [8] [2] : tensor<15xf32> to tensor<8xf32>
// AVX2: arith.addf %{{.*}} : vector<8xf32>
// AVX2-NOT: linalg.generic
// SSE-LABEL: func.func @every_other_column
// SSE: tensor.extract_slice %{{.*}}[0] [4] [2] : tensor<7xf32> to tensor<4xf32>
// SSE: arith.addf %{{.*}} : vector<4xf32>
// SSE-NOT: linalg.generic
func.func @every_other_column(%x: tensor<5x76xf32>, %init: tensor<5x37xf32>) -> tensor<5x37xf32> {
  %c1 = arith.constant 1.0 : f32
  %0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j * 2 + 1)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<5x76xf32>) outs(%init : tensor<5x37xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.addf %a, %c1 : f32
    linalg.yield %r : f32
  } -> tensor<5x37xf32>
  return %0 : tensor<5x37xf32>
}

// -----

// The column tensor of a stride-3 convolution's weight gradient reads its
// image 3 apart along the vector dim and along an outer one.
// CHECK-LABEL: func.func @columns
// CHECK: %[[S:.*]] = tensor.extract_slice %{{.*}}[0] [16] [3] : tensor<46xf32> to tensor<16xf32>
// CHECK: vector.transfer_read %[[S]]
// CHECK-NOT: linalg.generic
// AVX2-LABEL: func.func @columns
// AVX2: tensor.extract_slice %{{.*}}[0] [8] [3] : tensor<22xf32> to tensor<8xf32>
// AVX2-NOT: linalg.generic
func.func @columns(%x: tensor<2x3x50x50xf32>, %init: tensor<3x2x2x16x16xf32>) -> tensor<3x2x2x16x16xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(c, kw, n, oh, ow) -> (n, c, oh * 3, ow * 3 + 1)>, affine_map<(c, kw, n, oh, ow) -> (c, kw, n, oh, ow)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<2x3x50x50xf32>) outs(%init : tensor<3x2x2x16x16xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  } -> tensor<3x2x2x16x16xf32>
  return %0 : tensor<3x2x2x16x16xf32>
}
