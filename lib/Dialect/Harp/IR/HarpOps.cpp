//===- HarpOps.cpp - harp operations and their verifiers ------------------===//

#include "harp/Dialect/Harp/IR/HarpOps.h"
#include "harp/Dialect/Harp/IR/ViewLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <complex>

using namespace mlir;
using namespace mlir::harp;

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

/// The reduction kind as a bare keyword: `sum`, `prod`, `max`, ...
static ParseResult parseReductionKind(OpAsmParser &parser,
                                      ReductionKindAttr &kind) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<ReductionKind> value = symbolizeReductionKind(keyword);
  if (!value)
    return parser.emitError(loc, "unknown reduction kind '")
           << keyword << "'; expected sum, prod, max, min, umax or umin";
  kind = ReductionKindAttr::get(parser.getContext(), *value);
  return success();
}

static void printReductionKind(OpAsmPrinter &printer, Operation *,
                               ReductionKindAttr kind) {
  printer << stringifyReductionKind(kind.getValue());
}

/// A map_reduce body: a region that, being isolated from above, reads no
/// value from outside it. A name it uses that is not defined inside is
/// refused here, where it is parsed: left to the end of the enclosing
/// function, as MLIR's parser leaves such forward references, a block
/// argument of the same name in a later region took its uses, and a parse
/// error after that freed the argument under them (a heap error, found by
/// test/Fuzz/mutations.py).
static ParseResult parseIsolatedBody(OpAsmParser &parser, Region &body) {
  if (parser.parseRegion(body))
    return failure();
  if (body.empty())
    body.emplaceBlock();
  WalkResult walk = body.walk([&](Operation *op) {
    for (Value operand : op->getOperands()) {
      Region *at = isa<BlockArgument>(operand)
                       ? cast<BlockArgument>(operand).getOwner()->getParent()
                       : operand.getDefiningOp()->getParentRegion();
      if (!at || !body.isAncestor(at)) {
        InFlightDiagnostic diag = parser.emitError(parser.getNameLoc())
                                  << "body: '" << op->getName() << "'";
        if (auto loc = dyn_cast<FileLineColLoc>(op->getLoc()))
          diag << " at " << loc.getLine() << ":" << loc.getColumn();
        diag << " reads a value not defined in the body (an undeclared "
                "name, or one defined outside: the region is isolated "
                "from above)";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

static void printIsolatedBody(OpAsmPrinter &printer, Operation *,
                              Region &body) {
  printer.printRegion(body);
}

/// A rand seed: an integer (the `seed` attribute) or an SSA value (the
/// 0-d i64 `dynamic_seed` operand, whose type is implied).
static ParseResult
parseSeed(OpAsmParser &parser,
          std::optional<OpAsmParser::UnresolvedOperand> &dynamicSeed,
          Type &dynamicSeedType, IntegerAttr &seed) {
  OpAsmParser::UnresolvedOperand operand;
  OptionalParseResult parsed = parser.parseOptionalOperand(operand);
  if (parsed.has_value()) {
    if (failed(*parsed))
      return failure();
    dynamicSeed = operand;
    dynamicSeedType =
        RankedTensorType::get({}, parser.getBuilder().getI64Type());
    return success();
  }
  int64_t value = 0;
  if (parser.parseInteger(value))
    return failure();
  seed = parser.getBuilder().getI64IntegerAttr(value);
  return success();
}

static void printSeed(OpAsmPrinter &printer, Operation *, Value dynamicSeed,
                      Type, IntegerAttr seed) {
  if (dynamicSeed)
    printer << dynamicSeed;
  else
    printer << seed.getInt();
}

#define GET_OP_CLASSES
#include "harp/Dialect/Harp/IR/HarpOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Utilities shared by transformations and lowerings
//===----------------------------------------------------------------------===//

std::pair<Value, ViewAttr> mlir::harp::stripViews(Value value) {
  ViewAttr layout;
  while (auto view = value.getDefiningOp<ViewOp>()) {
    ViewAttr composed =
        layout ? composeLayouts(layout, view.getLayout()) : view.getLayout();
    if (!composed)
      break;
    layout = composed;
    value = view.getSource();
  }
  return {value, layout};
}

Value mlir::harp::buildScalarConstant(OpBuilder &b, Location loc,
                                      TypedAttr attr) {
  if (auto number = dyn_cast<complex::NumberAttr>(attr)) {
    auto type = cast<ComplexType>(number.getType());
    Type part = type.getElementType();
    auto parts = b.getArrayAttr({FloatAttr::get(part, number.getReal()),
                                 FloatAttr::get(part, number.getImag())});
    return complex::ConstantOp::create(b, loc, type, parts);
  }
  return arith::ConstantOp::create(b, loc, attr);
}

Value mlir::harp::buildIndexExpr(OpBuilder &b, Location loc, AffineExpr expr,
                                 ArrayRef<Value> dims) {
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return arith::ConstantIndexOp::create(b, loc, c.getValue());
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return dims[d.getPosition()];
  auto bin = cast<AffineBinaryOpExpr>(expr);
  Value lhs = buildIndexExpr(b, loc, bin.getLHS(), dims);
  Value rhs = buildIndexExpr(b, loc, bin.getRHS(), dims);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return arith::AddIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::Mul:
    return arith::MulIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::FloorDiv:
    return arith::FloorDivSIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::CeilDiv:
    return arith::CeilDivSIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::Mod: {
    // Affine mod is non-negative; remsi takes the dividend's sign.
    Value rem = arith::RemSIOp::create(b, loc, lhs, rhs);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value negative =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, rem, zero);
    Value wrapped = arith::AddIOp::create(b, loc, rem, rhs);
    return arith::SelectOp::create(b, loc, negative, wrapped, rem);
  }
  default:
    llvm_unreachable("views are pure affine");
  }
}

Value mlir::harp::buildMaskCondition(OpBuilder &b, Location loc,
                                     IntegerSet mask, ArrayRef<Value> dims) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value inside;
  for (auto [expr, isEq] :
       llvm::zip(mask.getConstraints(), mask.getEqFlags())) {
    Value v = buildIndexExpr(b, loc, expr, dims);
    Value holds = arith::CmpIOp::create(
        b, loc, isEq ? arith::CmpIPredicate::eq : arith::CmpIPredicate::sge, v,
        zero);
    inside = inside ? arith::AndIOp::create(b, loc, inside, holds) : holds;
  }
  return inside;
}

Block *mlir::harp::createBodyBlock(OpBuilder &b, MapReduceOp op) {
  SmallVector<Type> types;
  SmallVector<Location> locs;
  for (Value input : op.getInputs()) {
    types.push_back(cast<RankedTensorType>(input.getType()).getElementType());
    locs.push_back(op.getLoc());
  }
  return b.createBlock(&op.getBody(), {}, types, locs);
}

Value mlir::harp::buildZeros(OpBuilder &b, Location loc,
                             RankedTensorType type) {
  Type element = type.getElementType();
  if (auto complexType = dyn_cast<ComplexType>(element)) {
    const auto &sem =
        cast<FloatType>(complexType.getElementType()).getFloatSemantics();
    std::complex<APFloat> zero(APFloat::getZero(sem), APFloat::getZero(sem));
    return arith::ConstantOp::create(b, loc,
                                     DenseElementsAttr::get(type, {zero}));
  }
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getZeroAttr(element)));
}

/// "[4, 8]": shapes and indices in diagnostics.
static std::string formatList(ArrayRef<int64_t> values) {
  return "[" +
         llvm::join(llvm::map_range(
                        values, [](int64_t v) { return std::to_string(v); }),
                    ", ") +
         "]";
}

static bool isScalarType(Type type) {
  return isa<IntegerType, IndexType, FloatType, ComplexType>(type);
}

//===----------------------------------------------------------------------===//
// ViewOp
//===----------------------------------------------------------------------===//

LogicalResult ViewOp::verify() {
  RankedTensorType sourceType = getSource().getType();
  RankedTensorType resultType = getType();
  ViewAttr layout = getLayout();
  Type elementType = sourceType.getElementType();
  if (resultType.getElementType() != elementType)
    return emitOpError("result element type ")
           << resultType.getElementType()
           << " differs from the source element type " << elementType
           << "; a view moves no data and cannot convert";
  if (layout.getResultRank() != resultType.getRank())
    return emitOpError("layout map has ")
           << layout.getResultRank() << " dims but the result " << resultType
           << " has rank " << resultType.getRank();
  if (layout.getSourceRank() != sourceType.getRank())
    return emitOpError("layout map has ")
           << layout.getSourceRank() << " results but the source " << sourceType
           << " has rank " << sourceType.getRank();
  if (layout.hasMask() && !layout.getPadAttr(elementType))
    return emitOpError("pad value cannot be represented in element type ")
           << elementType;
  FailureOr<std::optional<OutOfBoundsRead>> oob =
      findOutOfBoundsRead(layout, resultType.getShape(), sourceType.getShape());
  if (failed(oob))
    return emitOpError("layout could not be analysed for bounds");
  if (std::optional<OutOfBoundsRead> read = *oob) {
    std::string index;
    llvm::raw_string_ostream(index) << read->sourceIndex;
    return emitOpError("reads out of bounds: result index ")
           << formatList(read->resultIndex) << " reads index " << index
           << " of source dim " << read->sourceDim << ", which has size "
           << sourceType.getDimSize(read->sourceDim);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// MapReduceOp
//===----------------------------------------------------------------------===//

void MapReduceOp::build(
    OpBuilder &b, OperationState &state, Type resultType, ValueRange inputs,
    function_ref<Value(OpBuilder &, Location, ValueRange)> bodyBuilder,
    std::optional<ReductionKind> kind, ArrayRef<int64_t> dims, bool keepdim) {
  build(b, state, resultType, inputs,
        kind ? ReductionKindAttr::get(b.getContext(), *kind)
             : ReductionKindAttr(),
        b.getDenseI64ArrayAttr(dims), keepdim ? b.getUnitAttr() : UnitAttr());
  Region *body = state.regions.front().get();
  SmallVector<Type> types;
  SmallVector<Location> locs;
  for (Value input : inputs) {
    types.push_back(cast<RankedTensorType>(input.getType()).getElementType());
    locs.push_back(state.location);
  }
  OpBuilder::InsertionGuard guard(b);
  Block *block = b.createBlock(body, {}, types, locs);
  Value yielded = bodyBuilder(b, state.location, block->getArguments());
  YieldOp::create(b, state.location, ValueRange{yielded});
}

ArrayRef<int64_t> MapReduceOp::getDomainShape() {
  if (getInputs().empty())
    return getType().getShape();
  return cast<RankedTensorType>(getInputs().front().getType()).getShape();
}

/// Whether reduction `kind` is defined on `type`, with the reason if not.
static LogicalResult verifyReductionType(MapReduceOp op, ReductionKind kind,
                                         Type type) {
  bool isBool = type.isInteger(1);
  switch (kind) {
  case ReductionKind::Sum:
  case ReductionKind::Prod:
    if (isBool)
      return op.emitOpError()
             << stringifyReductionKind(kind)
             << " reduction is not defined on i1; use max (or) or min (and)";
    return success();
  case ReductionKind::Max:
  case ReductionKind::Min:
    if (isa<ComplexType>(type))
      return op.emitOpError() << stringifyReductionKind(kind)
                              << " reduction is not defined on complex numbers";
    return success();
  case ReductionKind::UMax:
  case ReductionKind::UMin:
    if (!isa<IntegerType>(type))
      return op.emitOpError()
             << stringifyReductionKind(kind)
             << " reduction compares unsigned integers, not " << type;
    return success();
  }
  llvm_unreachable("unknown reduction kind");
}

LogicalResult MapReduceOp::verify() {
  ArrayRef<int64_t> domain = getDomainShape();
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getShape() != domain)
      return emitOpError("operand #")
             << i << " has shape " << formatList(type.getShape())
             << " but operand #0 has " << formatList(domain)
             << "; all operands share the iteration domain";
  }
  ArrayRef<int64_t> dims = getDims();
  std::optional<ReductionKind> kind = getKind();
  if (!kind) {
    if (!dims.empty() || getKeepdim())
      return emitOpError("dims and keepdim need a reduction kind");
    if (getType().getShape() != domain)
      return emitOpError("result shape ")
             << formatList(getType().getShape())
             << " differs from the iteration domain " << formatList(domain);
    return success();
  }
  if (getInputs().empty())
    return emitOpError("a reduction needs an operand to define the iteration "
                       "domain");
  if (dims.empty())
    return emitOpError("reduction needs at least one dim");
  int64_t rank = domain.size();
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d < 0 || d >= rank)
      return emitOpError("reduction dim ")
             << d << " is out of range for an iteration domain of rank "
             << rank;
    if (i > 0 && d <= dims[i - 1])
      return emitOpError("reduction dims must be strictly increasing, got ")
             << formatList(dims);
  }
  SmallVector<int64_t> expected;
  for (auto [d, size] : llvm::enumerate(domain)) {
    if (!llvm::is_contained(dims, static_cast<int64_t>(d)))
      expected.push_back(size);
    else if (getKeepdim())
      expected.push_back(1);
  }
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result shape ")
           << formatList(getType().getShape()) << " does not match "
           << formatList(expected) << ", the domain " << formatList(domain)
           << " reduced over " << formatList(dims)
           << (getKeepdim() ? " with keepdim" : "");
  return verifyReductionType(*this, *kind, getType().getElementType());
}

LogicalResult MapReduceOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("region has ")
           << body.getNumArguments() << " arguments but the op has "
           << getInputs().size() << " operands";
  for (auto [i, arg, input] :
       llvm::enumerate(body.getArguments(), getInputs())) {
    Type expected = cast<RankedTensorType>(input.getType()).getElementType();
    if (arg.getType() != expected)
      return emitOpError("region argument #")
             << i << " has type " << arg.getType() << " but operand #" << i
             << " has element type " << expected;
  }
  for (Operation &op : body) {
    Dialect *dialect = op.getDialect();
    StringRef ns = dialect ? dialect->getNamespace() : StringRef();
    bool allowed = ns == "arith" || ns == "math" || ns == "complex" ||
                   isa<IndexOp, YieldOp>(op);
    if (!allowed)
      return op.emitOpError("is not allowed in a harp.map_reduce region; "
                            "only arith, math and complex scalar ops, "
                            "harp.index and harp.yield");
    for (Type type : op.getResultTypes())
      if (!isScalarType(type))
        return op.emitOpError("produces ")
               << type << "; harp.map_reduce regions compute on scalars";
  }
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().size() != 1)
    return yield.emitOpError("must yield exactly one value, yields ")
           << yield.getValues().size();
  Type yielded = yield.getValues().front().getType();
  if (yielded != getType().getElementType())
    return yield.emitOpError("yields ")
           << yielded << " but the map_reduce result element type is "
           << getType().getElementType();
  return success();
}

LogicalResult IndexOp::verify() {
  auto parent = cast<MapReduceOp>((*this)->getParentOp());
  int64_t rank = parent.getDomainShape().size();
  int64_t dim = getDim();
  if (dim < 0 || dim >= rank)
    return emitOpError("dim ") << dim
                               << " is out of range for an iteration domain "
                                  "of rank "
                               << rank;
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Checks `dim` against `rank`, the op's common verifier step.
static LogicalResult verifyDim(Operation *op, int64_t dim, int64_t rank) {
  if (dim < 0 || dim >= rank)
    return op->emitOpError("dim ")
           << dim << " is out of range for rank " << rank;
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  RankedTensorType resultType = getType();
  int64_t rank = resultType.getRank();
  int64_t dim = getDim();
  if (failed(verifyDim(*this, dim, rank)))
    return failure();
  int64_t total = 0;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getElementType() != resultType.getElementType())
      return emitOpError("operand #")
             << i << " has element type " << type.getElementType()
             << " but the result has " << resultType.getElementType();
    if (type.getRank() != rank)
      return emitOpError("operand #") << i << " has rank " << type.getRank()
                                      << " but the result has rank " << rank;
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim && type.getDimSize(d) != resultType.getDimSize(d))
        return emitOpError("operand #")
               << i << " has size " << type.getDimSize(d) << " in dim " << d
               << " but the result has " << resultType.getDimSize(d);
    total += type.getDimSize(dim);
  }
  if (total != resultType.getDimSize(dim))
    return emitOpError("operand sizes along dim ")
           << dim << " add up to " << total << " but the result has "
           << resultType.getDimSize(dim);
  return success();
}

/// PyTorch's shape rule: `index` is no larger than `bound` in every dim
/// (except `skipDim` when it is not -1).
static LogicalResult verifyIndexFits(Operation *op, RankedTensorType index,
                                     RankedTensorType bound, StringRef name,
                                     int64_t skipDim) {
  for (int64_t d = 0; d < index.getRank(); ++d)
    if (d != skipDim && index.getDimSize(d) > bound.getDimSize(d))
      return op->emitOpError("index has size ")
             << index.getDimSize(d) << " in dim " << d << ", larger than the "
             << name << "'s " << bound.getDimSize(d);
  return success();
}

LogicalResult GatherOp::verify() {
  RankedTensorType inputType = getInput().getType();
  RankedTensorType indexType = getIndex().getType();
  RankedTensorType resultType = getType();
  int64_t rank = inputType.getRank();
  if (failed(verifyDim(*this, getDim(), rank)))
    return failure();
  if (indexType.getRank() != rank)
    return emitOpError("index has rank ")
           << indexType.getRank() << " but the input has rank " << rank;
  if (resultType.getShape() != indexType.getShape())
    return emitOpError("result shape ") << formatList(resultType.getShape())
                                        << " differs from the index shape "
                                        << formatList(indexType.getShape());
  if (resultType.getElementType() != inputType.getElementType())
    return emitOpError("result element type ")
           << resultType.getElementType() << " differs from the input's "
           << inputType.getElementType();
  return verifyIndexFits(*this, indexType, inputType, "input", getDim());
}

LogicalResult ScatterAddOp::verify() {
  RankedTensorType srcType = getSrc().getType();
  RankedTensorType destType = getDest().getType();
  RankedTensorType indexType = getIndex().getType();
  int64_t rank = destType.getRank();
  if (failed(verifyDim(*this, getDim(), rank)))
    return failure();
  if (destType.getElementType().isInteger(1))
    return emitOpError("accumulates with addition, which i1 does not have");
  if (srcType.getElementType() != destType.getElementType())
    return emitOpError("src element type ")
           << srcType.getElementType() << " differs from the dest's "
           << destType.getElementType();
  if (srcType.getRank() != rank || indexType.getRank() != rank)
    return emitOpError("src, dest and index must have one rank, got ")
           << srcType.getRank() << ", " << rank << " and "
           << indexType.getRank();
  if (failed(verifyIndexFits(*this, indexType, srcType, "src", -1)))
    return failure();
  return verifyIndexFits(*this, indexType, destType, "dest", getDim());
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

LogicalResult RandOp::verify() {
  if (bool(getDynamicSeed()) == bool(getSeedAttr()))
    return emitOpError("needs exactly one seed: a constant or a 0-d i64 "
                       "operand");
  return success();
}

LogicalResult ArangeOp::verify() {
  RankedTensorType type = getType();
  Type elementType = type.getElementType();
  if (type.getRank() != 1)
    return emitOpError("result must have rank 1, got ") << type;
  if (!isa<FloatType>(elementType) &&
      !(isa<IntegerType>(elementType) && !elementType.isInteger(1)))
    return emitOpError("needs an integer (other than i1) or float element "
                       "type, got ")
           << elementType;
  for (auto [name, attr] : {std::make_pair("start", getStart()),
                            std::make_pair("step", getStep())}) {
    if (attr.getType() != elementType || !isa<IntegerAttr, FloatAttr>(attr))
      return emitOpError() << name << " must be a number of the element type "
                           << elementType << ", got " << attr;
  }
  if (auto step = dyn_cast<IntegerAttr>(getStep())) {
    if (step.getValue().isZero())
      return emitOpError("step must be non-zero");
    // The last element must fit the integer type, read signed or unsigned.
    APInt start = cast<IntegerAttr>(getStart()).getValue();
    unsigned width = start.getBitWidth();
    int64_t n = type.getDimSize(0);
    auto fits = [&](bool isSigned) {
      auto ext = [&](const APInt &v) {
        return isSigned ? v.sext(192) : v.zext(192);
      };
      APInt last =
          ext(start) + ext(step.getValue()) * APInt(192, n > 0 ? n - 1 : 0);
      APInt lo =
          isSigned ? APInt::getSignedMinValue(width).sext(192) : APInt(192, 0);
      APInt hi = isSigned ? APInt::getSignedMaxValue(width).sext(192)
                          : APInt::getMaxValue(width).zext(192);
      return last.sge(lo) && last.sle(hi);
    };
    if (!fits(true) && !fits(false))
      return emitOpError("sequence of ")
             << n << " elements overflows " << elementType;
  } else if (cast<FloatAttr>(getStep()).getValue().isZero()) {
    return emitOpError("step must be non-zero");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// AutodiffOp
//===----------------------------------------------------------------------===//

static bool isDifferentiable(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    type = tensor.getElementType();
  return isa<FloatType, ComplexType>(type);
}

LogicalResult AutodiffOp::verify() {
  ArrayRef<int64_t> wrt = getWrt();
  int64_t numArgs = getArgs().size();
  if (wrt.empty())
    return emitOpError("wrt must name at least one argument");
  for (auto [i, w] : llvm::enumerate(wrt)) {
    if (w < 0 || w >= numArgs)
      return emitOpError("wrt index ")
             << w << " is out of range for " << numArgs << " arguments";
    if (i > 0 && w <= wrt[i - 1])
      return emitOpError("wrt indices must be strictly increasing, got ")
             << formatList(wrt);
    if (!isDifferentiable(getArgs()[w].getType()))
      return emitOpError("argument #")
             << w << " of type " << getArgs()[w].getType()
             << " is not differentiable; wrt takes float or complex "
                "arguments";
  }
  return success();
}

LogicalResult AutodiffOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto callee =
      symbolTable.lookupNearestSymbolFrom<func::FuncOp>(*this, getCalleeAttr());
  if (!callee)
    return emitOpError("'")
           << getCallee() << "' does not reference a func.func";
  if (callee.isExternal())
    return emitOpError("callee @") << getCallee()
                                   << " is a declaration; it has no body to "
                                      "differentiate";
  FunctionType fnType = callee.getFunctionType();
  if (fnType.getNumInputs() != getArgs().size())
    return emitOpError("callee @")
           << getCallee() << " takes " << fnType.getNumInputs()
           << " arguments but " << getArgs().size() << " are given";
  for (auto [i, arg, expected] :
       llvm::enumerate(getArgs().getTypes(), fnType.getInputs()))
    if (arg != expected)
      return emitOpError("argument #")
             << i << " has type " << arg << " but @" << getCallee()
             << " expects " << expected;
  if (fnType.getNumResults() == 0)
    return emitOpError("callee @") << getCallee() << " returns nothing";

  if (getSeeds().empty()) {
    // The loss first; any other results are auxiliary outputs.
    Type loss = fnType.getResult(0);
    auto tensor = dyn_cast<RankedTensorType>(loss);
    bool scalarLoss = tensor ? tensor.getRank() == 0 &&
                                   isa<FloatType>(tensor.getElementType())
                             : isa<FloatType>(loss);
    if (!scalarLoss)
      return emitOpError("seed may be omitted only when @")
             << getCallee()
             << "'s first result is a float scalar or 0-d float tensor; give "
                "one cotangent per result";
  } else {
    if (getSeeds().size() != fnType.getNumResults())
      return emitOpError("has ")
             << getSeeds().size() << " seeds but @" << getCallee()
             << " returns " << fnType.getNumResults() << " results";
    for (auto [i, seed, expected] :
         llvm::enumerate(getSeeds().getTypes(), fnType.getResults()))
      if (seed != expected)
        return emitOpError("seed #")
               << i << " has type " << seed << " but result #" << i << " of @"
               << getCallee() << " has type " << expected;
  }

  SmallVector<Type> expected(fnType.getResults());
  for (int64_t w : getWrt())
    expected.push_back(getArgs()[w].getType());
  if (getResultTypes() != TypeRange(expected)) {
    std::string list;
    llvm::raw_string_ostream os(list);
    llvm::interleaveComma(expected, os);
    return emitOpError("result types must be the callee's results followed "
                       "by one gradient per wrt argument: (")
           << list << ")";
  }
  return success();
}
