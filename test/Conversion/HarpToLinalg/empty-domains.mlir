// RUN: harp-opt %s --convert-harp-to-linalg --split-input-file | FileCheck %s
// Empty tensors lower through the whole pipeline (tiling and fusion assumed
// at least one iteration and crashed):
// RUN: harp-opt %s --harp-to-llvm --split-input-file -o /dev/null

// A kernel over an empty domain is its init: an empty result...
// CHECK-LABEL: func.func @empty_map
// CHECK-NOT: linalg.generic
// CHECK: %[[E:.*]] = tensor.empty() : tensor<0x8xf32>
// CHECK: return %[[E]]
func.func @empty_map(%x: tensor<0x8xf32>) -> tensor<0x8xf32> {
  %y = harp.map_reduce ins(%x : tensor<0x8xf32>) {
  ^bb0(%a: f32):
    %r = arith.negf %a : f32
    harp.yield %r : f32
  } : tensor<0x8xf32>
  return %y : tensor<0x8xf32>
}

// -----

// ... or the reduction's identity when an empty dim is reduced.
// CHECK-LABEL: func.func @sum_of_nothing
// CHECK-NOT: linalg.generic
// CHECK: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>) -> tensor<4xf32>
// CHECK: return %[[F]]
func.func @sum_of_nothing(%x: tensor<4x0xf32>) -> tensor<4xf32> {
  %y = harp.map_reduce ins(%x : tensor<4x0xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A matmul with an empty batch, as x @ w.T for a (0, 8) x.
// CHECK-LABEL: func.func @empty_matmul
// CHECK-NOT: linalg.generic
func.func @empty_matmul(%x: tensor<0x8xf32>, %w: tensor<4x8xf32>) -> tensor<0x4xf32> {
  %xb = harp.view %x <(i, j, k) -> (i, k)> : tensor<0x8xf32> -> tensor<0x4x8xf32>
  %wb = harp.view %w <(i, j, k) -> (j, k)> : tensor<4x8xf32> -> tensor<0x4x8xf32>
  %y = harp.map_reduce ins(%xb, %wb : tensor<0x4x8xf32>, tensor<0x4x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<0x4xf32>
  return %y : tensor<0x4xf32>
}
