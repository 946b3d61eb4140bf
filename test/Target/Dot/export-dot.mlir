// RUN: harp-translate --export-dot %s | FileCheck %s
// RUN: harp-opt --harp-fuse %s | harp-translate --export-dot | FileCheck %s --check-prefix=FUSED
// RUN: harp-translate --export-dot --dot-no-bodies %s | FileCheck %s --check-prefix=NOBODY
// RUN: harp-translate --export-dot --dot-function second %s | FileCheck %s --check-prefix=ONE
// Graphviz accepts every form: render them.
// RUN: harp-translate --export-dot %s | dot -Tsvg | FileCheck %s --check-prefix=SVG
// RUN: harp-opt --harp-fuse %s | harp-translate --export-dot | dot -Tsvg -o %t.svg
// RUN: harp-translate --export-dot --dot-no-bodies %s | dot -Tplain | FileCheck %s --check-prefix=PLAIN
// RUN: harp-translate --export-dot --dot-function nothing --verify-diagnostics %s

// expected-error@below {{export-dot: no function @nothing in the module}}
module {
  // y = relu(x @ w); s = sum(exp(x) * 2, dim 1), as the graph importer
  // builds it.
  func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<8x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>) {
    %0 = harp.view %arg0 <(d0, d1, d2) -> (d0, d2)> : tensor<4x8xf32> -> tensor<4x3x8xf32>
    %1 = harp.view %arg1 <(d0, d1, d2) -> (d2, d1)> : tensor<8x3xf32> -> tensor<4x3x8xf32>
    %2 = harp.map_reduce ins(%0, %1 : tensor<4x3x8xf32>, tensor<4x3x8xf32>) {
    ^bb0(%a: f32, %b: f32):
      %9 = arith.mulf %a, %b : f32
      harp.yield %9 : f32
    } : tensor<4x3x8xf32>
    %3 = harp.map_reduce ins(%2 : tensor<4x3x8xf32>) {
    ^bb0(%a: f32):
      harp.yield %a : f32
    } reduce(sum, dims = [2]) : tensor<4x3xf32>
    %4 = harp.map_reduce ins(%3 : tensor<4x3xf32>) {
    ^bb0(%a: f32):
      %zero = arith.constant 0.000000e+00 : f32
      %9 = arith.maximumf %a, %zero : f32
      harp.yield %9 : f32
    } : tensor<4x3xf32>
    %5 = harp.map_reduce ins(%arg0 : tensor<4x8xf32>) {
    ^bb0(%a: f32):
      %9 = math.exp %a : f32
      harp.yield %9 : f32
    } : tensor<4x8xf32>
    %cst = arith.constant dense<2.000000e+00> : tensor<f32>
    %6 = harp.view %cst <(d0, d1) -> ()> : tensor<f32> -> tensor<4x8xf32>
    %7 = harp.map_reduce ins(%5, %6 : tensor<4x8xf32>, tensor<4x8xf32>) {
    ^bb0(%a: f32, %b: f32):
      %9 = arith.mulf %a, %b : f32
      harp.yield %9 : f32
    } : tensor<4x8xf32>
    %8 = harp.map_reduce ins(%7 : tensor<4x8xf32>) {
    ^bb0(%a: f32):
      harp.yield %a : f32
    } reduce(sum, dims = [1]) : tensor<4xf32>
    return %4, %8 : tensor<4x3xf32>, tensor<4xf32>
  }

  func.func @second(%arg0: tensor<3xf64>) -> tensor<3xf64> {
    return %arg0 : tensor<3xf64>
  }
}

// Unfused: six map_reduce kernels, each a cluster with its body.
// CHECK:       digraph harp {
// CHECK:         subgraph cluster_0 {
// CHECK-NEXT:      label="@main";
// CHECK:           [[ARG0:n[0-9]+]] [shape=ellipse, label="arg 0\ntensor<4x8xf32>"];
// CHECK:           [[ARG1:n[0-9]+]] [shape=ellipse, label="arg 1\ntensor<8x3xf32>"];
// CHECK:           [[VIEW:n[0-9]+]] [label="harp.view\nlayout = #harp.view<(d0, d1, d2) -> (d0, d2)>"];
// CHECK-NEXT:      [[ARG0]] -> [[VIEW]] [label="tensor<4x8xf32>"];
// CHECK:           label="kernel 0";
// CHECK:           [[K0:n[0-9]+]] [label="harp.map_reduce\ndims = array<i64>"
// CHECK:           [[MUL:n[0-9]+]] [label="arith.mulf"];
// CHECK:           label="kernel 1";
// CHECK:           [[K1:n[0-9]+]] [label="harp.map_reduce\ndims = array<i64: 2>\nkind = #harp<reduction sum>"
// CHECK:           [[K0]] -> [[K1]] [label="tensor<4x3x8xf32>"];
// CHECK:           label="kernel 5";
// CHECK-NOT:       label="kernel 6";
// CHECK:           [[RET:n[0-9]+]] [label="func.return", shape=ellipse];
// CHECK:           -> [[RET]] [label="tensor<4x3xf32> (0)"];
// CHECK:         subgraph cluster_{{[0-9]+}} {
// CHECK-NEXT:      label="@second";
// CHECK:       }

// After harp-fuse: the product feeds the sum as one contraction kernel, and
// exp and the scaling fuse into the row sum: three kernels.
// FUSED:       label="kernel 0";
// FUSED:       [[K0:n[0-9]+]] [label="harp.map_reduce\ndims = array<i64: 2>\nkind = #harp<reduction sum>"
// FUSED:       arith.mulf
// FUSED:       label="kernel 1";
// FUSED:       arith.maximumf
// FUSED:       label="kernel 2";
// FUSED:       [[K2:n[0-9]+]] [label="harp.map_reduce\ndims = array<i64: 1>\nkind = #harp<reduction sum>"
// FUSED:       math.exp
// FUSED:       arith.mulf
// FUSED-NOT:   label="kernel 3";

// NOBODY-NOT:  label="kernel
// NOBODY:      [label="harp.map_reduce\ndims = array<i64>"];
// NOBODY-NOT:  arith.mulf

// ONE-NOT:     @main
// ONE:         label="@second";

// SVG:         <svg
// SVG:         @main
// SVG:         kernel 0

// PLAIN:       graph
// PLAIN:       stop
