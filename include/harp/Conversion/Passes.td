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

#endif // HARP_CONVERSION_PASSES_TD
