//===- HarpAttrs.td - harp attributes and enums ------------*- tablegen -*-===//

#ifndef HARP_DIALECT_HARP_IR_HARPATTRS_TD
#define HARP_DIALECT_HARP_IR_HARPATTRS_TD

include "harp/Dialect/Harp/IR/HarpBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Harp_ReductionKind : I32EnumAttr<"ReductionKind",
    "reduction applied by harp.map_reduce", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Prod", 1, "prod">,
      I32EnumAttrCase<"Max", 2, "max">,
      I32EnumAttrCase<"Min", 3, "min">,
      I32EnumAttrCase<"UMax", 4, "umax">,
      I32EnumAttrCase<"UMin", 5, "umin">
    ]> {
  let cppNamespace = "::mlir::harp";
  let genSpecializedAttr = 0;
}

def Harp_ReductionKindAttr
    : EnumAttr<Harp_Dialect, Harp_ReductionKind, "reduction"> {
  let assemblyFormat = "$value";
}

// The value a masked view reads where its mask is false.
def Harp_PadKind : I32EnumAttr<"PadKind", "pad value of a masked view", [
      I32EnumAttrCase<"Zero", 0, "zero">,
      I32EnumAttrCase<"One", 1, "one">,
      I32EnumAttrCase<"NegInf", 2, "-inf">,
      I32EnumAttrCase<"PosInf", 3, "+inf">,
      I32EnumAttrCase<"Value", 4, "value">
    ]> {
  let cppNamespace = "::mlir::harp";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// #harp.view
//===----------------------------------------------------------------------===//

def Harp_ViewAttr : Harp_Attr<"View", "view"> {
  let summary = "zero-copy layout: index map, optional mask and pad value";
  let description = [{
    A view layout says, for every index of the view's result, which element
    of the source it reads:

    * `map`: an affine map from result indices `(d0, ..., dn-1)` to source
      indices. It has no symbols; `floordiv`, `ceildiv` and `mod` by positive
      constants are allowed (reshapes need them).
    * mask (optional): an integer set over the result indices, written as
      `mask_ge = (d0, ...) -> (e0, e1, ...)` (every `ei >= 0`) and/or
      `mask_eq = (d0, ...) -> (f0, ...)` (every `fi == 0`); the mask holds
      where all of them do. Where it holds the view reads
      `source[map(i)]`; elsewhere it reads the pad. (Integer-set syntax
      `(d0) : (d0 >= 0)` cannot appear inside an attribute body, whose
      extent MLIR finds by balancing `<` and `>`; hence two maps.)
    * `pad`: the value read where the mask is false: `zero`, `one`, `-inf`,
      `+inf` or a numeric constant. For integer element types `-inf` and
      `+inf` are the signed minimum and maximum; for `i1` they are `false`
      and `true`. A pad other than `zero` requires a mask.

    Syntax:

    ```mlir
    #harp.view<(d0, d1) -> (d1, d0)>
    #harp.view<(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4)>
    #harp.view<(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d0 - d1), pad = -inf>
    #harp.view<(d0) -> (d0 floordiv 2), mask_eq = (d0) -> (d0 mod 2), pad = 0.5>
    ```

    In the custom form of `harp.view` the attribute is written without its
    `#harp.view` prefix.

    Whether every unmasked index reads inside the source is checked by the
    verifier of `harp.view`, which knows the shapes.
  }];
  let parameters = (ins
    "::mlir::AffineMap":$map,
    "::mlir::IntegerSet":$mask,
    "::mlir::harp::PadKind":$padKind,
    "::mlir::Attribute":$padValue
  );
  let builders = [
    AttrBuilder<(ins "::mlir::AffineMap":$map), [{
      return $_get($_ctxt, map, ::mlir::IntegerSet(),
                   ::mlir::harp::PadKind::Zero, ::mlir::Attribute());
    }]>,
    AttrBuilderWithInferredContext<(ins "::mlir::AffineMap":$map), [{
      return $_get(map.getContext(), map, ::mlir::IntegerSet(),
                   ::mlir::harp::PadKind::Zero, ::mlir::Attribute());
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Rank of the view's result (the map's dimension count).
    unsigned getResultRank() const { return getMap().getNumDims(); }
    /// Rank of the source the view reads (the map's result count).
    unsigned getSourceRank() const { return getMap().getNumResults(); }
    bool hasMask() const { return static_cast<bool>(getMask()); }
    /// A view with the identity map and no mask reads its source unchanged.
    bool isIdentity() const { return !hasMask() && getMap().isIdentity(); }
    /// The pad as a typed attribute of `elementType` (a
    /// `#complex.number` with zero imaginary part for complex types), or
    /// null if the pad cannot be represented in that type.
    ::mlir::TypedAttr getPadAttr(::mlir::Type elementType) const;
  }];
}

#endif // HARP_DIALECT_HARP_IR_HARPATTRS_TD
