// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-split-chains{l1-cache=32768 vector-bits=256}))' --split-input-file | FileCheck %s
// A smaller L1 makes smaller strips.
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-split-chains{l1-cache=4096 vector-bits=256}))' --split-input-file | FileCheck %s --check-prefix=SMALL
// A chain must be min-steps long to be split.
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-split-chains{l1-cache=32768 min-steps=40}))' --split-input-file | FileCheck %s --check-prefix=LONG
// The harp-vectorize pipeline runs the pass before tiling (option
// split-chains), with its l1-cache.
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{vector-bits=256 l1-cache=32768}))' --split-input-file | FileCheck %s --check-prefix=PIPE
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{vector-bits=256 l1-cache=32768 split-chains=false}))' --split-input-file | FileCheck %s --check-prefix=NOSPLIT

// The GELU chain: 18 steps (a cube, a scaling, tanh's 11, two multiplies).
// Cut after the tanh's argument (5 steps | 13): its slice (x^2, x^3, the
// scalings) is read by nothing else. Strips of 1024 elements: three arrays
// (x, the argument, the result) of 4 bytes in half of a 32 KiB L1. The 4
// elements left over are fewer than eight vectors and stay one kernel.
// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[X:.*]]: tensor<4100xf32>)
// CHECK: %[[HEAD:.*]] = tensor.extract_slice %[[X]][0] [4096] [1]
// CHECK: scf.for %[[I:.*]] = %c0 to %c4096 step %c1024
// CHECK: %[[XS:.*]] = tensor.extract_slice %[[HEAD]][%[[I]]] [1024] [1]
// CHECK: %[[ARGBUF:.*]] = tensor.empty() : tensor<1024xf32>
// CHECK: %[[ARG:.*]] = linalg.generic
// CHECK-SAME: ins(%[[XS]] : tensor<1024xf32>) outs(%[[ARGBUF]] : tensor<1024xf32>)
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[S:.*]] = arith.mulf
// CHECK-NOT: math.tanh
// CHECK: linalg.yield %[[S]]
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[XS]], %[[ARG]] : tensor<1024xf32>, tensor<1024xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[T:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[TH:.*]] = math.tanh %[[T]]
// CHECK-NEXT: %[[U:.*]] = arith.addf %[[TH]]
// CHECK-NEXT: %[[H:.*]] = arith.mulf %[[A]]
// CHECK-NEXT: %[[R:.*]] = arith.mulf %[[H]], %[[U]]
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK: } {harp.parallel}
// CHECK: tensor.extract_slice %[[X]][4096] [4] [1]
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK-NOT: linalg.generic
// CHECK: return
// SMALL-LABEL: func.func @gelu
// SMALL: scf.for %{{.*}} = %c0 to %c4096 step %c128
// LONG-LABEL: func.func @gelu
// LONG-NOT: scf.for
// PIPE-LABEL: func.func @gelu
// PIPE: scf.for %{{.*}} = %c0 to %c4096 step %c1024
// PIPE: scf.for %{{.*}} = %c0 to %c1024 step %c8
// PIPE: vector.transfer_write %{{.*}} : vector<8xf32>, tensor<1024xf32>
// PIPE: scf.for %{{.*}} = %c0 to %c1024 step %c8
// PIPE: arith.divf %{{.*}} : vector<8xf32>
// NOSPLIT-LABEL: func.func @gelu
// NOSPLIT-NOT: step %c1024
// NOSPLIT: return
#id = affine_map<(d0) -> (d0)>
func.func @gelu(%x: tensor<4100xf32>) -> tensor<4100xf32> {
  %k = arith.constant 0.044715 : f32
  %s = arith.constant 0.797884583 : f32
  %one = arith.constant 1.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<4100xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4100xf32>) outs(%e : tensor<4100xf32>) {
  ^bb0(%a: f32, %o: f32):
    %sq = arith.mulf %a, %a : f32
    %cu = arith.mulf %sq, %a : f32
    %kc = arith.mulf %cu, %k : f32
    %in = arith.addf %a, %kc : f32
    %sc = arith.mulf %in, %s : f32
    %th = math.tanh %sc : f32
    %up = arith.addf %th, %one : f32
    %h = arith.mulf %a, %half : f32
    %y = arith.mulf %h, %up : f32
    linalg.yield %y : f32
  } -> tensor<4100xf32>
  return %r : tensor<4100xf32>
}

// -----

// Rows shorter than a strip: 8 rows of 100 per strip (four arrays of 4
// bytes, the broadcast bias among them, make 1024 elements, 10 rows; 8 is
// the most that divide 64). Cut after the exp (12 steps | 13).
// CHECK-LABEL: func.func @bias_softplus_rows
// CHECK-SAME: (%[[X:.*]]: tensor<64x100xf32>, %[[B:.*]]: tensor<100xf32>)
// CHECK: scf.for %[[I:.*]] = %c0 to %c64 step %c8
// CHECK: %[[XS:.*]] = tensor.extract_slice %[[X]][%[[I]], 0] [8, 100] [1, 1]
// CHECK: %[[BS:.*]] = tensor.extract_slice %[[B]][0] [100] [1]
// CHECK: %[[E:.*]] = linalg.generic
// CHECK-SAME: ins(%[[XS]], %[[BS]] : tensor<8x100xf32>, tensor<100xf32>)
// CHECK: math.exp
// CHECK-NOT: math.log1p
// CHECK: linalg.yield
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[XS]], %[[E]] : tensor<8x100xf32>, tensor<8x100xf32>)
// CHECK: math.log1p
// CHECK: } {harp.parallel}
#rows = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>
func.func @bias_softplus_rows(%x: tensor<64x100xf32>, %b: tensor<100xf32>) -> tensor<64x100xf32> {
  %c = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<64x100xf32>
  %r = linalg.generic {indexing_maps = [#rows, #bias, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<64x100xf32>, tensor<100xf32>) outs(%e : tensor<64x100xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %s = arith.addf %a, %bb : f32
    %m = arith.mulf %s, %c : f32
    %ex = math.exp %m : f32
    %l = math.log1p %ex : f32
    %t = arith.mulf %l, %a : f32
    linalg.yield %t : f32
  } -> tensor<64x100xf32>
  return %r : tensor<64x100xf32>
}

// -----

// Two results: the second kernel yields both. Strips of 512: four arrays
// (x, the cut value, two results) of 8 bytes in 16 KiB.
// CHECK-LABEL: func.func @two_results
// CHECK: scf.for %{{.*}} = %c0 to %c2048 step %c512
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: linalg.yield %{{.*}} : f64
// CHECK: %{{.*}}:2 = linalg.generic
// CHECK: math.log1p
// CHECK: linalg.yield %{{.*}}, %{{.*}} : f64, f64
func.func @two_results(%x: tensor<2048xf64>) -> (tensor<2048xf64>, tensor<2048xf64>) {
  %e = tensor.empty() : tensor<2048xf64>
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<2048xf64>) outs(%e, %e : tensor<2048xf64>, tensor<2048xf64>) {
  ^bb0(%a: f64, %o: f64, %p: f64):
    %n = arith.negf %a : f64
    %ex = math.exp %n : f64
    %l = math.log1p %ex : f64
    %t = arith.mulf %l, %a : f64
    linalg.yield %t, %l : f64, f64
  } -> (tensor<2048xf64>, tensor<2048xf64>)
  return %r#0, %r#1 : tensor<2048xf64>, tensor<2048xf64>
}

// -----

// Left alone: a short chain (exp and a multiply: 11 steps), a reduction,
// and a chain whose every value reads the output element (no cut may read
// it). A tanh of a tanh (22 steps) is cut in the middle.
// CHECK-LABEL: func.func @short
// CHECK-NOT: scf.for
// CHECK: return
func.func @short(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %e = tensor.empty() : tensor<4096xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<4096xf32>) outs(%e : tensor<4096xf32>) {
  ^bb0(%a: f32, %o: f32):
    %ex = math.exp %a : f32
    %t = arith.mulf %ex, %a : f32
    linalg.yield %t : f32
  } -> tensor<4096xf32>
  return %r : tensor<4096xf32>
}

// CHECK-LABEL: func.func @row_sums
// CHECK-NOT: scf.for
// CHECK: return
func.func @row_sums(%x: tensor<64x4096xf32>) -> tensor<64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x4096xf32>) outs(%f : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %ex = math.exp %a : f32
    %l = math.log1p %ex : f32
    %t = math.tanh %l : f32
    %s = arith.addf %t, %o : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// Rows of 3 that no number but 1 divides (4099 is prime): a strip would be
// one row, fewer than eight vectors, so the kernel is neither tiled nor cut.
// CHECK-LABEL: func.func @prime_rows
// CHECK-NOT: scf.for
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @prime_rows(%x: tensor<4099x3xf32>) -> tensor<4099x3xf32> {
  %e = tensor.empty() : tensor<4099x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4099x3xf32>) outs(%e : tensor<4099x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %ex = math.exp %a : f32
    %l = math.log1p %ex : f32
    %t = arith.mulf %l, %a : f32
    linalg.yield %t : f32
  } -> tensor<4099x3xf32>
  return %r : tensor<4099x3xf32>
}

// CHECK-LABEL: func.func @reads_output
// CHECK-NOT: scf.for
// CHECK: return
func.func @reads_output(%x: tensor<4096xf32>, %y: tensor<4096xf32>) -> tensor<4096xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<4096xf32>) outs(%y : tensor<4096xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    %ex = math.exp %s : f32
    %l = math.log1p %ex : f32
    %t = math.tanh %l : f32
    linalg.yield %t : f32
  } -> tensor<4096xf32>
  return %r : tensor<4096xf32>
}

// CHECK-LABEL: func.func @tanh_of_tanh
// CHECK: scf.for
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK-NOT: math.tanh
// CHECK: linalg.yield
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK: } {harp.parallel}
func.func @tanh_of_tanh(%x: tensor<4096xf32>) -> tensor<4096xf32> {
  %e = tensor.empty() : tensor<4096xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<4096xf32>) outs(%e : tensor<4096xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    %u = math.tanh %t : f32
    linalg.yield %u : f32
  } -> tensor<4096xf32>
  return %r : tensor<4096xf32>
}
