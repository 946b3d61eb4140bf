//===- HarpDerivatives.cpp - reverse-mode rules of harp's tensor ops ------===//
//
// DifferentiableOpInterface for every harp op. The cotangents are ordinary
// harp IR (views, map_reduce, gather, scatter_add), so the output of
// harp-autodiff can be differentiated again.
//
//===----------------------------------------------------------------------===//

#include "harp/Dialect/Harp/IR/HarpBuilders.h"
#include "harp/Dialect/Harp/IR/HarpOps.h"
#include "harp/Dialect/Harp/IR/ViewLayout.h"

#include "mlir/Analysis/FlatLinearValueConstraints.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/IR/IRMapping.h"

#include <numeric>

using namespace mlir;
using namespace mlir::harp;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static bool isDifferentiableType(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    type = tensor.getElementType();
  return isa<FloatType, ComplexType>(type);
}

static Value scalarZero(OpBuilder &b, Location loc, Type type) {
  if (auto complexType = dyn_cast<ComplexType>(type))
    return buildScalarConstant(b, loc,
                               complex::NumberAttr::get(complexType, 0, 0));
  return arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
}

static Value scalarOne(OpBuilder &b, Location loc, Type type) {
  if (auto complexType = dyn_cast<ComplexType>(type))
    return buildScalarConstant(b, loc,
                               complex::NumberAttr::get(complexType, 1, 0));
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, 1.0));
}

static Value view(OpBuilder &b, Location loc, Value source, ViewAttr layout,
                  ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(
      shape, cast<RankedTensorType>(source.getType()).getElementType());
  return ViewOp::create(b, loc, type, source, layout);
}

/// Sums `value` (of `shape`) over `dims`.
static Value sumOver(OpBuilder &b, Location loc, Value value,
                     ArrayRef<int64_t> dims) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> kept;
  for (auto [d, size] : llvm::enumerate(type.getShape()))
    if (!llvm::is_contained(dims, static_cast<int64_t>(d)))
      kept.push_back(size);
  auto resultType = RankedTensorType::get(kept, type.getElementType());
  auto op = MapReduceOp::create(
      b, loc, resultType, value,
      ReductionKindAttr::get(b.getContext(), ReductionKind::Sum),
      b.getDenseI64ArrayAttr(dims), UnitAttr());
  OpBuilder::InsertionGuard guard(b);
  Block *block = createBodyBlock(b, op);
  YieldOp::create(b, loc, ValueRange{block->getArgument(0)});
  return op.getResult();
}

/// Reverse mode through a map_reduce region: given the cloned region's
/// values (through `mapping`) and the adjoint `seed` of its yielded value,
/// returns the adjoint of every block argument (null when zero).
static FailureOr<SmallVector<Value>> regionAdjoints(OpBuilder &b, Location loc,
                                                    Block &forward,
                                                    IRMapping &mapping,
                                                    Value seed) {
  DenseMap<Value, Value> adjoint;
  auto accumulate = [&](Value v, Value a) {
    if (!a)
      return;
    if (!isDifferentiableType(v.getType()))
      return;
    Value &slot = adjoint[v];
    if (!slot) {
      slot = a;
      return;
    }
    slot = isa<ComplexType>(a.getType())
               ? Value(complex::AddOp::create(b, loc, slot, a))
               : Value(arith::AddFOp::create(b, loc, slot, a));
  };
  auto yield = cast<YieldOp>(forward.getTerminator());
  accumulate(mapping.lookup(yield.getValues().front()), seed);
  for (Operation &op : llvm::reverse(forward.without_terminator())) {
    if (op.getNumResults() != 1)
      continue;
    Value result = mapping.lookup(op.getResult(0));
    Value a = adjoint.lookup(result);
    Operation *cloned = result.getDefiningOp();
    // Constants and index reads have nothing to pass the adjoint to.
    if (!a || !cloned ||
        llvm::none_of(cloned->getOperandTypes(), isDifferentiableType))
      continue;
    auto rule = dyn_cast<ScalarDerivativeOpInterface>(cloned);
    if (!rule)
      return op.emitOpError("has no derivative rule; harp-autodiff cannot "
                            "differentiate through it"),
             failure();
    SmallVector<Value> operandAdjoints;
    rule.buildAdjoints(b, a, operandAdjoints);
    for (auto [operand, oa] : llvm::zip(cloned->getOperands(), operandAdjoints))
      accumulate(operand, oa);
  }
  SmallVector<Value> result;
  for (BlockArgument arg : forward.getArguments())
    result.push_back(adjoint.lookup(mapping.lookup(arg)));
  return result;
}

//===----------------------------------------------------------------------===//
// map_reduce
//===----------------------------------------------------------------------===//

LogicalResult
MapReduceOp::buildCotangents(OpBuilder &b, ArrayRef<Value> resultCotangents,
                             ArrayRef<bool> needed,
                             SmallVectorImpl<Value> &operandCotangents) {
  operandCotangents.assign(getNumOperands(), Value());
  Value ybar = resultCotangents.front();
  if (!ybar || !isDifferentiableType(getType()))
    return success();
  Location loc = getLoc();
  MLIRContext *ctx = getContext();
  ArrayRef<int64_t> domain = getDomainShape();
  unsigned rank = domain.size();
  Type resultElement = getType().getElementType();

  // The result (and its cotangent) broadcast back over the domain.
  auto toDomain = [&](Value v) -> Value {
    if (!hasReduction())
      return v;
    SmallVector<AffineExpr> exprs;
    for (unsigned d = 0; d < rank; ++d) {
      bool reduced = llvm::is_contained(getDims(), static_cast<int64_t>(d));
      if (!reduced)
        exprs.push_back(getAffineDimExpr(d, ctx));
      else if (getKeepdim())
        exprs.push_back(getAffineConstantExpr(0, ctx));
    }
    return view(b, loc, v,
                ViewAttr::get(ctx, AffineMap::get(rank, 0, exprs, ctx)),
                domain);
  };

  Block &forward = getBody().front();
  Value yielded = cast<YieldOp>(forward.getTerminator()).getValues().front();
  // An auxiliary reduction over the forward region's values: `fn` maps the
  // mapped value g (and the broadcast result y) to what is summed or
  // multiplied.
  auto auxiliary =
      [&](ReductionKind kind, ArrayRef<Value> extra,
          function_ref<Value(OpBuilder &, Value, ArrayRef<Value>)> fn)
      -> Value {
    SmallVector<Value> inputs(getInputs());
    llvm::append_range(inputs, extra);
    auto op = MapReduceOp::create(b, loc, getType(), inputs,
                                  ReductionKindAttr::get(ctx, kind),
                                  getDimsAttr(), getKeepdimAttr());
    OpBuilder::InsertionGuard guard(b);
    Block *block = createBodyBlock(b, op);
    IRMapping mapping;
    mapping.map(forward.getArguments(),
                block->getArguments().take_front(forward.getNumArguments()));
    for (Operation &inner : forward.without_terminator())
      b.clone(inner, mapping);
    SmallVector<Value> extraArgs(
        block->getArguments().drop_front(forward.getNumArguments()));
    Value v = fn(b, mapping.lookup(yielded), extraArgs);
    YieldOp::create(b, loc, ValueRange{v});
    return op.getResult();
  };

  SmallVector<Value> extras{toDomain(ybar)};
  std::optional<ReductionKind> kind = getKind();
  bool isComplex = isa<ComplexType>(resultElement);
  auto equal = [&](OpBuilder &nb, Value x, Value y) -> Value {
    if (isComplex)
      return complex::EqualOp::create(nb, loc, x, y);
    return arith::CmpFOp::create(nb, loc, arith::CmpFPredicate::OEQ, x, y);
  };
  if (kind == ReductionKind::Max || kind == ReductionKind::Min) {
    // Ties share the cotangent evenly (as torch.amax/amin).
    Value yB = toDomain(getResult());
    Value count = auxiliary(
        ReductionKind::Sum, {yB},
        [&](OpBuilder &nb, Value g, ArrayRef<Value> extra) -> Value {
          return arith::SelectOp::create(nb, loc, equal(nb, g, extra[0]),
                                         scalarOne(nb, loc, resultElement),
                                         scalarZero(nb, loc, resultElement));
        });
    extras.push_back(yB);
    extras.push_back(toDomain(count));
  } else if (kind == ReductionKind::Prod) {
    // d(prod)/d(g_j) = prod of the others, safe with zeros: with no zero it
    // is prod / g_j; with exactly one zero, the product of the non-zeros at
    // the zero and 0 elsewhere; with more, 0.
    Value nonzeroProd =
        auxiliary(ReductionKind::Prod, {},
                  [&](OpBuilder &nb, Value g, ArrayRef<Value>) -> Value {
                    Value z = equal(nb, g, scalarZero(nb, loc, resultElement));
                    return arith::SelectOp::create(
                        nb, loc, z, scalarOne(nb, loc, resultElement), g);
                  });
    Value zeroCount =
        auxiliary(ReductionKind::Sum, {},
                  [&](OpBuilder &nb, Value g, ArrayRef<Value>) -> Value {
                    Value z = equal(nb, g, scalarZero(nb, loc, resultElement));
                    return arith::SelectOp::create(
                        nb, loc, z, scalarOne(nb, loc, resultElement),
                        scalarZero(nb, loc, resultElement));
                  });
    extras.push_back(toDomain(getResult()));
    extras.push_back(toDomain(nonzeroProd));
    extras.push_back(toDomain(zeroCount));
  } else if (kind && kind != ReductionKind::Sum) {
    return emitOpError("reduction ")
           << stringifyReductionKind(*kind) << " has no derivative";
  }

  for (auto [i, input] : llvm::enumerate(getInputs())) {
    if (!needed[i] || !isDifferentiableType(input.getType()))
      continue;
    auto inputType = cast<RankedTensorType>(input.getType());
    Type inputElement = inputType.getElementType();
    SmallVector<Value> inputs(getInputs());
    llvm::append_range(inputs, extras);
    auto grad = MapReduceOp::create(b, loc, inputType, inputs, nullptr, nullptr,
                                    nullptr);
    OpBuilder::InsertionGuard guard(b);
    Block *block = createBodyBlock(b, grad);
    IRMapping mapping;
    unsigned n = forward.getNumArguments();
    mapping.map(forward.getArguments(), block->getArguments().take_front(n));
    for (Operation &inner : forward.without_terminator()) {
      if (auto idx = dyn_cast<IndexOp>(inner)) {
        mapping.map(idx.getResult(),
                    IndexOp::create(b, loc, idx.getDim()).getResult());
        continue;
      }
      b.clone(inner, mapping);
    }
    ArrayRef<BlockArgument> extra = block->getArguments().drop_front(n);
    Value g = mapping.lookup(yielded);
    Value w = extra[0];
    if (kind == ReductionKind::Max || kind == ReductionKind::Min) {
      Value share = isComplex
                        ? Value(complex::DivOp::create(b, loc, w, extra[2]))
                        : Value(arith::DivFOp::create(b, loc, w, extra[2]));
      w = arith::SelectOp::create(b, loc, equal(b, g, extra[1]), share,
                                  scalarZero(b, loc, resultElement));
    } else if (kind == ReductionKind::Prod) {
      Value zero = scalarZero(b, loc, resultElement);
      Value one = scalarOne(b, loc, resultElement);
      Value noZero = equal(b, extra[3], zero);
      Value oneZero = equal(b, extra[3], one);
      Value atZero = equal(b, g, zero);
      Value quotient = isComplex
                           ? Value(complex::DivOp::create(b, loc, extra[1], g))
                           : Value(arith::DivFOp::create(b, loc, extra[1], g));
      Value single = arith::SelectOp::create(
          b, loc, arith::AndIOp::create(b, loc, oneZero, atZero), extra[2],
          zero);
      Value d = arith::SelectOp::create(b, loc, noZero, quotient, single);
      w = isComplex ? Value(complex::MulOp::create(
                          b, loc, w, complex::ConjOp::create(b, loc, d)))
                    : Value(arith::MulFOp::create(b, loc, w, d));
    }
    FailureOr<SmallVector<Value>> adjoints =
        regionAdjoints(b, loc, forward, mapping, w);
    if (failed(adjoints))
      return failure();
    Value a = (*adjoints)[i];
    YieldOp::create(b, loc,
                    ValueRange{a ? a : scalarZero(b, loc, inputElement)});
    operandCotangents[i] = grad.getResult();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// view
//===----------------------------------------------------------------------===//

/// Reshapes (a bijection between the boxes, row-major): the inverse reshape.
static Value reshapeAdjoint(OpBuilder &b, Location loc, ViewOp op, Value ybar) {
  ViewAttr layout = op.getLayout();
  RankedTensorType resultType = op.getType();
  RankedTensorType sourceType = op.getSource().getType();
  if (layout.hasMask() ||
      resultType.getNumElements() != sourceType.getNumElements())
    return Value();
  MLIRContext *ctx = b.getContext();
  ViewAttr reshape =
      reshapeLayout(ctx, sourceType.getShape(), resultType.getShape());
  if (!mapsAgreeOnBox(layout.getMap(), reshape.getMap(), resultType.getShape()))
    return Value();
  ViewAttr inverseLayout = simplifyLayout(
      reshapeLayout(ctx, resultType.getShape(), sourceType.getShape()),
      sourceType.getShape());
  return view(b, loc, ybar, inverseLayout, sourceType.getShape());
}

/// Source index j (flattened over the view's result dims: `flat`, its
/// constant last) less its constant and its terms in every dim but
/// `primary`, those read at `resultIndex`, over the adjoint's dims (dim j is
/// the source's): the term of `primary`, `a * o`, that the adjoint solves.
static AffineExpr primaryTerm(ArrayRef<int64_t> flat, unsigned j, int primary,
                              ArrayRef<AffineExpr> resultIndex,
                              MLIRContext *ctx) {
  unsigned rank = flat.size() - 1;
  AffineExpr rest = getAffineDimExpr(j, ctx) - flat[rank];
  for (unsigned d = 0; d < rank; ++d)
    if (flat[d] != 0 && static_cast<int>(d) != primary)
      rest = rest - resultIndex[d] * flat[d];
  return rest;
}

/// The cotangent `ybar` of a view with `layout` read back onto the adjoint's
/// `adjShape` domain (the source's `srcRank` dims, then dims summed over):
/// the view's result dims at `resultIndex`, zero where `ge` (>= 0), `eq`
/// (== 0) or the view's own mask pulled back fail, summed over the dims
/// after the source's.
static Value readBack(OpBuilder &b, Location loc, ViewAttr layout, Value ybar,
                      ArrayRef<AffineExpr> resultIndex,
                      SmallVector<AffineExpr> ge, SmallVector<AffineExpr> eq,
                      ArrayRef<int64_t> adjShape, unsigned srcRank) {
  MLIRContext *ctx = b.getContext();
  unsigned n = adjShape.size();
  if (IntegerSet mask = layout.getMask()) {
    for (auto [expr, isEq] :
         llvm::zip(mask.getConstraints(), mask.getEqFlags())) {
      AffineExpr pulled = expr.replaceDimsAndSymbols(resultIndex, {});
      (isEq ? eq : ge).push_back(pulled);
    }
  }
  SmallVector<AffineExpr> constraints(ge);
  SmallVector<bool> flags(ge.size(), false);
  llvm::append_range(constraints, eq);
  flags.append(eq.size(), true);
  IntegerSet adjMask = constraints.empty()
                           ? IntegerSet()
                           : IntegerSet::get(n, 0, constraints, flags);
  ViewAttr adjLayout =
      simplifyLayout(ViewAttr::get(ctx, AffineMap::get(n, 0, resultIndex, ctx),
                                   adjMask, PadKind::Zero, Attribute()),
                     adjShape);
  Value read = view(b, loc, ybar, adjLayout, adjShape);
  if (n == srcRank)
    return read;
  SmallVector<int64_t> summed;
  for (unsigned d = srcRank; d < n; ++d)
    summed.push_back(d);
  return sumOver(b, loc, read, summed);
}

/// The least window (elements of a strided view's result: positions times
/// taps) read back per phase. Each phase is a kernel of its own, with its
/// masks' padded copies: a 3x3x3 stride-2 pooling's gradient became 115
/// LLVM functions instead of 16 and compiled in 3.5 s instead of 0.2 on an
/// AMD EPYC Zen 4, for a window of 2 x 27 x 27 elements whose fold takes
/// microseconds. From about this size on the fold's gathers cost more per
/// step than the phases' compile time over a training run.
static constexpr int64_t kMinPhaseElements = 1 << 15;

/// `x mod m` in [0, m).
static int64_t floorMod(int64_t x, int64_t m) { return ((x % m) + m) % m; }

/// Sliding windows with a stride (`s = a * o + f * k + c`, a > 1), read
/// back per phase of the source index instead of as one masked fold. For
/// `s = a * m + u` (u in [0, a)), the taps that land on phase u are
/// `k = k0 + (a / g) * t` (g = gcd(f, a), k0 the least solution of
/// `f * k0 = u - c (mod a)`), from `o = m + (u - c - f * k0) / a - (f / g) *
/// t`: affine in (m, t), no floordiv and no parity mask. Each combination
/// of phases is a plain window sum over its own taps (a stride-2 3x3
/// window: 1, 2, 2 and 4 taps instead of 9 masked ones per element); the
/// phases are stacked (harp.concat) and interleaved back by one view
/// (`(s mod a, s floordiv a)`), copied once (harp.contiguous): its readers
/// (a batch norm's backward) fused through the view were scalar kernels
/// (its `floordiv` and `mod` are not tiled), 2.6 ms of a ResNet step where
/// the fold had taken 3.3. A convolution's input gradient and a
/// pooling's gradient take this path; the one-fold form read nine masked
/// gathers per element (a ResNet step's stride-2 input gradient: 3.3 ms at
/// 3% of its roofline on an AMD EPYC Zen 4). Null where it does not apply:
/// no stride, a negative stride, more than one other dim in a strided index,
/// or more than 16 phase combinations, or a window of fewer than
/// kMinPhaseElements elements.
static Value phaseAdjoint(OpBuilder &b, Location loc, ViewOp op, Value ybar,
                          ArrayRef<SmallVector<int64_t>> coefficients,
                          ArrayRef<int> solved) {
  ViewAttr layout = op.getLayout();
  ArrayRef<int64_t> resultShape = op.getType().getShape();
  RankedTensorType sourceType = op.getSource().getType();
  ArrayRef<int64_t> sourceShape = sourceType.getShape();
  unsigned rank = resultShape.size(), srcRank = sourceShape.size();
  MLIRContext *ctx = b.getContext();
  if (op.getType().getNumElements() < kMinPhaseElements)
    return Value();

  // Per source index: its stride (1: none) and the one other dim it reads.
  SmallVector<int64_t> stride(srcRank, 1);
  SmallVector<int> tap(srcRank, -1);
  int64_t phases = 1;
  for (unsigned j = 0; j < srcRank; ++j) {
    int primary = solved[j];
    if (primary < 0 || coefficients[j][primary] == 1 ||
        coefficients[j][primary] == -1)
      continue;
    if (coefficients[j][primary] < 0)
      return Value();
    for (unsigned d = 0; d < rank; ++d) {
      if (coefficients[j][d] == 0 || static_cast<int>(d) == primary)
        continue;
      if (tap[j] >= 0)
        return Value();
      tap[j] = d;
    }
    // A strided slice without a window (`3 o + 1`) keeps the one masked
    // read: its other phases would be zeros.
    if (tap[j] < 0)
      return Value();
    stride[j] = coefficients[j][primary];
    phases *= stride[j];
    if (phases > 16)
      return Value();
  }
  if (phases == 1)
    return Value();

  // The phase shape: a strided source dim becomes its ceil(size / stride)
  // steps.
  SmallVector<int64_t> phaseShape(sourceShape);
  for (unsigned j = 0; j < srcRank; ++j)
    phaseShape[j] = llvm::divideCeil(sourceShape[j], stride[j]);
  auto phaseType =
      RankedTensorType::get(phaseShape, sourceType.getElementType());

  SmallVector<Value> pieces;
  for (int64_t p = 0; p < phases; ++p) {
    // This combination's phase of each strided index (the last varies
    // fastest).
    SmallVector<int64_t> phase(srcRank, 0);
    for (int64_t rest = p, j = srcRank - 1; j >= 0; --j) {
      phase[j] = rest % stride[j];
      rest /= stride[j];
    }
    SmallVector<int64_t> adjShape(phaseShape);
    SmallVector<AffineExpr> resultIndex(rank);
    SmallVector<AffineExpr> ge, eq;
    bool empty = false;
    // The taps of each strided index on its phase: dims t.
    for (unsigned j = 0; j < srcRank && !empty; ++j) {
      if (stride[j] == 1)
        continue;
      int64_t a = stride[j], c = coefficients[j][rank], rhs = phase[j] - c;
      int primary = solved[j];
      int64_t f = coefficients[j][tap[j]];
      int64_t g = std::gcd(f < 0 ? -f : f, a), step = a / g;
      int64_t k0 = 0;
      while (k0 < step && floorMod(f * k0 - rhs, a) != 0)
        ++k0;
      int64_t size = resultShape[tap[j]];
      // No tap lands on this phase (g does not divide u - c, or the window
      // is shorter than the stride).
      if (k0 == step || k0 >= size) {
        empty = true;
        continue;
      }
      AffineExpr t = getAffineDimExpr(adjShape.size(), ctx);
      adjShape.push_back(llvm::divideCeil(size - k0, step));
      resultIndex[tap[j]] = k0 + step * t;
      resultIndex[primary] =
          getAffineDimExpr(j, ctx) + (rhs - f * k0) / a - (f / g) * t;
      ge.push_back(resultIndex[primary]);
      ge.push_back(resultShape[primary] - 1 - resultIndex[primary]);
    }
    if (empty) {
      pieces.push_back(buildZeros(b, loc, phaseType));
      continue;
    }
    // The other result dims: summed over (broadcasts, the taps of
    // unstrided indices), then the unstrided indices solved as the one-fold
    // form does.
    for (unsigned k = 0; k < rank; ++k) {
      if (resultIndex[k] || llvm::is_contained(solved, static_cast<int>(k)))
        continue;
      resultIndex[k] = getAffineDimExpr(adjShape.size(), ctx);
      adjShape.push_back(resultShape[k]);
    }
    for (unsigned j = 0; j < srcRank; ++j) {
      if (stride[j] != 1)
        continue;
      ArrayRef<int64_t> flat = coefficients[j];
      int primary = solved[j];
      AffineExpr rest = primaryTerm(flat, j, primary, resultIndex, ctx);
      if (primary < 0) {
        eq.push_back(rest);
        continue;
      }
      AffineExpr k = flat[primary] > 0 ? rest : -rest;
      resultIndex[primary] = k;
      ge.push_back(k);
      ge.push_back(resultShape[primary] - 1 - k);
    }
    pieces.push_back(
        readBack(b, loc, layout, ybar, resultIndex, ge, eq, adjShape, srcRank));
  }

  // Stacked along a new leading dim, then interleaved back.
  SmallVector<int64_t> unitShape{1};
  llvm::append_range(unitShape, phaseShape);
  SmallVector<AffineExpr> dropUnit;
  for (unsigned j = 0; j < srcRank; ++j)
    dropUnit.push_back(getAffineDimExpr(j + 1, ctx));
  ViewAttr addUnit =
      ViewAttr::get(AffineMap::get(srcRank + 1, 0, dropUnit, ctx));
  for (Value &piece : pieces)
    piece = view(b, loc, piece, addUnit, unitShape);
  SmallVector<int64_t> stackedShape{phases};
  llvm::append_range(stackedShape, phaseShape);
  Value stacked = ConcatOp::create(
      b, loc, RankedTensorType::get(stackedShape, sourceType.getElementType()),
      pieces, b.getI64IntegerAttr(0));
  AffineExpr phaseIndex = getAffineConstantExpr(0, ctx);
  SmallVector<AffineExpr> interleave{phaseIndex};
  for (unsigned j = 0; j < srcRank; ++j) {
    AffineExpr s = getAffineDimExpr(j, ctx);
    if (stride[j] == 1) {
      interleave.push_back(s);
      continue;
    }
    phaseIndex = phaseIndex * stride[j] + s % stride[j];
    interleave.push_back(s.floorDiv(stride[j]));
  }
  interleave[0] = phaseIndex;
  ViewAttr back = simplifyLayout(
      ViewAttr::get(AffineMap::get(srcRank, 0, interleave, ctx)), sourceShape);
  return ContiguousOp::create(b, loc, view(b, loc, stacked, back, sourceShape));
}

/// Views whose source indices are sums of result dims, each result dim read
/// by at most one source index: transposes, broadcasts, slices with steps,
/// flips, pads, squeezes, triangular masks (one dim per index) and sliding
/// windows (`s = stride * o + dilation * k`: pooling, unfold). For each
/// source index one of its dims, the widest, is solved for (`o = (s -
/// dilation * k) / stride`, masked where not an integer or out of range);
/// the others (`k`) become dims of the adjoint summed over, with the
/// broadcast dims. The cotangent is read back through that inverse map (a
/// fold for windows), with no copy and no scatter.
static Value inverseMapAdjoint(OpBuilder &b, Location loc, ViewOp op,
                               Value ybar) {
  ViewAttr layout = op.getLayout();
  AffineMap map = layout.getMap();
  ArrayRef<int64_t> resultShape = op.getType().getShape();
  ArrayRef<int64_t> sourceShape = op.getSource().getType().getShape();
  unsigned rank = resultShape.size(), srcRank = sourceShape.size();
  MLIRContext *ctx = b.getContext();

  // Each source index as coefficients over the result dims and a constant;
  // the dim solved for in each (-1 for a constant index).
  SmallVector<SmallVector<int64_t>> coefficients;
  SmallVector<int> usedBy(rank, -1), solved;
  for (auto [j, expr] : llvm::enumerate(map.getResults())) {
    SmallVector<int64_t> flat;
    if (failed(getFlattenedAffineExpr(expr, rank, 0, &flat)) ||
        flat.size() != rank + 1)
      return Value();
    int primary = -1;
    for (unsigned d = 0; d < rank; ++d) {
      if (flat[d] == 0)
        continue;
      if (usedBy[d] >= 0)
        return Value();
      usedBy[d] = j;
      if (primary < 0 || resultShape[d] > resultShape[primary])
        primary = d;
    }
    solved.push_back(primary);
    coefficients.push_back(std::move(flat));
  }
  if (Value phased = phaseAdjoint(b, loc, op, ybar, coefficients, solved))
    return phased;
  // Adjoint domain: the source dims, then every result dim not solved for.
  SmallVector<int64_t> adjShape(sourceShape);
  SmallVector<AffineExpr> resultIndex(rank);
  SmallVector<unsigned> extraDims;
  for (unsigned k = 0; k < rank; ++k) {
    if (llvm::is_contained(solved, static_cast<int>(k)))
      continue;
    resultIndex[k] = getAffineDimExpr(srcRank + extraDims.size(), ctx);
    extraDims.push_back(k);
    adjShape.push_back(resultShape[k]);
  }
  SmallVector<AffineExpr> ge, eq;
  for (auto [j, flat] : llvm::enumerate(coefficients)) {
    int primary = solved[j];
    AffineExpr rest = primaryTerm(flat, j, primary, resultIndex, ctx);
    if (primary < 0) {
      eq.push_back(rest);
      continue;
    }
    int64_t a = flat[primary];
    AffineExpr num = a > 0 ? rest : -rest;
    int64_t step = a > 0 ? a : -a;
    AffineExpr k = step == 1 ? num : num.floorDiv(step);
    if (step != 1)
      eq.push_back(num % step);
    resultIndex[primary] = k;
    ge.push_back(k);
    ge.push_back(resultShape[primary] - 1 - k);
  }
  return readBack(b, loc, layout, ybar, resultIndex, ge, eq, adjShape, srcRank);
}

/// Any other view (diagonals, reshapes of windows): scatter-add the cotangent
/// to the linear source index each result element reads.
static Value scatterAdjoint(OpBuilder &b, Location loc, ViewOp op, Value ybar) {
  ViewAttr layout = op.getLayout();
  RankedTensorType resultType = op.getType();
  RankedTensorType sourceType = op.getSource().getType();
  Type element = resultType.getElementType();
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> shape = resultType.getShape();
  unsigned rank = shape.size();
  int64_t count = resultType.getNumElements();
  if (count == 0)
    return buildZeros(b, loc, sourceType);

  // Per result element: its source's linear index and its (masked) value.
  auto i64 = b.getI64Type();
  auto indexType = RankedTensorType::get(shape, i64);
  auto indices = MapReduceOp::create(b, loc, indexType, ValueRange{}, nullptr,
                                     nullptr, nullptr);
  {
    OpBuilder::InsertionGuard guard(b);
    createBodyBlock(b, indices);
    SmallVector<Value> at;
    for (unsigned d = 0; d < rank; ++d)
      at.push_back(IndexOp::create(b, loc, d));
    AffineExpr lin =
        linearize(layout.getMap().getResults(), sourceType.getShape(), ctx);
    Value v = buildIndexExpr(b, loc, lin, at);
    if (layout.hasMask())
      v = arith::SelectOp::create(
          b, loc, buildMaskCondition(b, loc, layout.getMask(), at), v,
          arith::ConstantIndexOp::create(b, loc, 0));
    YieldOp::create(b, loc,
                    ValueRange{arith::IndexCastOp::create(b, loc, i64, v)});
  }
  Value values = ybar;
  if (layout.hasMask()) {
    auto masked = MapReduceOp::create(b, loc, resultType, ybar, nullptr,
                                      nullptr, nullptr);
    OpBuilder::InsertionGuard guard(b);
    Block *block = createBodyBlock(b, masked);
    SmallVector<Value> at;
    for (unsigned d = 0; d < rank; ++d)
      at.push_back(IndexOp::create(b, loc, d));
    Value inside = buildMaskCondition(b, loc, layout.getMask(), at);
    Value kept = arith::SelectOp::create(b, loc, inside, block->getArgument(0),
                                         scalarZero(b, loc, element));
    YieldOp::create(b, loc, ValueRange{kept});
    values = masked.getResult();
  }
  SmallVector<AffineExpr> flatDims{getAffineDimExpr(0, ctx)};
  ViewAttr flatten =
      ViewAttr::get(AffineMap::get(1, 0, delinearize(flatDims[0], shape), ctx));
  flatten = simplifyLayout(flatten, {count});
  Value flatIndex = view(b, loc, indices, flatten, {count});
  Value flatValues = view(b, loc, values, flatten, {count});
  int64_t srcCount = sourceType.getNumElements();
  auto flatType = RankedTensorType::get({srcCount}, element);
  Value scattered = ScatterAddOp::create(b, loc, flatType, flatValues,
                                         buildZeros(b, loc, flatType),
                                         flatIndex, b.getI64IntegerAttr(0));
  SmallVector<AffineExpr> srcDims;
  for (unsigned d = 0; d < sourceType.getRank(); ++d)
    srcDims.push_back(getAffineDimExpr(d, ctx));
  ViewAttr unflatten = ViewAttr::get(
      AffineMap::get(sourceType.getRank(), 0,
                     linearize(srcDims, sourceType.getShape(), ctx), ctx));
  return view(b, loc, scattered, unflatten, sourceType.getShape());
}

LogicalResult
ViewOp::buildCotangents(OpBuilder &b, ArrayRef<Value> resultCotangents,
                        ArrayRef<bool> needed,
                        SmallVectorImpl<Value> &operandCotangents) {
  operandCotangents.assign(1, Value());
  Value ybar = resultCotangents.front();
  if (!ybar || !needed[0] || !isDifferentiableType(getType()))
    return success();
  Location loc = getLoc();
  // Reshapes first: a split dim is also a sum of dims, which the inverse
  // map would read back as a masked sum instead of a plain view.
  Value adjoint = reshapeAdjoint(b, loc, *this, ybar);
  if (!adjoint)
    adjoint = inverseMapAdjoint(b, loc, *this, ybar);
  if (!adjoint)
    adjoint = scatterAdjoint(b, loc, *this, ybar);
  operandCotangents[0] = adjoint;
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement, sources, contiguous
//===----------------------------------------------------------------------===//

LogicalResult
ConcatOp::buildCotangents(OpBuilder &b, ArrayRef<Value> resultCotangents,
                          ArrayRef<bool> needed,
                          SmallVectorImpl<Value> &operandCotangents) {
  operandCotangents.assign(getNumOperands(), Value());
  Value ybar = resultCotangents.front();
  if (!ybar || !isDifferentiableType(getType()))
    return success();
  MLIRContext *ctx = getContext();
  int64_t rank = getType().getRank(), dim = getDim(), offset = 0;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    if (needed[i]) {
      SmallVector<AffineExpr> exprs;
      for (int64_t d = 0; d < rank; ++d)
        exprs.push_back(getAffineDimExpr(d, ctx) + (d == dim ? offset : 0));
      operandCotangents[i] = view(
          b, getLoc(), ybar, ViewAttr::get(AffineMap::get(rank, 0, exprs, ctx)),
          type.getShape());
    }
    offset += type.getDimSize(dim);
  }
  return success();
}

LogicalResult
GatherOp::buildCotangents(OpBuilder &b, ArrayRef<Value> resultCotangents,
                          ArrayRef<bool> needed,
                          SmallVectorImpl<Value> &operandCotangents) {
  operandCotangents.assign(2, Value());
  Value ybar = resultCotangents.front();
  if (!ybar || !needed[0] || !isDifferentiableType(getType()))
    return success();
  RankedTensorType inputType = getInput().getType();
  operandCotangents[0] = ScatterAddOp::create(
      b, getLoc(), inputType, ybar, buildZeros(b, getLoc(), inputType),
      getIndex(), getDimAttr());
  return success();
}

LogicalResult
ScatterAddOp::buildCotangents(OpBuilder &b, ArrayRef<Value> resultCotangents,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &operandCotangents) {
  operandCotangents.assign(3, Value());
  Value ybar = resultCotangents.front();
  if (!ybar || !isDifferentiableType(getType()))
    return success();
  Location loc = getLoc();
  if (needed[1])
    operandCotangents[1] = ybar;
  if (needed[0]) {
    RankedTensorType srcType = getSrc().getType();
    ArrayRef<int64_t> indexShape = getIndex().getType().getShape();
    auto gatheredType =
        RankedTensorType::get(indexShape, srcType.getElementType());
    Value gathered =
        GatherOp::create(b, loc, gatheredType, ybar, getIndex(), getDimAttr());
    // src elements the index does not cover received nothing: zero.
    MLIRContext *ctx = getContext();
    unsigned rank = srcType.getRank();
    SmallVector<AffineExpr> bounds;
    for (unsigned d = 0; d < rank; ++d)
      if (indexShape[d] < srcType.getDimSize(d))
        bounds.push_back(indexShape[d] - 1 - getAffineDimExpr(d, ctx));
    IntegerSet mask =
        bounds.empty()
            ? IntegerSet()
            : IntegerSet::get(rank, 0, bounds,
                              SmallVector<bool>(bounds.size(), false));
    operandCotangents[0] =
        bounds.empty()
            ? gathered
            : view(b, loc, gathered,
                   ViewAttr::get(ctx,
                                 AffineMap::getMultiDimIdentityMap(rank, ctx),
                                 mask, PadKind::Zero, Attribute()),
                   srcType.getShape());
  }
  return success();
}

LogicalResult
RandOp::buildCotangents(OpBuilder &, ArrayRef<Value>, ArrayRef<bool>,
                        SmallVectorImpl<Value> &operandCotangents) {
  // At most an integer seed: nothing to differentiate.
  operandCotangents.assign(getOperation()->getNumOperands(), Value());
  return success();
}

LogicalResult ArangeOp::buildCotangents(OpBuilder &, ArrayRef<Value>,
                                        ArrayRef<bool>,
                                        SmallVectorImpl<Value> &) {
  return success(); // No operands.
}

LogicalResult
ContiguousOp::buildCotangents(OpBuilder &, ArrayRef<Value> resultCotangents,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &operandCotangents) {
  operandCotangents.assign(1, needed[0] ? resultCotangents.front() : Value());
  return success();
}
