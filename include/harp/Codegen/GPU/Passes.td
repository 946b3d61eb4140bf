//===- Passes.td - harp code generation for GPUs -----------*- tablegen -*-===//
//
// harp code generation for GPUs.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_CODEGEN_GPU_PASSES_TD
#define HARP_CODEGEN_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

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
      matmul), take this strategy. An element-wise kernel that still
      launches `min-blocks` blocks with `elements-per-thread` outputs per
      thread takes that many: a block computes a chunk of
      `block-size * elements-per-thread` outputs, each thread outputs
      `block-size` apart (every access coalesced), loading all their inputs
      before computing any, so that several loads per thread are in flight.
    * **a block per output**: a reduction with at most
      `block-reduce-max-outputs` outputs whose body ends in one
      associative combiner (`addf`, `maximumf`, `andi`, ...) of the
      accumulator gets a block of threads per output. Each thread folds a
      strided share of the reduced elements from the combiner's neutral
      element, the block combines the partials with `gpu.all_reduce`
      (warp shuffles, then shared memory), and thread 0 folds the total into
      the output. When there are fewer outputs than `reduce-blocks`, each
      output gets several blocks: their totals go to a temporary buffer that
      a second launch combines. Where each thread folds at least
      `elements-per-thread` elements, it keeps that many independent
      accumulators and loads that many elements per step before folding
      any.

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
           "launch">,
    Option<"elementsPerThread", "elements-per-thread", "int64_t", "4",
           "Outputs per thread of large element-wise kernels, and independent "
           "accumulators per thread of block reductions (1 to 16)">,
    Option<"minBlocks", "min-blocks", "int64_t", "1024",
           "Element-wise kernels take several outputs per thread only while "
           "they still launch at least this many blocks">
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

def HarpMergeGPUModulesPass : Pass<"harp-merge-gpu-modules", "ModuleOp"> {
  let summary = "Put a module's GPU kernels in one gpu.module";
  let description = [{
    Runs after `gpu-kernel-outlining`, which gives every kernel a
    `gpu.module` of its own: each becomes a `gpu.binary` of its own, one
    `ptxas` process and one module load at run time each. This pass moves
    every kernel (and what it reads: the globals outlining copied in) into
    the first `gpu.module` and points the launches at it. A symbol that
    clashes with one already there is renamed, uses in its own module
    with it; a `memref.global` equal to the one already there is dropped
    and its uses read that one.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

#endif // HARP_CODEGEN_GPU_PASSES_TD
