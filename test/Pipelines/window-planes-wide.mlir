// A weight gradient's window is as wide as the output: its planes (one per
// output column, 64 here) are copied from the padded image by one generic
// op. Copied plane by plane from the unpadded image (planesFromPadding, for
// windows of at most 8 planes) they took 320 ops, which one-shot
// bufferization took 150 s to bufferize.
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v4 l1-cache=32768 l2-cache=1048576})' --mlir-disable-threading --mlir-print-ir-after=harp-rewrite-windows -o /dev/null 2>&1 | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK: scf.for
// CHECK: %[[PADDED:.*]] = tensor.pad %{{.*}} low[0, 0, 2, 2] high[0, 0, 2, 2]
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<2x1x64x9x5xf32>
// CHECK-NEXT: %[[PLANES:.*]] = linalg.generic {{.*}} ins(%[[PADDED]] : tensor<2x1x9x68xf32>) outs(%[[EMPTY]] : tensor<2x1x64x9x5xf32>)
// CHECK-NOT: tensor.insert_slice {{.*}} into {{.*}}tensor<2x1x64x9x5xf32>
// CHECK: tensor.collapse_shape %[[PLANES]] {{\[}}[0], [1], [2], [3, 4]] : tensor<2x1x64x9x5xf32> into tensor<2x1x64x45xf32>
  func.func private @loss(%arg0: tensor<2x8x5x64xf32>, %arg1: tensor<16x8x5x5xf32>, %arg2: tensor<2x16x5x64xf32>) -> tensor<f32> {
    %0 = harp.view %arg0 <(d0, d1, d2, d3) -> (d0, d1, d2 - 2, d3 - 2), mask_ge = (d0, d1, d2, d3) -> (d2 - 2, -d2 + 6, d3 - 2, -d3 + 65)> : tensor<2x8x5x64xf32> -> tensor<2x8x9x68xf32>
    %1 = harp.view %0 <(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)> : tensor<2x8x9x68xf32> -> tensor<2x8x5x64x5x5xf32>
    %2 = harp.view %1 <(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2, d3, d5, d6)> : tensor<2x8x5x64x5x5xf32> -> tensor<2x16x5x64x8x5x5xf32>
    %3 = harp.view %arg1 <(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)> : tensor<16x8x5x5xf32> -> tensor<2x16x5x64x8x5x5xf32>
    %4 = harp.map_reduce ins(%2, %3 : tensor<2x16x5x64x8x5x5xf32>, tensor<2x16x5x64x8x5x5xf32>) {
    ^bb0(%arg3: f32, %arg4: f32):
      %8 = arith.mulf %arg3, %arg4 : f32
      harp.yield %8 : f32
    } : tensor<2x16x5x64x8x5x5xf32>
    %5 = harp.map_reduce ins(%4 : tensor<2x16x5x64x8x5x5xf32>) {
    ^bb0(%arg3: f32):
      harp.yield %arg3 : f32
    } reduce(sum, dims = [4, 5, 6]) : tensor<2x16x5x64xf32>
    %6 = harp.map_reduce ins(%5, %arg2 : tensor<2x16x5x64xf32>, tensor<2x16x5x64xf32>) {
    ^bb0(%arg3: f32, %arg4: f32):
      %8 = arith.mulf %arg3, %arg4 : f32
      harp.yield %8 : f32
    } : tensor<2x16x5x64xf32>
    %7 = harp.map_reduce ins(%6 : tensor<2x16x5x64xf32>) {
    ^bb0(%arg3: f32):
      harp.yield %arg3 : f32
    } reduce(sum, dims = [0, 1, 2, 3]) : tensor<f32>
    return %7 : tensor<f32>
  }
  func.func @main(%arg0: tensor<2x8x5x64xf32>, %arg1: tensor<16x8x5x5xf32>, %arg2: tensor<2x16x5x64xf32>) -> (tensor<f32>, tensor<2x8x5x64xf32>, tensor<16x8x5x5xf32>) {
    %0:3 = harp.autodiff @loss(%arg0, %arg1, %arg2) wrt [0, 1] : (tensor<2x8x5x64xf32>, tensor<16x8x5x5xf32>, tensor<2x16x5x64xf32>) -> (tensor<f32>, tensor<2x8x5x64xf32>, tensor<16x8x5x5xf32>)
    return %0#0, %0#1, %0#2 : tensor<f32>, tensor<2x8x5x64xf32>, tensor<16x8x5x5xf32>
  }
