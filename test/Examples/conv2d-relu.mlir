// The conv2d example: canonicalization composes its input views into one
// masked view, and the whole function lowers to LLVM.
// RUN: harp-opt %harp_src_root/examples/conv2d-relu.mlir --canonicalize | FileCheck %s
// RUN: harp-opt %harp_src_root/examples/conv2d-relu.mlir --harp-to-llvm | FileCheck %s --check-prefix=LLVM

// CHECK: harp.view %{{.*}} <(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5 - 1, d3 + d6 - 1), mask_ge = (d0, d1, d2, d3, d4, d5, d6) -> (d2 + d5 - 1, -d2 - d5 + 5, d3 + d6 - 1, -d3 - d6 + 5)> : tensor<1x2x5x5xf32> -> tensor<1x3x5x5x2x3x3xf32>
// CHECK-NEXT: harp.view %{{.*}} <(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
// CHECK-NOT: harp.view

// LLVM: llvm.func @_mlir_ciface_conv2d_relu
// LLVM-NOT: harp.
// LLVM-NOT: linalg.
