// harp-reduce shrinks a module while an interestingness script holds (exit
// status 1: still interesting); here the script wants harp-opt to print a
// view padded with -inf, so only @padded is left, with its one op.
// RUN: harp-reduce %s --reduction-tree='traversal-mode=0 test=%S/Inputs/prints-pad-inf.sh' 2>/dev/null | FileCheck %s
// CHECK-NOT: @transpose
// CHECK-NOT: @crop
// CHECK: func.func @padded
// CHECK-NEXT: harp.view {{.*}} pad = -inf
// CHECK-NEXT: return
// CHECK-NOT: @transpose
// CHECK-NOT: @crop

func.func @transpose(%x: tensor<3x4xf32>) -> tensor<4x3xf32> {
  %0 = harp.view %x <(d0, d1) -> (d1, d0)> : tensor<3x4xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
func.func @crop(%v: tensor<4xf32>) -> tensor<2xf32> {
  %0 = harp.view %v <(d0) -> (d0 * 2 + 1)> : tensor<4xf32> -> tensor<2xf32>
  %1 = harp.view %v <(d0) -> (3 - d0)> : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<2xf32>
}
func.func @padded(%v: tensor<4xf32>) -> tensor<6xf32> {
  %0 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = -inf> : tensor<4xf32> -> tensor<6xf32>
  return %0 : tensor<6xf32>
}
