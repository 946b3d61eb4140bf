//===- Passes.td - harp dialect transformations ------------*- tablegen -*-===//

#ifndef HARP_DIALECT_HARP_TRANSFORMS_PASSES_TD
#define HARP_DIALECT_HARP_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def HarpFusePass : Pass<"harp-fuse"> {
  let summary = "Fuse element-wise map_reduce producers into their consumers";
  let description = [{
    Inlines an element-wise `harp.map_reduce` (one without a reduction) into
    a `harp.map_reduce` that reads it, directly or through views. The views
    move onto the producer's operands; a masked view becomes a `select` on
    the mask inside the fused region, so the pad is still what the consumer
    reads where the mask is false. Reductions are never inlined into their
    consumers. Nothing fuses across `harp.contiguous`, which is not a
    map_reduce.

    A producer read only on the way to one consumer, without a broadcast, is
    always fused: its work moves. A producer with several readers, or read
    through a broadcasting view (which repeats each of its elements), is
    fused into each map_reduce reader and recomputed there when its region
    has at most `recompute-bound` operations (constants are free);
    otherwise it stays a kernel of its own. Nothing is fused through a
    broadcast into a contraction (a sum of the product of two operands:
    matmul, convolution), which would recompute the producer per output
    column and hide the product from `harp-vectorize`'s register tiles. A
    fusion that would give the consumer more than `max-operands` distinct
    operands is not done.

    ```mlir
    %a = harp.map_reduce ins(%x : tensor<8xf32>) { exp } : tensor<8xf32>
    %s = harp.map_reduce ins(%a : tensor<8xf32>) { id } reduce(sum, dims = [0])
    // becomes
    %s = harp.map_reduce ins(%x : tensor<8xf32>) { exp } reduce(sum, dims = [0])
    ```
  }];
  let options = [
    Option<"recomputeBound", "recompute-bound", "unsigned", /*default=*/"8",
           "Largest region (in operations) of a producer with several "
           "readers that is recomputed in each of them">,
    Option<"maxOperands", "max-operands", "unsigned", /*default=*/"16",
           "Most distinct operands a fused map_reduce may have">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect"
  ];
}

def HarpAutodiffPass : Pass<"harp-autodiff", "ModuleOp"> {
  let summary = "Replace harp.autodiff by calls to generated gradient functions";
  let description = [{
    For each `harp.autodiff @f(args) seed(cotangents) wrt [...]`, generates
    (once per callee and set of wrt arguments) a function
    `@__harp_grad_<f>_<mask>` taking `f`'s arguments and one cotangent per
    result, returning `f`'s results followed by the gradients, and replaces
    the op with a call to it. An omitted seed is 1.

    The gradient function recomputes `f`'s body, then sweeps it in reverse,
    asking each op for its operands' cotangents through
    `DifferentiableOpInterface` (map_reduce regions are differentiated
    symbolically with the scalar rules of `ScalarDerivativeOpInterface`).
    Cotangents of a value used several times are summed. Only values that
    depend on a wrt argument get cotangents (activity analysis). A
    `func.call` is differentiated by generating the callee's gradient
    function; recursion is reported as an error. The output is ordinary
    harp IR, canonicalized, so the pass can differentiate it again.

    ```mlir
    %l, %g = harp.autodiff @loss(%x, %w) wrt [1]
        : (tensor<8x4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
    // becomes
    %one = arith.constant dense<1.0> : tensor<f32>
    %l, %g = call @__harp_grad_loss_01(%x, %w, %one) : (...) -> (...)
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::complex::ComplexDialect",
    "::mlir::func::FuncDialect",
    "::mlir::math::MathDialect"
  ];
}

def HarpFuseEpiloguesPass : Pass<"harp-fuse-epilogues", "func::FuncOp"> {
  let summary = "Fuse reductions into the element-wise kernels that read them";
  let description = [{
    Runs on linalg, after `convert-harp-to-linalg`. harp-fuse never inlines
    a reduction into its consumers (the value must be complete before it is
    read), so `relu(x @ W + b)` leaves a reduction kernel and an element-wise
    epilogue. This pass tiles such an all-parallel `linalg.generic` by one
    along its outer dims (its innermost dim stays whole) and fuses into the
    tile the reductions it reads, and their initialisation, when it is
    their only reader: one loop nest computes a row of the reduction and
    applies the epilogue while the row is in cache.

    ```mlir
    // before: two loop nests
    %mm = linalg.generic {... ["parallel", "parallel", "reduction"]} ...
    %y = linalg.generic {... ["parallel", "parallel"]} ins(%mm, %b ...)
    // after: one scf.for over rows with the row's reduction and epilogue
    %y = scf.for %i = ... iter_args(...) {
      %row = linalg.generic {...reduction...} // on a 1xN slice
      %out = linalg.generic {...}             // on the same slice
      ...
    }
    ```

    With `contractions=false` a contraction (matmul) keeps its own kernel:
    `harp-to-llvm` does so when it vectorizes, because a row of a matmul is
    a matrix-vector product, while the whole matmul gets register tiles and
    cache blocks from `harp-vectorize`; its epilogue is then a separate
    vectorized kernel over a result that is still in cache.
  }];
  let options = [
    Option<"contractions", "contractions", "bool", /*default=*/"true",
           "Also fuse contractions (matmuls) into their epilogues">
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def HarpVectorizePass : Pass<"harp-vectorize", "func::FuncOp"> {
  let summary = "Tile linalg kernels to vector-sized tiles and vectorize them";
  let description = [{
    Runs on linalg on tensors, after `convert-harp-to-linalg` and
    `harp-fuse-epilogues`, before bufferization. Every `linalg` op with static
    loop ranges and integer or float elements is tiled with `scf.for` loops
    and its tile turned into `vector` ops (a tile whose shape is not static,
    at the edge of a dim the tile size does not divide, is vectorized with
    masks). The tile shape depends on the kernel:

    * a contraction (matmul, batched matmul: `inferContractionDims` finds
      m, n and k) whose n is wider than a cache block has its right
      operand packed first (option `pack`): B (K x N) is copied into
      panels Bp (N/w x K x w), w the register tile's width, and the matmul
      becomes a contraction over (m, panel, column, k) whose register tile
      reads its K x w panel contiguously. A contraction is then
      cut into cache blocks: a k block whose left-operand slice (register
      rows x k) and right-operand panel (k x register-tile width) take at
      most 5/6 of `l1-cache`, an n block whose k x n block of the right
      operand takes half of `l2-cache`, each the largest in [half, all] of
      its bound that divides the dim (or `cache-k` / `cache-n` where
      given and dividing; docs/Lowering.md derives them), then gets a
      register tile of `register-rows` x
      (`register-vectors` x vector length) accumulators over m and n, and a
      `k` loop of step one innermost; the accumulator tile is hoisted out of
      the `k` loop, so the loop body is loads and multiply-adds;
    * a reduction whose largest input is contiguous along a reduced dim
      (row sums, softmax's max and sum, layer norm's statistics) is tiled
      one row at a time, then along that dim with `reduction-vectors`
      vectors of partial accumulators
      (`ReductionTilingStrategy::PartialReductionOuterReduction`), merged by
      one horizontal reduction after the loop;
    * a transpose (its largest input read along another dim than the result
      is written) gets a square tile, transposed in registers;
    * anything else (element-wise kernels, broadcasts, reductions over outer
      dims, convolution windows) is vectorized along the innermost dim of
      its result; a reduction that broadcasts its largest input along a
      parallel dim (a convolution's output channels) also gets
      `register-rows` rows along it, and rows of `register-vectors`
      vectors where its innermost dim is a multiple of that or at least
      eight times as long.

    A strided window `X[..., s * ow + kw]` (s > 1) along the result's
    contiguous dim is first de-interleaved (option `flatten-windows`):
    with kw = s * kq + r it reads Xd[..., r, ow + kq] of X's columns sorted
    by phase (Xd[..., r, q] = X[..., s * q + r], one copy of X padded with
    zeros to whole phases), operands reading kw last (the filter) padded
    with zeros and reshaped to [..., kq, r], and the kernel reduces over
    (kq, r): contiguous vectors instead of every s-th element.

    A convolution window `X[..., oh + kh, ow + kw]` whose output rows are no
    multiple of the register tile's width is first flattened (option
    `flatten-windows`): computed on a grid as wide as X's rows Wp, grid
    output p = oh * Wp + ow reads X flattened at p + kh * Wp + kw, so the
    outputs are one long contiguous dim instead of short rows that each
    end in a remainder tile; the grid's Wp - OW extra outputs per row are
    dropped at the end (one strided copy).

    Tile loops that the tile size does not divide are peeled, so the main
    loop's tiles have static shapes; unit dims of a tile are dropped before
    vectorizing (a window read `oh + kh` becomes a plain dim). Tile loops
    over parallel dims are marked `harp.parallel` for `harp-parallelize`.

    After vectorization, loop-invariant transfers are hoisted out of their
    loops, vector multiplies and adds are marked `contract` (LLVM forms
    FMAs), and `math` functions (tanh, exp, log, erf, ...) on `f32` are
    replaced by polynomial approximations, so they vectorize instead of
    becoming one libm call per element. Kernels that cannot be vectorized
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
           "Independent vector accumulators of an inner-dim reduction">,
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
    Option<"pack", "pack", "bool", /*default=*/"true",
           "Pack the right operand of matmuls wider than a cache block into "
           "register-tile panels">,
    Option<"flattenWindows", "flatten-windows", "bool", /*default=*/"true",
           "Rewrite convolution windows: strided windows de-interleaved by "
           "phase, unit-stride ones computed on a grid as wide as the image, "
           "flattened to one contiguous dim of outputs">
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

def HarpFullRankWritesPass : Pass<"harp-full-rank-writes", "func::FuncOp"> {
  let summary = "Give vector writes into tensors the rank of the tensor";
  let description = [{
    Runs on tensors, right before one-shot bufferization. A
    `vector.transfer_write` whose vector has fewer dims than its tensor (a
    `vector<4xf64>` into row 0 of a `tensor<1x5xf64>`) is rewritten to write
    a vector with the tensor's rank (`vector<1x4xf64>`, unit dims added by
    `vector.shape_cast`; a transposing map becomes a `vector.transpose`
    first) through an identity map.

    Why: one-shot bufferization asks each write whether it overwrites its
    whole tensor, and for a rank-reduced write MLIR 22 compares the vector's
    dims with the tensor's leading dims instead of the dims it writes
    (`vector<4>` against the `1` of `1x5`). It then concludes that the write
    covers the tensor, and when the write must go to a new buffer, that
    buffer is not initialised from the old contents: the elements the write
    does not cover (a peeled remainder column) read garbage. At full rank
    the comparison is right. Masked writes and maps with a broadcast dim are
    left alone.

    ```mlir
    // before
    %w = vector.transfer_write %v, %t[%c0, %c0] {in_bounds = [true]}
        : vector<4xf64>, tensor<1x5xf64>
    // after
    %v2 = vector.shape_cast %v : vector<4xf64> to vector<1x4xf64>
    %w = vector.transfer_write %v2, %t[%c0, %c0] {in_bounds = [true, true]}
        : vector<1x4xf64>, tensor<1x5xf64>
    ```
  }];
  let dependentDialects = ["::mlir::vector::VectorDialect"];
}

def HarpParallelizePass : Pass<"harp-parallelize", "func::FuncOp"> {
  let summary = "Run the outermost parallel tile loops on threads";
  let description = [{
    Runs on buffers, after bufferization. `harp-vectorize` marks the tile
    loops it makes over parallel dims (`harp.parallel`); this pass turns
    the outermost marked loop of each nest that carries no values into an
    `scf.parallel`, which `convert-scf-to-openmp` lowers to an OpenMP
    work-sharing loop. Tiles of parallel dims write disjoint parts of the
    result, so no synchronisation is needed. Loops inside a marked loop, and
    reduction loops, stay sequential. The marks are removed.

    `harp-to-llvm{threads=true}` runs it; the JIT then needs the OpenMP
    runtime (`libomp.so.5`), and `OMP_NUM_THREADS` sets the thread count.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

#endif // HARP_DIALECT_HARP_TRANSFORMS_PASSES_TD
