//===- HarpInterfaces.td - harp op interfaces --------------*- tablegen -*-===//

#ifndef HARP_DIALECT_HARP_IR_HARPINTERFACES_TD
#define HARP_DIALECT_HARP_IR_HARPINTERFACES_TD

include "mlir/IR/OpBase.td"

def HarpDifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::harp";
  let description = [{
    Reverse-mode derivative rule of a tensor op: given the cotangents of its
    results, build the cotangents of its operands. harp-autodiff calls it
    on every op of a function it differentiates, in reverse order.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds, at `b`'s insertion point, the cotangent of every operand
        whose `needed` flag is set, given `resultCotangents` (one per
        result; null means zero). Operands without a cotangent (not needed,
        or not differentiable) get null. Fails, with a diagnostic on the op,
        when a needed derivative cannot be built.
      }],
      "::mlir::LogicalResult", "buildCotangents",
      (ins "::mlir::OpBuilder &":$b,
           "::mlir::ArrayRef<::mlir::Value>":$resultCotangents,
           "::mlir::ArrayRef<bool>":$needed,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandCotangents)>
  ];
}

def HarpScalarDerivativeOpInterface
    : OpInterface<"ScalarDerivativeOpInterface"> {
  let cppNamespace = "::mlir::harp";
  let description = [{
    Reverse-mode derivative rule of a scalar op allowed in a map_reduce
    region (arith, math, complex ops, as external models). Complex values
    follow PyTorch's convention: for a real loss L of z = x + iy the
    gradient is dL/dx + i dL/dy, so a holomorphic f gets
    `z_bar = w_bar * conj(f'(z))`.
  }];
  let methods = [
    InterfaceMethod<[{
        Given the adjoint of the op's (single) result, builds the adjoint of
        each operand at `b`'s insertion point (null for operands with no
        derivative, such as a select's condition).
      }],
      "void", "buildAdjoints",
      (ins "::mlir::OpBuilder &":$b, "::mlir::Value":$resultAdjoint,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandAdjoints)>
  ];
}

#endif // HARP_DIALECT_HARP_IR_HARPINTERFACES_TD
