// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-gpu-kernels{min-blocks=1}))' | FileCheck %s
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-gpu-kernels{min-blocks=1 elements-per-thread=1}))' | FileCheck %s --check-prefix=ONE
// RUN: harp-opt %s --split-input-file --harp-gpu-kernels | FileCheck %s --check-prefix=FEW

// Element-wise kernels with several outputs per thread (elements-per-thread,
// default 4): a block computes 256 * 4 outputs, a thread 4 of them 256
// apart. 2500 outputs: 3 blocks, the first 2 full. A full block loads the
// inputs of all 4 points before computing any, then stores; the last block
// guards each point.
// CHECK-LABEL: func.func @add
// CHECK: gpu.launch blocks(%[[BX:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c3{{[_0-9]*}}, {{.*}} threads(%[[TX:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256
// CHECK: %[[CHUNK:.*]] = arith.muli %[[BX]], %c1024
// CHECK: %[[BASE:.*]] = arith.addi %[[CHUNK]], %[[TX]] : index
// CHECK: %[[FULL:.*]] = arith.cmpi ult, %[[BX]], %c2
// CHECK: scf.if %[[FULL]] {
// CHECK: %[[A0:.*]] = memref.load %[[A:[a-z0-9_]+]][%{{.*}}] : memref<2500xf32>
// CHECK: %[[B0:.*]] = memref.load %[[B:[a-z0-9_]+]][%{{.*}}] : memref<2500xf32>
// CHECK: arith.addi %[[BASE]], %c256
// CHECK: %[[A1:.*]] = memref.load %[[A]]
// CHECK: %[[B1:.*]] = memref.load %[[B]]
// CHECK: arith.addi %[[BASE]], %c512
// CHECK: memref.load %[[A]]
// CHECK: memref.load %[[B]]
// CHECK: arith.addi %[[BASE]], %c768
// CHECK: memref.load %[[A]]
// CHECK: memref.load %[[B]]
// CHECK-NOT: memref.store
// CHECK: %[[S0:.*]] = arith.addf %[[A0]], %[[B0]]
// CHECK: %[[S1:.*]] = arith.addf %[[A1]], %[[B1]]
// CHECK: arith.addf
// CHECK: arith.addf
// CHECK-NOT: memref.load
// CHECK: memref.store %[[S0]], %[[C:[a-z0-9_]+]][
// CHECK: memref.store %[[S1]], %[[C]][
// CHECK-COUNT-2: memref.store %{{.*}}, %[[C]][
// CHECK: } else {
// CHECK: %[[IN0:.*]] = arith.cmpi ult, %[[BASE]], %c2500
// CHECK: scf.if %[[IN0]] {
// CHECK: memref.load %[[A]]
// CHECK: memref.store
// CHECK: %[[G1:.*]] = arith.addi %[[BASE]], %c256
// CHECK: %[[IN1:.*]] = arith.cmpi ult, %[[G1]], %c2500
// CHECK: scf.if %[[IN1]] {
// CHECK-COUNT-2: scf.if
// CHECK: gpu.terminator

// ONE-LABEL: func.func @add
// ONE: gpu.launch blocks({{.*}}) in (%{{.*}} = %c10{{[_0-9]*}}, {{.*}} threads
// ONE-COUNT-2: memref.load
// ONE-NOT: memref.load
// ONE: gpu.terminator

// By default a kernel takes several outputs per thread only while it still
// launches 1024 blocks (min-blocks): 2500 outputs get one each.
// FEW-LABEL: func.func @add
// FEW: gpu.launch blocks({{.*}}) in (%{{.*}} = %c10{{[_0-9]*}}, {{.*}} threads
// FEW-COUNT-2: memref.load
// FEW-NOT: memref.load
// FEW: gpu.terminator
#id = affine_map<(d0) -> (d0)>
func.func @add(%a: memref<2500xf32>, %b: memref<2500xf32>, %c: memref<2500xf32>) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : memref<2500xf32>, memref<2500xf32>) outs(%c : memref<2500xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Outputs that divide into whole chunks need no guard. A body that reads
// its output (an accumulation in place) loads it with the inputs; a
// transposed read takes each point's own coordinates.
// CHECK-DAG: #[[COL:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[ROW:map[0-9]*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @accumulate_transposed
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c8{{[_0-9]*}}, {{.*}} threads
// CHECK-NOT: scf.if
// CHECK: %[[P0:.*]]:2 = affine.delinearize_index %{{.*}} into (64, 128)
// CHECK: %[[X0:.*]] = affine.apply #[[COL]](%[[P0]]#0, %[[P0]]#1)
// CHECK: %[[X1:.*]] = affine.apply #[[ROW]](%[[P0]]#0, %[[P0]]#1)
// CHECK: memref.load %{{.*}}[%[[X0]], %[[X1]]] : memref<128x64xf32>
// CHECK: %[[O0:.*]] = affine.apply #[[ROW]](%[[P0]]#0, %[[P0]]#1)
// CHECK: %[[O1:.*]] = affine.apply #[[COL]](%[[P0]]#0, %[[P0]]#1)
// CHECK: memref.load %{{.*}}[%[[O0]], %[[O1]]] : memref<64x128xf32>
// CHECK: %[[P1:.*]]:2 = affine.delinearize_index %{{.*}} into (64, 128)
// CHECK: affine.apply #[[COL]](%[[P1]]#0, %[[P1]]#1)
// CHECK: memref.load %{{.*}} : memref<128x64xf32>
// CHECK: memref.load %{{.*}} : memref<64x128xf32>
// CHECK-COUNT-2: affine.delinearize_index
// CHECK-NOT: memref.store
// CHECK-COUNT-4: arith.addf
// CHECK-COUNT-4: memref.store
// CHECK-NOT: scf.if
// CHECK: gpu.terminator
#t = affine_map<(d0, d1) -> (d1, d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @accumulate_transposed(%x: memref<128x64xf32>, %acc: memref<64x128xf32>) {
  linalg.generic {indexing_maps = [#t, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<128x64xf32>) outs(%acc : memref<64x128xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.addf %o, %v : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A matmul-like reduction with many outputs stays a thread per output.
// CHECK-LABEL: func.func @reduce_rows_serially
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, {{.*}} threads
// CHECK: scf.for
// CHECK: memref.load %{{.*}} : memref<32768x4xf32>
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @reduce_rows_serially(%x: memref<32768x4xf32>, %y: memref<32768xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<32768x4xf32>) outs(%y : memref<32768xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}
