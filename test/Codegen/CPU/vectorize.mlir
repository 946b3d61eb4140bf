// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize),canonicalize,cse)' --split-input-file | FileCheck %s
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{vector-bits=256 register-rows=4}),canonicalize,cse)' --split-input-file | FileCheck %s --check-prefix=AVX2
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{pack=false}),canonicalize,cse)' --split-input-file | FileCheck %s --check-prefix=NOPACK
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{flatten-windows=false}),canonicalize,cse)' --split-input-file | FileCheck %s --check-prefix=NOFLAT
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{vector-bits=256 register-rows=6}),canonicalize,cse)' --split-input-file | FileCheck %s --check-prefix=ROWS6
// RUN: not harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{vector-bits=4}))' --split-input-file 2>&1 | FileCheck %s --check-prefix=BITS
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{l2-cache=4096}),canonicalize,cse)' --split-input-file | FileCheck %s --check-prefix=L2BLOCK
// RUN: harp-opt %s --pass-pipeline='builtin.module(func.func(harp-vectorize{window-planes=false}),canonicalize,cse)' --split-input-file | FileCheck %s --check-prefix=GRID

// BITS: error: harp-pack-contractions: vector-bits must be at least 8, got 4

// Matmul: an 8x32 register tile (two 16-lane vectors per row) whose
// accumulator is carried in registers through the k loop; each k step is
// one broadcast column of A, one row of B and a multiply-add that may be
// contracted into an FMA.
// CHECK-LABEL: func.func @matmul
// CHECK: scf.for {{.*}} step %c8
// CHECK: scf.for {{.*}} step %c32
// CHECK: %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<64x64xf32>, vector<8x32xf32>
// CHECK: scf.for {{.*}} step %c1 iter_args(%{{.*}} = %[[ACC]]) -> (vector<8x32xf32>)
// CHECK: vector.transfer_read {{.*}} : tensor<64x64xf32>, vector<32xf32>
// CHECK: %[[M:.*]] = arith.mulf {{.*}} fastmath<contract> : vector<8x32xf32>
// CHECK: arith.addf %{{.*}}, %[[M]] fastmath<contract> : vector<8x32xf32>
// CHECK-NOT: vector.transfer_write
// CHECK: scf.yield {{.*}} : vector<8x32xf32>
// CHECK: vector.transfer_write {{.*}} : vector<8x32xf32>, tensor<64x64xf32>
// ROWS6-LABEL: func.func @matmul
// ROWS6: scf.for {{.*}} step %c6
// ROWS6: arith.mulf {{.*}} : vector<6x16xf32>
// AVX2-LABEL: func.func @matmul
// AVX2: scf.for {{.*}} step %c4
// AVX2: scf.for {{.*}} step %c16
// AVX2: arith.mulf {{.*}} : vector<4x16xf32>
#mA = affine_map<(i, j, k) -> (i, k)>
#mB = affine_map<(i, j, k) -> (k, j)>
#mC = affine_map<(i, j, k) -> (i, j)>
func.func @matmul(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%c : tensor<64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

// -----

// n = 52 is no multiple of the 32-column register tile: its last 20 columns
// would be a vector of 20 lanes (no register shape). The kernel is split at
// 52 - 20 % 16 = 48, so 48 columns tile into an 8x32 tile and an 8x16
// remainder and the last 4 are one 4-lane vector. With 8-lane vectors
// (vector-bits=256, a 16-column tile) 52 leaves 4 columns: no split.
// CHECK-LABEL: func.func @matmul_partial_vectors
// CHECK: tensor.extract_slice %arg2[0, 0] [16, 48] [1, 1]
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x32xf32>)
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x16xf32>)
// CHECK: tensor.extract_slice %{{.*}}[0, 48] [16, 4] [1, 1]
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x4xf32>)
// CHECK-NOT: vector<8x20xf32>
// AVX2-LABEL: func.func @matmul_partial_vectors
// AVX2-NOT: tensor.extract_slice %arg2
// AVX2: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<4x16xf32>)
// AVX2: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<4x4xf32>)
#pA = affine_map<(m, n, k) -> (m, k)>
#pB = affine_map<(m, n, k) -> (k, n)>
#pC = affine_map<(m, n, k) -> (m, n)>
func.func @matmul_partial_vectors(%a: tensor<16x64xf32>, %b: tensor<64x52xf32>, %c: tensor<16x52xf32>) -> tensor<16x52xf32> {
  %r = linalg.generic {indexing_maps = [#pA, #pB, #pC], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<16x64xf32>, tensor<64x52xf32>) outs(%c : tensor<16x52xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x52xf32>
  return %r : tensor<16x52xf32>
}

// -----

// C = G @ W^T with W^T first: inferContractionDims calls the output's
// contiguous dim m; harp-vectorize turns it around, so the register tile's
// vectors run along C's rows (8 x 32, not 32 x 8), and W, read as (n, k),
// is packed into k x 32 panels by a transposing copy: W seen as 32 x 32 x
// 512, copied in 16 x 16 tiles transposed in registers: the 64 shuffles
// of four rounds (16 rows of 16 lanes), no scalar moves.
// CHECK-LABEL: func.func @matmul_transposed_first
// CHECK-DAG: tensor.empty() : tensor<32x512x32xf32>
// CHECK-DAG: %[[W3:.*]] = tensor.expand_shape %arg0 {{.*}} into tensor<32x32x512xf32>
// CHECK: %[[T:.*]] = vector.transfer_read %[[W3]]{{.*}} : tensor<32x32x512xf32>, vector<16x16xf32>
// CHECK-COUNT-16: vector.extract %[[T]][{{[0-9]+}}] : vector<16xf32> from vector<16x16xf32>
// CHECK-COUNT-64: vector.shuffle {{.*}} : vector<16xf32>, vector<16xf32>
// CHECK-NOT: vector.transpose
// CHECK: vector.transfer_write {{.*}} : vector<16x16xf32>, tensor<32x512x32xf32>
// CHECK: tensor.expand_shape %arg2 {{.*}} into tensor<16x32x32xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x32xf32>)
// CHECK-NOT: vector<32x8xf32>
// CHECK: return
#tW = affine_map<(i, j, k) -> (j, k)>
#tG = affine_map<(i, j, k) -> (i, k)>
#tC = affine_map<(i, j, k) -> (i, j)>
func.func @matmul_transposed_first(%w: tensor<1024x512xf32>, %g: tensor<16x512xf32>, %c: tensor<16x1024xf32>) -> tensor<16x1024xf32> {
  %r = linalg.generic {indexing_maps = [#tW, #tG, #tC], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %g : tensor<1024x512xf32>, tensor<16x512xf32>) outs(%c : tensor<16x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x1024xf32>
  return %r : tensor<16x1024xf32>
}

// -----

// Large contractions: the right operand is packed into panels of the
// register tile's width (32 columns: 1024x1024 becomes 32 panels of
// 1024x32), the matmul runs over (row, panel, column, k) on C seen as
// 1024x32x32; cache blocks of 8 panels (256 columns) by 512 k (an 8 x 512
// slice of A in half of the 48 KiB L1, a 512 x 256 block of B in half of
// the 1 MiB L2), register tiles of 8 rows by one panel, each reading its
// panel row contiguously.
// CHECK-LABEL: func.func @matmul_blocked
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<32x1024x32xf32>
// CHECK: %[[PACKED:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[EMPTY]]) -> (tensor<32x1024x32xf32>)
// CHECK: vector.transfer_read %{{.*}} : tensor<1024x1024xf32>, vector<16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<16xf32>, tensor<32x1024x32xf32>
// CHECK: %[[C:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2]] output_shape [1024, 32, 32]
// CHECK: scf.for {{.*}} to %c32 step %c8 iter_args(%{{.*}} = %[[C]])
// CHECK: scf.for {{.*}} to %c1024 step %c512
// CHECK: scf.for {{.*}} step %c8
// CHECK: scf.for {{.*}} to %c8 step %c1
// CHECK: scf.for {{.*}} to %c512 step %c1 {{.*}} -> ({{.*}}vector<8x32xf32>)
// CHECK: vector.transfer_read %[[PACKED]]{{.*}} : tensor<32x1024x32xf32>, vector<32xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2]] : tensor<1024x32x32xf32> into tensor<1024x1024xf32>

// Without packing: cache blocks of 256 columns by 512 k.
// NOPACK-LABEL: func.func @matmul_blocked
// NOPACK-NOT: tensor.expand_shape
// NOPACK: scf.for {{.*}} to %c1024 step %c256
// NOPACK: scf.for {{.*}} to %c1024 step %c512
// NOPACK: scf.for {{.*}} step %c8
// NOPACK: scf.for {{.*}} to %c256 step %c32
// NOPACK: scf.for {{.*}} to %c512 step %c1 {{.*}} -> (vector<8x32xf32>)
#nA = affine_map<(i, j, k) -> (i, k)>
#nB = affine_map<(i, j, k) -> (k, j)>
#nC = affine_map<(i, j, k) -> (i, j)>
func.func @matmul_blocked(%a: tensor<1024x1024xf32>, %b: tensor<1024x1024xf32>, %c: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %r = linalg.generic {indexing_maps = [#nA, #nB, #nC], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<1024x1024xf32>, tensor<1024x1024xf32>) outs(%c : tensor<1024x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1024x1024xf32>
  return %r : tensor<1024x1024xf32>
}

// -----

// k blocked (2048 > 768: blocks of 512) but n not (128 columns): m is cut
// in two halves that head the nest, so a parallel loop (marked) comes
// before the k block loop (a reduction) and threads can split the matmul.
// CHECK-LABEL: func.func @matmul_k_blocked
// CHECK: scf.for {{.*}} to %c128 step %c64
// CHECK: scf.for {{.*}} to %c2048 step %c512
// CHECK: scf.for {{.*}} to %c64 step %c8
// CHECK: scf.for {{.*}} to %c128 step %c32
// CHECK: scf.for {{.*}} to %c512 step %c1 {{.*}} -> (vector<8x32xf32>)
// CHECK: tensor.insert_slice
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } {harp.parallel}
// CHECK-NEXT: return
#kA = affine_map<(i, j, k) -> (i, k)>
#kB = affine_map<(i, j, k) -> (k, j)>
#kC = affine_map<(i, j, k) -> (i, j)>
func.func @matmul_k_blocked(%a: tensor<128x2048xf32>, %b: tensor<2048x128xf32>, %c: tensor<128x128xf32>) -> tensor<128x128xf32> {
  %r = linalg.generic {indexing_maps = [#kA, #kB, #kC], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<128x2048xf32>, tensor<2048x128xf32>) outs(%c : tensor<128x128xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<128x128xf32>
  return %r : tensor<128x128xf32>
}

// -----

// A row sum: one row per iteration, 64 partial sums (four 16-lane
// accumulators) carried through the row, one horizontal reduction at the
// end of the row.
// CHECK-LABEL: func.func @row_sum
// CHECK: scf.for {{.*}} to %c256 step %c1
// CHECK: scf.for {{.*}} to %c1024 step %c64 iter_args(%{{.*}} = %{{.*}}) -> (vector<64xf32>)
// CHECK: arith.addf {{.*}} : vector<64xf32>
// CHECK: vector.multi_reduction <add>, {{.*}} [1] : vector<1x64xf32> to vector<1xf32>
// AVX2-LABEL: func.func @row_sum
// AVX2: -> (vector<32xf32>)
#r0 = affine_map<(i, j) -> (i, j)>
#r1 = affine_map<(i, j) -> (i)>
func.func @row_sum(%x: tensor<256x1024xf32>, %init: tensor<256xf32>) -> tensor<256xf32> {
  %r = linalg.generic {indexing_maps = [#r0, #r1], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<256x1024xf32>) outs(%init : tensor<256xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  return %r : tensor<256xf32>
}

// -----

// A column max reduces an outer dim: vectors along the result, the
// accumulator carried through the reduction loop; 64 columns are
// reduction-vectors (4) vectors of 16, four independent chains.
// CHECK-LABEL: func.func @column_max
// CHECK-NOT: scf.for {{.*}} step %c16
// CHECK: scf.for {{.*}} to %c100 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<64xf32>)
// CHECK: arith.maximumf {{.*}} : vector<64xf32>
// AVX2-LABEL: func.func @column_max
// AVX2: scf.for {{.*}} to %c64 step %c32
// AVX2: scf.for {{.*}} to %c100 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<32xf32>)
#c0 = affine_map<(i, j) -> (i, j)>
#c1 = affine_map<(i, j) -> (j)>
func.func @column_max(%x: tensor<100x64xf32>, %init: tensor<64xf32>) -> tensor<64xf32> {
  %r = linalg.generic {indexing_maps = [#c0, #c1], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<100x64xf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.maximumf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

// A column sum over 1024 columns (16 tiles of 64) and 128 rows streams the
// rows: the reduced loop outside the vector loop, each step reading a
// contiguous piece of a row and adding it into the result's slice (no
// accumulator carried in registers); AVX2 code's tiles are 32 wide.
// CHECK-LABEL: func.func @column_sum_streamed
// CHECK: scf.for %[[K:.*]] = %c0 to %c128 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (tensor<1024xf32>)
// CHECK: scf.for %[[N:.*]] = %c0 to %c1024 step %c64 iter_args(%{{.*}} = %{{.*}}) -> (tensor<1024xf32>)
// CHECK: vector.transfer_read %arg0[%[[K]], %[[N]]]{{.*}} : tensor<128x1024xf32>, vector<64xf32>
// CHECK: arith.addf {{.*}} : vector<64xf32>
// CHECK: vector.transfer_write {{.*}} : vector<64xf32>, tensor<1024xf32>
// With a 4 KiB L2 (pinned), a row's 1024 accumulators do not fit half of
// it: the columns come in blocks of 512, each streamed down all rows.
// L2BLOCK-LABEL: func.func @column_sum_streamed
// L2BLOCK: scf.for %{{.*}} = %c0 to %c1024 step %c512 iter_args(%{{.*}} = %{{.*}}) -> (tensor<1024xf32>)
// L2BLOCK: scf.for %{{.*}} = %c0 to %c128 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (tensor<512xf32>)
// L2BLOCK: scf.for %{{.*}} = %c0 to %c512 step %c64 iter_args(%{{.*}} = %{{.*}}) -> (tensor<512xf32>)
// AVX2-LABEL: func.func @column_sum_streamed
// AVX2: scf.for %{{.*}} = %c0 to %c128 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (tensor<1024xf32>)
// AVX2: scf.for %{{.*}} = %c0 to %c1024 step %c32 iter_args(%{{.*}} = %{{.*}}) -> (tensor<1024xf32>)
#s0 = affine_map<(i, j) -> (i, j)>
#s1 = affine_map<(i, j) -> (j)>
func.func @column_sum_streamed(%x: tensor<128x1024xf32>, %init: tensor<1024xf32>) -> tensor<1024xf32> {
  %r = linalg.generic {indexing_maps = [#s0, #s1], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<128x1024xf32>) outs(%init : tensor<1024xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}

// -----

// One row of x: x @ B (its unit dim dropped) streams B's rows like a
// column sum; x @ W^T (W contiguous along k) is rows of dot products along
// k, W read in place.
// CHECK-LABEL: func.func @vector_matrix
// CHECK: scf.for %[[K:.*]] = %c0 to %c256 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (tensor<1024xf32>)
// CHECK: scf.for %[[N:.*]] = %c0 to %c1024 step %c64 iter_args(%{{.*}} = %{{.*}}) -> (tensor<1024xf32>)
// CHECK: vector.transfer_read %arg1[%[[K]], %[[N]]]{{.*}} : tensor<256x1024xf32>, vector<64xf32>
// CHECK-LABEL: func.func @vector_transposed_matrix
// CHECK-NOT: tensor<1024x256xf32>, vector<{{[0-9]+}}x
// CHECK: scf.for {{.*}} to %c256 step %c64 iter_args({{.*}}) -> (vector<64xf32>)
// CHECK: vector.transfer_read %arg1[%{{.*}}, %{{.*}}]{{.*}} : tensor<1024x256xf32>, vector<64xf32>
// CHECK: vector.multi_reduction <add>
#va = affine_map<(m, n, k) -> (m, k)>
#vb = affine_map<(m, n, k) -> (k, n)>
#vbt = affine_map<(m, n, k) -> (n, k)>
#vc = affine_map<(m, n, k) -> (m, n)>
func.func @vector_matrix(%x: tensor<1x256xf32>, %b: tensor<256x1024xf32>, %init: tensor<1x1024xf32>) -> tensor<1x1024xf32> {
  %r = linalg.generic {indexing_maps = [#va, #vb, #vc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %b : tensor<1x256xf32>, tensor<256x1024xf32>) outs(%init : tensor<1x1024xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1024xf32>
  return %r : tensor<1x1024xf32>
}
func.func @vector_transposed_matrix(%x: tensor<1x256xf32>, %w: tensor<1024x256xf32>, %init: tensor<1x1024xf32>) -> tensor<1x1024xf32> {
  %r = linalg.generic {indexing_maps = [#va, #vbt, #vc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<1x256xf32>, tensor<1024x256xf32>) outs(%init : tensor<1x1024xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1024xf32>
  return %r : tensor<1x1024xf32>
}

// -----

// Element-wise with tanh: 16 lanes, tanh a polynomial; the 100 - 96 = 4
// trailing elements are a peeled remainder, a static vector<4xf32> here.
// Every transfer is in bounds (the tile loop's last vector starts at 80),
// so none becomes a masked access.
// CHECK-LABEL: func.func @tanh_chain
// CHECK: scf.for %[[I:.*]] = %c0 to %c96 step %c16
// CHECK: vector.transfer_read %{{.*}}[%[[I]]], %{{.*}} {in_bounds = [true]} : tensor<100xf32>, vector<16xf32>
// CHECK-NOT: math.tanh
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%[[I]]] {in_bounds = [true]} : vector<16xf32>, tensor<100xf32>
// CHECK: vector.transfer_read %{{.*}}[%c96]{{.*}} vector<4xf32>
// CHECK-NOT: math.tanh
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%c96] {in_bounds = [true]} : vector<4xf32>
// CHECK: return
// AVX2-LABEL: func.func @tanh_chain
// AVX2: scf.for {{.*}} to %c96 step %c8
#e = affine_map<(i) -> (i)>
func.func @tanh_chain(%x: tensor<100xf32>) -> tensor<100xf32> {
  %e = tensor.empty() : tensor<100xf32>
  %r = linalg.generic {indexing_maps = [#e, #e], iterator_types = ["parallel"]}
      ins(%x : tensor<100xf32>) outs(%e : tensor<100xf32>) {
  ^bb0(%v: f32, %o: f32):
    %t = math.tanh %v : f32
    %h = arith.mulf %t, %v : f32
    linalg.yield %h : f32
  } -> tensor<100xf32>
  return %r : tensor<100xf32>
}

// -----

// A transpose reads and writes whole vectors of a 16x16 tile and
// transposes in registers.
// CHECK-LABEL: func.func @transpose
// CHECK: vector.transfer_read {{.*}} : tensor<64x32xf64>, vector<8x8xf64>
// CHECK: vector.transpose {{.*}} [1, 0] : vector<8x8xf64> to vector<8x8xf64>
// CHECK: vector.transfer_write {{.*}} : vector<8x8xf64>, tensor<32x64xf64>
#t0 = affine_map<(i, j) -> (j, i)>
#t1 = affine_map<(i, j) -> (i, j)>
func.func @transpose(%x: tensor<64x32xf64>) -> tensor<32x64xf64> {
  %e = tensor.empty() : tensor<32x64xf64>
  %r = linalg.generic {indexing_maps = [#t0, #t1], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x32xf64>) outs(%e : tensor<32x64xf64>) {
  ^bb0(%v: f64, %o: f64):
    linalg.yield %v : f64
  } -> tensor<32x64xf64>
  return %r : tensor<32x64xf64>
}

// -----

// A convolution window (oh + kh, ow + kw) whose 16 output columns are no
// multiple of the register tile's 32 is flattened onto the input's rows.
// By default onto 3 planes, one per tap column: plane j holds columns j to
// j + 15 of the 18 rows (one copy, 1x4x3x18x16), flattened to rows of 16,
// and output p = oh * 16 + ow reads plane kw at p + kh * 16: 256 outputs,
// 8 register tiles of 8 output channels x 32, no remainder, and the result
// is the init reshaped (the grid below would compute 286 outputs in 8
// full-width tiles and two narrower ones, and copy 256 of them out).
// CHECK-LABEL: func.func @conv
// CHECK: tensor.empty() : tensor<1x4x3x18x16xf32>
// CHECK: vector.transfer_read %arg0{{.*}} : tensor<1x4x18x18xf32>, vector<16xf32>
// CHECK: %[[P:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2], [3, 4]] : tensor<1x4x3x18x16xf32> into tensor<1x4x3x288xf32>
// CHECK: %[[Y:.*]] = tensor.collapse_shape %arg2 {{\[}}[0], [1], [2, 3]] : tensor<1x16x16x16xf32> into tensor<1x16x256xf32>
// CHECK: scf.for {{.*}} to %c16 step %c8 iter_args(%{{.*}} = %[[Y]])
// CHECK: scf.for {{.*}} to %c256 step %c32
// CHECK: scf.for {{.*}} to %c4 step %c1 iter_args(%{{.*}}) -> (vector<8x32xf32>)
// CHECK: scf.for {{.*}} to %c3
// CHECK: scf.for {{.*}} to %c3
// CHECK: vector.transfer_read %[[P]][%c0, %{{.*}}, %{{.*}}, %{{.*}}]{{.*}} : tensor<1x4x3x288xf32>, vector<32xf32>
// CHECK-NOT: vector<8x16xf32>
// CHECK-NOT: vector<8x14xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0], [1], [2, 3]] output_shape [1, 16, 16, 16] : tensor<1x16x256xf32> into tensor<1x16x16x16xf32>
// CHECK-NEXT: return
// With window-planes=false it is computed on a grid as wide as the
// 18-column input, flattened: grid output p = oh * 18 + ow reads the
// flattened input at p + kh * 18 + kw. The grid's first 15 * 18 + 16 = 286
// outputs are computed (8 output channels x 32 of them per register tile,
// the last 30 in a tile of one vector and one of 14 lanes, split off the
// kernel first), its 2 extra columns per row dropped.
// The init (an argument) is padded onto the grid.
// GRID-LABEL: func.func @conv
// GRID: %[[X:.*]] = tensor.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : tensor<1x4x18x18xf32> into tensor<1x4x324xf32>
// GRID: %[[PAD:.*]] = tensor.pad %arg2 low[0, 0, 0, 0] high[0, 0, 0, 2]
// GRID: %[[GRID:.*]] = tensor.collapse_shape %[[PAD]] {{.*}} into tensor<1x16x288xf32>
// GRID: %[[OUT:.*]] = tensor.extract_slice %[[GRID]][0, 0, 0] [1, 16, 286] [1, 1, 1]
// GRID: %[[HEAD:.*]] = tensor.extract_slice %[[OUT]][0, 0, 0] [1, 16, 272] [1, 1, 1]
// GRID: scf.for {{.*}} to %c16 step %c8 iter_args(%{{.*}} = %[[HEAD]])
// GRID: scf.for {{.*}} to %c256 step %c32
// GRID: %[[ACC:.*]] = vector.transfer_read {{.*}} vector<8x32xf32>
// GRID: scf.for {{.*}} to %c4 step %c1 iter_args(%{{.*}} = %[[ACC]]) -> (vector<8x32xf32>)
// GRID: scf.for {{.*}} to %c3
// GRID: scf.for {{.*}} to %c3
// GRID: %[[AT:.*]] = affine.apply #{{.*}}(%{{.*}}, %{{.*}}, %{{.*}})
// GRID: vector.transfer_read %[[X]][%c0, %{{.*}}, %[[AT]]]{{.*}} : tensor<1x4x324xf32>, vector<32xf32>
// GRID: %[[M:.*]] = arith.mulf {{.*}} : vector<8x32xf32>
// GRID: arith.addf %{{.*}}, %[[M]] fastmath<contract> : vector<8x32xf32>
// GRID: vector.transfer_read {{.*}} : tensor<1x16x272xf32>, vector<8x16xf32>
// GRID: tensor.extract_slice {{.*}}[0, 0, 272] [1, 16, 14] [1, 1, 1]
// GRID: vector.transfer_read {{.*}} : tensor<1x16x14xf32>, vector<8x14xf32>
// GRID: %[[ALL:.*]] = tensor.insert_slice %{{.*}} into %[[GRID]][0, 0, 0] [1, 16, 286] [1, 1, 1]
// GRID: %[[ROWS:.*]] = tensor.expand_shape %[[ALL]] {{.*}} into tensor<1x16x16x18xf32>
// GRID: tensor.extract_slice %[[ROWS]][0, 0, 0, 0] [1, 16, 16, 16] [1, 1, 1, 1]
// With 6 register rows (16 vector registers) a convolution's 16 output
// channels get two tiles of 6 rows and a peeled remainder of 4, each
// vectorized (the remainder's filter slice, clamped to a dynamic size by
// tiling, is re-sliced with its static extent).
// ROWS6-LABEL: func.func @conv
// ROWS6: scf.for {{.*}} to %c12 step %c6
// ROWS6: scf.for {{.*}} to %c4 step %c1 iter_args(%{{.*}}) -> (vector<6x16xf32>)
// ROWS6: scf.for {{.*}} to %c4 step %c1 iter_args(%{{.*}}) -> (vector<4x16xf32>)
// ROWS6-NOT: linalg.generic
// ROWS6: return
// Without flattening: 8 output channels x 16 output columns of
// accumulators, one input vector loaded per (ic, kh, kw) and shared by the
// 8 channels.
// NOFLAT-LABEL: func.func @conv
// NOFLAT-NOT: tensor.collapse_shape
// NOFLAT: scf.for {{.*}} to %c16 step %c8
// NOFLAT: scf.for {{.*}} to %c16 step %c1
// NOFLAT: %[[ACC:.*]] = vector.transfer_read {{.*}} vector<8x16xf32>
// NOFLAT: scf.for {{.*}} to %c4 step %c1 iter_args(%{{.*}} = %[[ACC]]) -> (vector<8x16xf32>)
// NOFLAT: scf.for {{.*}} to %c3
// NOFLAT: scf.for {{.*}} to %c3
// NOFLAT: vector.transfer_read {{.*}} : tensor<1x4x18x18xf32>, vector<16xf32>
// NOFLAT: %[[M:.*]] = arith.mulf {{.*}} : vector<8x16xf32>
// NOFLAT: arith.addf %{{.*}}, %[[M]] fastmath<contract> : vector<8x16xf32>
#in = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, ic, oh + kh, ow + kw)>
#w = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (oc, ic, kh, kw)>
#o = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, oc, oh, ow)>
func.func @conv(%x: tensor<1x4x18x18xf32>, %f: tensor<16x4x3x3xf32>, %init: tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32> {
  %r = linalg.generic {indexing_maps = [#in, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %f : tensor<1x4x18x18xf32>, tensor<16x4x3x3xf32>) outs(%init : tensor<1x16x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x16x16x16xf32>
  return %r : tensor<1x16x16x16xf32>
}

// -----

// A convolution with more filter than image (32 channels of 6x6, a 32x32x3x3
// filter: the filter is the largest input, contiguous along kw) is still
// planned as a convolution, not as a row reduction over the 3-wide kw:
// 8 output channels of register rows over one vector of the flattened
// outputs (16 on planes; on a grid 3 * 6 + 4 = 22: 16, then 6), kw a loop.
// CHECK-LABEL: func.func @conv_small_image
// CHECK-NOT: vector.multi_reduction
// CHECK: scf.for {{.*}} to %c32 step %c8
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x16xf32>)
// CHECK-NOT: vector<8x6xf32>
// CHECK-NOT: vector.multi_reduction
// CHECK: return
// GRID-LABEL: func.func @conv_small_image
// GRID-NOT: vector.multi_reduction
// GRID: scf.for {{.*}} to %c32 step %c8
// GRID: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x16xf32>)
// GRID: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x6xf32>)
// GRID-NOT: vector.multi_reduction
// GRID: return
#sin = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, ic, oh + kh, ow + kw)>
#sw = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (oc, ic, kh, kw)>
#so = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, oc, oh, ow)>
func.func @conv_small_image(%x: tensor<1x32x6x6xf32>, %f: tensor<32x32x3x3xf32>, %init: tensor<1x32x4x4xf32>) -> tensor<1x32x4x4xf32> {
  %r = linalg.generic {indexing_maps = [#sin, #sw, #so], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %f : tensor<1x32x6x6xf32>, tensor<32x32x3x3xf32>) outs(%init : tensor<1x32x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x32x4x4xf32>
  return %r : tensor<1x32x4x4xf32>
}

// -----

// 100 outputs flattened onto planes (two register tiles of 32 or more) get
// rows of two vectors: 8 x 32 accumulators, then the 4 left. A grid of
// 9 * 12 + 10 = 118 outputs leaves 22, as 16 and 6.
// CHECK-LABEL: func.func @conv_two_tiles_wide
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x32xf32>)
// CHECK-NOT: vector<8x16xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x4xf32>)
// GRID-LABEL: func.func @conv_two_tiles_wide
// GRID: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x32xf32>)
// GRID: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x16xf32>)
// GRID: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x6xf32>)
#min = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, ic, oh + kh, ow + kw)>
#mw = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (oc, ic, kh, kw)>
#mo = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, oc, oh, ow)>
func.func @conv_two_tiles_wide(%x: tensor<1x4x12x12xf32>, %f: tensor<8x4x3x3xf32>, %init: tensor<1x8x10x10xf32>) -> tensor<1x8x10x10xf32> {
  %r = linalg.generic {indexing_maps = [#min, #mw, #mo], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %f : tensor<1x4x12x12xf32>, tensor<8x4x3x3xf32>) outs(%init : tensor<1x8x10x10xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x8x10x10xf32>
  return %r : tensor<1x8x10x10xf32>
}

// -----

// A stride-2 window along the output's columns (ow * 2 + kw) is
// de-interleaved: the 23 input columns, padded to 24, are sorted by phase
// into 1x3x23x2x12 (one copy), the 7-tap filter padded to 8 = 4 x 2 taps,
// and the kernel reduces over (kq, r) reading the sorted image at
// (r, ow + kq): a vector of 9 contiguous outputs, 6 output channels of
// rows. The padded tap (kq 3, r 1) is not computed: kq runs over the 3
// whole phase groups, and the last group's one tap (kq 3, r 0) follows.
// Without window rewrites (flatten-windows=false) it stays as it was.
// CHECK-LABEL: func.func @strided_conv
// CHECK: %[[PX:.*]] = tensor.pad %arg0 low[0, 0, 0, 0] high[0, 0, 0, 1]
// CHECK: tensor.expand_shape %[[PX]] {{.*}} into tensor<1x3x23x12x2xf32>
// CHECK: %[[SORTED:.*]] = scf.for {{.*}} -> (tensor<1x3x23x2x12xf32>)
// CHECK: %[[PF:.*]] = tensor.pad %arg1 low[0, 0, 0, 0] high[0, 0, 0, 1]
// CHECK: %[[F:.*]] = tensor.expand_shape %[[PF]] {{.*}} into tensor<6x3x7x4x2xf32>
// CHECK: scf.for {{.*}} to %c3 step %c1 iter_args(%{{.*}}) -> (vector<6x9xf32>)
// CHECK: scf.for {{.*}} to %c2 step %c1 iter_args(%{{.*}}) -> (vector<6x9xf32>)
// CHECK: vector.transfer_read %[[SORTED]]{{.*}} : tensor<1x3x23x2x12xf32>, vector<9xf32>
// CHECK: vector.transfer_read %[[F]]
// CHECK: vector.transfer_read %[[SORTED]][%c0, %{{.*}}, %{{.*}}, %c0, %c3]{{.*}} : tensor<1x3x23x2x12xf32>, vector<9xf32>
// CHECK: vector.transfer_read %[[F]][%c0, %{{.*}}, %{{.*}}, %c3, %c0]
// NOFLAT-LABEL: func.func @strided_conv
// NOFLAT-NOT: tensor<1x3x23x2x12xf32>
// NOFLAT: return
#sx = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, ic, oh * 2 + kh, ow * 2 + kw)>
#sw = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (oc, ic, kh, kw)>
#so = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, oc, oh, ow)>
func.func @strided_conv(%x: tensor<1x3x23x23xf32>, %f: tensor<6x3x7x7xf32>, %init: tensor<1x6x9x9xf32>) -> tensor<1x6x9x9xf32> {
  %r = linalg.generic {indexing_maps = [#sx, #sw, #so], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %f : tensor<1x3x23x23xf32>, tensor<6x3x7x7xf32>) outs(%init : tensor<1x6x9x9xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x6x9x9xf32>
  return %r : tensor<1x6x9x9xf32>
}

// -----

// The two images are computed one at a time (a loop over the batch, marked
// parallel). A valid window (no padding) over 50 columns gives 48 outputs
// per row: on 3 planes of 8 rows of 48 (one copy of the image's 2 channels
// each), 288 outputs written into the image's slice of the zero-filled
// init, reshaped. The image's slice of the init is contiguous: it is
// filled flat, as one loop of whole vectors (no short loop per row).
// CHECK-LABEL: func.func @conv_fill
// CHECK-NOT: tensor.pad
// CHECK: scf.for %[[N:.*]] = %c0 to %c2 step %c1 iter_args(%{{.*}}) -> (tensor<2x8x6x48xf32>)
// CHECK: tensor.collapse_shape %{{.*}} : tensor<1x8x6x48xf32> into tensor<2304xf32>
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %c2304 step %c16
// CHECK-NEXT: vector.transfer_write %cst{{.*}} : vector<16xf32>, tensor<2304xf32>
// CHECK: tensor.empty() : tensor<1x2x3x8x48xf32>
// CHECK: tensor.collapse_shape %{{.*}} : tensor<1x2x3x8x48xf32> into tensor<1x2x3x384xf32>
// CHECK: tensor.expand_shape %{{.*}} output_shape [1, 8, 288] : tensor<2304xf32> into tensor<1x8x288xf32>
// CHECK: vector<8x32xf32>
// CHECK: tensor.expand_shape %{{.*}} output_shape [1, 8, 6, 48] : tensor<1x8x288xf32> into tensor<1x8x6x48xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[N]], 0, 0, 0] [1, 8, 6, 48]
// CHECK: } {harp.parallel}
// On a grid, a zero-filled init is filled on the grid (no padded copy of
// it): 5 * 50 + 48 = 298 outputs, each image on a grid of its own.
// GRID-LABEL: func.func @conv_fill
// GRID-NOT: tensor.pad
// GRID: scf.for %[[N:.*]] = %c0 to %c2 step %c1 iter_args(%{{.*}}) -> (tensor<2x8x6x48xf32>)
// GRID: tensor.extract_slice %arg0[%[[N]], 0, 0, 0] [1, 2, 8, 50]
// GRID: tensor.collapse_shape %{{.*}} : tensor<1x8x6x50xf32> into tensor<2400xf32>
// GRID: vector.transfer_write {{.*}} : vector<16xf32>, tensor<2400xf32>
// GRID: tensor.extract_slice %{{.*}}[0, 0, 0] [1, 8, 298] [1, 1, 1] : tensor<1x8x300xf32> to tensor<1x8x298xf32>
// GRID: vector<8x32xf32>
// GRID: tensor.extract_slice %{{.*}}[0, 0, 0, 0] [1, 8, 6, 48] [1, 1, 1, 1] : tensor<1x8x6x50xf32> to tensor<1x8x6x48xf32>
// GRID: tensor.insert_slice %{{.*}} into %{{.*}}[%[[N]], 0, 0, 0] [1, 8, 6, 48]
// GRID: } {harp.parallel}
#in = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, ic, oh + kh, ow + kw)>
#w = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (oc, ic, kh, kw)>
#o = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, oc, oh, ow)>
func.func @conv_fill(%x: tensor<2x2x8x50xf32>, %f: tensor<8x2x3x3xf32>) -> tensor<2x8x6x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x6x48xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x6x48xf32>) -> tensor<2x8x6x48xf32>
  %r = linalg.generic {indexing_maps = [#in, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %f : tensor<2x2x8x50xf32>, tensor<8x2x3x3xf32>) outs(%init : tensor<2x8x6x48xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x8x6x48xf32>
  return %r : tensor<2x8x6x48xf32>
}

// -----

// Not flattened: rows of 32 outputs are whole register tiles already, and
// a window whose other operand also reads ow (a per-column weight) cannot
// be flattened.
// CHECK-LABEL: func.func @conv_not_flattened
// CHECK-NOT: tensor.collapse_shape
// CHECK: return
#in = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, ic, oh + kh, ow + kw)>
#w = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (oc, ic, kh, kw)>
#wc = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (oc, ow, kh, kw)>
#o = affine_map<(n, oc, oh, ow, ic, kh, kw) -> (n, oc, oh, ow)>
func.func @conv_not_flattened(%x: tensor<1x2x6x34xf32>, %f: tensor<8x2x3x3xf32>, %init: tensor<1x8x4x32xf32>,
                              %y: tensor<1x2x6x12xf32>, %g: tensor<8x10x3x3xf32>, %init2: tensor<1x8x4x10xf32>)
    -> (tensor<1x8x4x32xf32>, tensor<1x8x4x10xf32>) {
  %r = linalg.generic {indexing_maps = [#in, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %f : tensor<1x2x6x34xf32>, tensor<8x2x3x3xf32>) outs(%init : tensor<1x8x4x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x8x4x32xf32>
  %r2 = linalg.generic {indexing_maps = [#in, #wc, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%y, %g : tensor<1x2x6x12xf32>, tensor<8x10x3x3xf32>) outs(%init2 : tensor<1x8x4x10xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x8x4x10xf32>
  return %r, %r2 : tensor<1x8x4x32xf32>, tensor<1x8x4x10xf32>
}

// -----

// Left scalar: booleans (a byte in memory, a bit in an LLVM vector),
// complex numbers, and maps tiling cannot slice (a flip).
// CHECK-LABEL: func.func @left_scalar
// CHECK-NOT: vector.
// CHECK: return
#f0 = affine_map<(i) -> (-i + 63)>
#f1 = affine_map<(i) -> (i)>
func.func @left_scalar(%b: tensor<64xi1>, %z: tensor<64xcomplex<f32>>, %x: tensor<64xf32>)
    -> (tensor<64xi1>, tensor<64xcomplex<f32>>, tensor<64xf32>) {
  %eb = tensor.empty() : tensor<64xi1>
  %rb = linalg.generic {indexing_maps = [#f1, #f1], iterator_types = ["parallel"]}
      ins(%b : tensor<64xi1>) outs(%eb : tensor<64xi1>) {
  ^bb0(%v: i1, %o: i1):
    %n = arith.xori %v, %v : i1
    linalg.yield %n : i1
  } -> tensor<64xi1>
  %ez = tensor.empty() : tensor<64xcomplex<f32>>
  %rz = linalg.generic {indexing_maps = [#f1, #f1], iterator_types = ["parallel"]}
      ins(%z : tensor<64xcomplex<f32>>) outs(%ez : tensor<64xcomplex<f32>>) {
  ^bb0(%v: complex<f32>, %o: complex<f32>):
    %n = complex.neg %v : complex<f32>
    linalg.yield %n : complex<f32>
  } -> tensor<64xcomplex<f32>>
  %ex = tensor.empty() : tensor<64xf32>
  %rx = linalg.generic {indexing_maps = [#f0, #f1], iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%ex : tensor<64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  } -> tensor<64xf32>
  return %rb, %rz, %rx : tensor<64xi1>, tensor<64xcomplex<f32>>, tensor<64xf32>
}

// -----

// An embedding lookup: the row index is read (as a scalar: a 0-d read is
// the element, harp-vector-cleanup) and clamped once per row, outside the
// loop over the row's vectors, which only copies.
// CHECK-LABEL: func.func @embedding
// CHECK: scf.for %[[ROW:.*]] = %c0 to %c8 step %c1
// CHECK: tensor.extract %{{.*}}[%[[ROW]]] : tensor<8xi64>
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: %[[R:.*]] = vector.extract
// CHECK: scf.for %[[COL:.*]] = %c0 to %c64 step %c16
// CHECK-NOT: tensor<8xi64>
// CHECK: vector.transfer_read %{{.*}}[%[[R]], %{{.*}}]{{.*}} : tensor<100x64xf32>, vector<16xf32>
// CHECK-NEXT: vector.transfer_write
// CHECK-NEXT: scf.yield
#rows = affine_map<(d0, d1) -> (d0, d1)>
func.func @embedding(%table: tensor<100x64xf32>, %idx: tensor<8xi64>) -> tensor<8x64xf32> {
  %c99 = arith.constant 99 : index
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<8x64xf32>
  %r = linalg.generic {indexing_maps = [#rows], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<8x64xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %x = tensor.extract %idx[%i] : tensor<8xi64>
    %xi = arith.index_cast %x : i64 to index
    %lo = arith.maxsi %xi, %c0 : index
    %row = arith.minsi %lo, %c99 : index
    %v = tensor.extract %table[%row, %j] : tensor<100x64xf32>
    linalg.yield %v : f32
  } -> tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}

// -----

// A shifted read (`x[i + 1]`, a view's slice) vectorizes: each tile's
// slice is re-made from the tile's offset plus the map's constant, and the
// tile reads it through `d0`. 19 = 16 + a remainder of 3 (one 8-lane tile
// loop + 3 with 256 bits).
// CHECK-LABEL: func.func @shifted_view
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C17:.*]] = arith.constant 17 : index
// CHECK: vector.transfer_read %{{.*}}[%[[C1]]], %{{.*}} {in_bounds = [true]} : tensor<20xf32>, vector<16xf32>
// CHECK: vector.transfer_read %{{.*}}[%[[C17]]], %{{.*}} {in_bounds = [true]} : tensor<20xf32>, vector<3xf32>
// CHECK-NOT: linalg.generic
// AVX2-LABEL: func.func @shifted_view
// AVX2: scf.for %[[I:.*]] = {{.*}} step %c8
// AVX2: %[[J:.*]] = affine.apply #{{.*}}()[%[[I]]]
// AVX2: vector.transfer_read %{{.*}}[%[[J]]], %{{.*}} {in_bounds = [true]} : tensor<20xf32>, vector<8xf32>
// AVX2: vector.transfer_read {{.*}} : tensor<20xf32>, vector<3xf32>
// AVX2-NOT: linalg.generic
func.func @shifted_view(%x: tensor<20xf32>) -> tensor<19xf32> {
  %e = tensor.empty() : tensor<19xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0 + 1)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<20xf32>) outs(%e : tensor<19xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<19xf32>
  return %r : tensor<19xf32>
}

// -----

// A row reduction that reads its column index (a mask, a gather) tiled
// into partial reductions: every tile reads its own columns, the tile
// loop's offset plus the lane (MLIR's partial-reduction tiling leaves the
// index of the tiled dim relative to the tile).
// CHECK-LABEL: func.func @index_in_partial_reduction
// CHECK: %[[STEP:.*]] = vector.step : vector<64xindex>
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c256 step %c64 iter_args
// CHECK: %[[B:.*]] = vector.broadcast %[[J]] : index to vector<64xindex>
// CHECK: %[[COL:.*]] = arith.addi %[[STEP]], %[[B]] : vector<64xindex>
// CHECK: arith.index_cast %[[COL]] : vector<64xindex> to vector<64xi32>
// AVX2-LABEL: func.func @index_in_partial_reduction
// AVX2: %[[STEP:.*]] = vector.step : vector<32xindex>
// AVX2: scf.for %[[J:.*]] = %{{.*}} to %c256 step %c32 iter_args
// AVX2: %[[B:.*]] = vector.broadcast %[[J]] : index to vector<32xindex>
// AVX2: arith.addi %[[STEP]], %[[B]] : vector<32xindex>
func.func @index_in_partial_reduction(%x: tensor<3x256xf32>) -> tensor<3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x256xf32>) outs(%c : tensor<3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i32
    %jf = arith.sitofp %ji : i32 to f32
    %m = arith.mulf %a, %jf : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// -----

// A fill of a contiguous block of rows (one image's accumulators, rows of
// 66 with a remainder of lanes) is filled flat: one loop of whole vectors
// over its 7 * 5 * 66 = 2310 elements and one remainder, the block's
// reshapes around it. Filled by rows, it was a short loop and a 2-lane
// store per row, which LLVM made one memset per row and unrolled. Rows
// that are not whole (64 of 66) are not contiguous and keep their rows.
// CHECK-LABEL: func.func @flat_fill
// CHECK: %[[A:.*]] = tensor.extract_slice %arg0[1, 0, 0, 0] [1, 7, 5, 66]
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[A]] {{\[}}[0, 1, 2, 3]] : tensor<1x7x5x66xf64> into tensor<2310xf64>
// CHECK: scf.for %{{.*}} = %c0 to %c2304 step %c8 iter_args(%{{.*}} = %[[FLAT]])
// CHECK: vector.transfer_write %{{.*}} : vector<8xf64>, tensor<2310xf64>
// CHECK: vector.transfer_write %{{.*}}[%c2304] {{.*}} : vector<6xf64>, tensor<2310xf64>
// CHECK: tensor.expand_shape %{{.*}} output_shape [1, 7, 5, 66] : tensor<2310xf64> into tensor<1x7x5x66xf64>
// CHECK: %[[B:.*]] = tensor.extract_slice %arg0[1, 0, 0, 1] [1, 7, 5, 64]
// CHECK-NOT: tensor.collapse_shape
// CHECK: vector.transfer_write %{{.*}} : vector<1x1x1x8xf64>, tensor<1x7x5x64xf64>
// CHECK: return
func.func @flat_fill(%t: tensor<2x7x5x66xf64>, %x: f64) -> (tensor<1x7x5x66xf64>, tensor<1x7x5x64xf64>) {
  %a = tensor.extract_slice %t[1, 0, 0, 0] [1, 7, 5, 66] [1, 1, 1, 1] : tensor<2x7x5x66xf64> to tensor<1x7x5x66xf64>
  %fa = linalg.fill ins(%x : f64) outs(%a : tensor<1x7x5x66xf64>) -> tensor<1x7x5x66xf64>
  %b = tensor.extract_slice %t[1, 0, 0, 1] [1, 7, 5, 64] [1, 1, 1, 1] : tensor<2x7x5x66xf64> to tensor<1x7x5x64xf64>
  %fb = linalg.fill ins(%x : f64) outs(%b : tensor<1x7x5x64xf64>) -> tensor<1x7x5x64xf64>
  return %fa, %fb : tensor<1x7x5x66xf64>, tensor<1x7x5x64xf64>
}
