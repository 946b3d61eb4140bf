//===- HarpOps.td - harp operations ------------------------*- tablegen -*-===//

#ifndef HARP_DIALECT_HARP_IR_HARPOPS_TD
#define HARP_DIALECT_HARP_IR_HARPOPS_TD

include "harp/Dialect/Harp/IR/HarpBase.td"
include "harp/Dialect/Harp/IR/HarpAttrs.td"
include "harp/Dialect/Harp/IR/HarpInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Views
//===----------------------------------------------------------------------===//

def Harp_ViewOp : Harp_Op<"view", [Pure, DeclareOpInterfaceMethods<HarpDifferentiableOpInterface>]> {
  let summary = "zero-copy re-indexing of a tensor";
  let description = [{
    `harp.view` re-indexes its source through a `#harp.view` layout: element
    `i` of the result is `source[map(i)]` where the mask holds and the pad
    value elsewhere. No data moves: lowering folds the layout into the
    indexing maps of the kernels that read the view.

    The element type is preserved. The verifier checks that the map and mask
    arities match the ranks and that every unmasked result index reads inside
    the source (exactly, with `floordiv` and `mod`, over the whole result box
    intersected with the mask).

    ```mlir
    // transpose
    %t = harp.view %x <(d0, d1) -> (d1, d0)>
        : tensor<3x4xf32> -> tensor<4x3xf32>
    // broadcast a row over 8 rows
    %b = harp.view %row <(d0, d1) -> (d1)>
        : tensor<4xf32> -> tensor<8x4xf32>
    // pad by one on each side
    %p = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4)>
        : tensor<4xf32> -> tensor<6xf32>
    ```
  }];
  let arguments = (ins Harp_Tensor:$source, Harp_ViewAttr:$layout);
  let results = (outs Harp_Tensor:$result);
  let assemblyFormat = [{
    $source $layout attr-dict `:` type($source) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// map_reduce
//===----------------------------------------------------------------------===//

def Harp_MapReduceOp : Harp_Op<"map_reduce", [
    Pure, IsolatedFromAbove, SingleBlock,
    DeclareOpInterfaceMethods<HarpDifferentiableOpInterface>]> {
  let summary = "element-wise map followed by an optional reduction";
  let description = [{
    All operands share one shape, the iteration domain (with no operands the
    domain is the result shape). For every index of the domain the region
    maps the operands' elements (its block arguments, in operand order) and
    `harp.index` values to one scalar with `arith`, `math` and `complex` ops,
    and yields it. Without `reduce` the result has the domain's shape. With
    `reduce(kind, dims = [...])` the mapped values are combined over `dims`
    with `sum`, `prod`, `max`, `min` (signed for integers, NaN-propagating
    for floats, `or`/`and` for `i1`) or `umax`/`umin` (unsigned integers);
    the reduced dims are dropped from the result shape, or kept with size 1
    under `keepdim`.

    The region is isolated from above: constants live inside it.

    ```mlir
    // matmul: broadcast views then multiply and sum over k
    %c = harp.map_reduce ins(%a, %b : tensor<4x8x16xf32>, tensor<4x8x16xf32>) {
    ^bb0(%x: f32, %y: f32):
      %m = arith.mulf %x, %y : f32
      harp.yield %m : f32
    } reduce(sum, dims = [2]) : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins
    Variadic<Harp_Tensor>:$inputs,
    OptionalAttr<Harp_ReductionKindAttr>:$kind,
    DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$dims,
    UnitAttr:$keepdim
  );
  let results = (outs Harp_Tensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let builders = [
    // The body from a callback, as tensor.generate and linalg.generic take
    // it: `bodyBuilder` gets the block's arguments (one scalar per input)
    // and returns the value to yield; the builder adds the harp.yield.
    OpBuilder<(ins "::mlir::Type":$resultType, "::mlir::ValueRange":$inputs,
      "::llvm::function_ref<::mlir::Value(::mlir::OpBuilder &, ::mlir::Location, ::mlir::ValueRange)>":$bodyBuilder,
      CArg<"std::optional<::mlir::harp::ReductionKind>", "std::nullopt">:$kind,
      CArg<"::llvm::ArrayRef<int64_t>", "{}">:$dims,
      CArg<"bool", "false">:$keepdim)>
  ];
  let assemblyFormat = [{
    (`ins` `(` $inputs^ `:` type($inputs) `)`)? custom<IsolatedBody>($body)
    (`reduce` `(` custom<ReductionKind>($kind)^ `,` `dims` `=` $dims
     (`,` `keepdim` $keepdim^)? `)`)?
    attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let hasCanonicalizer = 1;
  let hasFolder = 1;
  let extraClassDeclaration = [{
    /// The shape every operand has and every harp.index ranges over.
    ::llvm::ArrayRef<int64_t> getDomainShape();
    bool hasReduction() { return getKind().has_value(); }
  }];
}

def Harp_IndexOp : Harp_Op<"index", [Pure, HasParent<"MapReduceOp">]> {
  let summary = "current index of the enclosing map_reduce along one dim";
  let description = [{
    Inside a `harp.map_reduce` region, the current position along iteration
    domain dimension `dim`.

    ```mlir
    %i = harp.index 0
    ```
  }];
  let arguments = (ins I64Attr:$dim);
  let results = (outs Index:$result);
  let assemblyFormat = "$dim attr-dict";
  let hasVerifier = 1;
}

def Harp_YieldOp : Harp_Op<"yield", [
    Pure, Terminator, ReturnLike, HasParent<"MapReduceOp">]> {
  let summary = "yields the mapped scalar of a map_reduce region";
  let description = [{
    Terminates a `harp.map_reduce` region with the one scalar it maps to.

    ```mlir
    harp.yield %v : f32
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Harp_ConcatOp : Harp_Op<"concat", [Pure, DeclareOpInterfaceMethods<HarpDifferentiableOpInterface>]> {
  let summary = "concatenate tensors along one dim";
  let description = [{
    All operands have the result's rank and element type and agree on every
    dimension except `dim`, whose sizes add up to the result's.

    ```mlir
    %c = harp.concat dim(1) %a, %b
        : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Harp_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs Harp_Tensor:$result);
  let assemblyFormat = [{
    `dim` `(` $dim `)` $inputs attr-dict `:` functional-type($inputs, $result)
  }];
  let hasVerifier = 1;
}

def Harp_GatherOp : Harp_Op<"gather", [Pure, DeclareOpInterfaceMethods<HarpDifferentiableOpInterface>]> {
  let summary = "gather along a dim with an index tensor (torch.gather)";
  let description = [{
    `result[i][j][k] = input[index[i][j][k]][j][k]` for `dim = 0`, and so on:
    the result has the index's shape; `index` has the input's rank and is no
    larger than the input in every dim but `dim`. Indices outside
    `[0, input.shape[dim])` are undefined behaviour, as in PyTorch.

    ```mlir
    %g = harp.gather %x[%idx] dim(1)
        : (tensor<4x5xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
    ```
  }];
  let arguments = (ins Harp_Tensor:$input, Harp_IndexTensor:$index,
                       I64Attr:$dim);
  let results = (outs Harp_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $index `]` `dim` `(` $dim `)` attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Harp_ScatterAddOp : Harp_Op<"scatter_add", [
    Pure, AllTypesMatch<["dest", "result"]>,
    DeclareOpInterfaceMethods<HarpDifferentiableOpInterface>]> {
  let summary = "add src into a copy of dest at index positions";
  let description = [{
    Value semantics of `Tensor.scatter_add_`: the result is `dest` with
    `src[i][j][k]` added at `[index[i][j][k]][j][k]` for `dim = 0`, and so
    on. `index`, `src` and `dest` have one rank; `index` is no larger than
    `src` in any dim and no larger than `dest` in any dim but `dim`.

    ```mlir
    %s = harp.scatter_add %src into %dest[%idx] dim(0)
        : tensor<2x3xf32> into tensor<5x3xf32>[tensor<2x3xi64>]
    ```
  }];
  let arguments = (ins Harp_Tensor:$src, Harp_Tensor:$dest,
                       Harp_IndexTensor:$index, I64Attr:$dim);
  let results = (outs Harp_Tensor:$result);
  let assemblyFormat = [{
    $src `into` $dest `[` $index `]` `dim` `(` $dim `)` attr-dict `:`
    type($src) `into` type($dest) `[` type($index) `]`
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

def Harp_RandOp : Harp_Op<"rand", [Pure, DeclareOpInterfaceMethods<HarpDifferentiableOpInterface>]> {
  let summary = "counter-based uniform random numbers in [0, 1)";
  let description = [{
    Fills a float tensor with uniform numbers in `[0, 1)` from a
    counter-based generator (Philox-2x32-10): element `i` (row-major linear
    index) depends only on the seed and `i`, so results are deterministic
    and independent of how the kernel is tiled or parallelised.

    The seed is either a constant attribute or a 0-d `i64` tensor operand,
    known only at run time (a new seed per training step then reuses the
    compiled code, as dropout needs); the same seed value gives the same
    numbers either way.

    ```mlir
    %r = harp.rand seed(42) : tensor<4x4xf32>
    %q = harp.rand seed(%s) : tensor<4x4xf32>   // %s : tensor<i64>
    ```
  }];
  let arguments = (ins Optional<0DTensorOf<[I64]>>:$dynamic_seed,
                       OptionalAttr<I64Attr>:$seed);
  let results = (outs Harp_FloatTensor:$result);
  let assemblyFormat = [{
    `seed` `(` custom<Seed>($dynamic_seed, type($dynamic_seed), $seed) `)`
    attr-dict `:` type($result)
  }];
  let builders = [
    // A constant seed.
    OpBuilder<(ins "::mlir::Type":$resultType, "int64_t":$seed), [{
      build($_builder, $_state, resultType, ::mlir::Value(),
            $_builder.getI64IntegerAttr(seed));
    }]>,
    // A seed read at run time from a 0-d i64 tensor.
    OpBuilder<(ins "::mlir::Type":$resultType, "::mlir::Value":$seed), [{
      build($_builder, $_state, resultType, seed, ::mlir::IntegerAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def Harp_ArangeOp : Harp_Op<"arange", [Pure, DeclareOpInterfaceMethods<HarpDifferentiableOpInterface>]> {
  let summary = "an arithmetic sequence start, start + step, ...";
  let description = [{
    A rank-1 tensor with `result[i] = start + i * step`. `start` and `step`
    are typed like the result's elements (an integer or float type other
    than `i1`); `step` is non-zero and integer sequences must not overflow.

    ```mlir
    %a = harp.arange start(0 : i64) step(1 : i64) : tensor<10xi64>
    %b = harp.arange start(1.0 : f32) step(0.5 : f32) : tensor<4xf32>
    ```
  }];
  let arguments = (ins TypedAttrInterface:$start, TypedAttrInterface:$step);
  let results = (outs Harp_Tensor:$result);
  let assemblyFormat = [{
    `start` `(` $start `)` `step` `(` $step `)` attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Materialisation
//===----------------------------------------------------------------------===//

def Harp_ContiguousOp : Harp_Op<"contiguous", [
    Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<HarpDifferentiableOpInterface>]> {
  let summary = "materialise a tensor; fusion never crosses it";
  let description = [{
    Returns its operand, computed into its own buffer. Views and map_reduce
    producers are not fused through a `harp.contiguous`.

    ```mlir
    %c = harp.contiguous %t : tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Harp_Tensor:$input);
  let results = (outs Harp_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Differentiation
//===----------------------------------------------------------------------===//

def Harp_AutodiffOp : Harp_Op<"autodiff", [
    AttrSizedOperandSegments, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "primal results and reverse-mode gradients of a function";
  let description = [{
    Calls `@callee` on `args` and returns its results followed by the
    gradients of `sum(result_k * seed_k)` with respect to the arguments listed
    in `wrt` (strictly increasing indices of float or complex arguments).
    `seed` gives one cotangent per callee result, typed like it; it may be
    omitted when the callee's first result is a float scalar or 0-d float
    tensor (a loss), which then has cotangent 1. The callee's other results
    are then auxiliary outputs: returned with the loss but not
    differentiated (the running statistics a training step updates, computed
    in the same pass over the forward as the loss and its gradients). The
    `harp-autodiff` pass replaces this op by a call to a generated gradient
    function.

    ```mlir
    %loss, %gw = harp.autodiff @loss(%x, %w) wrt [1]
        : (tensor<8x4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
    // @stats returns (loss, mean): the mean comes back, undifferentiated.
    %l, %mean, %g = harp.autodiff @stats(%x, %w) wrt [1]
        : (tensor<8x4xf32>, tensor<4xf32>)
        -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$args,
                       Variadic<AnyType>:$seeds, DenseI64ArrayAttr:$wrt);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $callee `(` $args `)` (`seed` `(` $seeds^ `:` type($seeds) `)`)?
    `wrt` $wrt attr-dict `:` functional-type($args, $results)
  }];
  let hasVerifier = 1;
}

#endif // HARP_DIALECT_HARP_IR_HARPOPS_TD
