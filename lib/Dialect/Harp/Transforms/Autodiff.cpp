//===- Autodiff.cpp - the harp-autodiff pass ------------------------------===//
//
// Reverse-mode differentiation as an IR transformation: each harp.autodiff
// becomes a call to a generated gradient function built from the ops'
// DifferentiableOpInterface rules.
//
//===----------------------------------------------------------------------===//

#include "harp/Dialect/Harp/IR/HarpOps.h"
#include "harp/Dialect/Harp/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPAUTODIFFPASS
#include "harp/Dialect/Harp/Transforms/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;
using namespace mlir::harp;

static bool isDifferentiable(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType, ComplexType>(tensor.getElementType());
}

/// `a + b`, element-wise.
static Value addTensors(OpBuilder &b, Location loc, Value x, Value y) {
  auto type = cast<RankedTensorType>(x.getType());
  Type element = type.getElementType();
  auto op = MapReduceOp::create(b, loc, type, ValueRange{x, y}, nullptr,
                                nullptr, nullptr);
  OpBuilder::InsertionGuard guard(b);
  Block *block = createBodyBlock(b, op);
  Value sum = isa<ComplexType>(element)
                  ? Value(complex::AddOp::create(b, loc, block->getArgument(0),
                                                 block->getArgument(1)))
                  : Value(arith::AddFOp::create(b, loc, block->getArgument(0),
                                                block->getArgument(1)));
  YieldOp::create(b, loc, ValueRange{sum});
  return op.getResult();
}

namespace {
class GradientBuilder {
public:
  GradientBuilder(ModuleOp module) : module(module), symbols(module) {}

  /// The gradient function of `f` w.r.t. the arguments set in `wrt`,
  /// taking cotangents of `f`'s first `seeded` results (all by default; the
  /// others are auxiliary outputs, returned but not differentiated).
  FailureOr<func::FuncOp> get(func::FuncOp f, ArrayRef<bool> wrt,
                              Operation *requester,
                              std::optional<unsigned> seeded = std::nullopt) {
    std::string mask;
    for (bool w : wrt)
      mask += w ? '1' : '0';
    unsigned numResults = f.getFunctionType().getNumResults();
    unsigned cotangents = seeded ? std::min(*seeded, numResults) : numResults;
    if (cotangents != numResults)
      mask += "_s" + std::to_string(cotangents);
    std::string name = ("__harp_grad_" + f.getSymName() + "_" + mask).str();
    if (llvm::is_contained(inProgress, f.getOperation()))
      return requester->emitOpError("differentiates @")
             << f.getSymName()
             << ", which calls itself recursively; harp-autodiff cannot "
                "differentiate recursion";
    if (auto existing = symbols.lookup<func::FuncOp>(name))
      return existing;
    if (f.isExternal())
      return requester->emitOpError("callee @")
             << f.getSymName() << " has no body to differentiate";
    if (!llvm::hasSingleElement(f.getBody()))
      return f.emitOpError("has several blocks; harp-autodiff "
                           "differentiates straight-line functions"),
             failure();
    for (Type type :
         llvm::concat<const Type>(f.getArgumentTypes(), f.getResultTypes()))
      if (!isa<RankedTensorType>(type))
        return f.emitOpError("has a value of type ")
                   << type
                   << "; harp-autodiff differentiates functions of tensors "
                      "(use a 0-d tensor for a scalar)",
               failure();
    inProgress.push_back(f.getOperation());
    FailureOr<func::FuncOp> result = build(f, wrt, cotangents, name);
    inProgress.pop_back();
    return result;
  }

private:
  FailureOr<func::FuncOp> build(func::FuncOp f, ArrayRef<bool> wrt,
                                unsigned cotangents, StringRef name) {
    Location loc = f.getLoc();
    FunctionType fnType = f.getFunctionType();
    SmallVector<Type> inputs(fnType.getInputs());
    llvm::append_range(inputs, fnType.getResults().take_front(cotangents));
    SmallVector<Type> results(fnType.getResults());
    for (auto [i, type] : llvm::enumerate(fnType.getInputs()))
      if (wrt[i])
        results.push_back(type);
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    auto grad =
        func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, results));
    grad.setPrivate();
    symbols.insert(grad);
    Block *entry = grad.addEntryBlock();
    b.setInsertionPointToStart(entry);

    // Forward: the body again, and which values depend on a wrt argument.
    Block &body = f.getBody().front();
    IRMapping mapping;
    DenseSet<Value> varied;
    for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
      mapping.map(arg, entry->getArgument(i));
      if (wrt[i])
        varied.insert(entry->getArgument(i));
    }
    SmallVector<Operation *> forward;
    for (Operation &op : body.without_terminator()) {
      Operation *clone = b.clone(op, mapping);
      forward.push_back(clone);
      if (llvm::any_of(clone->getOperands(),
                       [&](Value v) { return varied.contains(v); }))
        for (Value r : clone->getResults())
          varied.insert(r);
    }
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<Value> primal = llvm::map_to_vector(
        ret.getOperands(), [&](Value v) { return mapping.lookup(v); });

    // Reverse: cotangents, summed over uses.
    DenseMap<Value, Value> cot;
    auto accumulate = [&](Value v, Value c) {
      if (!c || !varied.contains(v) || !isDifferentiable(v.getType()))
        return;
      Value &slot = cot[v];
      slot = slot ? addTensors(b, loc, slot, c) : c;
    };
    unsigned numArgs = fnType.getNumInputs();
    for (auto [k, value] : llvm::enumerate(primal))
      if (k < cotangents)
        accumulate(value, entry->getArgument(numArgs + k));

    for (Operation *op : llvm::reverse(forward)) {
      SmallVector<Value> resultCots = llvm::map_to_vector(
          op->getResults(), [&](Value r) { return cot.lookup(r); });
      if (llvm::all_of(resultCots, [](Value c) { return !c; }))
        continue;
      SmallVector<bool> needed =
          llvm::map_to_vector(op->getOperands(), [&](Value v) {
            return varied.contains(v) && isDifferentiable(v.getType());
          });
      if (llvm::none_of(needed, [](bool n) { return n; }))
        continue;
      SmallVector<Value> operandCots;
      if (auto call = dyn_cast<func::CallOp>(op)) {
        if (failed(callCotangents(b, call, resultCots, needed, operandCots)))
          return failure();
      } else if (auto rule = dyn_cast<DifferentiableOpInterface>(op)) {
        if (failed(rule.buildCotangents(b, resultCots, needed, operandCots)))
          return failure();
      } else {
        return op->emitOpError("has no derivative rule; harp-autodiff cannot "
                               "differentiate through it"),
               failure();
      }
      for (auto [operand, c] : llvm::zip(op->getOperands(), operandCots))
        accumulate(operand, c);
    }

    SmallVector<Value> returned(primal);
    for (auto [i, arg] :
         llvm::enumerate(entry->getArguments().take_front(numArgs))) {
      if (!wrt[i])
        continue;
      Value c = cot.lookup(arg);
      returned.push_back(
          c ? c : buildZeros(b, loc, cast<RankedTensorType>(arg.getType())));
    }
    func::ReturnOp::create(b, loc, returned);
    return grad;
  }

  /// A call's operand cotangents come from the callee's gradient function.
  LogicalResult callCotangents(OpBuilder &b, func::CallOp call,
                               ArrayRef<Value> resultCots,
                               ArrayRef<bool> needed,
                               SmallVectorImpl<Value> &operandCots) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee)
      return call.emitOpError("calls an unknown function");
    FailureOr<func::FuncOp> grad = get(callee, needed, call);
    if (failed(grad))
      return failure();
    SmallVector<Value> args(call.getOperands());
    for (auto [r, c] : llvm::zip(call.getResults(), resultCots))
      args.push_back(c ? c
                       : buildZeros(b, call.getLoc(),
                                    cast<RankedTensorType>(r.getType())));
    auto gradCall = func::CallOp::create(b, call.getLoc(), *grad, args);
    operandCots.assign(call.getNumOperands(), Value());
    unsigned next = call.getNumResults();
    for (auto [i, n] : llvm::enumerate(needed))
      if (n)
        operandCots[i] = gradCall.getResult(next++);
    return success();
  }

  ModuleOp module;
  SymbolTable symbols;
  SmallVector<Operation *> inProgress;
};

struct HarpAutodiffPass : harp::impl::HarpAutodiffPassBase<HarpAutodiffPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<AutodiffOp> requests;
    module.walk([&](AutodiffOp op) { requests.push_back(op); });
    GradientBuilder builder(module);
    SymbolTable symbols(module);
    DenseSet<Operation *> generated;
    for (AutodiffOp op : requests) {
      auto callee = symbols.lookup<func::FuncOp>(op.getCallee());
      SmallVector<bool> wrt(op.getArgs().size(), false);
      for (int64_t w : op.getWrt())
        wrt[w] = true;
      // Unseeded: the loss (the first result) has cotangent 1, the other
      // results are auxiliary outputs.
      std::optional<unsigned> seeded;
      if (op.getSeeds().empty())
        seeded = 1;
      FailureOr<func::FuncOp> grad = builder.get(callee, wrt, op, seeded);
      if (failed(grad))
        return signalPassFailure();
      generated.insert(grad->getOperation());
      OpBuilder b(op);
      SmallVector<Value> args(op.getArgs());
      if (op.getSeeds().empty()) {
        // A scalar loss: its cotangent is 1.
        auto type =
            cast<RankedTensorType>(callee.getFunctionType().getResult(0));
        args.push_back(arith::ConstantOp::create(
            b, op.getLoc(),
            DenseElementsAttr::get(
                type, b.getFloatAttr(type.getElementType(), 1.0))));
      } else {
        llvm::append_range(args, op.getSeeds());
      }
      auto call = func::CallOp::create(b, op.getLoc(), *grad, args);
      op.replaceAllUsesWith(call.getResults());
      op.erase();
    }
    // Gradient functions (those of callees too) come out canonical.
    OpPassManager cleanup(func::FuncOp::getOperationName());
    cleanup.addPass(createCanonicalizerPass());
    cleanup.addPass(createCSEPass());
    for (auto func : module.getOps<func::FuncOp>())
      if (func.getSymName().starts_with("__harp_grad_"))
        if (failed(runPipeline(cleanup, func)))
          return signalPassFailure();
  }
};
} // namespace
