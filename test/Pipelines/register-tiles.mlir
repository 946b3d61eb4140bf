// The register tile of a matmul follows from the target's registers: rows
// of two accumulator vectors, as many as leave room for the right
// operand's two vectors and the left one's broadcast element (6 rows with
// 16 registers, 8 with 32), each row two vectors of the target's width.
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v2})' --mlir-print-ir-after=harp-vector-cleanup -o /dev/null 2>&1 | FileCheck %s --check-prefixes=CHECK,V2
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v3})' --mlir-print-ir-after=harp-vector-cleanup -o /dev/null 2>&1 | FileCheck %s --check-prefixes=CHECK,V3
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v4})' --mlir-print-ir-after=harp-vector-cleanup -o /dev/null 2>&1 | FileCheck %s --check-prefixes=CHECK,V4
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v4 vector-registers=16})' --mlir-print-ir-after=harp-vector-cleanup -o /dev/null 2>&1 | FileCheck %s --check-prefixes=CHECK,V4-16

// Every profile: the k loop carries the register tile in registers.
// CHECK-LABEL: func.func @matmul
// CHECK: scf.for {{.*}} step %c1 iter_args({{.*}}) -> (tensor<96x96xf32>, vector<{{[0-9]+}}x{{[0-9]+}}xf32>)
// V2: arith.mulf {{.*}} : vector<6x8xf32>
// V3: arith.mulf {{.*}} : vector<6x16xf32>
// V4: arith.mulf {{.*}} : vector<8x32xf32>
// V4-16: arith.mulf {{.*}} : vector<6x32xf32>
func.func @matmul(%a: tensor<96x64xf32>, %b: tensor<64x96xf32>) -> tensor<96x96xf32> {
  %ab = harp.view %a <(d0, d1, d2) -> (d0, d2)> : tensor<96x64xf32> -> tensor<96x96x64xf32>
  %bb = harp.view %b <(d0, d1, d2) -> (d2, d1)> : tensor<64x96xf32> -> tensor<96x96x64xf32>
  %c = harp.map_reduce ins(%ab, %bb : tensor<96x96x64xf32>, tensor<96x96x64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<96x96xf32>
  return %c : tensor<96x96xf32>
}
