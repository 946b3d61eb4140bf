// RUN: harp-opt %s --harp-to-llvm="vector-bits=512 vector-registers=32 l1-cache=32768" --mlir-print-ir-before=one-shot-bufferize --mlir-disable-threading -o /dev/null 2>&1 | FileCheck %s

// A matmul whose k is one cache block: its register tiles start from zero
// in registers, and its result is never filled (harp-forward-fills).
// CHECK-LABEL: func.func @one_k_block
// CHECK-NOT: vector.transfer_write %cst
// The fill was made flat (harp-tile-and-vectorize); dropped, it leaves the
// reshapes of the result's empty tensor, which bufferize to its buffer.
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<64x64xf32>
// CHECK-NEXT: %[[FLAT:.*]] = tensor.collapse_shape %[[EMPTY]] {{\[}}[0, 1]] : tensor<64x64xf32> into tensor<4096xf32>
// CHECK-NEXT: %[[SAME:.*]] = tensor.expand_shape %[[FLAT]] {{\[}}[0, 1]]
// CHECK-NEXT: scf.for %{{.*}} iter_args(%{{.*}} = %[[SAME]])
// CHECK-NEXT: scf.for
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %c256 step %c1 iter_args(%{{.*}} = %cst{{.*}}) -> (vector<8x32xf32>)
// CHECK-NOT: vector.transfer_write %cst
// CHECK: return
func.func @one_k_block(%a: tensor<64x256xf32>, %b: tensor<256x64xf32>) -> tensor<64x64xf32> {
  %0 = harp.view %a <(d0, d1, d2) -> (d0, d2)> : tensor<64x256xf32> -> tensor<64x64x256xf32>
  %1 = harp.view %b <(d0, d1, d2) -> (d2, d1)> : tensor<256x64xf32> -> tensor<64x64x256xf32>
  %2 = harp.map_reduce ins(%0, %1 : tensor<64x64x256xf32>, tensor<64x64x256xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<64x64xf32>
  return %2 : tensor<64x64xf32>
}

// k in blocks (2048 floats: 4 blocks of 512 with a 32 KiB L1): every block
// after the first reads what the one before wrote, so the zero fill stays.
// CHECK-LABEL: func.func @k_blocks
// CHECK: %[[FILL:.*]] = scf.for
// CHECK: vector.transfer_write %cst{{.*}} : vector<16xf32>, tensor<4096xf32>
// CHECK: %[[FILLED:.*]] = tensor.expand_shape %[[FILL]]
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %[[FILLED]])
// CHECK: vector.transfer_read
// CHECK: return
func.func @k_blocks(%a: tensor<64x2048xf32>, %b: tensor<2048x64xf32>) -> tensor<64x64xf32> {
  %0 = harp.view %a <(d0, d1, d2) -> (d0, d2)> : tensor<64x2048xf32> -> tensor<64x64x2048xf32>
  %1 = harp.view %b <(d0, d1, d2) -> (d2, d1)> : tensor<2048x64xf32> -> tensor<64x64x2048xf32>
  %2 = harp.map_reduce ins(%0, %1 : tensor<64x64x2048xf32>, tensor<64x64x2048xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<64x64xf32>
  return %2 : tensor<64x64xf32>
}
