//===- ProfileKernels.cpp - the harp-profile-kernels pass -----------------===//
//
// Brackets every kernel (an operation with regions, or a memory copy,
// directly in a function's body) with calls that time it into harp's
// runtime profile, under a name that says what the kernel is and where it
// came from (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/Common/Passes.h"
#include "harp/Codegen/Common/TilingUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPPROFILEKERNELSPASS
#include "harp/Codegen/Common/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

static constexpr llvm::StringLiteral kClock = "harp_profile_clock";
static constexpr llvm::StringLiteral kRecord = "harp_profile_record";
/// Outermost loops of a nest the name gives trip counts of.
static constexpr unsigned kNamedLoops = 3;
/// Buffers written the name lists.
static constexpr unsigned kNamedBuffers = 3;

/// Whether `op`, directly in a function's body, is a kernel to time: a
/// memory copy, or an op with regions holding a loop or a write (not the
/// scf.if around a deallocation).
static bool isKernel(Operation *op) {
  if (isa<memref::CopyOp>(op))
    return true;
  if (op->getNumRegions() == 0)
    return false;
  return op
      ->walk([](Operation *inner) {
        if (isa<LoopLikeOpInterface>(inner) ||
            hasEffect<MemoryEffects::Write>(inner))
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

/// `value` followed back through views and casts to the buffer they show.
static Value rootBuffer(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      value = view.getViewSource();
    else if (auto cast = dyn_cast<memref::CastOp>(def))
      value = cast.getSource();
    else
      break;
  }
  return value;
}

/// A loop dim's trip count, "?" where its bounds are not constant.
static std::string tripCount(Value lb, Value ub, Value step) {
  std::optional<harp::ConstantBounds> bounds =
      harp::constantBounds(lb, ub, step);
  return bounds ? std::to_string(bounds->tripCount()) : "?";
}

/// "16 x 2 x 8": the trip counts of `op` and of the loops nested first in
/// it, as far as they are scf.for loops with constant bounds ("?" for one
/// whose bounds are not).
static std::string tripCounts(Operation *op) {
  std::string text;
  for (unsigned depth = 0; op && depth < kNamedLoops; ++depth) {
    std::string count;
    Operation *next = nullptr;
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      count =
          tripCount(loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
      for (Operation &inner : *loop.getBody())
        if (isa<scf::ForOp, scf::ParallelOp, scf::ForallOp>(inner)) {
          next = &inner;
          break;
        }
    } else if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      for (auto [lb, ub, step] : llvm::zip(
               loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))
        count += (count.empty() ? "" : "*") + tripCount(lb, ub, step);
    } else {
      break;
    }
    text += (text.empty() ? "" : " x ") + count;
    op = next;
  }
  return text;
}

/// Floating-point operations one execution of `op` does (a multiply-add
/// counts two), ignoring the loops around it; 0 for an op that does none.
static int64_t flopsOf(Operation *op) {
  auto lanes = [](Type type) -> int64_t {
    if (auto vector = dyn_cast<VectorType>(type))
      return vector.getNumElements();
    return 1;
  };
  auto isFloat = [](Type type) {
    return isa<FloatType>(getElementTypeOrSelf(type));
  };
  if (isa<math::FmaOp, vector::FMAOp>(op))
    return 2 * lanes(op->getResult(0).getType());
  if (auto contract = dyn_cast<vector::ContractionOp>(op)) {
    // Every point of the iteration space multiplies and adds.
    SmallVector<int64_t> bounds;
    contract.getIterationBounds(bounds);
    int64_t points = 1;
    for (int64_t size : bounds)
      points *= size;
    return 2 * points;
  }
  if (auto outer = dyn_cast<vector::OuterProductOp>(op))
    return (outer.getAcc() ? 2 : 1) * lanes(outer.getResult().getType());
  if (auto reduction = dyn_cast<vector::ReductionOp>(op))
    return isFloat(reduction.getVector().getType())
               ? lanes(reduction.getVector().getType())
               : 0;
  if (auto reduction = dyn_cast<vector::MultiDimReductionOp>(op))
    return isFloat(reduction.getSourceVectorType())
               ? lanes(reduction.getSourceVectorType())
               : 0;
  if (auto linalg = dyn_cast<linalg::LinalgOp>(op)) {
    // The body's operations at every point of a static iteration space.
    int64_t points = 1;
    for (int64_t range : linalg.getStaticLoopRanges()) {
      if (ShapedType::isDynamic(range))
        return 0;
      points *= range;
    }
    int64_t body = 0;
    for (Operation &inner : linalg.getBlock()->without_terminator())
      body += flopsOf(&inner);
    return points * body;
  }
  bool arithmetic =
      (op->getDialect() &&
       isa<arith::ArithDialect, math::MathDialect>(op->getDialect())) &&
      !isa<arith::ConstantOp, arith::SelectOp, arith::BitcastOp, arith::ExtFOp,
           arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp>(op);
  if (arithmetic && op->getNumResults() == 1 &&
      isFloat(op->getResult(0).getType()))
    return lanes(op->getResult(0).getType());
  return 0;
}

/// Floating-point operations of one run of `kernel`: those of every op in
/// it times the trip counts of the loops around the op; nullopt where a loop
/// around an op that computes has bounds that are not constant.
static std::optional<int64_t> kernelFlops(Operation *kernel) {
  std::optional<int64_t> total = 0;
  kernel->walk<WalkOrder::PreOrder>([&](Operation *op) {
    int64_t flops = flopsOf(op);
    // A linalg op has counted its own body.
    WalkResult next =
        isa<linalg::LinalgOp>(op) ? WalkResult::skip() : WalkResult::advance();
    if (flops == 0)
      return next;
    for (Operation *parent = op->getParentOp(); parent;
         parent = parent->getParentOp()) {
      if (auto loop = dyn_cast<scf::ForOp>(parent)) {
        std::optional<harp::ConstantBounds> bounds = harp::constantBounds(loop);
        if (!bounds) {
          total = std::nullopt;
          return WalkResult::interrupt();
        }
        flops *= bounds->tripCount();
      } else if (auto loop = dyn_cast<scf::ParallelOp>(parent)) {
        for (auto [lb, ub, step] : llvm::zip(
                 loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
          std::optional<harp::ConstantBounds> bounds =
              harp::constantBounds(lb, ub, step);
          if (!bounds) {
            total = std::nullopt;
            return WalkResult::interrupt();
          }
          flops *= bounds->tripCount();
        }
      }
      if (parent == kernel)
        break;
    }
    *total += flops;
    return next;
  });
  return total;
}

/// "537 Mflop": `flops` to three significant digits.
static std::string flopText(int64_t flops) {
  static const char *prefixes[] = {"", "k", "M", "G", "T", "P"};
  double value = static_cast<double>(flops);
  unsigned prefix = 0;
  while (value >= 999.5 && prefix + 1 < std::size(prefixes)) {
    value /= 1000;
    ++prefix;
  }
  const char *digits = !prefix         ? "%.0f"
                       : value < 9.995 ? "%.2f"
                       : value < 99.95 ? "%.1f"
                                       : "%.0f";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format(digits, value) << " " << prefixes[prefix] << "flop";
  return text;
}

/// The types of the buffers `kernel` writes, each once, in order.
static std::string writtenBuffers(Operation *kernel) {
  llvm::SetVector<Value> roots;
  kernel->walk([&](MemoryEffectOpInterface effects) {
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &e : instances)
      if (isa<MemoryEffects::Write>(e.getEffect()) && e.getValue() &&
          isa<BaseMemRefType>(e.getValue().getType()))
        roots.insert(rootBuffer(e.getValue()));
  });
  std::string text;
  llvm::raw_string_ostream os(text);
  unsigned shown = 0;
  for (Value root : roots) {
    // Buffers allocated inside the kernel are its scratch.
    if (Operation *def = root.getDefiningOp();
        def && kernel->isProperAncestor(def))
      continue;
    if (shown == kNamedBuffers) {
      os << ", ...";
      break;
    }
    os << (shown++ ? ", " : "") << root.getType();
  }
  return text;
}

/// "mlp.py:12" for the first file location `loc` holds, else "".
static std::string sourceOf(Location loc) {
  std::string text;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      text = (llvm::sys::path::filename(file.getFilename().getValue()) + ":" +
              std::to_string(file.getLine()))
                 .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return text;
}

namespace {
struct HarpProfileKernelsPass
    : mlir::harp::impl::HarpProfileKernelsPassBase<HarpProfileKernelsPass> {
  void runOnOperation() override {
    // The name globals belong to the module at hand, should one pass
    // instance run on several.
    names.clear();
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(module.getBody());
    Type i64 = b.getI64Type();
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    SymbolTable symbols(module);

    SmallVector<std::pair<func::FuncOp, std::vector<Operation *>>> work;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || func.getName().starts_with("harp_profile_"))
        continue;
      // A function profiled already (the pass run twice) is left as it
      // is: its kernels would be timed twice, the inner brackets counted
      // inside the outer ones.
      WalkResult timed = func.walk([](func::CallOp call) {
        return call.getCallee() == kClock ? WalkResult::interrupt()
                                          : WalkResult::advance();
      });
      if (timed.wasInterrupted())
        continue;
      std::vector<Operation *> kernels;
      for (Block &block : func.getBody())
        for (Operation &op : block)
          if (isKernel(&op))
            kernels.push_back(&op);
      work.emplace_back(func, std::move(kernels));
    }
    if (work.empty())
      return;

    func::FuncOp clock = declare(b, symbols, kClock, {}, {i64});
    func::FuncOp record = declare(b, symbols, kRecord, {ptr, i64}, {});
    if (!clock || !record)
      return signalPassFailure();

    for (auto &[func, kernels] : work) {
      unsigned index = 0;
      for (Operation *kernel : kernels) {
        std::string name = "@" + func.getName().str() + " #" +
                           std::to_string(index++) + " " +
                           kernel->getName().getStringRef().str();
        if (std::string trips = tripCounts(kernel); !trips.empty())
          name += " " + trips;
        if (std::optional<int64_t> flops = kernelFlops(kernel);
            flops && *flops > 0)
          name += " (" + flopText(*flops) + ")";
        if (std::string writes = writtenBuffers(kernel); !writes.empty())
          name += ": writes " + writes;
        if (std::string source = sourceOf(kernel->getLoc()); !source.empty())
          name += " at " + source;
        b.setInsertionPoint(kernel);
        Value start =
            func::CallOp::create(b, kernel->getLoc(), clock).getResult(0);
        b.setInsertionPointAfter(kernel);
        recordCall(b, module, symbols, record, kernel->getLoc(), name, start);
      }
      // The whole call, from entry to each return.
      Block &entry = func.getBody().front();
      b.setInsertionPointToStart(&entry);
      Value start = func::CallOp::create(b, func.getLoc(), clock).getResult(0);
      std::string whole = "@" + func.getName().str() + " (whole call)";
      func.walk([&](func::ReturnOp ret) {
        b.setInsertionPoint(ret);
        recordCall(b, module, symbols, record, ret.getLoc(), whole, start);
      });
    }
  }

private:
  /// The private declaration of runtime function `name`, added once; null
  /// (with an error) when the module defines `name` otherwise.
  static func::FuncOp declare(OpBuilder &b, SymbolTable &symbols,
                              StringRef name, TypeRange inputs,
                              TypeRange results) {
    FunctionType type = b.getFunctionType(inputs, results);
    if (Operation *existing = symbols.lookup(name)) {
      auto func = dyn_cast<func::FuncOp>(existing);
      if (func && func.getFunctionType() == type)
        return func;
      existing->emitError() << "'" << name
                            << "' is harp's profiling runtime function of "
                               "type "
                            << type << "; the module defines it otherwise";
      return nullptr;
    }
    OpBuilder::InsertionGuard guard(b);
    auto func = func::FuncOp::create(b, b.getUnknownLoc(), name, type);
    func.setPrivate();
    symbols.insert(func);
    return func;
  }

  /// Calls harp_profile_record(<name as a global string>, start) at b's
  /// insertion point; identical names share one global.
  void recordCall(OpBuilder &b, ModuleOp module, SymbolTable &symbols,
                  func::FuncOp record, Location loc, StringRef name,
                  Value start) {
    LLVM::GlobalOp &global = names[name];
    if (!global) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(module.getBody());
      std::string text = name.str();
      text.push_back('\0');
      auto type = LLVM::LLVMArrayType::get(b.getIntegerType(8), text.size());
      global = LLVM::GlobalOp::create(
          b, loc, type, /*isConstant=*/true, LLVM::Linkage::Internal,
          "__harp_profile_" + std::to_string(names.size() - 1),
          b.getStringAttr(text));
      symbols.insert(global);
    }
    Value address = LLVM::AddressOfOp::create(b, loc, global);
    func::CallOp::create(b, loc, record, ValueRange{address, start});
  }

  llvm::StringMap<LLVM::GlobalOp> names;
};
} // namespace
