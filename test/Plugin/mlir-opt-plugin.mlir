// UNSUPPORTED: asan
// Debian's own mlir-opt loads libHarpPlugin.so: the dialect plugin parses,
// verifies and prints harp IR, and the pass plugin adds harp's passes and
// pipelines (given as --pass-pipeline: a pass plugin's flags are not known
// when mlir-opt first reads its command line). The output is harp-opt's.
//
// RUN: mlir-opt %s --load-dialect-plugin=%harp_plugin | FileCheck %s --check-prefix=PARSECHECK
// RUN: harp-opt %s > %t.harp-opt.mlir
// RUN: mlir-opt %s --load-dialect-plugin=%harp_plugin > %t.plugin.mlir
// RUN: diff %t.harp-opt.mlir %t.plugin.mlir
//
// RUN: mlir-opt %s --load-dialect-plugin=%harp_plugin --load-pass-plugin=%harp_plugin \
// RUN:   --pass-pipeline='builtin.module(canonicalize, harp-fuse)' | FileCheck %s --check-prefix=FUSECHECK
// RUN: harp-opt %s --pass-pipeline='builtin.module(canonicalize, harp-fuse)' > %t.harp-opt.fused.mlir
// RUN: mlir-opt %s --load-dialect-plugin=%harp_plugin --load-pass-plugin=%harp_plugin \
// RUN:   --pass-pipeline='builtin.module(canonicalize, harp-fuse)' > %t.plugin.fused.mlir
// RUN: diff %t.harp-opt.fused.mlir %t.plugin.fused.mlir
//
// RUN: mlir-opt %s --load-dialect-plugin=%harp_plugin --load-pass-plugin=%harp_plugin \
// RUN:   --pass-pipeline='builtin.module(harp-to-llvm)' | FileCheck %s --check-prefix=LLVMCHECK
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm)' > %t.harp-opt.llvm.mlir
// RUN: mlir-opt %s --load-dialect-plugin=%harp_plugin --load-pass-plugin=%harp_plugin \
// RUN:   --pass-pipeline='builtin.module(harp-to-llvm)' > %t.plugin.llvm.mlir
// RUN: diff %t.harp-opt.llvm.mlir %t.plugin.llvm.mlir
//
// An invalid op gets harp's verifier diagnostic in mlir-opt too.
// RUN: not mlir-opt %S/Inputs/invalid-view.mlir --load-dialect-plugin=%harp_plugin 2>&1 \
// RUN:   | FileCheck %s --check-prefix=INVALIDCHECK

// PARSECHECK-LABEL: func.func @bias_relu
// PARSECHECK: harp.view %{{.*}} <(d0, d1) -> (d1)> : tensor<32xf32> -> tensor<8x32xf32>
// PARSECHECK: harp.map_reduce ins(

// FUSECHECK-LABEL: func.func @bias_relu
// FUSECHECK-COUNT-1: harp.map_reduce
// FUSECHECK-NOT: harp.map_reduce

// LLVMCHECK: llvm.func @bias_relu
// LLVMCHECK-NOT: harp.

// INVALIDCHECK: invalid-view.mlir:3:8: error: 'harp.view' op

func.func @bias_relu(%x: tensor<8x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %bb = harp.view %b <(i, j) -> (j)> : tensor<32xf32> -> tensor<8x32xf32>
  %s = harp.map_reduce ins(%x, %bb : tensor<8x32xf32>, tensor<8x32xf32>) {
  ^bb0(%a: f32, %c: f32):
    %t = arith.addf %a, %c : f32
    harp.yield %t : f32
  } : tensor<8x32xf32>
  %r = harp.map_reduce ins(%s : tensor<8x32xf32>) {
  ^bb0(%a: f32):
    %zero = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %zero : f32
    harp.yield %m : f32
  } : tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
