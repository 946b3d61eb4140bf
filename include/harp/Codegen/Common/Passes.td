//===- Passes.td - harp code generation shared by targets --*- tablegen -*-===//
//
// harp code generation shared by targets.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_CODEGEN_COMMON_PASSES_TD
#define HARP_CODEGEN_COMMON_PASSES_TD

include "mlir/Pass/PassBase.td"

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

    In the row tile, a reduction that accumulates a value costly to
    compute (one reaching a `math` op or a division) which the epilogue
    computes again from the same elements (a softmax's `exp(x - max)`,
    summed, then divided by the sum: harp-fuse recomputes it in both) is
    split: the value is computed once into the epilogue's output row, the
    reduction sums that row, and the epilogue finishes it in place
    (reading its output element where it recomputed the value). The row
    is in L1; the second `exp` per element was the cost of a softmax on
    8-lane vectors.

    Only kernels whose rows have at least `min-row` elements (16) are
    tiled so, and only where they read the reduction element by element or
    broadcast along the row (not through windows, whose rows would
    overlap). A reduction read through a broadcast along an outer dim (a
    batch norm's per-channel statistics, read by every (n, h) row of the
    channel) is not fused: each row would compute it again. It keeps its
    kernel, and is also not fused into an epilogue that another reduction
    made one.

    With `contractions=false` a contraction keeps its own kernel (a sum of
    the products of two inputs, whatever the maps: matmuls, and
    convolutions, whose windows linalg's contraction interface does not
    recognize),
    also where its epilogue reads another reduction that is fused:
    `harp-to-llvm` does so when it vectorizes, because a row of a matmul is
    a matrix-vector product, while the whole matmul gets register tiles and
    cache blocks from `harp-vectorize`; its epilogue is then a separate
    vectorized kernel over a result that is still in cache.
  }];
  let options = [
    Option<"contractions", "contractions", "bool", /*default=*/"true",
           "Also fuse contractions (matmuls) into their epilogues">,
    Option<"minRow", "min-row", "int64_t", /*default=*/"16",
           "Fuse only epilogues whose rows (innermost loop) have at least "
           "this many elements">
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
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

def HarpFunctionABIPass : Pass<"harp-function-abi", "ModuleOp"> {
  let summary = "Prepare public functions to be called from the host";
  let description = [{
    Marks every public `func.func` with a body for the C interface
    (`llvm.emit_c_interface`) and its tensor arguments as read-only for
    bufferization (`bufferization.writable = false`), so that kernels never
    write into their callers' inputs. The first step of `harp-to-llvm`.
  }];
}

def HarpKernelCSEPass : Pass<"harp-kernel-cse", "func::FuncOp"> {
  let summary = "Common-subexpression elimination without comparing every "
                "pair of kernels";
  let description = [{
    MLIR's `cse`, with the same result, in time linear in the number of
    kernels. Upstream CSE hashes an op with regions without its regions,
    so the top-level loop nests of a function's kernels with equal bounds
    and operands share one bucket, and each new one is compared region by
    region with all the others: quadratic (an LSTM unrolled over 64 time
    steps after harp-vectorize, 2,171 top-level loops: 2.1 s of CSE, a
    sixth of its lowering).

    This pass first gives every top-level op a value number: a hash of its
    name, attributes, properties, result types and the numbers of its
    operands, and for an op with regions of everything nested in it
    (values defined inside numbered by the order of their definition).
    Each top-level op with regions carries its number as an attribute
    while CSE runs, so two of them are compared only when their numbers
    are equal, which they are wherever CSE would merge them, also once the
    ops they read are merged. The attribute is removed after.
  }];
}

def HarpDistinctResultsPass : Pass<"harp-distinct-results", "func::FuncOp"> {
  let summary = "Give every tensor a function returns a value of its own";
  let description = [{
    Runs on tensors, right before bufferization. A function that returns
    the same tensor value more than once (`return %g, %g`: the gradients of
    `a - b` and `b - a` w.r.t. two inputs are one value after CSE, and a
    user may write it too) gets a copy (`linalg.copy` into a `tensor.empty`)
    for each repeat, so that each result bufferizes to its own buffer: the
    upstream pass that turns result buffers into out-parameters replaces
    each returned allocation by one out-parameter and crashes on an
    allocation returned twice.

    ```mlir
    // before
    return %g, %g : tensor<3xf64>, tensor<3xf64>
    // after
    %e = tensor.empty() : tensor<3xf64>
    %c = linalg.copy ins(%g : tensor<3xf64>) outs(%e : tensor<3xf64>) -> tensor<3xf64>
    return %g, %c : tensor<3xf64>, tensor<3xf64>
    ```
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def HarpDuplicateFillsPass : Pass<"harp-duplicate-fills", "func::FuncOp"> {
  let summary = "Give each in-place writer of a shared fill a fill of its own";
  let description = [{
    Runs on tensors, right before bufferization. A tensor built from
    constants alone (a `linalg.fill` of a `tensor.empty`, the loop nest of
    constant vector writes it vectorizes to, reshapes of those) that several
    ops use, at least one of them writing into it in place (a matmul's
    accumulator, a tile loop's init), is rebuilt for each such writer: CSE
    merges the identical zero fills of several matmuls into one tensor, and
    one-shot bufferization then gives each writer a copy of that buffer
    (read and written) where a fill of its own (written only) does.

    The producers cloned are those without memory effects whose tensor
    operands, and tensors their regions read from above, are themselves
    built from constants, and whose regions hold at most `max-ops`
    operations, so nothing costlier than a fill is computed twice. The
    clones go right after the shared value's producer. Readers keep the
    shared value; so does the first writer when there is no reader. Slices
    and reshapes of the value are neither: an `extract_slice` and the
    `insert_slice` writing it back bufferize in place; an op reading the
    value it writes into is only a writer.

    ```mlir
    // before: %z accumulates two matmuls
    %e = tensor.empty() : tensor<4x4xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %a = linalg.matmul ins(%x, %y : ...) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
    %b = linalg.matmul ins(%y, %x : ...) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
    // after: the second matmul accumulates into a fill of its own
    %e2 = tensor.empty() : tensor<4x4xf32>
    %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x4xf32>) -> tensor<4x4xf32>
    %b = linalg.matmul ins(%y, %x : ...) outs(%z2 : tensor<4x4xf32>) -> tensor<4x4xf32>
    ```
  }];
  let options = [
    Option<"maxOps", "max-ops", "unsigned", /*default=*/"32",
           "Most operations (regions included) a producer may hold to be "
           "cloned">
  ];
  let dependentDialects = [
    "::mlir::tensor::TensorDialect"
  ];
}

def HarpForwardFillsPass : Pass<"harp-forward-fills", "func::FuncOp"> {
  let summary = "Read a fill's value instead of its tensor; drop fills the "
                "kernel overwrites";
  let description = [{
    Runs on vectorized tensors, right before bufferization. A fill is a
    `linalg.fill` of a `tensor.empty`, a loop nest writing one splat vector
    into a `tensor.empty` (what harp-vectorize makes of a fill), or a
    reshape of either. A contraction accumulates into its zero fill: its
    register tiles read the fill's elements (`vector.transfer_read`) before
    their first FMA, so after bufferization a pass writes the zeros and
    another reads them back.

    1. A contraction's accumulator load (a `vector.transfer_read`, in
       bounds and unmasked, that becomes the initial value of a loop which
       multiplies and adds into it: a `contract` arith op or an FMA) whose
       elements surely hold a fill's value becomes a splat of that value,
       placed at the function's entry when it is a constant. The read's
       source is followed back to the fill through iteration arguments of
       `harp.parallel` loops (independent iterations: none wrote what
       another reads) and through vector writes, element inserts
       (`tensor.insert`) and loops whose writes miss the read's box.
    2. A fill whose tensor a loop nest then only writes into (no read
       left, no other use) and overwrites entirely becomes a
       `tensor.empty`: the writes' boxes, expanded over their loops, must
       cover the tensor. Under a reshape (a packed matmul's panels) the
       fill itself becomes empty and the reshape stays, and the fill is
       erased here: folded into an empty tensor of the panel shape, the
       result would bufferize apart from the caller's buffer and be copied
       into it.

    A reduction's partial sums are left alone unless they multiply and
    add (a variance's sum of squares): read once per row from a scratch
    buffer in L1, forwarding them saved nothing measurable, and a
    softmax's row with AVX2 code came out 23% slower, LLVM allocating the
    registers of its exponential's loop worse.

    Boxes are a write's region, one `[lo, hi)` per dim, constant or
    relative to a loop's induction variable; a loop expands its body's
    boxes over its constant bounds, exactly where each write is at least
    a step wide. What cannot be shown is left as it is: a k-blocked
    matmul's tiles read their accumulators from a loop that is not
    parallel, so its fill stays.

    ```mlir
    // before
    %z = scf.for %i = %c0 to %c64 step %c1 iter_args(%t = %empty) ... {
      %w = vector.transfer_write %zeros, %t[%i, %c0] : vector<64xf32>, tensor<64x64xf32>
      scf.yield %w
    } {harp.parallel}
    %c = scf.for %i = %c0 to %c64 step %c8 iter_args(%t = %z) ... {
      %acc = vector.transfer_read %t[%i, %c0] ... : tensor<64x64xf32>, vector<8x64xf32>
      ... FMAs into %acc ...
      %w = vector.transfer_write %sum, %t[%i, %c0] ...
      scf.yield %w
    } {harp.parallel}
    // after: %acc is a zero constant, %c's loop starts from tensor.empty
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def HarpProfileKernelsPass : Pass<"harp-profile-kernels", "ModuleOp"> {
  let summary = "Time every kernel of every function (HARP_PROFILE)";
  let description = [{
    Runs on buffers, after tiling, vectorization and harp-parallelize and
    before the loops are lowered. Every operation directly in a function's
    body that holds a region (a loop nest, a remaining linalg op) or copies
    memory (`memref.copy`) is a kernel. Each kernel is bracketed by two calls
    into harp's runtime:

    ```mlir
    %t = func.call @harp_profile_clock() : () -> i64
    scf.for ... { ... }
    %name = llvm.mlir.addressof @__harp_profile_3 : !llvm.ptr
    func.call @harp_profile_record(%name, %t) : (!llvm.ptr, i64) -> ()
    ```

    and every return records the whole call of its function under
    `@<function> (whole call)`, so the time outside kernels (allocation,
    scalar code) shows as the difference. `@__harp_profile_<n>` is a
    null-terminated string naming the kernel: its function and number in
    program order, its operation, the trip counts of its outermost loops,
    the floating-point operations one run of it does (each float op's lanes,
    two for a multiply-add, a linalg op's body at every point, times the trip
    counts around it; only where those loops have constant bounds),
    the buffers it writes (followed through views to the allocation or
    argument) and the source location it was built at, for example

    `@main #4 scf.for 16 x 2 x 8 (537 Mflop): writes memref<256x1024xf32> at mlp.py:12`

    The runtime (harp/Runtime/Profile.h) sums the nanoseconds and calls of
    each name; `HARP_PROFILE=1` prints the table when the process exits.
    Parallel loops are timed from the thread that starts them, so a kernel
    on several threads counts its wall time once. Functions without a body
    are left alone; so are functions named `harp_profile_*` and functions
    that already call `harp_profile_clock` (the pass run twice).
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect",
    "::mlir::func::FuncDialect"
  ];
}

def HarpOutlineKernelsPass : Pass<"harp-outline-kernels", "ModuleOp"> {
  let summary = "Move each kernel into a function of its own; merge equal ones";
  let description = [{
    Runs on buffers, after tiling, vectorization, harp-parallelize and
    harp-profile-kernels and before the loops are lowered. Every operation
    directly in a function's body that holds a loop (a loop nest, a
    remaining linalg op) or copies memory (`memref.copy`, whose memref
    arguments are passed with their static offsets made dynamic, so that
    copies into different places of one buffer share a kernel) is a kernel; each moves into a new private
    function `@<function>_kernel<n>` (n in program order, after its
    caller), with internal linkage and LLVM's `noinline` (LLVM would
    inline a function called once straight back), and is called in its
    place:

    ```mlir
    func.call @main_kernel3(%a, %b, %c)
        : (memref<64x64xf32>, memref<64xf32>, memref<64x64xf32>) -> ()
    ```

    The kernel's function takes the values the kernel uses from outside as
    arguments, except constants, `memref.get_global` and other operations
    without operands or effects, which it rematerializes (loop bounds stay
    constant), and returns the kernel's results. A kernel that would pass a
    value of a type other than a builtin memref, index, integer, float,
    vector or complex (an MPI communicator, which func-to-llvm cannot
    convert) stays where it is. LLVM then optimizes one function per kernel, in time linear in
    the number of kernels: in one function holding every loop nest of a
    training step its loop passes grew superlinearly (IndVarSimplify alone
    took 8.4 of 13 s for a GPT-style step).

    With `merge` (the default), a kernel function equal to an earlier one up
    to locations (the same layer repeated, the same kernel in forward and
    backward) is replaced by it, so it is compiled once. Functions without a
    body are left alone, and so is a function that holds one kernel and
    nothing else but constants and its return (a kernel function already:
    the pass run twice changes nothing).
  }];
  let options = [
    Option<"merge", "merge", "bool", /*default=*/"true",
           "Replace a kernel function equal to an earlier one by it">
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect"
  ];
}

#endif // HARP_CODEGEN_COMMON_PASSES_TD
