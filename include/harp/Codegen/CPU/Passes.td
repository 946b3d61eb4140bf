//===- Passes.td - harp code generation for CPUs -----------*- tablegen -*-===//
//
// harp code generation for CPUs.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_CODEGEN_CPU_PASSES_TD
#define HARP_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def HarpPackContractionsPass : Pass<"harp-pack-contractions", "func::FuncOp"> {
  let summary = "Pack wide matmuls' right operands into panels, copy transposed left ones, turn correlations into matmuls";
  let description = [{
    Runs on linalg on tensors before `harp-tile-and-vectorize` (the first
    step of the `harp-vectorize` pipeline). First, a sum of products at
    the function's top level loses its loops of one iteration
    (`linalg::dropUnitDims`; a 1x1 convolution's taps, a grouped
    convolution's dims of one), unless m, n or k of a contraction is only
    such loops (a vector-matrix product); and each run of consecutive m, n
    or k loops of a contraction that every operand reads as consecutive
    dims (a linear layer's batch and tokens) becomes one loop
    (`linalg::collapseOpIterationDims`; batch dims stay), so that the
    plans below and the cache blocks see whole dims.

    An operand read with a stride and no window (a strided 1x1
    convolution's image, `X[n, c, 2 * oh, 2 * ow]`; that convolution's
    weight gradient is a correlation, below) gets a dense copy of what it reads, `Xs[n, c, oh, ow]`,
    read as a projected permutation: harp-tile-and-vectorize cannot load a
    vector of the strided operand, so the contraction ran as scalar loops
    (4.5 GFLOP/s for a ResNet shortcut on an AMD EPYC Zen 4, 98 GFLOP/s
    copied). The copy is one strided pass over the elements read; an
    operand that reads every dim of the op (each element read once) is left
    as it is.

    A matmul (one m, n and k dim,
    no batch) whose n is wider than a cache block and a multiple of the
    register tile's width w (`register-vectors` x vector length) has its
    right operand B (K x N, or N x K when read transposed, as a gradient's
    W^T) copied into panels Bp (N/w x K x w); the matmul becomes a
    contraction over (m, panel, column, k) writing C as M x N/w x w (a free
    reshape of M x N), whose register tile reads its K x w panel
    contiguously where it read w columns of rows N apart (which share cache
    sets when N is a large power of two). The copy costs one pass over B.
    The cache block's width follows from `l2-cache` as in
    `harp-tile-and-vectorize` (or `cache-n`).

    A right operand read transposed (`nn.Linear`'s `x @ W^T`, a gradient's
    `G @ W^T`, attention's `q @ k^T`) is never read in place, whatever the
    caches: each lane of its register tile would be a scalar load K
    elements from the next. It is packed into panels wherever n is a
    multiple of w (from B reshaped to N/w x w x K, so that the copy is a
    permutation, moved in square tiles transposed in registers), and any
    other contraction reading it so gets a copy with n innermost and its
    other dims in their order. "Transposed" means contiguous along a k dim
    with the result's innermost dim (n) further out, wherever the other
    dims sit: batched products, attention's keys [L, B, H, D] read as
    (n, b, h, k) (copied to [B, H, D, L]), a weight gradient summed over
    batch and rows (two k dims). A single column (n = 1) is left alone.

    A matmul that would be packed (or is read transposed) but whose n is no
    multiple of w is split along n (`linalg::splitOp`) into the whole panels,
    packed as above, and the last n mod w columns, a matmul of its own: read
    in place (or copied, transposed), and a single such column, N elements
    apart in B, copied into a 1 x K row read (n, k), contiguous along k,
    which `harp-tile-and-vectorize` computes as dot products. Unpacked, a
    97 x 1031 x 257 matmul read its register tiles' rows of B 1028 bytes
    apart, most vector loads split across two cache lines (0.57-0.79x
    OpenBLAS with AVX2 code, 1.04x split and packed).

    A matmul narrower than a cache block is packed too (split as above
    where n is no multiple of w) when B's rows are no multiple of a vector
    (at most 64 bytes) long, so that some of the register tile's loads
    cross cache lines, when the tile's k loop issues at least one load per
    cycle ((`register-rows` + `register-vectors`) x `fma-per-cycle` /
    (rows x vectors): a crossing load takes a second turn at the load
    ports) and when m spans at least 8 row tiles (the copy costs about one
    pass over B). Likewise from 8 row tiles on when B's rows are a page
    (4 KiB) or more apart: read in place, every k step of the register tile
    would load from a page of its own, which the hardware prefetchers (they
    stop at a page's edge) do not run ahead of.

    A left operand read transposed (contiguous along an m dim, its k dims
    further out: a weight gradient's `x^T @ dY`, summed over rows and
    batch) is copied with its k dims innermost, the others in their order,
    where consecutive k are a cache line (64 bytes) or more apart: in place,
    the register tile's k loop would load its elements of A from a line of
    their own at every k. Its k dims are copied in the order the right
    operand reads them and the k loops interchanged into that order, so that
    k dims held in opposite orders (attention's per-head weight gradient,
    `dY[t, b, h, e]` against `x[b, t, c]`) become one k loop too, over rows
    of B read one after the other.

    A correlation, a sum of products that reads one operand through a
    window whose reduced dims span more than its parallel ones (a
    convolution's weight gradient, `dW[f, c, kh, kw]` summed over
    `dY[n, f, oh, ow] X[n, c, oh + kh, ow + kw]`, strided or not; the
    convolution itself reduces the short filter dim and is left to
    `harp-rewrite-windows`), becomes a matmul: the windowed operand is
    copied into a column tensor, its parallel dims (the filter's, read by it
    alone) flattened into rows and the reduced dims, in the other operand's
    order, as columns; the matmul over (rows, the other operand's parallel
    dims, reduced dims) is then packed as above (dY, contiguous along a
    reduced dim, copied with its channels innermost), and its result added
    to the kernel's init in the kernel's order. Where the windowed operand
    is contiguous along a parallel dim (channels last, `E[n, t + k, c]`),
    the column tensor keeps those dims innermost (`Xc[n, t, (k, c)]`,
    copied in contiguous blocks) and is the matmul's right operand, the
    other operand copied with its reduced dims innermost as the left one.
    Only where each parallel dim is read by one operand (not a depthwise
    convolution's channel) and each reduced dim by both.

    A sum of products that reads an operand through a window on one of its
    outer dims while a reduced dim is innermost (a 1-d convolution over a
    transposed embedding, `E[n, o + k, c]`), so that each lane of an output
    vector would load a row apart, reads a copy of that operand with the
    window's dim innermost instead (a permutation, one pass over it).

    ```mlir
    // after: B (256 x 1024) packed into 32 panels of 256 x 32
    %bp = linalg.generic ... ins(%b : tensor<256x1024xf32>)
        outs(%e : tensor<32x256x32xf32>)
    %c = linalg.generic {... ["parallel", "parallel", "parallel", "reduction"]}
        ins(%a, %bp : ...) outs(%c3 : tensor<64x32x32xf32>)
    ```
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"512",
           "Width of the target's vector registers in bits">,
    Option<"registerRows", "register-rows", "unsigned", /*default=*/"8",
           "Rows (m) of a contraction's register tile, and of a "
           "convolution's output channels">,
    Option<"registerVectors", "register-vectors", "unsigned", /*default=*/"2",
           "Vectors per row (n) of a contraction's register tile">,
    Option<"cacheK", "cache-k", "unsigned", /*default=*/"0",
           "k extent of a contraction's cache block, used where it divides "
           "k (0: derived from l1-cache)">,
    Option<"cacheN", "cache-n", "unsigned", /*default=*/"0",
           "n extent of a contraction's cache block, used where it divides "
           "n (0: derived from l2-cache)">,
    Option<"l1Cache", "l1-cache", "unsigned", /*default=*/"49152",
           "L1 data cache in bytes, which bounds a contraction's k block">,
    Option<"l2Cache", "l2-cache", "unsigned", /*default=*/"1048576",
           "L2 cache in bytes, which bounds a contraction's n block">,
    Option<"fmaPerCycle", "fma-per-cycle", "double", /*default=*/"2",
           "Vector FMAs the core starts per cycle, which sets how many loads "
           "a register tile's k loop issues per cycle (misaligned rows of B "
           "are packed where that is at least one)">
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def HarpRewriteWindowsPass : Pass<"harp-rewrite-windows", "func::FuncOp"> {
  let summary = "Rewrite convolution windows into contiguous reads";
  let description = [{
    Runs on linalg on tensors before `harp-tile-and-vectorize` (a step of
    the `harp-vectorize` pipeline). Two rewrites of a convolution's window
    reads:

    * de-interleaving (option `deinterleave`): a strided window
      `X[..., s * ow + kw]` (s > 1) along the result's contiguous dim
      reads every s-th element, which the vectorizer cannot load as a
      vector. With kw = s * kq + r the kernel reads Xd[..., r, ow + kq] of
      X's columns sorted by phase (Xd[..., r, q] = X[..., s * q + r], one
      copy of X padded with zeros to whole phases); operands reading kw
      last (the filter) are padded with zeros and reshaped to
      [..., kq, r], and the kernel reduces over (kq, r);
    * flattening (option `flatten`): a window `X[..., oh + kh, ow + kw]`
      (a convolution: not a correlation, whose reduced window dims are
      longer than its output's, like a depthwise weight gradient's)
      whose output rows are no multiple of the register tile's width is
      computed on a grid as wide as X's rows Wp: grid output p = oh * Wp +
      ow reads X flattened at p + kh * Wp + kw, so the outputs are one long
      contiguous dim instead of short rows that each end in a remainder
      tile; the grid's Wp - OW extra outputs per row are dropped at the end
      (one strided copy). Where that costs more than copying the image once
      per tap column (option `planes`; a model of vector operations in
      docs/Lowering.md), the window is flattened onto K planes instead:
      plane j holds columns j to j + OW - 1 of X's rows, flattened to rows
      of OW, and output p = oh * OW + ow reads plane kw at p + kh * OW, so
      no output is wasted and the result is Y reshaped;
    * slicing (option `slice-images`), before flattening: the parallel dims
      that both the window input and the result read as a plain dim ahead
      of the window (the batch, a depthwise kernel's channels; not a
      convolution's output channels) are tiled by one, with the image's
      `tensor.pad` and the result's `linalg.fill` fused into the loops
      (marked `harp.parallel`), so each image is padded and flattened on
      its own and its padded copy and grid stay in the L1 cache.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"512",
           "Width of the target's vector registers in bits">,
    Option<"registerVectors", "register-vectors", "unsigned", /*default=*/"2",
           "Vectors per row of a register tile">,
    Option<"deinterleave", "deinterleave", "bool", /*default=*/"true",
           "De-interleave strided windows by phase">,
    Option<"flatten", "flatten", "bool", /*default=*/"true",
           "Compute unit-stride windows on a grid as wide as the image, "
           "flattened to one contiguous dim of outputs">,
    Option<"sliceImages", "slice-images", "bool", /*default=*/"true",
           "Flatten one image at a time: tile the dims a window kernel "
           "computes independently (batch, a depthwise kernel's channels) "
           "by one, with the image's padding fused into the loops">,
    Option<"planes", "planes", "bool", /*default=*/"true",
           "Flatten a window onto one copy of the image per tap column, "
           "rows as wide as the output's, where that costs less than the "
           "grid's extra outputs">,
    Option<"fmaPerCycle", "fma-per-cycle", "double", /*default=*/"2",
           "Vector FMAs the core starts per cycle, which prices the grid's "
           "extra outputs against the planes' copies">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def HarpSplitChainsPass : Pass<"harp-split-chains", "func::FuncOp"> {
  let summary = "Split element-wise kernels with long dependency chains "
                "into two loops per L1 strip";
  let description = [{
    Runs on linalg on tensors before `harp-tile-and-vectorize` (a step of
    the `harp-vectorize` pipeline). An element-wise kernel (a
    `linalg.generic` of static shape whose loops are all parallel, whose
    results share one permutation map and whose body is plain computation)
    whose body's longest chain of dependent operations is at least
    `min-steps` long is split in two:

    * the cut is a value v of the body whose backward slice in the body
      is read by nothing else outside it (and reads no output element),
      chosen so that the longer of the two chains (up to v, and from v to
      the yield) is shortest; it must be at most three quarters of the
      whole chain;
    * the kernel is tiled into strips along its results' contiguous dim
      (whole rows, and as many of them as fit, where rows are shorter): as
      many elements as keep each operand's strip, the inputs the body reads,
      the results and v, within half of `l1-cache` (a power of two; a
      remainder along that dim is split off and split the same way); the
      strip loops are marked `harp.parallel`. A piece whose strip would
      have fewer than eight vectors (a short remainder, 3-wide rows of a
      prime count) is left as it is;
    * each strip runs two kernels: the first computes v into a new tensor,
      the second the rest of the body from it (reading the inputs again,
      from L1 now).

    A chain counts about one step per operation: a division or square root
    three, `exp` ten, `tanh` eleven, `log` and `erf` twelve (the longest
    chains of their expansions by `harp-vector-cleanup`). Both kernels
    compute the body's operations as they are, so the results are bitwise
    those of the kernel before.

    Why: the iterations of an element-wise kernel are independent, but the
    core's out-of-order window holds only a few of them at once when each
    is a long chain; two loops of shorter chains keep more iterations in
    flight. The GELU chain (18 steps) ran 15% faster on a Zen 4 core with
    AVX2 code, 7% with AVX-512 code (docs/Lowering.md).

    ```mlir
    // before: 0.5 x (1 + tanh(0.798 (x + 0.0447 x^3)))
    %r = linalg.generic ... ins(%x : tensor<4096xf32>) ...
    // after (l1-cache=32768): 1024-element strips
    %r = scf.for %i = %c0 to %c4096 step %c1024 iter_args(%o = %init) ... {
      %s = linalg.generic ... -> tensor<1024xf32>  // 0.798 (x + 0.0447 x^3)
      %t = linalg.generic ins(%xs, %s ...) ...     // 0.5 x (1 + tanh(s))
      ...
    } {harp.parallel}
    ```
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"512",
           "Width of the target's vector registers in bits (a strip is at "
           "least one vector)">,
    Option<"l1Cache", "l1-cache", "unsigned", /*default=*/"49152",
           "L1 data cache in bytes: a strip's operands take half of it">,
    Option<"minSteps", "min-steps", "unsigned", /*default=*/"16",
           "Shortest chain of dependent operations that is split">
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def HarpTileAndVectorizePass : Pass<"harp-tile-and-vectorize", "func::FuncOp"> {
  let summary = "Tile linalg kernels to vector-sized tiles and vectorize them";
  let description = [{
    Runs on linalg on tensors, after `convert-harp-to-linalg`,
    `harp-fuse-epilogues`, `harp-pack-contractions` and
    `harp-rewrite-windows`, before bufferization (the main step of the
    `harp-vectorize` pipeline). Every `linalg` op with static loop ranges
    and integer or float elements is tiled with `scf.for` loops and its
    tile turned into `vector` ops. The tile shape depends on the kernel:

    * a contraction (matmul, batched matmul, a matmul packed by
      `harp-pack-contractions`: `inferContractionDims` finds m, n and k,
      n taken as the dim the result is contiguous along) is cut into cache
      blocks: a k block whose left-operand slice (register rows x k),
      reused by every register tile of the n block, takes at most half of
      `l1-cache` (the right operand's panels stream past it from L2), an n
      block whose k x n block of the right operand takes half of
      `l2-cache` (for a packed one, a block of whole panels, all of them
      where n needs no block), each the largest in [half, all] of
      its bound that divides the dim (or `cache-k` / `cache-n` where
      given and dividing; docs/Lowering.md derives them), then gets a
      register tile of `register-rows` x
      (`register-vectors` x vector length) accumulators over m and n, and a
      `k` loop of step one innermost; the accumulator tile is hoisted out of
      the `k` loop, so the loop body is loads and multiply-adds. A k-blocked
      one without n blocks also gets two halves of m of whole register tiles
      heading the nest, for threads to split; the rows left over are a
      remainder block, tiled like the rest once its shape is static. A
      single column (n = 1) whose largest input is contiguous along k loses
      that unit dim and is planned as the row reduction below (dot products
      along k);
    * a reduction whose largest input is contiguous along a reduced dim
      (row sums, softmax's max and sum, layer norm's statistics) is tiled
      one row at a time, then along that dim with `reduction-vectors`
      vectors of partial accumulators
      (`ReductionTilingStrategy::PartialReductionOuterReduction`), merged by
      one horizontal reduction after the loop;
    * a correlation whose largest input is read through a window `dp + dr`
      along its last dim, the longer dim dr reduced and at least a vector
      long (a depthwise convolution's weight gradient: the image's rows
      summed for each tap) gets the same vectors of partial sums along dr,
      carried across all the other reduced loops (tiled by one; where dr
      is shorter than `reduction-vectors` vectors, the next reduced dim
      out by `reduction-vectors`, for independent multiply-add chains) and
      reduced once per output;
    * a transpose (its largest input read along another dim than the result
      is written) gets a square tile, transposed in registers;
    * anything else (element-wise kernels, broadcasts, reductions over outer
      dims, convolution windows) is vectorized along the innermost dim of
      its result; a reduction that broadcasts the input it reads along that
      dim over a parallel dim (a convolution's image over its output
      channels) also gets `register-rows` rows along it, and rows of
      `register-vectors` vectors where its innermost dim is a multiple of
      that or at least twice as long; a reduction without such a dim
      (a depthwise convolution, a column sum) gets `reduction-vectors`
      vectors along it where its innermost dim is a multiple of that or at
      least eight times as long. A reduction along a
      contiguous dim shorter than a vector in a kernel that reuses its
      inputs (a 3x3 filter row) is planned this way too, not as a row
      reduction.

    Tile loops that the tile size does not divide are peeled, so the main
    loop's tiles have static shapes; unit dims of a tile are dropped before
    vectorizing (a window read `oh + kh` becomes a plain dim). Tile loops
    over parallel dims are marked `harp.parallel` for `harp-parallelize`.

    A kernel whose last register tile would be between one and several
    whole vectors wide (20 columns of 16-lane vectors) is first split so
    that it is not (the last 4 columns become a kernel of their own).
    `harp-vector-cleanup` then carries the accumulators in registers.
    A tile that reads an input with a stride and no window (`d * s + c`: a
    slice with a step, the column tensor of a strided convolution's weight
    gradient) reads it through a strided slice (`extract_slice [c] [n]
    [s]`) at `d`, which the vectorizer takes (it takes projected
    permutations only); the strided view's vector reads become element
    loads (a copy of every other column, 0.59 to 0.15 ms for 512 x 1024 on
    an AMD EPYC Zen 4). A kernel that gathers (`tensor.extract` in its
    body) with indices that divide its vector dim v by d, a multiple of the
    vector length that divides v's extent (a concatenation along the last
    dim of pieces read through head views, `c floordiv 32`, `c mod 32`: the
    gradient of nanoGPT's q, k, v split), is first computed with v split
    into (v / d, v mod d) and collapsed back: its reads become contiguous
    vector loads along v mod d, the clamps of `v mod d` are dropped (0.8 to
    0.09 ms a step for that gradient on an AMD EPYC Zen 4). Kernels that
    cannot be vectorized
    (complex or `i1` elements, dynamic shapes, maps with floordiv, mod or
    negative coefficients, reads the vectorizer rejects) are left as they
    are and lowered to scalar loops later.

    ```mlir
    // before
    %r = linalg.generic {... ["parallel", "parallel", "reduction"]} // matmul
    // after (vector-bits=512, f32): 8x32 register tile
    %r = scf.for %i ... step %c8 {
      scf.for %j ... step %c32 {
        %acc = vector.transfer_read ... : vector<8x32xf32>
        %t = scf.for %k ... iter_args(%a = %acc) -> vector<8x32xf32> {
          %p = arith.mulf %col, %row fastmath<contract> : vector<8x32xf32>
          %s = arith.addf %a, %p fastmath<contract> : vector<8x32xf32>
        }
        vector.transfer_write %t ...
    ```
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"512",
           "Width of the target's vector registers in bits">,
    Option<"registerRows", "register-rows", "unsigned", /*default=*/"8",
           "Rows (m) of a contraction's register tile, and of a "
           "convolution's output channels">,
    Option<"registerVectors", "register-vectors", "unsigned", /*default=*/"2",
           "Vectors per row (n) of a contraction's register tile">,
    Option<"reductionVectors", "reduction-vectors", "unsigned",
           /*default=*/"4",
           "Independent vector accumulators of a reduction">,
    Option<"cacheK", "cache-k", "unsigned", /*default=*/"0",
           "k extent of a contraction's cache block, used where it divides "
           "k (0: derived from l1-cache)">,
    Option<"cacheN", "cache-n", "unsigned", /*default=*/"0",
           "n extent of a contraction's cache block, used where it divides "
           "n (0: derived from l2-cache)">,
    Option<"l1Cache", "l1-cache", "unsigned", /*default=*/"49152",
           "L1 data cache in bytes, which bounds a contraction's k block">,
    Option<"l2Cache", "l2-cache", "unsigned", /*default=*/"1048576",
           "L2 cache in bytes, which bounds a contraction's n block">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def HarpVectorCleanupPass : Pass<"harp-vector-cleanup", "func::FuncOp"> {
  let summary = "Hoist, fold and finish the vector code of tiled kernels";
  let description = [{
    Runs after `harp-tile-and-vectorize` (the last step of the
    `harp-vectorize` pipeline): folds tensor slices into vector transfers,
    drops unit dims of transfers, marks transfers in bounds where the tile
    loops' ranges prove it, hoists loop-invariant subsets (the accumulator
    tiles, carried in registers through the k loop) and loop-invariant
    scalar and vector values out of their loops, lowers transposed and
    broadcasting transfers to minor-identity ones, turns single-element
    transfers into scalar `tensor.extract` / `tensor.insert` (their lowering
    to LLVM needs a unit innermost stride, which a result element written
    into a strided column lacks) and replaces `math` functions on `f32`
    (tanh, exp, log, erf, ...) by polynomial approximations, so they
    vectorize instead of becoming one libm call per element (tanh is
    harp's rational approximation, the others MLIR's; docs/Lowering.md,
    "Math functions"); without FMA (`fma=false`) their multiply-adds are
    split. A strided
    convolution's tap loops stop before the taps whose filter element is
    the zero padding `harp-rewrite-windows` added to whole phases (a loop
    over kq around one over r reading `expand_shape(pad(W))` at [kq, r],
    where that element only scales a product added to the accumulator):
    kq runs over the whole phase groups and the last, partial group is
    peeled off with fewer r (a 7x7 stride-2 filter: 7 taps per row, not 8).
    Last, a 16 x 16
    transpose of 32-bit elements becomes its 64 `vector.shuffle`s of rows:
    left whole, canonicalization would fold the rows inserted into it and
    extracted from it into one scalar move per element before
    `convert-vector-to-llvm` could lower it. (The multiply-adds of a
    reduction's accumulation are marked `contract` earlier, by
    `harp-tile-and-vectorize`.)

    ```mlir
    // before: the accumulator is read and written in every k step
    scf.for %k ... iter_args(%c = %init) -> (tensor<8x32xf32>) {
      %acc = vector.transfer_read %c[...] : tensor<8x32xf32>, vector<8x32xf32>
      ...
    // after: carried in registers
    %acc = vector.transfer_read %init[...]
    scf.for %k ... iter_args(%a = %acc) -> (vector<8x32xf32>) {
    ```
  }];
  let options = [
    Option<"fma", "fma", "bool", /*default=*/"true",
           "The target has fused multiply-add; without it the "
           "approximations' multiply-adds are split into arith.mulf + "
           "arith.addf (LLVM would make each math.fma one libm fmaf call "
           "per element), while a math.fma the program wrote stays">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def HarpLowerCopiesPass : Pass<"harp-lower-copies", "func::FuncOp"> {
  let summary = "Lower strided memref.copy to loops of vector transfers";
  let description = [{
    Runs on buffers, after bufferization. A `memref.copy` of static shape
    between strided memrefs that are not both contiguous (a padded image's
    interior, a window grid's rows copied out, a slice inserted into a
    larger buffer) otherwise becomes a call into the runtime, which moves
    one row at a time with `memmove`: for short rows that call costs more
    than the row (a depthwise 3x3 convolution over 144 channels of 56 x 56
    spent a third of its time in those calls). Here it becomes a loop nest
    over the dims longer than one, rows moved as vectors of the target's
    width (`vector-bits`) plus one shorter vector for the rest; where a
    row's elements are not contiguous, element by element. The outermost
    loop is marked `harp.parallel` (for `harp-parallelize`) when the copy
    moves at least `parallel-bytes`. Contiguous copies (one `memcpy`) and
    copies of other shapes and types are left alone.

    ```mlir
    // before
    memref.copy %src, %dst : memref<4x56xf32, strided<[64, 1]>>
        to memref<4x56xf32>
    // after (vector-bits=512)
    scf.for %i = %c0 to %c4 step %c1 {
      scf.for %j = %c0 to %c48 step %c16 {
        %v = vector.transfer_read %src[%i, %j], %pad {in_bounds = [true]}
        vector.transfer_write %v, %dst[%i, %j] {in_bounds = [true]}
      }
      %t = vector.transfer_read %src[%i, %c48], %pad {in_bounds = [true]}
          : ..., vector<8xf32>
      vector.transfer_write %t, %dst[%i, %c48] {in_bounds = [true]}
    }
    ```
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", /*default=*/"512",
           "Width of the target's vector registers in bits">,
    Option<"parallelBytes", "parallel-bytes", "unsigned",
           /*default=*/"65536",
           "Bytes a copy moves from which its outermost loop is marked "
           "parallel">
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def HarpParallelizePass : Pass<"harp-parallelize", "func::FuncOp"> {
  let summary = "Run the outermost parallel tile loops on threads";
  let description = [{
    Runs on buffers, after bufferization. `harp-tile-and-vectorize` marks the tile
    loops it makes over parallel dims (`harp.parallel`); this pass turns
    the outermost marked loop of each nest that carries no values into an
    `scf.parallel`, which `convert-scf-to-openmp` lowers to an OpenMP
    work-sharing loop. Tiles of parallel dims write disjoint parts of the
    result, so no synchronisation is needed. Loops inside a marked loop, and
    reduction loops, stay sequential. The marks are removed.

    A fork and join costs microseconds, so a loop runs on threads only
    where its nest does at least `min-work` lane operations: the sum over
    its operations of their vector lanes (1 for a scalar, the iterations of
    a linalg op on buffers, the elements of a copy), times the trip counts
    of the loops around them. A nest with a dynamic trip count or shape, or
    a call, counts as enough. At least two iterations, each running a loop
    nest (the cache blocks of a matmul), or eight are needed besides.

    `harp-to-llvm{threads=true}` runs it; the JIT then needs the OpenMP
    runtime (`libomp.so.5`), and runs the loops on `harp.get_num_threads()`
    threads (`OMP_NUM_THREADS` by default).
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t",
           /*default=*/"::mlir::harp::kDefaultParallelMinWork",
           "Lane operations a loop nest must do to run on threads">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

def HarpMPIToLLVMPass : Pass<"harp-mpi-to-llvm", "ModuleOp"> {
  let summary = "Lower the mpi dialect's collectives to calls into the MPI library";
  let description = [{
    Lowers the `mpi` dialect ops harp's collectives use (`harp::distributed`)
    to calls into the MPI library, for the ABI the module's DLTI entry
    `"MPI:Implementation"` names (`"OpenMPI"` or `"MPICH"`; MPICH when
    absent), as upstream's `convert-to-llvm` does. Upstream's patterns lower
    `mpi.init`, `comm_world`, `comm_rank`, `comm_split`, `send`, `recv`,
    `allreduce` and `finalize`; this pass adds `mpi.comm_size`
    (`MPI_Comm_size`) and `mpi.barrier` (`MPI_Barrier`), which MLIR 22 does
    not lower.

    An `mpi.allreduce` whose send and receive buffers are one value reduces
    in place: the send buffer becomes `MPI_IN_PLACE` (MPI forbids aliased
    buffers). Upstream names Open MPI's predefined reductions
    `ompi_mpi_sum`...; Open MPI exports `ompi_mpi_op_sum`..., and the pass
    renames them.

    Runs in `harp-to-llvm` before the memref conversion. It first checks
    what upstream's patterns assume without checking: every buffer is a 1-D
    memref with a unit stride (the call passes its pointer and its size),
    and its element type has an MPI datatype (f32, f64 and 8- to 64-bit
    integers, signless or unsigned). Anything else is an error at the op.

    ```mlir
    module attributes {dlti.map = #dlti.map<"MPI:Implementation" = "OpenMPI">} {
      func.func @f(%b: memref<8xf32>, %r: memref<8xf32>) {
        %comm = mpi.comm_world : !mpi.comm
        mpi.allreduce(%b, %r, MPI_SUM, %comm) : memref<8xf32>, memref<8xf32>
        return
      }
    }
    // after: llvm.call @MPI_Allreduce(%sendptr, %recvptr, %count,
    //   @ompi_mpi_float, @ompi_mpi_sum, @ompi_mpi_comm_world)
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // HARP_CODEGEN_CPU_PASSES_TD
