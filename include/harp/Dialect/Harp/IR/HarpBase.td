//===- HarpBase.td - harp dialect definition ---------------*- tablegen -*-===//
//
// The harp dialect: lazy tensor programs built from zero-copy views and one
// unified map_reduce compute op.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_DIALECT_HARP_IR_HARPBASE_TD
#define HARP_DIALECT_HARP_IR_HARPBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Harp_Dialect : Dialect {
  let name = "harp";
  let cppNamespace = "::mlir::harp";
  let summary = "Tensor programs as views and map_reduce";
  let description = [{
    The `harp` dialect models tensor programs on builtin ranked tensors with
    static shapes. It has a deliberately small set of primitives:

    * `harp.view`: zero-copy re-indexing of a tensor through a `#harp.view`
      layout (an affine map from result to source indices, an optional mask
      and a pad value). Transpose, broadcast, reshape, slicing with steps,
      flips, padding, unfold windows and triangular masks are all views.
    * `harp.map_reduce`: the one compute op. A scalar region maps the
      operands' elements to one value, optionally followed by a `sum`, `prod`,
      `max` or `min` reduction over some dimensions. Element-wise arithmetic,
      casts, reductions, matmul and convolution are all map_reduce.
    * data movement (`harp.concat`, `harp.gather`, `harp.scatter_add`),
      sources (`harp.rand`, `harp.arange`), a materialisation point
      (`harp.contiguous`) and reverse-mode differentiation requests
      (`harp.autodiff`).

    Constants and fills are plain `arith.constant` ops.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::complex::ComplexDialect",
    "::mlir::func::FuncDialect",
    "::mlir::math::MathDialect"
  ];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    void registerAttributes();

    /// The memo of the view-layout analyses (ViewLayout.cpp). They solve
    /// integer programs, and the verifier (after every pass) and the
    /// canonicalizer (at every pattern application) ask them again about
    /// the same layouts: a composed view with a mask and floordiv/mod took
    /// 0.2 s per question. Keys are uniqued attributes, so an answer holds
    /// for the context's lifetime; the context's threads share the memo.
    ::mlir::Attribute lookupLayoutAnalysis(unsigned analysis,
                                           ::mlir::Attribute layout,
                                           ::mlir::Attribute shapes);
    void recordLayoutAnalysis(unsigned analysis, ::mlir::Attribute layout,
                              ::mlir::Attribute shapes,
                              ::mlir::Attribute result);

  private:
    std::mutex layoutAnalysisMutex;
    ::llvm::DenseMap<std::tuple<unsigned, ::mlir::Attribute,
                                ::mlir::Attribute>,
                     ::mlir::Attribute> layoutAnalyses;

  public:
  }];
}

//===----------------------------------------------------------------------===//
// Element and tensor types
//===----------------------------------------------------------------------===//

// Integers are signless: signedness is carried by the scalar ops a region
// uses, as in `arith`.
def Harp_IntElement : AnyTypeOf<[I1, I8, I16, I32, I64],
                                "harp integer element type (i1, i8, i16, i32, i64)">;
def Harp_FloatElement : AnyTypeOf<[F16, BF16, F32, F64],
                                  "harp float element type (f16, bf16, f32, f64)">;
def Harp_ComplexElement : AnyTypeOf<[Complex<F32>, Complex<F64>],
                                    "harp complex element type">;
def Harp_ElementType : AnyTypeOf<[Harp_IntElement, Harp_FloatElement,
                                  Harp_ComplexElement],
                                 "harp element type (f16, bf16, f32, f64, "
                                 "i1, i8, i16, i32, i64, complex<f32>, "
                                 "complex<f64>)">;

// Static shapes for now; dynamic dims are a later goal and only this
// constraint (and the verifiers that read `getShape()`) need to change.
def Harp_Tensor : StaticShapeTensorOf<[Harp_ElementType]>;
def Harp_FloatTensor : StaticShapeTensorOf<[Harp_FloatElement]>;
def Harp_IndexTensor : StaticShapeTensorOf<[I32, I64]>;

class Harp_Op<string mnemonic, list<Trait> traits = []>
    : Op<Harp_Dialect, mnemonic, traits>;

class Harp_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Harp_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // HARP_DIALECT_HARP_IR_HARPBASE_TD
