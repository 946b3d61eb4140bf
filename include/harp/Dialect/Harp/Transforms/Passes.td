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
    reads where the mask is false. Reductions are not inlined into their
    consumers, but for a plain sum over a fold of a contraction (a
    convolution's input gradient, its column tensor folded by a window sum,
    or several such folds that share it out): one contraction over both sets
    of reduced dims. Nothing fuses across `harp.contiguous`, which is not a
    map_reduce.

    A producer read only on the way to one consumer, without a broadcast, is
    always fused: its work moves. So is a producer whose readers share it
    out: each reads a distinct element at every point and no two read one
    in common (along some dim, every f-th element from different residues:
    the phases of a strided window's gradient). A producer with several readers, or read
    through a broadcasting view (which repeats each of its elements), is
    fused into each map_reduce reader and recomputed there when its region
    has at most `recompute-bound` operations (constants are free);
    otherwise it stays a kernel of its own. A producer that another reader
    keeps a kernel of its own (a reduction, a return) is recomputed only
    where that reads no more than its result would: a reduction takes at
    most one operand more, an element-wise reader operands holding at most
    the result's elements plus `recompute-read-slack` percent of them (50:
    1.5 times). Nothing is fused through a
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
           "Most distinct operands a fused map_reduce may have">,
    Option<"recomputeReadSlack", "recompute-read-slack", "unsigned",
           /*default=*/"50",
           "Elements, in percent of a producer's result, that its operands "
           "may hold beyond the result where an element-wise reader "
           "recomputes a producer another reader keeps a kernel of its own">
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

def HarpInlineSingleCallsPass : Pass<"harp-inline-single-calls", "ModuleOp"> {
  let summary = "Inline private functions called once and drop unused ones";
  let description = [{
    Inlines each `func.call` to a private `func.func` that has no other
    use (the gradient function `harp-autodiff` generates for a
    `harp.autodiff`, a graph helper called once) and erases the function;
    erases private functions nothing uses (the differentiated function,
    whose body its gradient function recomputes). Functions called from
    several places stay calls, so a subgraph used N times is compiled once.

    Inlined, a callee's results are the caller's values: bufferization
    writes them straight into the caller's result buffers, where a call
    would fill buffers of its own that the caller then copies.
    `harp-to-llvm` runs it right after `convert-harp-to-linalg`, once the
    kernels are formed (docs/Lowering.md says why); it works on any IR
    whose ops can be inlined.

    ```mlir
    func.func private @twice(%x: tensor<4xf32>) -> tensor<4xf32> { ... }
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = call @twice(%x) : (tensor<4xf32>) -> tensor<4xf32>
      return %y : tensor<4xf32>
    }
    // becomes @main with @twice's body in place of the call; @twice is gone
    ```
  }];
}

#endif // HARP_DIALECT_HARP_TRANSFORMS_PASSES_TD
