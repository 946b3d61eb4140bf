// harp-to-llvm hands the target's FMA rate (LLVM's scheduling model) to
// harp-pack-contractions, which packs a right operand whose rows are no
// multiple of a vector long (500 floats) where the register tile's k loop
// issues at least one load per cycle: x86-64-v4 and x86-64-v3 start 2
// FMAs per cycle (8 x 2 zmm tile: 10 loads per 8 cycles; 6 x 2 ymm: 8 per
// 6), znver4 one 512-bit FMA per cycle (10 loads per 16 cycles), and
// fma-per-cycle overrides the CPU's.
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v4 l1-cache=32768 l2-cache=1048576})' --mlir-print-ir-after=harp-pack-contractions -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-PACKED32
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v3 l1-cache=32768 l2-cache=1048576})' --mlir-print-ir-after=harp-pack-contractions -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-PACKED16
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=znver4 l1-cache=32768 l2-cache=1048576})' --mlir-print-ir-after=harp-pack-contractions -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-INPLACE
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=x86-64-v4 fma-per-cycle=1 l1-cache=32768 l2-cache=1048576})' --mlir-print-ir-after=harp-pack-contractions -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-INPLACE

// CHECK-PACKED32-LABEL: func.func @main
// CHECK-PACKED32: linalg.generic {{.*}} outs(%{{.*}} : tensor<15x256x32xf32>)
// CHECK-PACKED32: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<64x256xf32>, tensor<15x256x32xf32>)
// CHECK-PACKED16-LABEL: func.func @main
// CHECK-PACKED16: linalg.generic {{.*}} outs(%{{.*}} : tensor<31x256x16xf32>)
// CHECK-PACKED16: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<64x256xf32>, tensor<31x256x16xf32>)
// CHECK-INPLACE-LABEL: func.func @main
// CHECK-INPLACE-NOT: x256x{{16|32}}xf32>
// CHECK-INPLACE: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<64x256xf32>, tensor<256x500xf32>)
func.func @main(%a: tensor<64x256xf32>, %b: tensor<256x500xf32>) -> tensor<64x500xf32> {
  %ab = harp.view %a <(d0, d1, d2) -> (d0, d2)> : tensor<64x256xf32> -> tensor<64x500x256xf32>
  %bb = harp.view %b <(d0, d1, d2) -> (d2, d1)> : tensor<256x500xf32> -> tensor<64x500x256xf32>
  %c = harp.map_reduce ins(%ab, %bb : tensor<64x500x256xf32>, tensor<64x500x256xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<64x500xf32>
  return %c : tensor<64x500xf32>
}
