// The steps of the harp-vectorize pipeline one at a time (vectorize.mlir
// checks them composed).
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-pack-contractions))' | FileCheck %s --check-prefix=PACK
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-pack-contractions{fma-per-cycle=1}))' | FileCheck %s --check-prefix=PACK1
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-rewrite-windows))' | FileCheck %s --check-prefix=WIN
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-rewrite-windows{deinterleave=false flatten=false}))' | FileCheck %s --check-prefix=NOWIN
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-rewrite-windows{slice-images=false}))' | FileCheck %s --check-prefix=NOSLICE
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-rewrite-windows{planes=false}))' | FileCheck %s --check-prefix=NOPLANES
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-rewrite-windows{fma-per-cycle=8}))' | FileCheck %s --check-prefix=FMA8
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-tile-and-vectorize),canonicalize)' | FileCheck %s --check-prefix=TILE
// RUN: harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-tile-and-vectorize,harp-vector-cleanup),canonicalize)' | FileCheck %s --check-prefix=CLEAN
// RUN: not harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-pack-contractions{vector-bits=0}))' 2>&1 | FileCheck %s --check-prefix=BITS-PACK
// RUN: not harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-rewrite-windows{vector-bits=7}))' 2>&1 | FileCheck %s --check-prefix=BITS-WIN
// RUN: not harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-tile-and-vectorize{vector-bits=1}))' 2>&1 | FileCheck %s --check-prefix=BITS-TILE

// BITS-PACK: error: harp-pack-contractions: vector-bits must be at least 8, got 0
// BITS-WIN: error: harp-rewrite-windows: vector-bits must be at least 8, got 7
// BITS-TILE: error: harp-tile-and-vectorize: vector-bits must be at least 8, got 1

// A matmul wider (1024) than an n block (512 with the default caches) gets
// its right operand packed into 32 panels of 512 x 32; the windows pass
// leaves it alone; tiling alone leaves the accumulator in the tensor,
// which the cleanup carries in registers through the k loop.
// PACK-LABEL: func.func @matmul
// PACK: %[[BP:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<512x1024xf32>) outs(%{{.*}} : tensor<32x512x32xf32>)
// PACK: %[[C:.*]] = tensor.expand_shape %arg2 {{.*}} into tensor<16x32x32xf32>
// PACK: linalg.generic {{.*}} ins(%arg0, %[[BP]] : tensor<16x512xf32>, tensor<32x512x32xf32>) outs(%[[C]] : tensor<16x32x32xf32>)
// PACK: tensor.collapse_shape
// WIN-LABEL: func.func @matmul
// WIN-NOT: tensor.pad
// WIN: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<16x512xf32>, tensor<512x1024xf32>)
// TILE-LABEL: func.func @matmul
// TILE: scf.for {{.*}} step %c1 iter_args(%{{.*}} = %{{.*}}) -> (tensor<
// TILE-NOT: -> (vector<
// TILE: return
// CLEAN-LABEL: func.func @matmul
// CLEAN: scf.for {{.*}} step %c1 iter_args({{.*}}) -> ({{.*}}vector<8x32xf32>)
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @matmul(%x: tensor<16x512xf32>, %y: tensor<512x1024xf32>, %z: tensor<16x1024xf32>) -> tensor<16x1024xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<16x512xf32>, tensor<512x1024xf32>) outs(%z : tensor<16x1024xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x1024xf32>
  return %r : tensor<16x1024xf32>
}

// -----

// A matmul wider than an n block whose n (1025) is no multiple of the
// register tile's 32 columns is split along n: the first 1024 columns are
// packed as above; the last one, 1025 elements apart in B, is copied into a
// row (1 x 512, read (n, k)), contiguous along k.
// PACK-LABEL: func.func @matmul_wide_tail
// PACK: %[[HEAD:.*]] = tensor.extract_slice %arg1[0, 0] [512, 1024] [1, 1]
// PACK: %[[BP:.*]] = linalg.generic {{.*}} ins(%[[HEAD]] : tensor<512x1024xf32>) outs(%{{.*}} : tensor<32x512x32xf32>)
// PACK: linalg.generic {{.*}} ins(%{{.*}}, %[[BP]] : tensor<16x512xf32>, tensor<32x512x32xf32>) outs(%{{.*}} : tensor<16x32x32xf32>)
// PACK: %[[COL:.*]] = tensor.extract_slice %arg1[0, 1024] [512, 1] [1, 1]
// PACK: %[[ROW:.*]] = linalg.generic {{.*}} ins(%[[COL]] : tensor<512x1xf32>) outs(%{{.*}} : tensor<1x512xf32>)
// PACK: linalg.generic {{.*}} ins(%{{.*}}, %[[ROW]] : tensor<16x512xf32>, tensor<1x512xf32>) outs(%{{.*}} : tensor<16x1xf32>)
// A single column contiguous along k (a matrix-vector product, such a
// last column) is tiled as a row of dot products: its unit dim dropped,
// each row reduces vectors of 64 along k, read contiguously from the left
// operand's row and the column (a register tile of rows x 1 read the left
// operand down its rows, one scalar per lane).
// CLEAN-LABEL: func.func @matvec
// CLEAN: scf.for {{.*}} to %c512 step %c64 iter_args({{.*}}) -> ({{.*}}vector<64xf32>)
// CLEAN: vector.transfer_read %arg0[%{{.*}}, %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<16x512xf32>, vector<64xf32>
// CLEAN: vector.transfer_read %{{.*}}[%{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<512xf32>, vector<64xf32>
// CLEAN: vector.multi_reduction <add>
// With k no longer than the row tile (16 f64), each row is one reduction
// into a single element of the result: read and written as scalars
// (tensor.extract / tensor.insert; a 0-d transfer into a strided column
// had no lowering to LLVM).
// CLEAN-LABEL: func.func @matvec_short
// CLEAN: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<5xf64>)
// CLEAN: %[[E:.*]] = tensor.extract %[[ACC]][%{{.*}}] : tensor<5xf64>
// CLEAN: %[[R:.*]] = vector.multi_reduction <add>, %{{.*}}, %[[E]] [0] : vector<16xf64> to f64
// CLEAN: tensor.insert %[[R]] into %[[ACC]][%{{.*}}] : tensor<5xf64>
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @matmul_wide_tail(%x: tensor<16x512xf32>, %y: tensor<512x1025xf32>, %z: tensor<16x1025xf32>) -> tensor<16x1025xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<16x512xf32>, tensor<512x1025xf32>) outs(%z : tensor<16x1025xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x1025xf32>
  return %r : tensor<16x1025xf32>
}
func.func @matvec(%x: tensor<16x512xf32>, %y: tensor<512x1xf32>, %z: tensor<16x1xf32>) -> tensor<16x1xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<16x512xf32>, tensor<512x1xf32>) outs(%z : tensor<16x1xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x1xf32>
  return %r : tensor<16x1xf32>
}
func.func @matvec_short(%x: tensor<5x16xf64>, %y: tensor<16x1xf64>, %z: tensor<5x1xf64>) -> tensor<5x1xf64> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<5x16xf64>, tensor<16x1xf64>) outs(%z : tensor<5x1xf64>) {
  ^bb0(%p: f64, %q: f64, %acc: f64):
    %m = arith.mulf %p, %q : f64
    %s = arith.addf %acc, %m : f64
    linalg.yield %s : f64
  } -> tensor<5x1xf64>
  return %r : tensor<5x1xf64>
}

// -----

// Rows of B that are no multiple of a vector long (500 floats, 2000 bytes:
// three rows in four start inside a 64-byte line) are packed although B is
// narrower than an n block, where the k loop keeps the load ports busy:
// with 2 FMAs per cycle (the default) an 8 x 2-vector tile issues 10 loads
// per 8 cycles. The whole panels (480 columns) are packed from a slice of
// B; the last 20 columns are read in place. With one FMA per cycle (10
// loads per 16 cycles), or fewer than 8 row tiles (63 rows), or rows of
// whole vectors (496 floats), B is read in place.
// PACK-LABEL: func.func @matmul_misaligned
// PACK: %[[HEAD:.*]] = tensor.extract_slice %arg1[0, 0] [256, 480] [1, 1]
// PACK: %[[BP:.*]] = linalg.generic {{.*}} ins(%[[HEAD]] : tensor<256x480xf32>) outs(%{{.*}} : tensor<15x256x32xf32>)
// PACK: linalg.generic {{.*}} ins(%{{.*}}, %[[BP]] : tensor<64x256xf32>, tensor<15x256x32xf32>) outs(%{{.*}} : tensor<64x15x32xf32>)
// PACK: %[[TAIL:.*]] = tensor.extract_slice %arg1[0, 480] [256, 20] [1, 1]
// PACK: linalg.generic {{.*}} ins(%{{.*}}, %[[TAIL]] : tensor<64x256xf32>, tensor<256x20xf32>) outs(%{{.*}} : tensor<64x20xf32>)
// PACK-LABEL: func.func @matmul_misaligned_few_rows
// PACK-NOT: tensor.extract_slice
// PACK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<63x256xf32>, tensor<256x500xf32>)
// PACK-LABEL: func.func @matmul_aligned_rows
// PACK-NOT: tensor.extract_slice
// PACK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<64x256xf32>, tensor<256x496xf32>)
// PACK1-LABEL: func.func @matmul_misaligned
// PACK1-NOT: tensor.extract_slice
// PACK1: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<64x256xf32>, tensor<256x500xf32>)
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @matmul_misaligned(%x: tensor<64x256xf32>, %y: tensor<256x500xf32>, %z: tensor<64x500xf32>) -> tensor<64x500xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<64x256xf32>, tensor<256x500xf32>) outs(%z : tensor<64x500xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x500xf32>
  return %r : tensor<64x500xf32>
}
func.func @matmul_misaligned_few_rows(%x: tensor<63x256xf32>, %y: tensor<256x500xf32>, %z: tensor<63x500xf32>) -> tensor<63x500xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<63x256xf32>, tensor<256x500xf32>) outs(%z : tensor<63x500xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<63x500xf32>
  return %r : tensor<63x500xf32>
}
func.func @matmul_aligned_rows(%x: tensor<64x256xf32>, %y: tensor<256x496xf32>, %z: tensor<64x496xf32>) -> tensor<64x496xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<64x256xf32>, tensor<256x496xf32>) outs(%z : tensor<64x496xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x496xf32>
  return %r : tensor<64x496xf32>
}

// -----

// One row of the left operand: B is read once, in place, whether wider
// than an n block (1024 columns) or transposed (W^T, contiguous along k).
// PACK-LABEL: func.func @single_row_wide
// PACK-NOT: tensor<32x512x32xf32>
// PACK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<1x512xf32>, tensor<512x1024xf32>)
// PACK-LABEL: func.func @single_row_transposed
// PACK-NOT: tensor<32x512x32xf32>
// PACK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<1x512xf32>, tensor<1024x512xf32>)
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#bt = affine_map<(m, n, k) -> (n, k)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @single_row_wide(%x: tensor<1x512xf32>, %y: tensor<512x1024xf32>, %z: tensor<1x1024xf32>) -> tensor<1x1024xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<1x512xf32>, tensor<512x1024xf32>) outs(%z : tensor<1x1024xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1024xf32>
  return %r : tensor<1x1024xf32>
}
func.func @single_row_transposed(%x: tensor<1x512xf32>, %w: tensor<1024x512xf32>, %z: tensor<1x1024xf32>) -> tensor<1x1024xf32> {
  %r = linalg.generic {indexing_maps = [#a, #bt, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<1x512xf32>, tensor<1024x512xf32>) outs(%z : tensor<1x1024xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1024xf32>
  return %r : tensor<1x1024xf32>
}

// -----

// A plain sum over a 3-tap stride-2 window (an average pool): padding the
// window to 2 x 2 taps would add the image's next column, so it stays as
// it is. A max likewise; a 2-tap window has whole phases and is
// de-interleaved (no padded tap is read).
// WIN-LABEL: func.func @strided_pool
// WIN-NOT: tensor.expand_shape
// WIN: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<9xf32>, tensor<3xi8>)
// WIN-NEXT: ^bb0
// WIN-NEXT: arith.addf
// WIN-NOT: tensor.expand_shape
// WIN: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<9xf32>, tensor<3xi8>)
// WIN-NEXT: ^bb0
// WIN-NEXT: arith.maximumf
// WIN: tensor.expand_shape {{.*}} into tensor<5x2xf32>
// WIN: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "reduction"]
// WIN: return
#pw = affine_map<(o, k) -> (o * 2 + k)>
#pk = affine_map<(o, k) -> (k)>
#po = affine_map<(o, k) -> (o)>
func.func @strided_pool(%x: tensor<9xf32>, %range: tensor<3xi8>, %range2: tensor<2xi8>, %init: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %sum = linalg.generic {indexing_maps = [#pw, #pk, #po], iterator_types = ["parallel", "reduction"]}
      ins(%x, %range : tensor<9xf32>, tensor<3xi8>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %i: i8, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#pw, #pk, #po], iterator_types = ["parallel", "reduction"]}
      ins(%x, %range : tensor<9xf32>, tensor<3xi8>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %i: i8, %acc: f32):
    %s = arith.maximumf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %even = linalg.generic {indexing_maps = [#pw, #pk, #po], iterator_types = ["parallel", "reduction"]}
      ins(%x, %range2 : tensor<9xf32>, tensor<2xi8>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %i: i8, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %sum, %max, %even : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A de-interleaved window kernel keeps a 0-d operand as it was (a max pool
// fused with a scalar shift; the rewrite used to index the 0-d map's last
// result and abort).
// WIN-LABEL: func.func @strided_scalar
// WIN: tensor.expand_shape {{.*}} into tensor<5x2xf32>
// WIN: linalg.generic {indexing_maps = [#{{.*}}, #[[SCALAR:.*]], #{{.*}}, #{{.*}}]
// WIN-SAME: ins(%{{.*}}, %arg1, %{{.*}} : tensor<2x5xf32>, tensor<f32>, tensor<1x2xi8>)
#sw2 = affine_map<(o, k) -> (o * 2 + k)>
#ss2 = affine_map<(o, k) -> ()>
#sk2 = affine_map<(o, k) -> (k)>
#so2 = affine_map<(o, k) -> (o)>
func.func @strided_scalar(%x: tensor<9xf32>, %c: tensor<f32>, %range: tensor<2xi8>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [#sw2, #ss2, #sk2, #so2], iterator_types = ["parallel", "reduction"]}
      ins(%x, %c, %range : tensor<9xf32>, tensor<f32>, tensor<2xi8>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %i: i8, %acc: f32):
    %s = arith.addf %a, %b : f32
    %m = arith.maximumf %acc, %s : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A stride-2 window: de-interleaved by harp-rewrite-windows (the image
// sorted by phase, the 3-tap filter padded to 2 x 2 taps, one more
// reduction dim); untouched without the rewrites and by packing.
// WIN-LABEL: func.func @strided
// WIN: tensor.pad %arg0 low[0, 0, 0, 0] high[0, 0, 0, 1]
// WIN: tensor.expand_shape {{.*}} into tensor<1x2x9x5x2xf32>
// WIN: %[[XD:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x9x2x5xf32>)
// WIN: %[[F:.*]] = tensor.expand_shape {{.*}} into tensor<4x2x3x2x2xf32>
// WIN: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%[[XD]], %[[F]] : tensor<1x2x9x2x5xf32>, tensor<4x2x3x2x2xf32>)
// NOWIN-LABEL: func.func @strided
// NOWIN-NOT: tensor.pad
// PACK-LABEL: func.func @strided
// PACK-NOT: tensor.pad
#sx = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, ic, oh * 2 + kh, ow * 2 + kw)>
#sw = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (oc, ic, kh, kw)>
#so = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, oc, oh, ow)>
func.func @strided(%x: tensor<1x2x9x9xf32>, %f: tensor<4x2x3x3xf32>, %init: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %r = linalg.generic {indexing_maps = [#sx, #sw, #so], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %f : tensor<1x2x9x9xf32>, tensor<4x2x3x3xf32>) outs(%init : tensor<1x4x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x4x4xf32>
  return %r : tensor<1x4x4x4xf32>
}

// -----

// A kernel gathering from a strided slice (a window kernel's result cut from
// its wider grid) reads a contiguous copy: the gather's lowering linearizes
// indices over the value's own shape. A slice of whole rows is contiguous
// and read in place.
// TILE-LABEL: func.func @gather_from_strided_slice
// TILE: %[[S:.*]] = tensor.extract_slice %arg0[0, 0] [4, 6] [1, 1] : tensor<4x8xf32> to tensor<4x6xf32>
// TILE: %[[ROWS:.*]] = tensor.extract_slice %arg0[1, 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32>
// TILE: %[[C:.*]] = linalg.copy ins(%[[S]] : tensor<4x6xf32>)
// TILE: vector.gather %[[C]]
// TILE: vector.gather %[[ROWS]]
func.func @gather_from_strided_slice(%grid: tensor<4x8xf32>, %idx: tensor<16xi64>) -> tensor<16xf32> {
  %s = tensor.extract_slice %grid[0, 0] [4, 6] [1, 1] : tensor<4x8xf32> to tensor<4x6xf32>
  %whole = tensor.extract_slice %grid[1, 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32>
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%idx : tensor<16xi64>) outs(%e : tensor<16xf32>) {
  ^bb0(%i: i64, %o: f32):
    %k = arith.index_cast %i : i64 to index
    %c6 = arith.constant 6 : index
    %c8 = arith.constant 8 : index
    %row = arith.divui %k, %c6 : index
    %col = arith.remui %k, %c6 : index
    %a = tensor.extract %s[%row, %col] : tensor<4x6xf32>
    %row2 = arith.remui %row, %c6 : index
    %c1 = arith.constant 1 : index
    %r2 = arith.andi %row, %c1 : index
    %col2 = arith.remui %k, %c8 : index
    %b = tensor.extract %whole[%r2, %col2] : tensor<2x8xf32>
    %sum = arith.addf %a, %b : f32
    linalg.yield %sum : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}


// -----

// A right operand read transposed (nn.Linear's x @ W^T, a gradient's
// G @ W^T, attention's q @ k^T) is never read in place, whatever the
// caches: its lanes would be scalar loads K elements apart.
// * n = 1000, not a multiple of the register tile's 32 columns: split
//   along n; the first 992 columns (31 panels) packed from W[0:992] seen as
//   31 x 32 x 512, the last 8 rows of W copied into 512 x 8 (a
//   permutation) and that product reads them (k, n);
// * n = 64, a multiple of 32 but narrower than an n block: packed into
//   panels all the same, from W seen as 2 x 32 x 512 (a permutation);
// * batched (4 x (16 x 64 @ (48 x 64)^T)): copied into 4 x 64 x 48;
// * n = 1 (a matrix-vector product), contiguous along k: untouched;
// * the same narrow product read (k, n): untouched.
// (linalg's verifier checks each map against its operand's shape: the
// products reading the copies read them as (k, n).)
// PACK-LABEL: func.func @transposed_right
// PACK: %[[HEAD:.*]] = tensor.extract_slice %arg1[0, 0] [992, 512] [1, 1]
// PACK: %[[WH:.*]] = tensor.expand_shape %[[HEAD]] {{\[}}[0, 1], [2]] output_shape [31, 32, 512]
// PACK: %[[PH:.*]] = linalg.generic {{.*}} ins(%[[WH]] : tensor<31x32x512xf32>) outs(%{{.*}} : tensor<31x512x32xf32>)
// PACK: linalg.generic {{.*}} ins(%{{.*}}, %[[PH]] : tensor<16x512xf32>, tensor<31x512x32xf32>) outs(%{{.*}} : tensor<16x31x32xf32>)
// PACK: %[[CH:.*]] = tensor.collapse_shape
// PACK: %[[C0:.*]] = tensor.insert_slice %[[CH]] into %{{.*}}[0, 0] [16, 992] [1, 1]
// PACK: %[[TAIL:.*]] = tensor.extract_slice %arg1[992, 0] [8, 512] [1, 1]
// PACK: %[[WT:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[TAIL]] : tensor<8x512xf32>) outs(%{{.*}} : tensor<512x8xf32>)
// PACK: %[[RT:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[WT]] : tensor<16x512xf32>, tensor<512x8xf32>) outs(%{{.*}} : tensor<16x8xf32>)
// PACK: tensor.insert_slice %[[RT]] into %[[C0]][0, 992] [16, 8] [1, 1]
// PACK: %[[W3:.*]] = tensor.expand_shape %arg2 {{\[}}[0, 1], [2]] output_shape [2, 32, 512] : tensor<64x512xf32> into tensor<2x32x512xf32>
// PACK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[W3]] : tensor<2x32x512xf32>) outs(%{{.*}} : tensor<2x512x32xf32>)
// PACK: linalg.generic {{.*}} ins(%arg0, %[[P]] : tensor<16x512xf32>, tensor<2x512x32xf32>)
// PACK: %[[BT:.*]] = linalg.generic {{.*}} ins(%arg4 : tensor<4x48x64xf32>) outs(%{{.*}} : tensor<4x64x48xf32>)
// PACK: linalg.generic {{.*}} ins(%arg3, %[[BT]] : tensor<4x16x64xf32>, tensor<4x64x48xf32>)
// PACK: linalg.generic {{.*}} ins(%arg0, %arg5 : tensor<16x512xf32>, tensor<1x512xf32>)
// PACK: linalg.generic {{.*}} ins(%arg0, %arg6 : tensor<16x512xf32>, tensor<512x64xf32>)
#ta = affine_map<(m, n, k) -> (m, k)>
#tb = affine_map<(m, n, k) -> (n, k)>
#tk = affine_map<(m, n, k) -> (k, n)>
#tc = affine_map<(m, n, k) -> (m, n)>
#ba = affine_map<(b, m, n, k) -> (b, m, k)>
#bb = affine_map<(b, m, n, k) -> (b, n, k)>
#bc = affine_map<(b, m, n, k) -> (b, m, n)>
func.func @transposed_right(%x: tensor<16x512xf32>, %w: tensor<1000x512xf32>, %w64: tensor<64x512xf32>,
                            %q: tensor<4x16x64xf32>, %kk: tensor<4x48x64xf32>, %v: tensor<1x512xf32>,
                            %wk: tensor<512x64xf32>)
    -> (tensor<16x1000xf32>, tensor<16x64xf32>, tensor<4x16x48xf32>, tensor<16x1xf32>, tensor<16x64xf32>) {
  %c0 = tensor.empty() : tensor<16x1000xf32>
  %r0 = linalg.generic {indexing_maps = [#ta, #tb, #tc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<16x512xf32>, tensor<1000x512xf32>) outs(%c0 : tensor<16x1000xf32>) {
  ^bb0(%p: f32, %q0: f32, %acc: f32):
    %m = arith.mulf %p, %q0 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x1000xf32>
  %c1 = tensor.empty() : tensor<16x64xf32>
  %r1 = linalg.generic {indexing_maps = [#ta, #tb, #tc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w64 : tensor<16x512xf32>, tensor<64x512xf32>) outs(%c1 : tensor<16x64xf32>) {
  ^bb0(%p: f32, %q0: f32, %acc: f32):
    %m = arith.mulf %p, %q0 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x64xf32>
  %c2 = tensor.empty() : tensor<4x16x48xf32>
  %r2 = linalg.generic {indexing_maps = [#ba, #bb, #bc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kk : tensor<4x16x64xf32>, tensor<4x48x64xf32>) outs(%c2 : tensor<4x16x48xf32>) {
  ^bb0(%p: f32, %q0: f32, %acc: f32):
    %m = arith.mulf %p, %q0 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x16x48xf32>
  %c3 = tensor.empty() : tensor<16x1xf32>
  %r3 = linalg.generic {indexing_maps = [#ta, #tb, #tc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %v : tensor<16x512xf32>, tensor<1x512xf32>) outs(%c3 : tensor<16x1xf32>) {
  ^bb0(%p: f32, %q0: f32, %acc: f32):
    %m = arith.mulf %p, %q0 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x1xf32>
  %r4 = linalg.generic {indexing_maps = [#ta, #tk, #tc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wk : tensor<16x512xf32>, tensor<512x64xf32>) outs(%c1 : tensor<16x64xf32>) {
  ^bb0(%p: f32, %q0: f32, %acc: f32):
    %m = arith.mulf %p, %q0 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x64xf32>
  return %r0, %r1, %r2, %r3, %r4 : tensor<16x1000xf32>, tensor<16x64xf32>, tensor<4x16x48xf32>, tensor<16x1xf32>, tensor<16x64xf32>
}

// -----

// Transposed right operands whose n and k are not its last two dims:
// * attention's q @ k^T with the heads split from one dim: the keys are
//   [L, B, H, D] read (n, b, h, k), contiguous along k; copied to
//   [B, H, D, L] (n moved innermost, the rest in order) and read
//   (b, h, k, n);
// * a weight gradient summed over two dims (batch b and rows l: k is two
//   dims), the gradient read (b, n, l), contiguous along l: copied to
//   [B, L, N]; its left operand, x read (b, l, e), is contiguous along m
//   (e) with consecutive rows l 128 bytes apart: copied to [E, B, L], k
//   innermost;
// * attention's p @ v, the values read (k, b, h, n): already contiguous
//   along n, untouched.
// PACK-DAG: #[[QK:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
// PACK-LABEL: func.func @transposed_right_dims
// PACK: %[[KT:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<64x2x4x16xf32>) outs(%{{.*}} : tensor<2x4x16x64xf32>)
// PACK: linalg.generic {indexing_maps = [#{{.*}}, #[[QK]], #{{.*}}], {{.*}} ins(%arg0, %[[KT]] : tensor<64x2x4x16xf32>, tensor<2x4x16x64xf32>)
// PACK: %[[XT:.*]] = linalg.generic {{.*}} ins(%arg2 : tensor<2x64x32xf32>) outs(%{{.*}} : tensor<32x2x64xf32>)
// PACK: %[[GT:.*]] = linalg.generic {{.*}} ins(%arg3 : tensor<2x48x64xf32>) outs(%{{.*}} : tensor<2x64x48xf32>)
// PACK: linalg.generic {{.*}} ins(%[[XT]], %[[GT]] : tensor<32x2x64xf32>, tensor<2x64x48xf32>)
// PACK: linalg.generic {{.*}} ins(%{{.*}}, %arg1 : tensor<2x4x64x64xf32>, tensor<64x2x4x16xf32>)
#qa = affine_map<(b, h, i, j, d) -> (i, b, h, d)>
#qb = affine_map<(b, h, i, j, d) -> (j, b, h, d)>
#qc = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#wa = affine_map<(e, n, l, b) -> (b, l, e)>
#wb = affine_map<(e, n, l, b) -> (b, n, l)>
#wc = affine_map<(e, n, l, b) -> (e, n)>
#pa = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#pb = affine_map<(b, h, i, d, j) -> (j, b, h, d)>
#pc = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
func.func @transposed_right_dims(%q: tensor<64x2x4x16xf32>, %k: tensor<64x2x4x16xf32>,
                                 %x: tensor<2x64x32xf32>, %g: tensor<2x48x64xf32>,
                                 %p: tensor<2x4x64x64xf32>)
    -> (tensor<2x4x64x64xf32>, tensor<32x48xf32>, tensor<2x4x64x16xf32>) {
  %c0 = tensor.empty() : tensor<2x4x64x64xf32>
  %r0 = linalg.generic {indexing_maps = [#qa, #qb, #qc], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<64x2x4x16xf32>, tensor<64x2x4x16xf32>) outs(%c0 : tensor<2x4x64x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x4x64x64xf32>
  %c1 = tensor.empty() : tensor<32x48xf32>
  %r1 = linalg.generic {indexing_maps = [#wa, #wb, #wc], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %g : tensor<2x64x32xf32>, tensor<2x48x64xf32>) outs(%c1 : tensor<32x48xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<32x48xf32>
  %c2 = tensor.empty() : tensor<2x4x64x16xf32>
  %r2 = linalg.generic {indexing_maps = [#pa, #pb, #pc], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %k : tensor<2x4x64x64xf32>, tensor<64x2x4x16xf32>) outs(%c2 : tensor<2x4x64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x4x64x16xf32>
  return %r0, %r1, %r2 : tensor<2x4x64x64xf32>, tensor<32x48xf32>, tensor<2x4x64x16xf32>
}

// -----

// A depthwise window over a padded image (batch 2, 3 channels, each reading
// only its own channel) is flattened one image at a time: loops over the
// batch and the channels (marked parallel) pad a 1 x 1 slice of the image
// each, the filter and the result are sliced alike, and no padded copy of
// the whole image is left. A dim the image does not read (a convolution's
// output channels) would not be sliced. The padded rows are flattened 8
// wide, not 9: each row is padded on the right only, that column serving
// as the next row's left padding, and one zero heads the whole, the last
// of one more padded row on top (a slice from element 7 of the 10 x 8
// flat image; element (r, c) of the 9 x 9 padded image is element 8 r + c
// of the slice); the grid is 8 wide, 6 x 8 + 7 = 55 outputs instead of
// 6 x 9 + 7 = 61. With slice-images=false the whole
// image is padded and flattened at once.
// WIN-LABEL: func.func @depthwise_images
// WIN-NOT: tensor<2x3x9x9xf32>
// WIN: scf.for %[[N:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[YN:.*]] = %{{.*}}) -> (tensor<2x3x7x7xf32>)
// WIN: scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[YC:.*]] = %[[YN]]) -> (tensor<2x3x7x7xf32>)
// WIN: %[[X:.*]] = tensor.extract_slice %arg0[%[[N]], %[[C]], 0, 0] [1, 1, 7, 7]
// WIN-NOT: tensor.pad %[[X]] low[0, 0, 1, 1]
// WIN: tensor.extract_slice %arg1[%[[C]], 0, 0] [1, 3, 3]
// WIN: %[[P:.*]] = tensor.pad %[[X]] low[0, 0, 2, 0] high[0, 0, 1, 1]
// WIN: } : tensor<1x1x7x7xf32> to tensor<1x1x10x8xf32>
// WIN: %[[F:.*]] = tensor.collapse_shape %[[P]] {{.*}} into tensor<1x1x80xf32>
// WIN: %[[B:.*]] = tensor.extract_slice %[[F]][0, 0, 7] [1, 1, 73] [1, 1, 1]
// WIN: linalg.fill {{.*}} -> tensor<1x1x7x8xf32>
// WIN: linalg.generic {{.*}} ins(%[[B]], %{{.*}} : tensor<1x1x73xf32>, tensor<1x3x3xf32>)
// WIN: } -> tensor<1x1x55xf32>
// WIN: tensor.insert_slice %{{.*}} into %[[YC]][%[[N]], %[[C]], 0, 0] [1, 1, 7, 7]
// WIN: } {harp.parallel}
// WIN: } {harp.parallel}
// NOWIN-LABEL: func.func @depthwise_images
// NOWIN-NOT: scf.for
// NOWIN: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// NOSLICE-LABEL: func.func @depthwise_images
// NOSLICE-NOT: scf.for
// NOSLICE: tensor.pad %arg0 low[0, 0, 2, 0] high[0, 0, 1, 1]
// NOSLICE: linalg.generic
// NOSLICE: } -> tensor<2x3x55xf32>
#dx = affine_map<(n, c, oh, ow, kh, kw) -> (n, c, oh + kh, ow + kw)>
#dw = affine_map<(n, c, oh, ow, kh, kw) -> (c, kh, kw)>
#dy = affine_map<(n, c, oh, ow, kh, kw) -> (n, c, oh, ow)>
func.func @depthwise_images(%x: tensor<2x3x7x7xf32>, %w: tensor<3x3x3xf32>) -> tensor<2x3x7x7xf32> {
  %zero = arith.constant 0.0 : f32
  %xp = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x3x7x7xf32> to tensor<2x3x9x9xf32>
  %e = tensor.empty() : tensor<2x3x7x7xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x7x7xf32>) -> tensor<2x3x7x7xf32>
  %r = linalg.generic {indexing_maps = [#dx, #dw, #dy], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%xp, %w : tensor<2x3x9x9xf32>, tensor<3x3x3xf32>) outs(%init : tensor<2x3x7x7xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x3x7x7xf32>
  return %r : tensor<2x3x7x7xf32>
}

// -----

// One image (batch 1) of a convolution: its output channels are a dim the
// image does not read, so nothing is sliced.
// WIN-LABEL: func.func @conv_one_image
// WIN-NOT: scf.for
// WIN: linalg.generic
// WIN: } -> tensor<1x4x61xf32>
#cx = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, c, oh + kh, ow + kw)>
#cw = affine_map<(n, f, oh, ow, c, kh, kw) -> (f, c, kh, kw)>
#cy = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, f, oh, ow)>
func.func @conv_one_image(%x: tensor<1x2x9x9xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x7x7xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x7x7xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x7x7xf32>) -> tensor<1x4x7x7xf32>
  %r = linalg.generic {indexing_maps = [#cx, #cw, #cy], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : tensor<1x2x9x9xf32>, tensor<4x2x3x3xf32>) outs(%init : tensor<1x4x7x7xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x7x7xf32>
  return %r : tensor<1x4x7x7xf32>
}

// -----

// Planes or a grid, priced in vector operations (16 lanes, 2 FMAs per
// cycle by default). 14 x 14 outputs of a 3x3 window padded by one: a grid
// of 15-wide rows computes 13 * 15 + 14 = 209 outputs (14 vectors), planes
// 196 (13): one vector less of the kernel's 16 x 16 x 9 = 2304 FMAs per
// output vector saves 1152 cycles, against 3 planes of 16 rows of one
// vector for 16 channels (768 vector stores) less the 224 the grid's copy
// to Y makes. So: 3 planes of columns j to j + 13 of the padded rows, read
// at (plane kw, p + kh * 14), Y the result reshaped. The padded image is
// not made: each plane copies the columns of X it reads into place (plane
// 0 columns 0 to 12 at column 1, plane 1 all, plane 2 columns 1 to 13 at
// column 0), and its padding rows and columns are filled.
// WIN-LABEL: func.func @window_planes
// WIN-NOT: tensor.pad
// WIN: %[[E:.*]] = tensor.empty() : tensor<1x16x3x16x14xf32>
// WIN: %[[X0:.*]] = tensor.extract_slice %arg0[0, 0, 0, 0] [1, 16, 14, 13]
// WIN: %[[P0:.*]] = tensor.insert_slice %[[X0]] into %[[E]][0, 0, 0, 1, 1] [1, 16, 1, 14, 13]
// WIN: linalg.fill {{.*}} -> tensor<1x16x1x1x14xf32>
// WIN: tensor.insert_slice %{{.*}}[0, 0, 0, 0, 0] [1, 16, 1, 1, 14]
// WIN: linalg.fill {{.*}} -> tensor<1x16x1x1x14xf32>
// WIN: tensor.insert_slice %{{.*}}[0, 0, 0, 15, 0] [1, 16, 1, 1, 14]
// WIN: linalg.fill {{.*}} -> tensor<1x16x1x14x1xf32>
// WIN: tensor.insert_slice %{{.*}}[0, 0, 0, 1, 0] [1, 16, 1, 14, 1]
// WIN: tensor.insert_slice %{{.*}}[0, 0, 1, 1, 0] [1, 16, 1, 14, 14]
// WIN: tensor.insert_slice %{{.*}}[0, 0, 1, 0, 0] [1, 16, 1, 1, 14]
// WIN: tensor.insert_slice %{{.*}}[0, 0, 1, 15, 0] [1, 16, 1, 1, 14]
// WIN: %[[X2:.*]] = tensor.extract_slice %arg0[0, 0, 0, 1] [1, 16, 14, 13]
// WIN: tensor.insert_slice %[[X2]] into %{{.*}}[0, 0, 2, 1, 0] [1, 16, 1, 14, 13]
// WIN: tensor.insert_slice %{{.*}}[0, 0, 2, 0, 0] [1, 16, 1, 1, 14]
// WIN: tensor.insert_slice %{{.*}}[0, 0, 2, 15, 0] [1, 16, 1, 1, 14]
// WIN: tensor.insert_slice %{{.*}}[0, 0, 2, 1, 13] [1, 16, 1, 14, 1]
// WIN: %[[X:.*]] = tensor.collapse_shape %{{.*}} : tensor<1x16x3x16x14xf32> into tensor<1x16x3x224xf32>
// WIN: %[[Y:.*]] = tensor.collapse_shape %arg2 {{.*}} : tensor<1x16x14x14xf32> into tensor<1x16x196xf32>
// WIN: linalg.generic {{.*}} ins(%[[X]], %arg1 : {{.*}}) outs(%[[Y]] : tensor<1x16x196xf32>)
// WIN: tensor.expand_shape %{{.*}} output_shape [1, 16, 14, 14] : tensor<1x16x196xf32> into tensor<1x16x14x14xf32>
// Without planes, or where FMAs are cheaper (8 per cycle: 288 cycles
// saved), a grid of rows 15 wide.
// NOPLANES-LABEL: func.func @window_planes
// NOPLANES-NOT: tensor<1x16x3x16x14xf32>
// NOPLANES: tensor.collapse_shape %{{.*}} : tensor<1x16x17x15xf32> into tensor<1x16x255xf32>
// NOPLANES: tensor.extract_slice %{{.*}}[0, 0, 0] [1, 16, 209] [1, 1, 1]
// FMA8-LABEL: func.func @window_planes
// FMA8-NOT: tensor<1x16x3x16x14xf32>
// FMA8: tensor.extract_slice %{{.*}}[0, 0, 0] [1, 16, 209] [1, 1, 1]
#pin = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, ic, oh + kh, ow + kw)>
#pw = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (oc, ic, kh, kw)>
#po = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, oc, oh, ow)>
func.func @window_planes(%x: tensor<1x16x14x14xf32>, %f: tensor<16x16x3x3xf32>, %init: tensor<1x16x14x14xf32>) -> tensor<1x16x14x14xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x16x14x14xf32> to tensor<1x16x16x16xf32>
  %r = linalg.generic {indexing_maps = [#pin, #pw, #po], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%p, %f : tensor<1x16x16x16xf32>, tensor<16x16x3x3xf32>) outs(%init : tensor<1x16x14x14xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x16x14x14xf32>
  return %r : tensor<1x16x14x14xf32>
}

// -----

// 7 x 7 outputs: the grid's 6 * 8 + 7 = 55 outputs take four vectors, as
// 49 do; planes would save nothing, so a grid.
// WIN-LABEL: func.func @window_grid_same_vectors
// WIN-NOT: tensor<1x16x3x9x7xf32>
// WIN: tensor.collapse_shape %{{.*}} : tensor<1x16x10x8xf32> into tensor<1x16x80xf32>
// WIN: tensor.extract_slice %{{.*}}[0, 0, 0] [1, 16, 55] [1, 1, 1]
#gin = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, ic, oh + kh, ow + kw)>
#gw = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (oc, ic, kh, kw)>
#go = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, oc, oh, ow)>
func.func @window_grid_same_vectors(%x: tensor<1x16x7x7xf32>, %f: tensor<16x16x3x3xf32>, %init: tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x16x7x7xf32> to tensor<1x16x9x9xf32>
  %r = linalg.generic {indexing_maps = [#gin, #gw, #go], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%p, %f : tensor<1x16x9x9xf32>, tensor<16x16x3x3xf32>) outs(%init : tensor<1x16x7x7xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x16x7x7xf32>
  return %r : tensor<1x16x7x7xf32>
}

// -----

// Left operands read transposed (contiguous along m, k further out: a
// weight gradient's h^T in h^T @ dY) are copied with k innermost where
// consecutive k are a cache line or more apart: 24 floats (96 bytes) are,
// 12 (48 bytes) are not, and a left operand contiguous along k is left
// alone.
// PACK-LABEL: func.func @transposed_left
// PACK: %[[HT:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<40x24xf32>) outs(%{{.*}} : tensor<24x40xf32>)
// PACK: linalg.generic {{.*}} ins(%[[HT]], %arg2 : tensor<24x40xf32>, tensor<40x32xf32>)
// PACK: linalg.generic {{.*}} ins(%arg1, %arg2 : tensor<40x12xf32>, tensor<40x32xf32>)
// PACK-NOT: tensor<12x40xf32>
// PACK: linalg.generic {{.*}} ins(%arg3, %arg2 : tensor<24x40xf32>, tensor<40x32xf32>)
// PACK-NOT: tensor<40x24xf32>
// PACK: return
#ta = affine_map<(m, n, k) -> (k, m)>
#tb = affine_map<(m, n, k) -> (k, n)>
#tc = affine_map<(m, n, k) -> (m, n)>
#pa2 = affine_map<(m, n, k) -> (m, k)>
func.func @transposed_left(%h: tensor<40x24xf32>, %s: tensor<40x12xf32>, %dy: tensor<40x32xf32>, %a: tensor<24x40xf32>)
    -> (tensor<24x32xf32>, tensor<12x32xf32>, tensor<24x32xf32>) {
  %c0 = tensor.empty() : tensor<24x32xf32>
  %r0 = linalg.generic {indexing_maps = [#ta, #tb, #tc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%h, %dy : tensor<40x24xf32>, tensor<40x32xf32>) outs(%c0 : tensor<24x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<24x32xf32>
  %c1 = tensor.empty() : tensor<12x32xf32>
  %r1 = linalg.generic {indexing_maps = [#ta, #tb, #tc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s, %dy : tensor<40x12xf32>, tensor<40x32xf32>) outs(%c1 : tensor<12x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<12x32xf32>
  %r2 = linalg.generic {indexing_maps = [#pa2, #tb, #tc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %dy : tensor<24x40xf32>, tensor<40x32xf32>) outs(%c0 : tensor<24x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<24x32xf32>
  return %r0, %r1, %r2 : tensor<24x32xf32>, tensor<12x32xf32>, tensor<24x32xf32>
}
