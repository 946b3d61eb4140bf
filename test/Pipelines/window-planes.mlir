// harp-to-llvm flattens a convolution window onto planes (one copy of the
// image per tap column) where harp-rewrite-windows' price says so, on one
// thread only: with threads=true it keeps the grid as wide as the padded
// rows, which measured faster on two threads (docs/Lowering.md).
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v4 l1-cache=32768 l2-cache=1048576})' --mlir-disable-threading --mlir-print-ir-after=harp-rewrite-windows -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-PLANES
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v4 l1-cache=32768 l2-cache=1048576 threads=true})' --mlir-disable-threading --mlir-print-ir-after=harp-rewrite-windows -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-GRID

// CHECK-PLANES-LABEL: func.func @main
// CHECK-PLANES: tensor.empty() : tensor<1x16x3x16x14xf32>
// CHECK-PLANES: tensor.collapse_shape %{{.*}} : tensor<1x16x3x16x14xf32> into tensor<1x16x3x224xf32>
// CHECK-PLANES-NOT: tensor.extract_slice
// CHECK-PLANES: tensor.expand_shape %{{.*}} : tensor<1x16x196xf32> into tensor<1x16x14x14xf32>
// CHECK-GRID-LABEL: func.func @main
// CHECK-GRID-NOT: tensor<1x16x3x16x14xf32>
// CHECK-GRID: tensor.collapse_shape %{{.*}} : tensor<1x16x17x15xf32> into tensor<1x16x255xf32>
// CHECK-GRID: tensor.extract_slice %{{.*}}[0, 0, 0, 0] [1, 16, 14, 14] [1, 1, 1, 1] : tensor<1x16x14x15xf32> to tensor<1x16x14x14xf32>
func.func @main(%x: tensor<1x16x14x14xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x14x14xf32> {
  %xp = harp.view %x <(d0, d1, d2, d3) -> (d0, d1, d2 - 1, d3 - 1),
      mask_ge = (d0, d1, d2, d3) -> (d2 - 1, -d2 + 14, d3 - 1, -d3 + 14)>
      : tensor<1x16x14x14xf32> -> tensor<1x16x16x16xf32>
  %win = harp.view %xp <(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>
      : tensor<1x16x16x16xf32> -> tensor<1x16x14x14x3x3xf32>
  %xd = harp.view %win <(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2, d3, d5, d6)>
      : tensor<1x16x14x14x3x3xf32> -> tensor<1x16x14x14x16x3x3xf32>
  %wd = harp.view %w <(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
      : tensor<16x16x3x3xf32> -> tensor<1x16x14x14x16x3x3xf32>
  %y = harp.map_reduce ins(%xd, %wd : tensor<1x16x14x14x16x3x3xf32>, tensor<1x16x14x14x16x3x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    harp.yield %m : f32
  } reduce(sum, dims = [4, 5, 6]) : tensor<1x16x14x14xf32>
  return %y : tensor<1x16x14x14xf32>
}
