// RUN: harp-opt %s --split-input-file --harp-gpu-kernels | FileCheck %s
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-gpu-kernels{block-size=128 block-reduce-max-outputs=0}))' | FileCheck %s --check-prefix=SERIAL
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-gpu-kernels{elements-per-thread=1}))' | FileCheck %s --check-prefix=ONE

// Element-wise: a thread per element, 1000 elements on 4 blocks of 256
// threads, the last block guarded.
// CHECK-LABEL: func.func @add
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK: gpu.launch blocks(%[[BX:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C4]], {{.*}} threads(%[[TX:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C256]],
// CHECK: %[[BASE:.*]] = arith.muli %[[BX]], %{{.*}} : index
// CHECK: %[[ID:.*]] = arith.addi %[[BASE]], %[[TX]] : index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ID]], %{{.*}} : index
// CHECK: scf.if %[[IN]] {
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<1000xf32>
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<1000xf32>
// CHECK: arith.addf
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK-NOT: linalg.
#id = affine_map<(d0) -> (d0)>
func.func @add(%a: memref<1000xf32>, %b: memref<1000xf32>, %c: memref<1000xf32>) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : memref<1000xf32>, memref<1000xf32>) outs(%c : memref<1000xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A row sum with 64 outputs: blocks per output. 64 rows are fewer than the
// 1024 blocks aimed for, so each row gets 4 blocks of 256 threads (4096 /
// (256 * 4)), whose totals a second launch (a block of 32 threads per row)
// combines into the output. Each thread folds 4 elements 1024 apart
// (elements-per-thread): 4 accumulators, one step of 4 loads while a whole
// step fits (from the thread's start up to 4096 - 3 * 1024), the rest
// (none here, but the count is not known per thread at compile time) into
// the first, then the 4 combined.
// CHECK-LABEL: func.func @row_sum
// CHECK: %[[PARTIAL:.*]] = memref.alloc() : memref<256xf32>
// CHECK: gpu.launch blocks(%[[B:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256{{.*}}, {{.*}} threads(%[[T:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256
// CHECK: %[[ROW:.*]] = arith.divui %[[B]], %{{.*}} : index
// CHECK: %[[GROUP:.*]] = arith.remui %[[B]], %{{.*}} : index
// CHECK: %[[START:.*]] = arith.addi %{{.*}}, %[[T]] : index
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[MAIN:.*]]:4 = scf.for %[[R:.*]] = %[[START]] to %c1024{{[_0-9]*}} step %c4096{{[_0-9]*}} iter_args(%[[A0:.*]] = %[[ZERO]], %[[A1:.*]] = %[[ZERO]], %[[A2:.*]] = %[[ZERO]], %[[A3:.*]] = %[[ZERO]]) -> (f32, f32, f32, f32) {
// CHECK-COUNT-4: memref.load %{{.*}} : memref<64x4096xf32>
// CHECK: arith.addf %[[A0]]
// CHECK: arith.addf %[[A1]]
// CHECK: arith.addf %[[A2]]
// CHECK: arith.addf %[[A3]]
// CHECK: %[[LEFT:.*]] = arith.subi %c1024{{.*}}, %[[START]]
// CHECK: %[[STEPS:.*]] = arith.ceildivui %[[LEFT]], %c4096
// CHECK: %[[DONE:.*]] = arith.muli %[[STEPS]], %c4096
// CHECK: %[[REST:.*]] = arith.addi %[[START]], %[[DONE]]
// CHECK: %[[FIRST:.*]] = scf.for %{{.*}} = %[[REST]] to %c4096{{[_0-9]*}} step %c1024{{[_0-9]*}} iter_args(%[[ACC:.*]] = %[[MAIN]]#0) -> (f32) {
// CHECK: memref.load %{{.*}} : memref<64x4096xf32>
// CHECK: arith.addf %[[ACC]]
// CHECK: %[[S01:.*]] = arith.addf %[[FIRST]], %[[MAIN]]#1
// CHECK: %[[S23:.*]] = arith.addf %[[MAIN]]#2, %[[MAIN]]#3
// CHECK: %[[SUM:.*]] = arith.addf %[[S01]], %[[S23]]
// CHECK: %[[TOTAL:.*]] = gpu.all_reduce add %[[SUM]] uniform
// CHECK: arith.cmpi eq, %[[T]]
// CHECK: memref.store %[[TOTAL]], %[[PARTIAL]][%[[B]]]
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c64{{.*}}, {{.*}} threads({{.*}}) in (%{{.*}} = %c32
// CHECK: scf.for
// CHECK: memref.load %[[PARTIAL]]
// CHECK: gpu.all_reduce add
// CHECK: %[[OLD:.*]] = memref.load %{{.*}} : memref<64xf32>
// CHECK: arith.addf %[[OLD]]
// CHECK: memref.store %{{.*}} : memref<64xf32>
// CHECK: memref.dealloc %[[PARTIAL]]

// With elements-per-thread=1, one accumulator folds the thread's share.
// ONE-LABEL: func.func @row_sum
// ONE: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// ONE: %[[SUM:.*]] = scf.for %{{.*}} = %{{.*}} to %c4096 step %c1024 iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32) {
// ONE: memref.load %{{.*}} : memref<64x4096xf32>
// ONE: arith.addf %[[ACC]]
// ONE-NOT: scf.for
// ONE: gpu.all_reduce add %[[SUM]] uniform

// With block-reduce-max-outputs=0 every reduction is a thread per output,
// running the reduction sequentially from the output's initial value.
// SERIAL-LABEL: func.func @row_sum
// SERIAL-NOT: gpu.all_reduce
// SERIAL: gpu.launch blocks({{.*}}) in (%{{.*}} = %c1{{.*}}, {{.*}} threads({{.*}}) in (%{{.*}} = %c64
// SERIAL: %[[INIT:.*]] = memref.load %{{.*}} : memref<64xf32>
// SERIAL: %[[S:.*]] = scf.for %{{.*}} = %c0 to %c4096 step %c1{{.*}} iter_args(%{{.*}} = %[[INIT]]) -> (f32)
// SERIAL: memref.store %[[S]]
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @row_sum(%x: memref<64x4096xf32>, %y: memref<64xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x4096xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Many rows (enough threads without splitting them): one block per row, the
// total folded straight into the output; a max reduction keeps its kind.
// CHECK-LABEL: func.func @row_max
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c4096{{.*}}, {{.*}} threads
// CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[NEG]])
// CHECK: arith.maximumf
// CHECK: gpu.all_reduce maximumf
// CHECK: arith.maximumf
// CHECK: memref.store
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @row_max(%x: memref<4096x512xf32>, %y: memref<4096xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4096x512xf32>) outs(%y : memref<4096xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.maximumf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A matmul has more outputs than block-reduce-max-outputs: a thread per
// output, k sequential; named ops are generalized first.
// CHECK-LABEL: func.func @matmul
// CHECK-NOT: gpu.all_reduce
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c4096{{.*}}, {{.*}} threads({{.*}}) in (%{{.*}} = %c256
// CHECK: affine.delinearize_index %{{.*}} into (1024, 1024)
// CHECK: scf.for {{.*}} to %c512
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @matmul(%a: memref<1024x512xf32>, %b: memref<512x1024xf32>, %c: memref<1024x1024xf32>) {
  linalg.matmul ins(%a, %b : memref<1024x512xf32>, memref<512x1024xf32>) outs(%c : memref<1024x1024xf32>)
  return
}

// -----

// Copies become kernels; linalg.index is the thread's coordinate.
// CHECK-LABEL: func.func @copy_and_iota
// CHECK: gpu.launch
// CHECK: memref.load %{{.*}} : memref<8x8xi32, strided<[16, 1]>>
// CHECK: memref.store
// CHECK: gpu.launch blocks(%[[B:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in {{.*}} threads(%[[T:[a-z0-9_]+]], %{{.*}}, %{{.*}})
// CHECK: %[[M:.*]] = arith.muli %[[B]]
// CHECK: %[[ID:.*]] = arith.addi %[[M]], %[[T]]
// CHECK-NOT: linalg.index
// CHECK: arith.index_cast %[[ID]] : index to i32
#map = affine_map<(d0) -> (d0)>
func.func @copy_and_iota(%src: memref<8x8xi32, strided<[16, 1]>>, %dst: memref<8x8xi32>, %iota: memref<64xi32>) {
  memref.copy %src, %dst : memref<8x8xi32, strided<[16, 1]>> to memref<8x8xi32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%iota : memref<64xi32>) {
  ^bb0(%o: i32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i32
    linalg.yield %c : i32
  }
  return
}

// -----

// A loop left on the host that touches buffers (a scatter's) runs on one
// GPU thread.
// CHECK-LABEL: func.func @host_loop
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads({{.*}}) in (%{{.*}} = %c1
// CHECK-NEXT: scf.for
// CHECK: memref.store
// CHECK: gpu.terminator
func.func @host_loop(%idx: memref<4xindex>, %dst: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    %j = memref.load %idx[%i] : memref<4xindex>
    %old = memref.load %dst[%j] : memref<8xf32>
    %new = arith.addf %old, %one : f32
    memref.store %new, %dst[%j] : memref<8xf32>
  }
  return
}
