//===- MPIToLLVM.cpp - harp-mpi-to-llvm -----------------------------------===//
//
// Lowers the mpi dialect to calls into the MPI library: upstream's patterns,
// the two ops they leave out (comm_size, barrier), and the checks they
// assume (see the pass description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "harp/Codegen/CPU/Passes.h"

#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MPIToLLVM/MPIToLLVM.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::harp {
#define GEN_PASS_DEF_HARPMPITOLLVMPASS
#include "harp/Codegen/CPU/Passes.h.inc"
} // namespace mlir::harp

using namespace mlir;

namespace {

/// Whether `module` asks for Open MPI's ABI (handles are pointers to
/// library globals) rather than MPICH's (handles are integers).
bool isOpenMPI(ModuleOp module) {
  FailureOr<Attribute> entry =
      dlti::query(module, {"MPI:Implementation"}, /*emitError=*/false);
  if (failed(entry))
    return false;
  auto name = dyn_cast<StringAttr>(*entry);
  return name && name.getValue() == "OpenMPI";
}

/// The communicator as the library takes it: upstream carries `!mpi.comm`
/// as an i64 holding a pointer (Open MPI) or an int (MPICH).
Value libraryComm(OpBuilder &b, Location loc, Value comm, bool openMPI) {
  if (openMPI)
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), comm);
  return LLVM::TruncOp::create(b, loc, b.getI32Type(), comm);
}

LLVM::LLVMFuncOp declare(OpBuilder &b, ModuleOp module, Location loc,
                         StringRef name, LLVM::LLVMFunctionType type) {
  if (auto existing = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  return LLVM::LLVMFuncOp::create(b, loc, name, type);
}

/// A lowering to a library call, for the ABI of Open MPI or MPICH.
template <typename Op>
struct LibraryCallLowering : ConvertOpToLLVMPattern<Op> {
  LibraryCallLowering(const LLVMTypeConverter &converter, bool openMPI)
      : ConvertOpToLLVMPattern<Op>(converter), openMPI(openMPI) {}
  bool openMPI;
};

/// `mpi.comm_size(%comm)`: `MPI_Comm_size(comm, &size)`.
struct CommSizeLowering : LibraryCallLowering<mpi::CommSizeOp> {
  using LibraryCallLowering::LibraryCallLowering;
  LogicalResult
  matchAndRewrite(mpi::CommSizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type i32 = rewriter.getI32Type();
    auto ptr = LLVM::LLVMPointerType::get(rewriter.getContext());
    Value comm = libraryComm(rewriter, loc, adaptor.getComm(), openMPI);
    Value one = LLVM::ConstantOp::create(rewriter, loc, rewriter.getI64Type(),
                                         rewriter.getI64IntegerAttr(1));
    Value slot = LLVM::AllocaOp::create(rewriter, loc, ptr, i32, one);
    LLVM::LLVMFuncOp callee =
        declare(rewriter, op->getParentOfType<ModuleOp>(), loc, "MPI_Comm_size",
                LLVM::LLVMFunctionType::get(i32, {comm.getType(), ptr}));
    auto call =
        LLVM::CallOp::create(rewriter, loc, callee, ValueRange{comm, slot});
    Value size = LLVM::LoadOp::create(rewriter, loc, i32, slot);
    SmallVector<Value> results;
    if (op.getRetval())
      results.push_back(call.getResult());
    results.push_back(size);
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// `mpi.barrier(%comm)`: `MPI_Barrier(comm)`.
struct BarrierLowering : LibraryCallLowering<mpi::Barrier> {
  using LibraryCallLowering::LibraryCallLowering;
  LogicalResult
  matchAndRewrite(mpi::Barrier op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value comm = libraryComm(rewriter, loc, adaptor.getComm(), openMPI);
    LLVM::LLVMFuncOp callee = declare(
        rewriter, op->getParentOfType<ModuleOp>(), loc, "MPI_Barrier",
        LLVM::LLVMFunctionType::get(rewriter.getI32Type(), {comm.getType()}));
    auto call = LLVM::CallOp::create(rewriter, loc, callee, ValueRange{comm});
    if (op.getRetval())
      rewriter.replaceOp(op, call.getResult());
    else
      rewriter.eraseOp(op);
    return success();
  }
};

/// Whether MPI has a predefined datatype for `type` (the ones upstream's
/// lowering maps).
bool hasMPIDatatype(Type type) {
  if (type.isF32() || type.isF64())
    return true;
  auto integer = dyn_cast<IntegerType>(type);
  return integer && !integer.isSigned() &&
         llvm::is_contained({8u, 16u, 32u, 64u}, integer.getWidth());
}

/// Checks what the library calls assume of their buffers.
LogicalResult checkBuffers(ModuleOp module) {
  WalkResult result = module.walk([](Operation *op) {
    if (!isa<mpi::MPIDialect>(op->getDialect()))
      return WalkResult::advance();
    for (Value operand : op->getOperands()) {
      auto type = dyn_cast<MemRefType>(operand.getType());
      if (!type)
        continue;
      if (type.getRank() != 1 || !type.isLastDimUnitStride()) {
        op->emitOpError("needs a 1-D buffer with a unit stride (MPI is "
                        "passed its pointer and its size), got ")
            << type;
        return WalkResult::interrupt();
      }
      if (!hasMPIDatatype(type.getElementType())) {
        op->emitOpError("has no MPI datatype for ")
            << type.getElementType()
            << " (supported: f32, f64, 8- to 64-bit integers)";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

struct HarpMPIToLLVMPass
    : public mlir::harp::impl::HarpMPIToLLVMPassBase<HarpMPIToLLVMPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool any = false;
    module.walk(
        [&](Operation *op) { any |= isa<mpi::MPIDialect>(op->getDialect()); });
    if (!any)
      return;
    if (failed(checkBuffers(module)))
      return signalPassFailure();
    MLIRContext *context = &getContext();
    LLVMTypeConverter converter(context);
    RewritePatternSet patterns(context);
    mpi::populateMPIToLLVMConversionPatterns(converter, patterns);
    patterns.add<CommSizeLowering, BarrierLowering>(converter,
                                                    isOpenMPI(module));
    ConversionTarget target(*context);
    target.addIllegalDialect<mpi::MPIDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    renameOpenMPIOps(module);
    reduceInPlace(module, isOpenMPI(module));
  }

  /// Whether `a` and `b` compute one address: the same value, or the same
  /// GEP of the same fields of one memref descriptor (how upstream's
  /// patterns take a buffer's pointer, once per operand).
  static bool sameAddress(Value a, Value b) {
    if (a == b)
      return true;
    auto field = [](Value x, Value y) {
      auto fx = x.getDefiningOp<LLVM::ExtractValueOp>();
      auto fy = y.getDefiningOp<LLVM::ExtractValueOp>();
      return x == y || (fx && fy && fx.getContainer() == fy.getContainer() &&
                        fx.getPosition() == fy.getPosition());
    };
    auto ga = a.getDefiningOp<LLVM::GEPOp>();
    auto gb = b.getDefiningOp<LLVM::GEPOp>();
    if (!ga || !gb || ga.getElemType() != gb.getElemType() ||
        ga.getRawConstantIndices() != gb.getRawConstantIndices() ||
        !field(ga.getBase(), gb.getBase()) ||
        ga.getDynamicIndices().size() != gb.getDynamicIndices().size())
      return false;
    return llvm::all_of(
        llvm::zip(ga.getDynamicIndices(), gb.getDynamicIndices()),
        [&](auto pair) { return field(std::get<0>(pair), std::get<1>(pair)); });
  }

  /// `mpi.allreduce(%b, %b)` (one buffer to send and receive) passes
  /// MPI_IN_PLACE as the send buffer: MPI forbids aliased buffers, and in
  /// place it needs no second one. Open MPI spells it (void *)1, MPICH
  /// (void *)-1.
  static void reduceInPlace(ModuleOp module, bool openMPI) {
    module.walk([&](LLVM::CallOp call) {
      if (call.getCallee() != "MPI_Allreduce" || call.getNumOperands() < 2 ||
          !sameAddress(call.getOperand(0), call.getOperand(1)))
        return;
      OpBuilder b(call);
      Value marker =
          LLVM::ConstantOp::create(b, call.getLoc(), b.getI64Type(),
                                   b.getI64IntegerAttr(openMPI ? 1 : -1));
      Value inPlace = LLVM::IntToPtrOp::create(
          b, call.getLoc(), call.getOperand(0).getType(), marker);
      call->setOperand(0, inPlace);
    });
  }

  /// MLIR 22 names Open MPI's predefined reductions `ompi_mpi_sum`...; Open
  /// MPI (3 to 5) exports them as `ompi_mpi_op_sum`..., so a module linked
  /// as lowered would not load. Renames the globals and their uses.
  static void renameOpenMPIOps(ModuleOp module) {
    SmallVector<LLVM::GlobalOp> globals;
    for (auto global : module.getOps<LLVM::GlobalOp>()) {
      auto type = dyn_cast<LLVM::LLVMStructType>(global.getGlobalType());
      if (type && type.isIdentified() &&
          type.getName() == "ompi_predefined_op_t" &&
          global.getSymName().starts_with("ompi_mpi_") &&
          !global.getSymName().starts_with("ompi_mpi_op_"))
        globals.push_back(global);
    }
    for (LLVM::GlobalOp global : globals) {
      std::string name =
          "ompi_mpi_op_" +
          global.getSymName().drop_front(strlen("ompi_mpi_")).str();
      auto newName = StringAttr::get(module.getContext(), name);
      if (failed(SymbolTable::replaceAllSymbolUses(global, newName, module)))
        continue;
      global.setSymName(name);
    }
  }
};

/// The MPI library's state: every op that calls into it writes it, so
/// collectives stay alive and in program order (each rank must issue them
/// in the same order).
struct MPILibrary : SideEffects::Resource::Base<MPILibrary> {
  StringRef getName() final { return "mpi"; }
};

/// The memory effects of an mpi op that calls the library: reads of the
/// buffers it sends, writes of those it receives into (the buffer passes,
/// deallocation among them, reject ops without effects).
template <typename Op>
struct LibraryCallEffects
    : MemoryEffectOpInterface::ExternalModel<LibraryCallEffects<Op>, Op> {
  void
  getEffects(Operation *op,
             SmallVectorImpl<MemoryEffects::EffectInstance> &effects) const {
    effects.emplace_back(MemoryEffects::Write::get(), MPILibrary::get());
    auto buffer = [&](OpOperand &operand, MemoryEffects::Effect *effect) {
      effects.emplace_back(effect, &operand,
                           SideEffects::DefaultResource::get());
    };
    if (auto allReduce = dyn_cast<mpi::AllReduceOp>(op)) {
      buffer(allReduce.getSendbufMutable(), MemoryEffects::Read::get());
      buffer(allReduce.getRecvbufMutable(), MemoryEffects::Write::get());
    } else if (auto send = dyn_cast<mpi::SendOp>(op)) {
      buffer(send.getRefMutable(), MemoryEffects::Read::get());
    } else if (auto recv = dyn_cast<mpi::RecvOp>(op)) {
      buffer(recv.getRefMutable(), MemoryEffects::Write::get());
    }
  }
};

} // namespace

void mlir::harp::registerMPIExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, mpi::MPIDialect *) {
    mpi::InitOp::attachInterface<LibraryCallEffects<mpi::InitOp>>(*context);
    mpi::FinalizeOp::attachInterface<LibraryCallEffects<mpi::FinalizeOp>>(
        *context);
    mpi::AllReduceOp::attachInterface<LibraryCallEffects<mpi::AllReduceOp>>(
        *context);
    mpi::SendOp::attachInterface<LibraryCallEffects<mpi::SendOp>>(*context);
    mpi::RecvOp::attachInterface<LibraryCallEffects<mpi::RecvOp>>(*context);
    mpi::Barrier::attachInterface<LibraryCallEffects<mpi::Barrier>>(*context);
  });
}
