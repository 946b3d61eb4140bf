//===- Jit.cpp - compile harp modules to native code and run them ---------===//
//
// The JIT drives ORC's LLJIT directly rather than mlir::ExecutionEngine: the
// on-disk cache needs to hand ORC a compiled object instead of a module, and
// ExecutionEngine offers no hook for that (docs/Runtime.md).
//
//===----------------------------------------------------------------------===//

#include "harp/Runtime/Jit.h"

#include "FloatConversions.h"

#include "harp/Dialect/Harp/IR/HarpDialect.h"
#include "harp/InitAllHarp.h"
#include "harp/Pipelines/Pipelines.h"
#include "harp/Runtime/Cuda.h"
#include "harp/Target/CPU.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/CompileUtils.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/DynamicLibrary.h"

#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/xxhash.h"
#include "llvm/TargetParser/Host.h"
#include <csignal>
#include <cstdlib>
#include <malloc.h>
#include <vector>

#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

using namespace harp;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

namespace harp {
/// A hash of harp's compiler sources (generated: cmake/BuildId.cmake).
const char *buildId();
} // namespace harp

/// Bump when the object format or the calling convention changes.
static constexpr char kCacheFormat[] = "harp-jit-object-v3";
static constexpr char kMagic[8] = {'H', 'A', 'R', 'P', 'O', 'B', 'J', '1'};

static Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Loads the OpenMP runtime threaded kernels call (__kmpc_fork_call...),
/// once per process, into the process symbol search the JIT uses. Returns
/// why it could not, or an empty string.
static const std::string &openMPRuntimeError() {
  static const std::string error = [] {
    // Idle workers sleep at once instead of spinning for 200 ms, which on a
    // machine with few cores takes one from the calling thread between
    // kernels. KMP_BLOCKTIME set by the user wins.
    ::setenv("KMP_BLOCKTIME", "0", /*overwrite=*/0);
    std::string why;
    if (llvm::sys::DynamicLibrary::LoadLibraryPermanently("libomp.so.5", &why))
      return "threads need the OpenMP runtime libomp.so.5 (Debian: "
             "libomp5-14): " +
             why;
    return std::string();
  }();
  return error;
}

//===----------------------------------------------------------------------===//
// Runtime support called by generated code
//===----------------------------------------------------------------------===//

namespace {
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};
} // namespace

/// memref.copy between non-contiguous memrefs lowers to a call to this
/// (`memrefCopy`); harp provides it instead of linking MLIR's runner library.
/// Copies the innermost dim as one run when it is contiguous in both (a
/// padded copy's rows), element by element otherwise; the outer index is
/// advanced like an odometer, offsets updated incrementally.
extern "C" void harpMemrefCopy(int64_t elementSize, UnrankedMemRef *src,
                               UnrankedMemRef *dst) {
  int64_t rank = src->rank;
  auto fields = [](UnrankedMemRef *m) {
    return static_cast<int64_t *>(m->descriptor);
  };
  int64_t *s = fields(src), *d = fields(dst);
  auto *srcBase = reinterpret_cast<char *>(s[1]) + s[2] * elementSize;
  auto *dstBase = reinterpret_cast<char *>(d[1]) + d[2] * elementSize;
  const int64_t *sizes = s + 3;
  const int64_t *srcStrides = s + 3 + rank, *dstStrides = d + 3 + rank;
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0)
      return;
  if (rank == 0) {
    std::memmove(dstBase, srcBase, elementSize);
    return;
  }
  // The innermost dim: one run of `inner` elements, or single elements.
  int64_t inner = sizes[rank - 1];
  int64_t innerSrc = srcStrides[rank - 1], innerDst = dstStrides[rank - 1];
  bool contiguous = innerSrc == 1 && innerDst == 1;
  std::vector<int64_t> index(rank - 1, 0);
  int64_t so = 0, dof = 0;
  while (true) {
    char *to = dstBase + dof * elementSize;
    const char *from = srcBase + so * elementSize;
    if (contiguous) {
      std::memmove(to, from, inner * elementSize);
    } else {
      for (int64_t j = 0; j < inner; ++j)
        std::memmove(to + j * innerDst * elementSize,
                     from + j * innerSrc * elementSize, elementSize);
    }
    int64_t i = rank - 2;
    for (; i >= 0; --i) {
      so += srcStrides[i];
      dof += dstStrides[i];
      if (++index[i] < sizes[i])
        break;
      so -= srcStrides[i] * sizes[i];
      dof -= dstStrides[i] * sizes[i];
      index[i] = 0;
    }
    if (i < 0)
      return;
  }
}

/// `malloc` and `free` as generated code sees them (the JIT binds those
/// names to these; LLVM still knows them as malloc and free). Large blocks
/// are kept for reuse by exact size instead of going back to the system: a
/// kernel's temporaries (a packed operand, a padded input, an intermediate
/// result) have the same sizes at every call, and fresh pages from the
/// system cost a page fault each (a 4 MB temporary: 1024 faults, about a
/// millisecond). Blocks are plain malloc blocks: the sizes of the large
/// ones are kept on the side, small ones pass straight through. At most
/// 256 MiB are kept.
namespace {
struct BlockCache {
  static constexpr size_t kMinCached = 64 * 1024;
  static constexpr size_t kMaxKept = size_t(256) << 20;
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void *>> free;
  std::unordered_map<void *, size_t> live;
  size_t kept = 0;

  void *allocate(size_t size) {
    if (size < kMinCached)
      return std::malloc(size);
    std::lock_guard<std::mutex> lock(mutex);
    void *block = nullptr;
    auto it = free.find(size);
    if (it != free.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
      kept -= size;
    } else {
      block = std::malloc(size);
    }
    if (block)
      live[block] = size;
    return block;
  }

  void release(void *block) {
    // Small blocks (most frees: per-row temporaries) skip the lock.
    if (!block || malloc_usable_size(block) < kMinCached) {
      std::free(block);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = live.find(block);
      if (it != live.end()) {
        size_t size = it->second;
        live.erase(it);
        if (kept + size <= kMaxKept) {
          free[size].push_back(block);
          kept += size;
          return;
        }
      }
    }
    std::free(block);
  }
};

BlockCache &blockCache() {
  // Never destroyed: generated code may free buffers during exit.
  static BlockCache *cache = new BlockCache;
  return *cache;
}
} // namespace

extern "C" void *harpMalloc(size_t size) { return blockCache().allocate(size); }
extern "C" void harpFree(void *ptr) { blockCache().release(ptr); }

//===----------------------------------------------------------------------===//
// Signatures
//===----------------------------------------------------------------------===//

static std::optional<ElementKind> elementKindOf(mlir::Type type) {
  if (type.isF16())
    return ElementKind::F16;
  if (type.isBF16())
    return ElementKind::BF16;
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF64())
    return ElementKind::F64;
  if (type.isInteger(1))
    return ElementKind::I1;
  if (type.isInteger(8))
    return ElementKind::I8;
  if (type.isInteger(16))
    return ElementKind::I16;
  if (type.isInteger(32))
    return ElementKind::I32;
  if (type.isInteger(64))
    return ElementKind::I64;
  if (auto complex = llvm::dyn_cast<mlir::ComplexType>(type)) {
    if (complex.getElementType().isF32())
      return ElementKind::C64;
    if (complex.getElementType().isF64())
      return ElementKind::C128;
  }
  return std::nullopt;
}

static Expected<TensorType> tensorTypeOf(mlir::Type type,
                                         const llvm::Twine &what) {
  auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(type);
  std::optional<ElementKind> kind =
      tensor ? elementKindOf(tensor.getElementType()) : std::nullopt;
  if (!tensor || !tensor.hasStaticShape() || !kind) {
    std::string text;
    llvm::raw_string_ostream os(text);
    type.print(os);
    return makeError(what + " has type " + text +
                     "; the JIT calls functions on statically shaped "
                     "tensors of harp element types");
  }
  return TensorType{*kind, std::vector<int64_t>(tensor.getShape().begin(),
                                                tensor.getShape().end())};
}

static Expected<std::vector<FunctionSignature>>
signaturesOf(mlir::ModuleOp module) {
  std::vector<FunctionSignature> result;
  for (auto func : module.getOps<mlir::func::FuncOp>()) {
    if (func.isExternal() || !func.isPublic())
      continue;
    FunctionSignature sig;
    sig.name = func.getSymName().str();
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
      auto t = tensorTypeOf(type,
                            "argument #" + llvm::Twine(i) + " of @" + sig.name);
      if (!t)
        return t.takeError();
      sig.inputs.push_back(*t);
    }
    for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
      auto t =
          tensorTypeOf(type, "result #" + llvm::Twine(i) + " of @" + sig.name);
      if (!t)
        return t.takeError();
      sig.results.push_back(*t);
    }
    result.push_back(std::move(sig));
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

Expected<Device> harp::parseDevice(StringRef name) {
  if (name.equals_insensitive("cpu"))
    return Device::CPU;
  if (name.equals_insensitive("cuda"))
    return Device::CUDA;
  return makeError("unknown device '" + name + "' (expected cpu or cuda)");
}

const char *harp::deviceName(Device device) {
  return device == Device::CUDA ? "cuda" : "cpu";
}

//===----------------------------------------------------------------------===//
// Executable
//===----------------------------------------------------------------------===//

Executable::~Executable() = default;

const FunctionSignature *Executable::lookup(StringRef name) const {
  for (const FunctionSignature &sig : functions())
    if (sig.name == name)
      return &sig;
  return nullptr;
}

Error Executable::callDevice(StringRef name, llvm::ArrayRef<void *>,
                             llvm::ArrayRef<void *>) const {
  return makeError("callDevice(@" + name +
                   "): not a cuda executable (compile with "
                   "JitOptions::device = Device::CUDA)");
}

Expected<std::vector<Array>>
Executable::call(StringRef name, llvm::ArrayRef<Array> inputs) const {
  const FunctionSignature *sig = lookup(name);
  if (!sig)
    return makeError("no public function @" + name + " in the module");
  std::vector<Array> results;
  for (const TensorType &type : sig->results)
    results.push_back(Array::allocate(type));
  if (Error err = callInto(name, inputs, results))
    return std::move(err);
  return results;
}

namespace {
using PackedFn = void (*)(void **);
using InitFn = void (*)();

class JitExecutable : public Executable {
public:
  JitExecutable(std::unique_ptr<llvm::orc::LLJIT> jit,
                std::vector<FunctionSignature> sigs,
                std::vector<PackedFn> entries, Device device, InitFn fini)
      : jit(std::move(jit)), sigs(std::move(sigs)), entries(std::move(entries)),
        device(device), fini(fini) {}
  ~JitExecutable() override {
    // Unloads the GPU kernels (the module's destructors).
    if (fini)
      fini();
  }

  llvm::ArrayRef<FunctionSignature> functions() const override { return sigs; }

  Error callInto(StringRef name, llvm::ArrayRef<Array> inputs,
                 llvm::ArrayRef<Array> results) const override;
  Error callDevice(StringRef name, llvm::ArrayRef<void *> inputs,
                   llvm::ArrayRef<void *> results) const override;

private:
  Error callOnDevice(PackedFn entry, llvm::ArrayRef<Array> inputs,
                     llvm::ArrayRef<Array> results) const;

  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::vector<FunctionSignature> sigs;
  std::vector<PackedFn> entries;
  Device device;
  InitFn fini;
};
} // namespace

/// A memref descriptor for a contiguous row-major array at `data`:
/// {allocated, aligned, offset, sizes..., strides...}.
static std::vector<int64_t> descriptorOf(const Array &array, const void *data) {
  const std::vector<int64_t> &shape = array.shape();
  std::vector<int64_t> d;
  auto ptr = reinterpret_cast<int64_t>(data);
  d.push_back(ptr);
  d.push_back(ptr);
  d.push_back(0);
  d.insert(d.end(), shape.begin(), shape.end());
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  d.insert(d.end(), strides.begin(), strides.end());
  return d;
}

Error JitExecutable::callInto(StringRef name, llvm::ArrayRef<Array> inputs,
                              llvm::ArrayRef<Array> results) const {
  const FunctionSignature *found = lookup(name);
  if (!found)
    return makeError("no public function @" + name + " in the module");
  const FunctionSignature &sig = *found;
  size_t at = found - sigs.data();
  if (inputs.size() != sig.inputs.size())
    return makeError("@" + name + " takes " + llvm::Twine(sig.inputs.size()) +
                     " inputs but " + llvm::Twine(inputs.size()) +
                     " were given");
  for (auto [i, input] : llvm::enumerate(inputs)) {
    if (!(input.type() == sig.inputs[i]))
      return makeError("input #" + llvm::Twine(i) + " of @" + name +
                       " has type " + input.type().str() + " but " +
                       sig.inputs[i].str() + " is expected");
    if (!input.data() && input.numElements() != 0)
      return makeError("input #" + llvm::Twine(i) + " of @" + name +
                       " has no data");
  }
  if (results.size() != sig.results.size())
    return makeError("@" + name + " has " + llvm::Twine(sig.results.size()) +
                     " results but " + llvm::Twine(results.size()) +
                     " buffers were given");
  auto overlap = [](const Array &a, const Array &b) {
    auto *a0 = static_cast<const char *>(a.data());
    auto *b0 = static_cast<const char *>(b.data());
    return a.byteSize() && b.byteSize() && a0 < b0 + b.byteSize() &&
           b0 < a0 + a.byteSize();
  };
  for (auto [i, result] : llvm::enumerate(results)) {
    if (!(result.type() == sig.results[i]))
      return makeError("result #" + llvm::Twine(i) + " of @" + name +
                       " has type " + sig.results[i].str() + " but the " +
                       "buffer given is " + result.type().str());
    if (!result.data() && result.numElements() != 0)
      return makeError("result buffer #" + llvm::Twine(i) + " of @" + name +
                       " has no data");
    for (const Array &input : inputs)
      if (overlap(result, input))
        return makeError("result buffer #" + llvm::Twine(i) + " of @" + name +
                         " overlaps an input");
    for (const Array &other : results.take_front(i))
      if (overlap(result, other))
        return makeError("result buffer #" + llvm::Twine(i) + " of @" + name +
                         " overlaps another result buffer");
  }

  if (device == Device::CUDA)
    return callOnDevice(entries[at], inputs, results);
  std::vector<std::vector<int64_t>> descriptors;
  for (const Array &input : inputs)
    descriptors.push_back(descriptorOf(input, input.data()));
  for (const Array &result : results)
    descriptors.push_back(descriptorOf(result, result.data()));
  std::vector<void *> args;
  for (std::vector<int64_t> &d : descriptors)
    args.push_back(d.data());
  entries[at](args.data());
  return Error::success();
}

Error JitExecutable::callDevice(StringRef name, llvm::ArrayRef<void *> inputs,
                                llvm::ArrayRef<void *> results) const {
  if (device != Device::CUDA)
    return Executable::callDevice(name, inputs, results);
  const FunctionSignature *found = lookup(name);
  if (!found)
    return makeError("no public function @" + name + " in the module");
  const FunctionSignature &sig = *found;
  size_t at = found - sigs.data();
  if (inputs.size() != sig.inputs.size() ||
      results.size() != sig.results.size())
    return makeError("@" + name + " takes " + llvm::Twine(sig.inputs.size()) +
                     " inputs and " + llvm::Twine(sig.results.size()) +
                     " results but " + llvm::Twine(inputs.size()) + " and " +
                     llvm::Twine(results.size()) + " buffers were given");
  std::vector<std::vector<int64_t>> descriptors;
  for (auto [type, buffer] : llvm::zip(sig.inputs, inputs))
    descriptors.push_back(descriptorOf(Array::borrow(type, buffer), buffer));
  for (auto [type, buffer] : llvm::zip(sig.results, results))
    descriptors.push_back(descriptorOf(Array::borrow(type, buffer), buffer));
  std::vector<void *> args;
  for (std::vector<int64_t> &d : descriptors)
    args.push_back(d.data());
  entries[at](args.data());
  return cuda::takeError();
}

/// Copies the inputs to device buffers, runs the host function (which
/// launches the kernels and waits for them), copies the results back.
Error JitExecutable::callOnDevice(PackedFn entry, llvm::ArrayRef<Array> inputs,
                                  llvm::ArrayRef<Array> results) const {
  std::vector<void *> buffers;
  llvm::scope_exit releaseAll([&] {
    for (void *buffer : buffers)
      cuda::release(buffer);
  });
  std::vector<std::vector<int64_t>> descriptors;
  for (const Array &input : inputs) {
    Expected<void *> buffer = cuda::allocate(input.byteSize());
    if (!buffer)
      return buffer.takeError();
    buffers.push_back(*buffer);
    if (Error err = cuda::copyToDevice(*buffer, input.data(), input.byteSize()))
      return err;
    descriptors.push_back(descriptorOf(input, *buffer));
  }
  for (const Array &result : results) {
    Expected<void *> buffer = cuda::allocate(result.byteSize());
    if (!buffer)
      return buffer.takeError();
    buffers.push_back(*buffer);
    descriptors.push_back(descriptorOf(result, *buffer));
  }
  std::vector<void *> args;
  for (std::vector<int64_t> &d : descriptors)
    args.push_back(d.data());
  entry(args.data());
  if (Error err = cuda::takeError())
    return err;
  for (auto [i, result] : llvm::enumerate(results))
    if (Error err =
            cuda::copyToHost(const_cast<void *>(result.data()),
                             buffers[inputs.size() + i], result.byteSize()))
      return err;
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Compilation
//===----------------------------------------------------------------------===//

/// Adds `_harp_packed_<name>(void **args)` calling
/// `_mlir_ciface_<name>(args[0], args[1], ...)`: one calling convention for
/// every function, whatever its arity.
static Error addPackedWrappers(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  std::vector<llvm::Function *> interfaces;
  for (llvm::Function &f : module.functions())
    if (f.getName().starts_with("_mlir_ciface_") && !f.isDeclaration())
      interfaces.push_back(&f);
  auto *ptrType = llvm::PointerType::getUnqual(ctx);
  for (llvm::Function *f : interfaces) {
    std::string name =
        ("_harp_packed_" + f->getName().drop_front(strlen("_mlir_ciface_")))
            .str();
    auto *type =
        llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptrType}, false);
    auto *wrapper = llvm::Function::Create(
        type, llvm::GlobalValue::ExternalLinkage, name, module);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", wrapper));
    std::vector<llvm::Value *> args;
    for (auto [i, param] : llvm::enumerate(f->args())) {
      if (!param.getType()->isPointerTy())
        return makeError("@" + f->getName() +
                         " has a non-memref parameter after lowering");
      llvm::Value *slot = b.CreateConstGEP1_64(ptrType, wrapper->getArg(0), i);
      args.push_back(b.CreateLoad(ptrType, slot));
    }
    b.CreateCall(f, args);
    b.CreateRetVoid();
  }
  return Error::success();
}

/// Replaces the module's constructors and destructors (the GPU kernels'
/// load and unload) by two exported functions the loader calls,
/// `_harp_init` and `_harp_fini`, so running them does not depend on the
/// JIT platform's support for static initializers.
static void exportInitializers(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  for (auto [list, name] : {std::pair{"llvm.global_ctors", "_harp_init"},
                            std::pair{"llvm.global_dtors", "_harp_fini"}}) {
    llvm::GlobalVariable *var = module.getNamedGlobal(list);
    if (!var)
      continue;
    std::vector<std::pair<uint64_t, llvm::Function *>> entries;
    if (auto *array =
            llvm::dyn_cast_or_null<llvm::ConstantArray>(var->getInitializer()))
      for (llvm::Value *op : array->operands()) {
        auto *entry = llvm::cast<llvm::ConstantStruct>(op);
        auto *priority = llvm::cast<llvm::ConstantInt>(entry->getOperand(0));
        if (auto *fn = llvm::dyn_cast<llvm::Function>(entry->getOperand(1)))
          entries.emplace_back(priority->getZExtValue(), fn);
      }
    // Constructors run by ascending priority, destructors by descending.
    llvm::stable_sort(entries, [&](const auto &a, const auto &b) {
      return StringRef(list) == "llvm.global_ctors" ? a.first < b.first
                                                    : a.first > b.first;
    });
    var->eraseFromParent();
    auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false);
    auto *fn = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage,
                                      name, module);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
    for (auto &entry : entries)
      b.CreateCall(entry.second);
    b.CreateRetVoid();
  }
}

/// The cache entry: magic, payload checksum, payload size, key, payload.
struct CacheHeader {
  char magic[8];
  uint64_t checksum;
  uint64_t size;
  char key[64];
};

struct Jit::Impl {
  JitOptions options;
  std::string cacheDir;
  JitStats stats;
  mlir::MLIRContext context;
  /// The CPU target, or why the name did not resolve (reported by every
  /// compile).
  CpuTarget target;
  std::string targetError;
  /// CUDA: the chip kernels are compiled for.
  std::string chip;
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Executable>> memory;
  /// Executables by the exact text they were compiled from (the options
  /// are the Jit's own): a hit costs a hash table lookup and one compare of
  /// the text, not a cryptographic hash of it.
  llvm::StringMap<std::shared_ptr<Executable>> byText;

  explicit Impl(JitOptions opts) : options(std::move(opts)) {
    mlir::DialectRegistry registry;
    mlir::harp::registerAllHarpDialects(registry);
    mlir::registerBuiltinDialectTranslation(registry);
    mlir::registerLLVMDialectTranslation(registry);
    mlir::registerOpenMPDialectTranslation(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    context.disableMultithreading();

    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    if (Expected<CpuTarget> resolved = resolveCpuTarget(options.cpu))
      target = std::move(*resolved);
    else
      targetError = llvm::toString(resolved.takeError());
    cacheDir = resolveCacheDir();
    chip = options.cudaChip;
    if (chip.empty() && options.device == Device::CUDA) {
      Expected<std::string> deviceChip = cuda::chip();
      if (deviceChip)
        chip = *deviceChip;
      else
        llvm::consumeError(deviceChip.takeError()); // load() reports it
    }
    if (chip.empty())
      chip = "sm_90";
  }

  std::string resolveCacheDir() const {
    if (!options.cacheDir.empty())
      return options.cacheDir;
    if (std::optional<std::string> env =
            llvm::sys::Process::GetEnv("HARP_CACHE_DIR"))
      return *env;
    llvm::SmallString<256> path;
    if (std::optional<std::string> xdg =
            llvm::sys::Process::GetEnv("XDG_CACHE_HOME")) {
      path = *xdg;
    } else if (std::optional<std::string> home =
                   llvm::sys::Process::GetEnv("HOME")) {
      path = *home;
      llvm::sys::path::append(path, ".cache");
    } else {
      path = "/tmp";
    }
    llvm::sys::path::append(path, "harp");
    return std::string(path);
  }

  std::string keyOf(StringRef moduleText) const {
    llvm::SHA256 hasher;
    for (StringRef part :
         {StringRef(kCacheFormat), StringRef(buildId()),
          StringRef(LLVM_VERSION_STRING), StringRef(target.cpu),
          StringRef(target.features),
          StringRef(options.fuse ? "fuse" : "nofuse"),
          StringRef(options.vectorize ? "vectorize" : "novectorize"),
          StringRef(options.threads ? "threads" : "nothreads"),
          StringRef(deviceName(options.device)),
          StringRef(options.device == Device::CUDA ? chip : ""),
          StringRef(options.device == Device::CUDA ? options.cudaFormat
                                                   : "")}) {
      hasher.update(part);
      hasher.update(StringRef("\0", 1));
    }
    hasher.update(std::to_string(options.optLevel));
    hasher.update(moduleText);
    return llvm::toHex(hasher.result(), /*LowerCase=*/true);
  }

  std::string pathOf(const std::string &key) const {
    llvm::SmallString<256> path(cacheDir);
    llvm::sys::path::append(path, key + ".o");
    return std::string(path);
  }

  /// The cached object for `key`, or null if absent, corrupt or stale.
  std::unique_ptr<llvm::MemoryBuffer> readCache(const std::string &key) {
    auto file = llvm::MemoryBuffer::getFile(pathOf(key), /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
    if (!file)
      return nullptr;
    StringRef data = (*file)->getBuffer();
    CacheHeader header;
    bool valid = data.size() >= sizeof(header);
    if (valid) {
      std::memcpy(&header, data.data(), sizeof(header));
      StringRef payload = data.drop_front(sizeof(header));
      valid = std::memcmp(header.magic, kMagic, sizeof(kMagic)) == 0 &&
              header.size == payload.size() &&
              StringRef(header.key, sizeof(header.key)) == key &&
              header.checksum == llvm::xxh3_64bits(payload);
    }
    if (!valid) {
      ++stats.rejectedDiskEntries;
      return nullptr;
    }
    return llvm::MemoryBuffer::getMemBufferCopy(data.drop_front(sizeof(header)),
                                                key);
  }

  void writeCache(const std::string &key, StringRef object) {
    if (std::error_code ec = llvm::sys::fs::create_directories(cacheDir))
      return; // The cache is an optimisation; compiling still worked.
    CacheHeader header;
    std::memcpy(header.magic, kMagic, sizeof(kMagic));
    header.checksum = llvm::xxh3_64bits(object);
    header.size = object.size();
    std::memcpy(header.key, key.data(), sizeof(header.key));
    // Write a temporary and rename it: readers never see a partial entry.
    llvm::SmallString<256> temp;
    int fd;
    if (llvm::sys::fs::createUniqueFile(pathOf(key) + ".tmp-%%%%%%", fd, temp))
      return;
    {
      llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
      os.write(reinterpret_cast<const char *>(&header), sizeof(header));
      os << object;
    }
    if (llvm::sys::fs::rename(temp, pathOf(key)))
      llvm::sys::fs::remove(temp);
  }

  Expected<std::unique_ptr<llvm::TargetMachine>> targetMachine() const {
    // Not detectHost(), which would add the host's features to a named
    // CPU's: x86-64-v3 code must not use AVX-512 because this machine has it.
    llvm::orc::JITTargetMachineBuilder builder(
        llvm::Triple(llvm::sys::getProcessTriple()));
    builder.setCPU(target.cpu);
    if (!target.features.empty())
      builder.getFeatures().addFeaturesVector(
          llvm::SmallVector<std::string>(llvm::split(target.features, ',')));
    builder.setCodeGenOptLevel(options.optLevel >= 3
                                   ? llvm::CodeGenOptLevel::Aggressive
                                   : llvm::CodeGenOptLevel::Default);
    return builder.createTargetMachine();
  }

  /// Lowers and compiles `module` (lowerAndCompile) inside a crash recovery
  /// context: a crash in a pass or in LLVM (a bug in harp or in MLIR)
  /// becomes an error the caller reports, not the end of the user's
  /// process. The context and the compiler's caches may hold leaked state
  /// afterwards; the message says so.
  Expected<std::unique_ptr<llvm::MemoryBuffer>>
  compileObject(mlir::ModuleOp module, const std::string &key) {
    static std::once_flag enable;
    std::call_once(enable, [] { llvm::CrashRecoveryContext::Enable(); });
    std::optional<Expected<std::unique_ptr<llvm::MemoryBuffer>>> result;
    llvm::CrashRecoveryContext context;
    if (!context.RunSafely([&] {
          // A test hook (lit: Runtime/compiler-crash.test): crash here.
          if (llvm::sys::Process::GetEnv("HARP_DEBUG_CRASH_COMPILER"))
            std::raise(SIGSEGV);
          result.emplace(lowerAndCompile(module, key));
        }))
      return makeError(
          "harp crashed while compiling the module (signal " +
          llvm::Twine(context.RetCode - 128) +
          "): this is a bug in harp; please report it with the module "
          "(harp-run FILE --compile-only reproduces it). The process can go "
          "on, but restarting it is safer");
    return std::move(*result);
  }

  /// Lowers `module` through harp-to-llvm and compiles it to an object.
  Expected<std::unique_ptr<llvm::MemoryBuffer>>
  lowerAndCompile(mlir::ModuleOp module, const std::string &key) {
    if (!targetError.empty())
      return makeError(targetError);
    mlir::OwningOpRef<mlir::ModuleOp> clone(module.clone());
    std::string diagnostics;
    llvm::raw_string_ostream diagOS(diagnostics);
    mlir::ScopedDiagnosticHandler handler(&context,
                                          [&](mlir::Diagnostic &diag) {
                                            diag.getLocation().print(diagOS);
                                            diagOS << ": " << diag << "\n";
                                            return mlir::success();
                                          });
    mlir::PassManager pm(&context);
    if (options.device == Device::CUDA) {
      if (options.cudaFormat != "ptx" && options.cudaFormat != "cubin")
        return makeError("unknown CUDA kernel format '" + options.cudaFormat +
                         "' (expected ptx or cubin)");
      mlir::harp::HarpToGPUOptions pipelineOptions;
      pipelineOptions.fuse = options.fuse;
      pipelineOptions.chip = chip;
      pipelineOptions.format = options.cudaFormat;
      mlir::harp::buildHarpToGPUPipeline(pm, pipelineOptions);
    } else {
      mlir::harp::HarpToLLVMOptions pipelineOptions;
      pipelineOptions.fuse = options.fuse;
      pipelineOptions.vectorBits = target.vectorBits;
      pipelineOptions.vectorRegisters = target.vectorRegisters;
      pipelineOptions.l1Cache = unsigned(target.l1Bytes);
      pipelineOptions.l2Cache = unsigned(target.l2Bytes);
      pipelineOptions.vectorize = options.vectorize;
      pipelineOptions.threads = options.threads;
      if (mlir::failed(
              mlir::harp::buildHarpToLLVMPipeline(pm, pipelineOptions)))
        return makeError("cannot build harp-to-llvm");
    }
    if (mlir::failed(pm.run(*clone)))
      return makeError("lowering failed:\n" + diagnostics);

    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> llvmModule =
        mlir::translateModuleToLLVMIR(*clone, llvmContext, "harp");
    if (!llvmModule)
      return makeError("translation to LLVM IR failed:\n" + diagnostics);
    if (Error err = addPackedWrappers(*llvmModule))
      return std::move(err);
    exportInitializers(*llvmModule);
    auto tm = targetMachine();
    if (!tm)
      return tm.takeError();
    llvmModule->setDataLayout((*tm)->createDataLayout());
    llvmModule->setTargetTriple((*tm)->getTargetTriple());
    auto optimize =
        mlir::makeOptimizingTransformer(options.optLevel, 0, tm->get());
    if (Error err = optimize(llvmModule.get()))
      return std::move(err);
    llvm::orc::SimpleCompiler compiler(**tm);
    auto object = compiler(*llvmModule);
    if (!object)
      return object.takeError();
    (void)key;
    return std::move(*object);
  }

  /// Loads an object into a fresh LLJIT and finds the packed entries.
  Expected<std::shared_ptr<Executable>>
  load(std::unique_ptr<llvm::MemoryBuffer> object,
       std::vector<FunctionSignature> sigs) {
    if (!target.runsHere())
      return makeError("code compiled for CPU '" + target.name +
                       "' cannot run on this machine, which lacks " +
                       target.missingFeatures);
    if (options.threads && options.device == Device::CPU)
      if (const std::string &why = openMPRuntimeError(); !why.empty())
        return makeError(why);
    if (options.device == Device::CUDA)
      if (Error err = cuda::initialize())
        return makeError("cannot run on the cuda device: " +
                         llvm::toString(std::move(err)));
    auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!builder)
      return builder.takeError();
    auto jit = llvm::orc::LLJITBuilder()
                   .setJITTargetMachineBuilder(std::move(*builder))
                   .create();
    if (!jit)
      return jit.takeError();
    llvm::orc::JITDylib &main = (*jit)->getMainJITDylib();
    auto process =
        llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
            (*jit)->getDataLayout().getGlobalPrefix());
    if (!process)
      return process.takeError();
    main.addGenerator(std::move(*process));
    llvm::orc::SymbolMap runtime;
    runtime[(*jit)->mangleAndIntern("memrefCopy")] = {
        llvm::orc::ExecutorAddr::fromPtr(&harpMemrefCopy),
        llvm::JITSymbolFlags::Exported};
    for (const RuntimeSymbol &conversion : floatConversionSymbols())
      runtime[(*jit)->mangleAndIntern(conversion.name)] = {
          llvm::orc::ExecutorAddr::fromPtr(conversion.address),
          llvm::JITSymbolFlags::Exported};
    if (options.device == Device::CPU) {
      runtime[(*jit)->mangleAndIntern("malloc")] = {
          llvm::orc::ExecutorAddr::fromPtr(&harpMalloc),
          llvm::JITSymbolFlags::Exported};
      runtime[(*jit)->mangleAndIntern("free")] = {
          llvm::orc::ExecutorAddr::fromPtr(&harpFree),
          llvm::JITSymbolFlags::Exported};
    }
    if (options.device == Device::CUDA)
      for (auto [name, address] : cuda::entryPoints())
        runtime[(*jit)->mangleAndIntern(name)] = {
            llvm::orc::ExecutorAddr::fromPtr(address),
            llvm::JITSymbolFlags::Exported};
    if (Error err = main.define(llvm::orc::absoluteSymbols(runtime)))
      return std::move(err);
    if (Error err = (*jit)->addObjectFile(std::move(object)))
      return std::move(err);
    // Constructors load the GPU kernels; a failure there is recorded by the
    // runtime and reported here.
    InitFn fini = nullptr;
    if (auto init = (*jit)->lookup("_harp_init")) {
      init->toPtr<InitFn>()();
      if (Error err = cuda::takeError())
        return makeError("loading the GPU kernels failed: " +
                         llvm::toString(std::move(err)));
    } else {
      llvm::consumeError(init.takeError());
    }
    if (auto finiSymbol = (*jit)->lookup("_harp_fini"))
      fini = finiSymbol->toPtr<InitFn>();
    else
      llvm::consumeError(finiSymbol.takeError());
    std::vector<PackedFn> entries;
    for (const FunctionSignature &sig : sigs) {
      auto symbol = (*jit)->lookup("_harp_packed_" + sig.name);
      if (!symbol)
        return symbol.takeError();
      entries.push_back(symbol->toPtr<PackedFn>());
    }
    return std::make_shared<JitExecutable>(std::move(*jit), std::move(sigs),
                                           std::move(entries), options.device,
                                           fini);
  }

  /// Parses and verifies harp IR text; the error carries the diagnostics.
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> parse(StringRef source) {
    std::string diagnostics;
    llvm::raw_string_ostream os(diagnostics);
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(source, "<input>"), llvm::SMLoc());
    mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context, os);
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
    if (!module)
      return makeError("invalid IR:\n" + diagnostics);
    return std::move(module);
  }

  Expected<std::shared_ptr<Executable>> compile(mlir::ModuleOp module) {
    if (!targetError.empty())
      return makeError(targetError);
    std::string text;
    {
      llvm::raw_string_ostream os(text);
      module.print(os, mlir::OpPrintingFlags().enableDebugInfo(false));
    }
    std::string key = keyOf(text);
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = memory.find(key); it != memory.end()) {
      ++stats.memoryHits;
      return it->second;
    }
    auto sigs = signaturesOf(module);
    if (!sigs)
      return sigs.takeError();

    if (options.diskCache) {
      if (std::unique_ptr<llvm::MemoryBuffer> cached = readCache(key)) {
        auto exe = load(std::move(cached), *sigs);
        if (exe) {
          ++stats.diskHits;
          memory[key] = *exe;
          return exe;
        }
        // An entry that verified but does not load is not trusted either.
        llvm::consumeError(exe.takeError());
        ++stats.rejectedDiskEntries;
      }
    }
    auto object = compileObject(module, key);
    if (!object)
      return object.takeError();
    ++stats.compilations;
    if (options.diskCache)
      writeCache(key, (*object)->getBuffer());
    auto exe = load(std::move(*object), std::move(*sigs));
    if (!exe)
      return exe.takeError();
    memory[key] = *exe;
    return exe;
  }
};

Jit::Jit(JitOptions options)
    : impl(std::make_unique<Impl>(std::move(options))) {}
Jit::~Jit() = default;

Jit &Jit::shared(Device device, StringRef cpu) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Jit>> jits;
  std::string name = cpu.empty() ? defaultCpuName() : cpu.str();
  std::string key = std::string(deviceName(device)) + "/" + name;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Jit> &jit = jits[key];
  if (!jit) {
    JitOptions options;
    options.device = device;
    options.cpu = name;
    jit = std::make_unique<Jit>(std::move(options));
  }
  return *jit;
}

const JitStats &Jit::stats() const { return impl->stats; }
const JitOptions &Jit::options() const { return impl->options; }
const std::string &Jit::cacheDir() const { return impl->cacheDir; }

Expected<std::string> Jit::cpu() const {
  if (!impl->targetError.empty())
    return makeError(impl->targetError);
  return impl->target.cpu;
}

unsigned Jit::vectorBits() const {
  return impl->targetError.empty() ? impl->target.vectorBits : 0;
}

Expected<std::shared_ptr<Executable>> Jit::compile(mlir::ModuleOp module) {
  if (mlir::failed(mlir::verify(module)))
    return makeError("the module does not verify");
  return impl->compile(module);
}

Expected<std::string> Jit::compileObject(StringRef source) {
  // Parsing verifies the module.
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> module = impl->parse(source);
  if (!module)
    return module.takeError();
  std::lock_guard<std::mutex> lock(impl->mutex);
  auto object = impl->compileObject(**module, "");
  if (!object)
    return object.takeError();
  return (*object)->getBuffer().str();
}

Expected<std::shared_ptr<Executable>> Jit::compile(StringRef source) {
  // Text seen before is served without parsing or printing.
  {
    std::lock_guard<std::mutex> lock(impl->mutex);
    if (auto it = impl->byText.find(source); it != impl->byText.end()) {
      ++impl->stats.memoryHits;
      return it->second;
    }
  }
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> module = impl->parse(source);
  if (!module)
    return module.takeError();
  Expected<std::shared_ptr<Executable>> exe = impl->compile(**module);
  if (exe) {
    std::lock_guard<std::mutex> lock(impl->mutex);
    impl->byText[source] = *exe;
  }
  return exe;
}
