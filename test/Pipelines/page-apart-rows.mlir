// harp-pack-contractions packs a right operand whose rows are a page (4 KiB)
// or more apart, where n fits a cache block and m spans at least 8 row
// tiles: read in place, every k step of the register tile would load from a
// page of its own, beyond the hardware prefetchers (they stop at a page's
// edge) and the first-level TLB. znver4 (8 x 2 zmm tiles, one 512-bit FMA
// per cycle) does not pack for misaligned rows, so these are packed for
// their pages alone; K = 128 keeps the 1024 columns in one n block.
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=znver4 l1-cache=32768 l2-cache=1048576})' --mlir-disable-threading --mlir-print-ir-after=harp-pack-contractions -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-PACK
// The packed matmul without an n block has all 32 panels in one block: the
// panel loop runs inside the row tiles' loop, so A is read once (a block of
// one panel each put the panel loop first and read A once per panel).
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{cpu=znver4 l1-cache=32768 l2-cache=1048576})' --mlir-disable-threading --mlir-print-ir-after=harp-vector-cleanup -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECK-LOOPS

// CHECK-PACK-LABEL: func.func @page_apart
// CHECK-PACK: linalg.generic {{.*}} outs(%{{.*}} : tensor<32x128x32xf32>)
// CHECK-PACK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<64x128xf32>, tensor<32x128x32xf32>)
// CHECK-LOOPS-LABEL: func.func @page_apart
// CHECK-LOOPS: tensor.empty() : tensor<32x128x32xf32>
// CHECK-LOOPS: scf.for %{{.*}} = %c0 to %c64 step %c8
// CHECK-LOOPS-NEXT: scf.for %{{.*}} = %c0 to %c32 step %c1
// CHECK-LOOPS: scf.for %{{.*}} = %c0 to %c128 step %c1 {{.*}} -> ({{.*}}vector<8x32xf32>)
// CHECK-LOOPS-LABEL: func.func @rows_under_a_page
func.func @page_apart(%a: tensor<64x128xf32>, %b: tensor<128x1024xf32>) -> tensor<64x1024xf32> {
  %ab = harp.view %a <(d0, d1, d2) -> (d0, d2)> : tensor<64x128xf32> -> tensor<64x1024x128xf32>
  %bb = harp.view %b <(d0, d1, d2) -> (d2, d1)> : tensor<128x1024xf32> -> tensor<64x1024x128xf32>
  %c = harp.map_reduce ins(%ab, %bb : tensor<64x1024x128xf32>, tensor<64x1024x128xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<64x1024xf32>
  return %c : tensor<64x1024xf32>
}

// Rows of 960 floats (3840 bytes) share pages: read in place.
// CHECK-PACK-LABEL: func.func @rows_under_a_page
// CHECK-PACK-NOT: x128x32xf32>
// CHECK-PACK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<64x128xf32>, tensor<128x960xf32>)
func.func @rows_under_a_page(%a: tensor<64x128xf32>, %b: tensor<128x960xf32>) -> tensor<64x960xf32> {
  %ab = harp.view %a <(d0, d1, d2) -> (d0, d2)> : tensor<64x128xf32> -> tensor<64x960x128xf32>
  %bb = harp.view %b <(d0, d1, d2) -> (d2, d1)> : tensor<128x960xf32> -> tensor<64x960x128xf32>
  %c = harp.map_reduce ins(%ab, %bb : tensor<64x960x128xf32>, tensor<64x960x128xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<64x960xf32>
  return %c : tensor<64x960xf32>
}

// 32 rows (4 row tiles) read B too few times to pay for a copy: in place.
// CHECK-PACK-LABEL: func.func @few_rows
// CHECK-PACK-NOT: x128x32xf32>
// CHECK-PACK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<32x128xf32>, tensor<128x1024xf32>)
func.func @few_rows(%a: tensor<32x128xf32>, %b: tensor<128x1024xf32>) -> tensor<32x1024xf32> {
  %ab = harp.view %a <(d0, d1, d2) -> (d0, d2)> : tensor<32x128xf32> -> tensor<32x1024x128xf32>
  %bb = harp.view %b <(d0, d1, d2) -> (d2, d1)> : tensor<128x1024xf32> -> tensor<32x1024x128xf32>
  %c = harp.map_reduce ins(%ab, %bb : tensor<32x1024x128xf32>, tensor<32x1024x128xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<32x1024xf32>
  return %c : tensor<32x1024xf32>
}
