// RUN: harp-opt %s --harp-to-llvm --mlir-print-ir-after=buffer-loop-hoisting -o /dev/null 2>&1 | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{threads=true})' --mlir-print-ir-after=buffer-loop-hoisting -o /dev/null 2>&1 | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(harp-to-llvm{threads=true parallel-min-work=0})' --mlir-print-ir-after=buffer-loop-hoisting -o /dev/null 2>&1 | FileCheck %s --check-prefix=THREADS

// A row softmax: each row's 64 partial sums live in a scratch buffer.
// harp-to-llvm allocates it once, before the row loop, instead of once per
// row (buffer-loop-hoisting: layer norm 8192x1024 made 24576 malloc/free
// pairs per call, about 15% of its time). With threads too, where the row
// loop does too little work to be run on them (64 x 1024 elements: below
// harp-parallelize's default min-work).
// CHECK-LABEL: func.func @softmax_rows
// CHECK: %[[SCRATCH:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x64xf32>
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %c64 step %c1 {
// CHECK-NOT: memref.alloc
// CHECK: vector.transfer_read %[[SCRATCH]]

// Rows that run on threads may run at once: each keeps its own buffer,
// allocated in the parallel loop's body (harp-parallelize runs before the
// hoisting, which never moves an allocation out of an scf.parallel).
// THREADS-LABEL: func.func @softmax_rows
// THREADS: scf.parallel (%{{.*}}) = (%c0) to (%c64) step (%c1) {
// THREADS-NEXT: memref.alloc() {alignment = 64 : i64} : memref<1x64xf32>
func.func @softmax_rows(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %m = harp.map_reduce ins(%x : tensor<64x1024xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(max, dims = [1], keepdim) : tensor<64x1xf32>
  %mb = harp.view %m <(d0, d1) -> (d0, 0)> : tensor<64x1xf32> -> tensor<64x1024xf32>
  %e = harp.map_reduce ins(%x, %mb : tensor<64x1024xf32>, tensor<64x1024xf32>) {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    harp.yield %ex : f32
  } : tensor<64x1024xf32>
  %s = harp.map_reduce ins(%e : tensor<64x1024xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1], keepdim) : tensor<64x1xf32>
  %sb = harp.view %s <(d0, d1) -> (d0, 0)> : tensor<64x1xf32> -> tensor<64x1024xf32>
  %y = harp.map_reduce ins(%e, %sb : tensor<64x1024xf32>, tensor<64x1024xf32>) {
  ^bb0(%a: f32, %b: f32):
    %q = arith.divf %a, %b : f32
    harp.yield %q : f32
  } : tensor<64x1024xf32>
  return %y : tensor<64x1024xf32>
}
