//===- Passes.td - harp conversion passes ------------------*- tablegen -*-===//

#ifndef HARP_CONVERSION_PASSES_TD
#define HARP_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertHarpToLinalgPass : Pass<"convert-harp-to-linalg", "ModuleOp"> {
  let summary = "Lower harp ops to linalg, tensor, scf and arith on tensors";
  let description = [{
    Every `harp.map_reduce` becomes one `linalg.generic`. Views that feed it
    are not copied: an unmasked view becomes the operand's indexing map
    (including `floordiv` and `mod`), and a masked view is read in the body
    with `linalg.index`, a clamped `tensor.extract` and a `select` on the
    mask. A view is materialised only where its value is used by something
    other than a map_reduce (a function result, concat, gather, ...).

    `harp.concat` becomes `tensor.insert_slice`s, `harp.gather` a
    `linalg.generic` with `tensor.extract`, `harp.scatter_add` an `scf.for`
    nest over the index, `harp.rand` a counter-based Philox-2x32-10 generator
    evaluated per element (the same numbers whatever the tiling), and
    `harp.arange` a `linalg.generic` over `linalg.index`. `harp.contiguous`
    materialises a view operand and is otherwise the identity.

    Out-of-range gather and scatter indices are clamped into range (PyTorch
    raises instead); `harp.autodiff` must be removed by `harp-autodiff`
    first.

    ```mlir
    // A transpose feeding an add: one linalg.generic, no copy.
    %t = harp.view %x <(d0, d1) -> (d1, d0)> : tensor<3x4xf32> -> tensor<4x3xf32>
    %s = harp.map_reduce ins(%t, %y : tensor<4x3xf32>, tensor<4x3xf32>) { ... }
    // becomes
    %s = linalg.generic {indexing_maps = [(d0, d1) -> (d1, d0),
                                          (d0, d1) -> (d0, d1), ...]}
    ```
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::complex::ComplexDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
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

def HarpGPUKernelsPass : Pass<"harp-gpu-kernels", "func::FuncOp"> {
  let summary = "Turn linalg kernels on buffers into gpu.launch ops";
  let description = [{
    The kernel step of `harp-to-gpu`; runs after bufferization. Named linalg
    ops and `memref.copy` are generalized first, then every `linalg.generic`
    with static loop ranges becomes one `gpu.launch` (or two), on one of two
    strategies:

    * **a thread per output**: the parallel dims are flattened onto
      `block-size` threads per block (the innermost dim fastest, so adjacent
      threads touch adjacent elements), and each thread runs the reduction
      dims, if any, as a sequential `scf.for` with the accumulators in
      registers. Element-wise kernels, and reductions with many outputs (a
      matmul), take this strategy.
    * **a block per output**: a reduction with at most
      `block-reduce-max-outputs` outputs whose body ends in one
      associative combiner (`addf`, `maximumf`, `andi`, ...) of the
      accumulator gets a block of threads per output. Each thread folds a
      strided share of the reduced elements from the combiner's neutral
      element, the block combines the partials with `gpu.all_reduce`
      (warp shuffles, then shared memory), and thread 0 folds the total into
      the output. When there are fewer outputs than `reduce-blocks`, each
      output gets several blocks: their totals go to a temporary buffer that
      a second launch combines.

    Host operations that are left reading or writing buffers (the `scf.for`
    nest of a scatter) run on one GPU thread. Kernels with dynamic shapes are
    rejected with a diagnostic.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "256",
           "Threads per block (at most 1024)">,
    Option<"blockReduceMaxOutputs", "block-reduce-max-outputs", "int64_t",
           "16384",
           "Reductions with at most this many outputs get a block of threads "
           "per output; more outputs get a thread each">,
    Option<"reduceBlocks", "reduce-blocks", "int64_t", "1024",
           "Blocks a block-per-output reduction aims to launch; fewer "
           "outputs are split over several blocks and combined in a second "
           "launch">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def HarpGPUHostPass : Pass<"harp-gpu-host", "func::FuncOp"> {
  let summary = "Put a host function's buffers on the device";
  let description = [{
    Runs after `harp-gpu-kernels`, on the host side of a function whose
    arguments are device buffers: `memref.alloc` and `memref.alloca` become
    `gpu.alloc`, `memref.dealloc` becomes `gpu.dealloc`, and a constant
    (`memref.get_global`) read by a kernel moves into the kernel (outlining
    then copies the global into the kernel's module: device memory).

    A kernel that reads a strided view (a subview, a padded interior) gets
    the view's base buffer and rebuilds the view with
    `memref.reinterpret_cast` inside the kernel, so every kernel argument is
    a plain buffer that the bare-pointer calling convention can pass.

    Any operation left outside a `gpu.launch` that reads or writes a buffer
    would touch device memory from the host: it is an error, reported at
    the operation.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

#endif // HARP_CONVERSION_PASSES_TD
