//===- HarpAttrs.cpp - harp attributes ------------------------------------===//

#include "harp/Dialect/Harp/IR/HarpAttrs.h"
#include "harp/Dialect/Harp/IR/HarpDialect.h"

#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::harp;

#include "harp/Dialect/Harp/IR/HarpEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "harp/Dialect/Harp/IR/HarpAttrs.cpp.inc"

void HarpDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "harp/Dialect/Harp/IR/HarpAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// ViewAttr syntax:
//   <map [, mask_ge = map] [, mask_eq = map] [, pad = zero|one|-inf|+inf|N]>
//===----------------------------------------------------------------------===//

static ParseResult parsePad(AsmParser &parser, PadKind &kind,
                            Attribute &value) {
  Builder b(parser.getContext());
  auto expected = [&] {
    return parser.emitError(parser.getCurrentLocation(),
                            "expected a pad value: zero, one, -inf, +inf or a "
                            "number");
  };
  StringRef keyword;
  if (succeeded(parser.parseOptionalKeyword(&keyword))) {
    if (keyword == "zero")
      kind = PadKind::Zero;
    else if (keyword == "one")
      kind = PadKind::One;
    else
      return expected();
    return success();
  }
  bool negative = succeeded(parser.parseOptionalMinus());
  if (!negative)
    (void)parser.parseOptionalPlus();
  if (succeeded(parser.parseOptionalKeyword(&keyword))) {
    if (keyword != "inf")
      return expected();
    kind = negative ? PadKind::NegInf : PadKind::PosInf;
    return success();
  }
  kind = PadKind::Value;
  APInt intValue;
  SMLoc loc = parser.getCurrentLocation();
  OptionalParseResult intResult = parser.parseOptionalInteger(intValue);
  if (intResult.has_value()) {
    if (failed(*intResult))
      return failure();
    // -2^63 .. 2^64 - 1: literals above 2^63 - 1 are i64 bit patterns read
    // as unsigned, and are stored as their two's complement.
    if (intValue.getActiveBits() > 64)
      return parser.emitError(loc, "pad value does not fit in 64 bits");
    uint64_t magnitude = intValue.getZExtValue();
    if (negative && magnitude > (uint64_t(1) << 63))
      return parser.emitError(loc, "pad value does not fit in 64 bits");
    auto v = static_cast<int64_t>(negative ? 0 - magnitude : magnitude);
    // 0 and 1 are the zero and one pads, so equal pads compare equal.
    if (v == 0 || v == 1)
      kind = v == 0 ? PadKind::Zero : PadKind::One;
    else
      value = b.getI64IntegerAttr(v);
    return success();
  }
  double d;
  if (parser.parseFloat(d))
    return failure();
  d = negative ? -d : d;
  if ((d == 0.0 && !std::signbit(d)) || d == 1.0)
    kind = d == 0.0 ? PadKind::Zero : PadKind::One;
  else
    value = b.getF64FloatAttr(d);
  return success();
}

Attribute ViewAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  AffineMap map;
  // The mask is spelled as two maps whose results must be >= 0 (mask_ge) and
  // == 0 (mask_eq): integer-set syntax would put unbalanced '>' characters
  // into the attribute body, which the generic attribute syntax cannot scan.
  AffineMap maskGe, maskEq;
  PadKind padKind = PadKind::Zero;
  Attribute padValue;
  if (parser.parseLess() || parser.parseAffineMap(map))
    return {};
  auto parseMask = [&](AffineMap &mask, StringRef name) -> ParseResult {
    SMLoc at = parser.getCurrentLocation();
    if (mask)
      return parser.emitError(at) << name << " given twice";
    if (parser.parseEqual() || parser.parseAffineMap(mask))
      return failure();
    if (mask.getNumResults() == 0)
      return parser.emitError(at) << name << " needs at least one expression";
    if (mask.getNumDims() != map.getNumDims() || mask.getNumSymbols() != 0)
      return parser.emitError(at)
             << name << " must range over the " << map.getNumDims()
             << " result dims of the view map, without symbols";
    return success();
  };
  while (succeeded(parser.parseOptionalComma())) {
    if (succeeded(parser.parseOptionalKeyword("mask_ge"))) {
      if (parseMask(maskGe, "mask_ge"))
        return {};
      continue;
    }
    if (succeeded(parser.parseOptionalKeyword("mask_eq"))) {
      if (parseMask(maskEq, "mask_eq"))
        return {};
      continue;
    }
    if (succeeded(parser.parseOptionalKeyword("pad"))) {
      if (parser.parseEqual() || parsePad(parser, padKind, padValue))
        return {};
      continue;
    }
    parser.emitError(parser.getCurrentLocation(),
                     "expected 'mask_ge', 'mask_eq' or 'pad'");
    return {};
  }
  if (parser.parseGreater())
    return {};
  IntegerSet mask;
  if (maskGe || maskEq) {
    SmallVector<AffineExpr> constraints;
    SmallVector<bool> eqFlags;
    if (maskGe) {
      llvm::append_range(constraints, maskGe.getResults());
      eqFlags.append(maskGe.getNumResults(), false);
    }
    if (maskEq) {
      llvm::append_range(constraints, maskEq.getResults());
      eqFlags.append(maskEq.getNumResults(), true);
    }
    mask = IntegerSet::get(map.getNumDims(), 0, constraints, eqFlags);
  }
  return ViewAttr::getChecked([&] { return parser.emitError(loc); },
                              parser.getContext(), map, mask, padKind,
                              padValue);
}

void ViewAttr::print(AsmPrinter &printer) const {
  raw_ostream &os = printer.getStream();
  os << '<';
  getMap().print(os);
  if (IntegerSet mask = getMask()) {
    SmallVector<AffineExpr> ge, eq;
    for (auto [expr, isEq] :
         llvm::zip(mask.getConstraints(), mask.getEqFlags()))
      (isEq ? eq : ge).push_back(expr);
    unsigned rank = mask.getNumDims();
    if (!ge.empty()) {
      os << ", mask_ge = ";
      AffineMap::get(rank, 0, ge, getContext()).print(os);
    }
    if (!eq.empty()) {
      os << ", mask_eq = ";
      AffineMap::get(rank, 0, eq, getContext()).print(os);
    }
  }
  switch (getPadKind()) {
  case PadKind::Zero:
    break;
  case PadKind::One:
    os << ", pad = one";
    break;
  case PadKind::NegInf:
    os << ", pad = -inf";
    break;
  case PadKind::PosInf:
    os << ", pad = +inf";
    break;
  case PadKind::Value:
    os << ", pad = ";
    printer.printAttributeWithoutType(getPadValue());
    break;
  }
  os << '>';
}

static std::string str(AffineExpr expr) {
  std::string s;
  llvm::raw_string_ostream os(s);
  expr.print(os);
  return s;
}

/// Checks that `expr` is affine and divides only by positive constants.
static LogicalResult verifyLayoutExpr(function_ref<InFlightDiagnostic()> emit,
                                      AffineExpr expr, StringRef what) {
  LogicalResult result = success();
  expr.walk([&](AffineExpr e) {
    if (failed(result))
      return;
    auto bin = dyn_cast<AffineBinaryOpExpr>(e);
    if (!bin)
      return;
    if (e.getKind() == AffineExprKind::Mul) {
      if (!isa<AffineConstantExpr>(bin.getLHS()) &&
          !isa<AffineConstantExpr>(bin.getRHS()))
        result = emit() << what << " multiplies two indices in '" << str(e)
                        << "'; views are affine";
      return;
    }
    if (e.getKind() == AffineExprKind::Add)
      return;
    auto divisor = dyn_cast<AffineConstantExpr>(bin.getRHS());
    if (!divisor || divisor.getValue() <= 0)
      result = emit() << what << " divides by '" << str(bin.getRHS())
                      << "' in '" << str(e)
                      << "'; divisors must be positive constants";
  });
  return result;
}

LogicalResult ViewAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               AffineMap map, IntegerSet mask, PadKind padKind,
                               Attribute padValue) {
  if (!map)
    return emitError() << "view needs an affine map";
  if (map.getNumSymbols() != 0)
    return emitError() << "view map must not have symbols, found "
                       << map.getNumSymbols();
  for (AffineExpr expr : map.getResults())
    if (failed(verifyLayoutExpr(emitError, expr, "view map")))
      return failure();
  if (mask) {
    if (mask.getNumSymbols() != 0)
      return emitError() << "view mask must not have symbols, found "
                         << mask.getNumSymbols();
    if (mask.getNumDims() != map.getNumDims())
      return emitError() << "view mask has " << mask.getNumDims()
                         << " dims but the map has " << map.getNumDims()
                         << "; both range over the result indices";
    for (AffineExpr expr : mask.getConstraints())
      if (failed(verifyLayoutExpr(emitError, expr, "view mask")))
        return failure();
  }
  if ((padKind == PadKind::Value) != static_cast<bool>(padValue))
    return emitError() << "a constant pad needs a value, and only it";
  if (padValue && !isa<IntegerAttr, FloatAttr>(padValue))
    return emitError() << "pad value must be an integer or float literal";
  if (padKind != PadKind::Zero && !mask)
    return emitError() << "view has a pad but no mask; the pad is read only "
                          "where a mask is false";
  return success();
}

TypedAttr ViewAttr::getPadAttr(Type elementType) const {
  Builder b(getContext());
  auto complexType = dyn_cast<ComplexType>(elementType);
  Type scalarType = complexType ? complexType.getElementType() : elementType;
  TypedAttr scalar;
  if (auto floatType = dyn_cast<FloatType>(scalarType)) {
    const llvm::fltSemantics &sem = floatType.getFloatSemantics();
    switch (getPadKind()) {
    case PadKind::Zero:
      scalar = b.getFloatAttr(floatType, 0.0);
      break;
    case PadKind::One:
      scalar = b.getFloatAttr(floatType, 1.0);
      break;
    case PadKind::NegInf:
    case PadKind::PosInf:
      if (complexType)
        return {};
      scalar = FloatAttr::get(
          floatType, APFloat::getInf(sem, getPadKind() == PadKind::NegInf));
      break;
    case PadKind::Value: {
      double v =
          isa<IntegerAttr>(getPadValue())
              ? static_cast<double>(cast<IntegerAttr>(getPadValue()).getInt())
              : cast<FloatAttr>(getPadValue()).getValueAsDouble();
      APFloat f(v);
      bool losesInfo;
      f.convert(sem, APFloat::rmNearestTiesToEven, &losesInfo);
      if (std::isfinite(v) && !f.isFinite())
        return {};
      scalar = FloatAttr::get(floatType, f);
      break;
    }
    }
  } else if (auto intType = dyn_cast<IntegerType>(scalarType)) {
    unsigned width = intType.getWidth();
    APInt v;
    switch (getPadKind()) {
    case PadKind::Zero:
      v = APInt(width, 0);
      break;
    case PadKind::One:
      v = APInt(width, 1);
      break;
    case PadKind::NegInf:
      v = width == 1 ? APInt(1, 0) : APInt::getSignedMinValue(width);
      break;
    case PadKind::PosInf:
      v = width == 1 ? APInt(1, 1) : APInt::getSignedMaxValue(width);
      break;
    case PadKind::Value: {
      auto intValue = dyn_cast<IntegerAttr>(getPadValue());
      if (!intValue)
        return {};
      int64_t x = intValue.getInt();
      // i1 holds 0 and 1; wider types their signed or unsigned range.
      if (width == 1 ? (x != 0 && x != 1)
                     : width < 64 && (x < -(int64_t(1) << (width - 1)) ||
                                      x >= (int64_t(1) << width)))
        return {};
      v = APInt(64, x, /*isSigned=*/true).trunc(width);
      break;
    }
    }
    scalar = IntegerAttr::get(intType, v);
  } else {
    return {};
  }
  if (complexType)
    return complex::NumberAttr::get(
        complexType, cast<FloatAttr>(scalar).getValueAsDouble(), 0.0);
  return scalar;
}
