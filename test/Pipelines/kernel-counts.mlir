// RUN: harp-opt %s --pass-pipeline='builtin.module(canonicalize,harp-fuse,convert-harp-to-linalg,canonicalize,func.func(harp-fuse-epilogues),canonicalize,cse)' --split-input-file | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(canonicalize,convert-harp-to-linalg,canonicalize,cse)' --split-input-file | FileCheck %s --check-prefix=UNFUSED

// How many kernels (top-level loop nests: a linalg.generic, or an scf.for
// of row tiles holding a reduction and its epilogue) common workloads
// become, with harp's fusion (the steps of harp-to-llvm before
// bufferization) and without. linalg.fill only initialises an accumulator.

// GELU with tanh, one op per map_reduce: one kernel.
// CHECK-LABEL: func.func @gelu_tanh
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return
// UNFUSED-LABEL: func.func @gelu_tanh
// UNFUSED-COUNT-6: linalg.generic
func.func @gelu_tanh(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %x3 = harp.map_reduce ins(%x : tensor<64x128xf32>) {
  ^bb0(%a: f32):
    %sq = arith.mulf %a, %a : f32
    %cu = arith.mulf %sq, %a : f32
    harp.yield %cu : f32
  } : tensor<64x128xf32>
  %inner = harp.map_reduce ins(%x, %x3 : tensor<64x128xf32>, tensor<64x128xf32>) {
  ^bb0(%a: f32, %c: f32):
    %k = arith.constant 0.044715 : f32
    %t = arith.mulf %k, %c : f32
    %s = arith.addf %a, %t : f32
    harp.yield %s : f32
  } : tensor<64x128xf32>
  %scaled = harp.map_reduce ins(%inner : tensor<64x128xf32>) {
  ^bb0(%a: f32):
    %k = arith.constant 0.7978845608 : f32
    %s = arith.mulf %k, %a : f32
    harp.yield %s : f32
  } : tensor<64x128xf32>
  %th = harp.map_reduce ins(%scaled : tensor<64x128xf32>) {
  ^bb0(%a: f32):
    %t = math.tanh %a : f32
    harp.yield %t : f32
  } : tensor<64x128xf32>
  %onep = harp.map_reduce ins(%th : tensor<64x128xf32>) {
  ^bb0(%a: f32):
    %one = arith.constant 1.0 : f32
    %s = arith.addf %one, %a : f32
    harp.yield %s : f32
  } : tensor<64x128xf32>
  %y = harp.map_reduce ins(%x, %onep : tensor<64x128xf32>, tensor<64x128xf32>) {
  ^bb0(%a: f32, %u: f32):
    %half = arith.constant 0.5 : f32
    %h = arith.mulf %half, %a : f32
    %r = arith.mulf %h, %u : f32
    harp.yield %r : f32
  } : tensor<64x128xf32>
  return %y : tensor<64x128xf32>
}

// -----

// Softmax over rows: the max, then one loop over rows computing the row's
// sum of exp and normalising it (exp recomputed): 2 kernels.
// CHECK-LABEL: func.func @softmax
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-NEXT: ^bb0
// CHECK: scf.for
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NOT: linalg.generic
// CHECK: return
// UNFUSED-LABEL: func.func @softmax
// UNFUSED-COUNT-4: linalg.generic
func.func @softmax(%x: tensor<32x100xf32>) -> tensor<32x100xf32> {
  %m = harp.map_reduce ins(%x : tensor<32x100xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(max, dims = [1]) : tensor<32xf32>
  %mb = harp.view %m <(d0, d1) -> (d0)> : tensor<32xf32> -> tensor<32x100xf32>
  %e = harp.map_reduce ins(%x, %mb : tensor<32x100xf32>, tensor<32x100xf32>) {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    harp.yield %ex : f32
  } : tensor<32x100xf32>
  %s = harp.map_reduce ins(%e : tensor<32x100xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : tensor<32xf32>
  %sb = harp.view %s <(d0, d1) -> (d0)> : tensor<32xf32> -> tensor<32x100xf32>
  %y = harp.map_reduce ins(%e, %sb : tensor<32x100xf32>, tensor<32x100xf32>) {
  ^bb0(%a: f32, %b: f32):
    %q = arith.divf %a, %b : f32
    harp.yield %q : f32
  } : tensor<32x100xf32>
  return %y : tensor<32x100xf32>
}

// -----

// Layer norm over rows: the sum (read twice, so its own kernel), then one
// loop over rows with the row's sum of squared deviations and the
// normalisation: 2 kernels.
// CHECK-LABEL: func.func @layer_norm
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-NEXT: ^bb0
// CHECK: scf.for
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NOT: linalg.generic
// CHECK: return
// UNFUSED-LABEL: func.func @layer_norm
// UNFUSED-COUNT-6: linalg.generic
func.func @layer_norm(%x: tensor<8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %sum = harp.map_reduce ins(%x : tensor<8x32xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : tensor<8xf32>
  %mean = harp.map_reduce ins(%sum : tensor<8xf32>) {
  ^bb0(%a: f32):
    %n = arith.constant 3.125e-02 : f32
    %m = arith.mulf %a, %n : f32
    harp.yield %m : f32
  } : tensor<8xf32>
  %mb = harp.view %mean <(d0, d1) -> (d0)> : tensor<8xf32> -> tensor<8x32xf32>
  %xc = harp.map_reduce ins(%x, %mb : tensor<8x32xf32>, tensor<8x32xf32>) {
  ^bb0(%a: f32, %m: f32):
    %d = arith.subf %a, %m : f32
    harp.yield %d : f32
  } : tensor<8x32xf32>
  %ss = harp.map_reduce ins(%xc : tensor<8x32xf32>) {
  ^bb0(%a: f32):
    %sq = arith.mulf %a, %a : f32
    harp.yield %sq : f32
  } reduce(sum, dims = [1]) : tensor<8xf32>
  %rstd = harp.map_reduce ins(%ss : tensor<8xf32>) {
  ^bb0(%a: f32):
    %n = arith.constant 3.125e-02 : f32
    %eps = arith.constant 1.0e-05 : f32
    %v = arith.mulf %a, %n : f32
    %ve = arith.addf %v, %eps : f32
    %r = math.rsqrt %ve : f32
    harp.yield %r : f32
  } : tensor<8xf32>
  %rb = harp.view %rstd <(d0, d1) -> (d0)> : tensor<8xf32> -> tensor<8x32xf32>
  %gb = harp.view %g <(d0, d1) -> (d1)> : tensor<32xf32> -> tensor<8x32xf32>
  %bb = harp.view %b <(d0, d1) -> (d1)> : tensor<32xf32> -> tensor<8x32xf32>
  %y = harp.map_reduce ins(%xc, %rb, %gb, %bb : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  ^bb0(%a: f32, %r: f32, %gg: f32, %bv: f32):
    %n = arith.mulf %a, %r : f32
    %s = arith.mulf %n, %gg : f32
    %o = arith.addf %s, %bv : f32
    harp.yield %o : f32
  } : tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// conv2d as pad view + unfold view + map_reduce: one kernel over a
// zero-padded copy of the input (the mask is exactly the padding, so the
// window is a plain indexing map that tiles and vectorizes); no im2col
// tensor.
// CHECK-LABEL: func.func @conv2d
// CHECK: tensor.pad {{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK-NOT: tensor.insert_slice
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: tensor.extract
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @conv2d(%x: tensor<1x8x14x14xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<1x16x14x14xf32> {
  %xp = harp.view %x <(n, c, h, w) -> (n, c, h - 1, w - 1),
      mask_ge = (n, c, h, w) -> (h - 1, -h + 14, w - 1, -w + 14)>
      : tensor<1x8x14x14xf32> -> tensor<1x8x16x16xf32>
  %u = harp.view %xp <(n, c, oh, ow, kh, kw) -> (n, c, oh + kh, ow + kw)>
      : tensor<1x8x16x16xf32> -> tensor<1x8x14x14x3x3xf32>
  %xb = harp.view %u <(n, f, oh, ow, c, kh, kw) -> (n, c, oh, ow, kh, kw)>
      : tensor<1x8x14x14x3x3xf32> -> tensor<1x16x14x14x8x3x3xf32>
  %wb = harp.view %w <(n, f, oh, ow, c, kh, kw) -> (f, c, kh, kw)>
      : tensor<16x8x3x3xf32> -> tensor<1x16x14x14x8x3x3xf32>
  %y = harp.map_reduce ins(%xb, %wb : tensor<1x16x14x14x8x3x3xf32>, tensor<1x16x14x14x8x3x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    harp.yield %m : f32
  } reduce(sum, dims = [4, 5, 6]) : tensor<1x16x14x14xf32>
  return %y : tensor<1x16x14x14xf32>
}

// -----

// relu(x @ W + b): one loop over rows (32 wide, above harp-fuse-epilogues'
// min-row); each computes its row of x @ W and applies bias and relu to it
// at once.
// CHECK-LABEL: func.func @relu_linear
// CHECK-NOT: linalg.generic
// CHECK: scf.for
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.mulf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK: arith.maximumf
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NOT: linalg.generic
// CHECK: return
// UNFUSED-LABEL: func.func @relu_linear
// UNFUSED-COUNT-2: linalg.generic
func.func @relu_linear(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %xb = harp.view %x <(i, j, k) -> (i, k)> : tensor<8x16xf32> -> tensor<8x32x16xf32>
  %wb = harp.view %w <(i, j, k) -> (k, j)> : tensor<16x32xf32> -> tensor<8x32x16xf32>
  %mm = harp.map_reduce ins(%xb, %wb : tensor<8x32x16xf32>, tensor<8x32x16xf32>) {
  ^bb0(%a: f32, %c: f32):
    %p = arith.mulf %a, %c : f32
    harp.yield %p : f32
  } reduce(sum, dims = [2]) : tensor<8x32xf32>
  %bb = harp.view %b <(i, j) -> (j)> : tensor<32xf32> -> tensor<8x32xf32>
  %y = harp.map_reduce ins(%mm, %bb : tensor<8x32xf32>, tensor<8x32xf32>) {
  ^bb0(%a: f32, %c: f32):
    %s = arith.addf %a, %c : f32
    %z = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %z : f32
    harp.yield %r : f32
  } : tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
