// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{vector-bits=128 register-rows=3}),canonicalize,cse)' | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{vector-bits=512}),canonicalize,cse)' | FileCheck %s

// A convolution's weight gradient whose filters (7) and channels (5) the
// register tile's rows do not divide: the rows left over (a tile of 1
// filter, of 2 channels) hold the whole reduction over the image, and are
// planned and tiled like the main tiles once their shapes are static:
// vectors of partial sums along ow, never a vector of a whole 23 x 24 image
// plane (vectorized as they were, 3 x 2 x 23 x 24 elements, which LLVM
// took 30 s to legalize at 2 lanes).
// CHECK-LABEL: func.func @weight_gradient_remainder_rows
// CHECK-NOT: vector<{{[0-9x]*}}23x24xf64>
// CHECK-NOT: vector<{{[0-9x]*}}24xf64>
// CHECK: vector.multi_reduction
// CHECK-NOT: vector<{{[0-9x]*}}23x24xf64>
// CHECK-NOT: vector<{{[0-9x]*}}24xf64>
// CHECK: return
#x = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, c, oh + kh, ow + kw)>
#dy = affine_map<(f, c, kh, kw, n, oh, ow) -> (n, f, oh, ow)>
#o = affine_map<(f, c, kh, kw, n, oh, ow) -> (f, c, kh, kw)>
func.func @weight_gradient_remainder_rows(%x: tensor<3x5x25x26xf64>, %dy: tensor<3x7x23x24xf64>, %init: tensor<7x5x3x3xf64>) -> tensor<7x5x3x3xf64> {
  %r = linalg.generic {indexing_maps = [#x, #dy, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %dy : tensor<3x5x25x26xf64>, tensor<3x7x23x24xf64>) outs(%init : tensor<7x5x3x3xf64>) {
  ^bb0(%a: f64, %b: f64, %acc: f64):
    %m = arith.mulf %a, %b : f64
    %s = arith.addf %acc, %m : f64
    linalg.yield %s : f64
  } -> tensor<7x5x3x3xf64>
  return %r : tensor<7x5x3x3xf64>
}
