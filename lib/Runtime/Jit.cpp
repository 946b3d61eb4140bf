//===- Jit.cpp - compile harp modules to native code and run them ---------===//
//
// The JIT drives ORC's LLJIT directly rather than mlir::ExecutionEngine: the
// on-disk cache needs to hand ORC a compiled object instead of a module, and
// ExecutionEngine offers no hook for that (docs/Runtime.md). This file: the
// shared contexts, the compile caches (memory and disk), lowering and
// object linking; Executable.cpp calls what it loads, JitSupport.cpp
// provides the functions generated code calls.
//
//===----------------------------------------------------------------------===//

#include "harp/Runtime/Jit.h"

#include "FloatConversions.h"
#include "JitInternal.h"

#include "harp/Dialect/Harp/IR/HarpDialect.h"
#include "harp/InitAllHarp.h"
#include "harp/Pipelines/Pipelines.h"
#include "harp/Runtime/Cuda.h"
#include "harp/Target/CPU.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
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
#include "llvm/Support/Threading.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/xxhash.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/SplitModule.h"
#include <csignal>
#include <cstdlib>
#include <malloc.h>
#include <vector>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
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
/// An object compiled in parts (on several threads) is stored as this
/// magic, the number of parts and each part's size then bytes.
static constexpr char kPartsMagic[8] = {'H', 'A', 'R', 'P', 'P', 'R', 'T', 'S'};

/// The objects `parts` as one buffer (kPartsMagic, see above).
static std::unique_ptr<llvm::MemoryBuffer>
joinObjects(llvm::ArrayRef<StringRef> parts) {
  std::string joined(kPartsMagic, sizeof(kPartsMagic));
  auto put = [&](uint64_t n) {
    joined.append(reinterpret_cast<const char *>(&n), sizeof(n));
  };
  put(parts.size());
  for (StringRef part : parts) {
    put(part.size());
    joined += part;
  }
  return llvm::MemoryBuffer::getMemBufferCopy(joined, "harp-object-parts");
}

/// The module's bitcode (what a compile thread parses in its own context).
static llvm::SmallVector<char, 0> bitcodeOf(const llvm::Module &module) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::WriteBitcodeToFile(module, os);
  return buffer;
}

/// An object of the kernel store: kernels compiled apart from their module
/// (a part of the module that compiled them first; its first part also
/// holds the module's entry functions), and the kernel symbols it defines.
struct KernelGroup {
  std::vector<std::string> symbols;
  std::string object;
};

/// The kernels a Jit compiled apart, or loaded with a module's disk entry,
/// and the modules that call them: linked once, one JIT library per object,
/// in a JIT that every executable calling them keeps alive.
struct KernelStore {
  struct Kernel {
    llvm::orc::ExecutorAddr address;
    std::shared_ptr<const KernelGroup> group;
  };
  std::unique_ptr<llvm::orc::LLJIT> jit;
  llvm::StringMap<Kernel> kernels;
  unsigned libraries = 0;
};

/// What an object loaded for its kernels alone calls in place of a kernel
/// the store never had: only that object's entry functions could (a module
/// that reused its kernels carries it without the objects its entry
/// functions call), and nothing calls those.
static void unlinkedKernel() {
  std::fputs("harp: internal error: a kernel was called that was never "
             "linked (a bug in harp; please report it)\n",
             stderr);
  std::abort();
}

/// Resolves a library's kernel symbols (`_harp_k_*`) to the store's
/// kernels; one the store lacks is an error where `strict` (a module's own
/// object: everything it calls was linked first), else unlinkedKernel.
class KernelGenerator : public llvm::orc::DefinitionGenerator {
public:
  KernelGenerator(const KernelStore &store, bool strict)
      : store(store), strict(strict) {}

  Error tryToGenerate(llvm::orc::LookupState &, llvm::orc::LookupKind,
                      llvm::orc::JITDylib &library,
                      llvm::orc::JITDylibLookupFlags,
                      const llvm::orc::SymbolLookupSet &lookup) override {
    llvm::orc::SymbolMap symbols;
    for (const auto &[name, flags] : lookup) {
      StringRef symbol = *name;
      if (!symbol.starts_with("_harp_k_"))
        continue;
      auto it = store.kernels.find(symbol);
      if (it == store.kernels.end() && strict)
        continue; // the lookup fails, naming it
      symbols[name] = {it != store.kernels.end()
                           ? it->second.address
                           : llvm::orc::ExecutorAddr::fromPtr(&unlinkedKernel),
                       llvm::JITSymbolFlags::Exported};
    }
    if (symbols.empty())
      return Error::success();
    return library.define(llvm::orc::absoluteSymbols(std::move(symbols)));
  }

private:
  const KernelStore &store;
  bool strict;
};

/// A module compiled with its kernels apart is stored as this magic, the
/// number of objects, and each object: its kernel symbols' count, each
/// symbol's length and bytes, its size and bytes. The last object is the
/// module's own (its entry functions, and the kernels compiled with them),
/// the others the kernel groups it calls into.
static constexpr char kKernelsMagic[8] = {'H', 'A', 'R', 'P',
                                          'K', 'R', 'N', 'S'};

static std::unique_ptr<llvm::MemoryBuffer>
packKernels(llvm::ArrayRef<std::shared_ptr<const KernelGroup>> groups) {
  std::string packed(kKernelsMagic, sizeof(kKernelsMagic));
  auto putCount = [&](uint64_t n) {
    packed.append(reinterpret_cast<const char *>(&n), sizeof(n));
  };
  auto put = [&](StringRef bytes) {
    putCount(bytes.size());
    packed += bytes;
  };
  putCount(groups.size());
  for (const auto &group : groups) {
    putCount(group->symbols.size());
    for (const std::string &symbol : group->symbols)
      put(symbol);
    put(group->object);
  }
  return llvm::MemoryBuffer::getMemBufferCopy(packed, "harp-object-kernels");
}

/// The objects of packKernels' bytes; an error when they are cut short.
static Expected<std::vector<std::shared_ptr<const KernelGroup>>>
unpackKernels(StringRef data) {
  data = data.drop_front(sizeof(kKernelsMagic));
  bool ok = true;
  auto count = [&]() -> uint64_t {
    uint64_t n = 0;
    if (data.size() < sizeof(n)) {
      ok = false;
      return 0;
    }
    std::memcpy(&n, data.data(), sizeof(n));
    data = data.drop_front(sizeof(n));
    return n;
  };
  auto bytes = [&]() -> StringRef {
    uint64_t n = count();
    if (!ok || data.size() < n) {
      ok = false;
      return {};
    }
    StringRef out = data.take_front(n);
    data = data.drop_front(n);
    return out;
  };
  std::vector<std::shared_ptr<const KernelGroup>> groups;
  uint64_t groupCount = count();
  for (uint64_t g = 0; ok && g < groupCount; ++g) {
    auto group = std::make_shared<KernelGroup>();
    uint64_t symbols = count();
    for (uint64_t i = 0; ok && i < symbols; ++i)
      group->symbols.push_back(bytes().str());
    group->object = bytes().str();
    groups.push_back(std::move(group));
  }
  if (!ok || !data.empty())
    return harp::jit::makeError(
        "a compiled module with its kernels apart is cut short");
  return std::move(groups);
}

/// Whether kernels are compiled and cached one by one ($HARP_KERNEL_CACHE=0
/// compiles each module whole, as one object or in parts).
static bool kernelCacheEnabled() {
  std::optional<std::string> env =
      llvm::sys::Process::GetEnv("HARP_KERNEL_CACHE");
  return !env || *env != "0";
}

/// Whether lowering verifies the module after every pass
/// ($HARP_DEBUG_VERIFY_PASSES set and not 0), not only once at its end.
static bool verifyEachPass() {
  std::optional<std::string> env =
      llvm::sys::Process::GetEnv("HARP_DEBUG_VERIFY_PASSES");
  return env && !env->empty() && *env != "0";
}

/// The objects in `object`: its parts when it is a joined buffer, else
/// itself; an error when a joined buffer is cut short.
static Expected<std::vector<std::unique_ptr<llvm::MemoryBuffer>>>
splitObjects(std::unique_ptr<llvm::MemoryBuffer> object) {
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> parts;
  StringRef data = object->getBuffer();
  if (!data.starts_with(StringRef(kPartsMagic, sizeof(kPartsMagic)))) {
    parts.push_back(std::move(object));
    return std::move(parts);
  }
  data = data.drop_front(sizeof(kPartsMagic));
  auto take = [&](uint64_t &n) {
    if (data.size() < sizeof(n))
      return false;
    std::memcpy(&n, data.data(), sizeof(n));
    data = data.drop_front(sizeof(n));
    return true;
  };
  uint64_t count = 0;
  if (!take(count))
    return harp::jit::makeError("a compiled object in parts is cut short");
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t size = 0;
    if (!take(size) || data.size() < size)
      return harp::jit::makeError("a compiled object in parts is cut short");
    parts.push_back(llvm::MemoryBuffer::getMemBufferCopy(
        data.take_front(size), "harp-object-part-" + std::to_string(i)));
    data = data.drop_front(size);
  }
  return std::move(parts);
}

/// Threads LLVM compiles a module's parts on: $HARP_COMPILE_THREADS, else
/// the machine's hardware threads, at most 4.
static unsigned compileThreads() {
  if (std::optional<std::string> env =
          llvm::sys::Process::GetEnv("HARP_COMPILE_THREADS")) {
    unsigned n = 0;
    if (!StringRef(*env).getAsInteger(10, n) && n > 0)
      return n;
  }
  return std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
}

Error harp::jit::makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
using harp::jit::InitFn;
using harp::jit::makeError;
using harp::jit::PackedFn;

/// omp_set_num_threads of the OpenMP runtime, once it is loaded.
static std::atomic<void (*)(int)> ompSetNumThreads{nullptr};
/// setThreadCount's count; 0: the default.
static std::atomic<unsigned> threadCountSetting{0};

/// Loads the OpenMP runtime threaded kernels call (__kmpc_fork_call...),
/// once per process, into the process symbol search the JIT uses. Returns
/// why it could not, or an empty string.
static const std::string &openMPRuntimeError() {
  static const std::string error = [] {
    // Idle workers spin for 1 ms after a kernel, then sleep (libomp's
    // default is 200 ms): long enough for the next kernel of a sequence to
    // find them awake, short enough not to hold cores between calls. With
    // 0 (sleep at once), each fork woke a sleeping worker through the
    // kernel, 50-140 us on an AMD EPYC VM: a 128^3 matmul took 165 us on 2
    // threads and 37 us on 1; with 1 ms, 21 us. KMP_BLOCKTIME set by the
    // user wins.
    ::setenv("KMP_BLOCKTIME", "1", /*overwrite=*/0);
    std::string why;
    if (llvm::sys::DynamicLibrary::LoadLibraryPermanently("libomp.so.5", &why))
      return "threads need the OpenMP runtime libomp.so.5 (Debian: "
             "libomp5-14): " +
             why;
    ompSetNumThreads.store(reinterpret_cast<void (*)(int)>(
        llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(
            "omp_set_num_threads")));
    return std::string();
  }();
  return error;
}

/// The first number of $OMP_NUM_THREADS ("4" or "4,2": the outermost
/// level's), else the physical cores this process may run on.
static unsigned defaultThreadCount() {
  static const unsigned count = [] {
    if (std::optional<std::string> env =
            llvm::sys::Process::GetEnv("OMP_NUM_THREADS")) {
      unsigned n = 0;
      if (!StringRef(*env).split(',').first.trim().getAsInteger(10, n) && n > 0)
        return n;
    }
    return std::max(
        llvm::heavyweight_hardware_concurrency().compute_thread_count(), 1u);
  }();
  return count;
}

unsigned harp::threadCount() {
  unsigned set = threadCountSetting.load(std::memory_order_relaxed);
  return set ? set : defaultThreadCount();
}

void harp::setThreadCount(unsigned count) {
  threadCountSetting.store(count, std::memory_order_relaxed);
}

void harp::jit::applyThreadCount() {
  // omp_set_num_threads sets the calling thread's count: every call sets
  // it, whichever thread calls (a few nanoseconds).
  if (void (*set)(int) = ompSetNumThreads.load(std::memory_order_relaxed))
    set(static_cast<int>(threadCount()));
}

//===----------------------------------------------------------------------===//
// Compilation
//===----------------------------------------------------------------------===//

/// Inlines into each `_mlir_ciface_<name>` the function `<name>` it calls
/// and drops `<name>` when nothing else calls it. The call passes every
/// memref as its expanded descriptor (a training step's 168 buffers made a
/// call of 783 arguments, `harp.cat` of 1000 tensors one of 5000), and LLVM
/// is superlinear in such a call: its instruction selection took 1.6 s
/// (95% of a module's code generation), CalledValuePropagation 9.4 s.
static void inlineInterfaces(llvm::Module &module) {
  std::vector<llvm::CallBase *> calls;
  for (llvm::Function &f : module.functions()) {
    if (!f.getName().starts_with("_mlir_ciface_") || f.isDeclaration())
      continue;
    llvm::Function *inner =
        module.getFunction(f.getName().drop_front(strlen("_mlir_ciface_")));
    if (!inner || inner->isDeclaration() ||
        inner->hasFnAttribute(llvm::Attribute::NoInline))
      continue;
    for (llvm::Instruction &inst : llvm::instructions(f))
      if (auto *call = llvm::dyn_cast<llvm::CallBase>(&inst))
        if (call->getCalledFunction() == inner)
          calls.push_back(call);
  }
  for (llvm::CallBase *call : calls) {
    llvm::Function *inner = call->getCalledFunction();
    llvm::InlineFunctionInfo info;
    if (!llvm::InlineFunction(*call, info).isSuccess())
      continue;
    if (inner->use_empty())
      inner->eraseFromParent();
  }
}

/// Adds `_harp_packed_<name>(void **args)` calling
/// `_mlir_ciface_<name>(args[0], args[1], ...)`: one calling convention for
/// every function, whatever its arity. Both calls are inlined, so the
/// packed entry holds the function's body.
static Error addPackedWrappers(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  inlineInterfaces(module);
  std::vector<llvm::Function *> interfaces;
  for (llvm::Function &f : module.functions())
    if (f.getName().starts_with("_mlir_ciface_") && !f.isDeclaration())
      interfaces.push_back(&f);
  auto *ptrType = llvm::PointerType::getUnqual(ctx);
  for (llvm::Function *f : interfaces) {
    StringRef wrapped = f->getName().drop_front(strlen("_mlir_ciface_"));
    std::string name = ("_harp_packed_" + wrapped).str();
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
    llvm::CallInst *call = b.CreateCall(f, args);
    b.CreateRetVoid();
    // The interface inlined too (its call has an argument per memref), and
    // dropped: the packed entry is the only one the loader looks up.
    llvm::InlineFunctionInfo info;
    if (llvm::InlineFunction(*call, info).isSuccess() && f->use_empty())
      f->eraseFromParent();
  }
  return Error::success();
}

/// Moves the loads a packed entry makes of its argument array and of the
/// memref descriptors it points to (and their address arithmetic) down to
/// just before their first use in the entry block. Both inlined calls load
/// every argument at the entry, so a function of many buffers (`harp.cat`
/// of 1,000 tensors: 1,000 descriptors) began with one block of thousands
/// of loads and as many spills ahead of its first kernel call, which
/// LLVM's post-RA scheduler handled in quadratic time (2.8 s of code
/// generation). Sunk, each kernel call's loads come just before it, between
/// two calls (scheduling boundaries). The kernels write only the buffers,
/// never the array or the descriptors, so the loads read the same values
/// wherever they are.
static void sinkArgumentLoads(llvm::Function &f) {
  if (f.arg_size() != 1 || f.empty())
    return;
  llvm::BasicBlock &entry = f.getEntryBlock();
  llvm::DenseMap<llvm::Instruction *, unsigned> index;
  std::vector<llvm::Instruction *> order;
  for (llvm::Instruction &inst : entry) {
    index[&inst] = order.size();
    order.push_back(&inst);
  }
  // Loads and constant offsets from the argument array, transitively.
  llvm::SmallPtrSet<llvm::Value *, 32> derived;
  derived.insert(f.getArg(0));
  std::vector<llvm::Instruction *> candidates;
  for (llvm::Instruction *inst : order) {
    llvm::Value *from = nullptr;
    if (auto *load = llvm::dyn_cast<llvm::LoadInst>(inst);
        load && load->isSimple())
      from = load->getPointerOperand();
    else if (auto *gep = llvm::dyn_cast<llvm::GetElementPtrInst>(inst);
             gep && gep->hasAllConstantIndices())
      from = gep->getPointerOperand();
    if (from && derived.contains(from)) {
      derived.insert(inst);
      candidates.push_back(inst);
    }
  }
  // The entry's own writes (a result's descriptor, a memory intrinsic):
  // no load moves past one. Calls (the kernels) write only buffers.
  std::vector<unsigned> nextWrite(order.size() + 1, order.size());
  for (size_t i = order.size(); i-- > 0;) {
    llvm::Instruction *inst = order[i];
    bool writes =
        inst->mayWriteToMemory() && (!llvm::isa<llvm::CallBase>(inst) ||
                                     llvm::isa<llvm::MemIntrinsic>(inst));
    nextWrite[i] = writes ? i : nextWrite[i + 1];
  }
  // Each one's anchor: the first user that is not itself moved, in the
  // original order (users before operands, so a user's anchor is known).
  llvm::DenseMap<llvm::Instruction *, unsigned> anchor;
  for (llvm::Instruction *inst : llvm::reverse(candidates)) {
    unsigned at = order.size();
    for (llvm::User *user : inst->users()) {
      auto *used = llvm::cast<llvm::Instruction>(user);
      if (used->getParent() != &entry) {
        at = index[inst];
        break;
      }
      auto it = anchor.find(used);
      at = std::min(at, it != anchor.end() ? it->second : index[used]);
    }
    if (llvm::isa<llvm::LoadInst>(inst))
      at = std::min(at, nextWrite[index[inst]]);
    anchor[inst] = at == order.size() ? index[inst] : at;
  }
  std::vector<std::pair<unsigned, unsigned>> moves;
  for (llvm::Instruction *inst : candidates)
    if (anchor[inst] > index[inst])
      moves.emplace_back(anchor[inst], index[inst]);
  // By anchor, then in the original order: each lands right before its
  // anchor, after those moved there before it (its operands).
  llvm::sort(moves);
  for (auto [at, from] : moves)
    order[from]->moveBefore(order[at]->getIterator());
}

/// With HARP_DEBUG_DUMP_LLVM=DIR, writes `module` as DIR/<name>.
static void dumpLLVM(const llvm::Module &module, const std::string &name) {
  std::optional<std::string> dir =
      llvm::sys::Process::GetEnv("HARP_DEBUG_DUMP_LLVM");
  if (!dir)
    return;
  std::error_code ec;
  llvm::raw_fd_ostream os(*dir + "/" + name, ec);
  if (!ec)
    module.print(os, nullptr);
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

/// Registers what harp modules use and turns threading off: a crash in a
/// pass then happens on the calling thread, where compileObject recovers it.
static void configureContext(mlir::MLIRContext &context) {
  mlir::DialectRegistry registry;
  mlir::harp::registerAllHarpDialects(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerOpenMPDialectTranslation(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  context.disableMultithreading();
}

/// `loc` as a reader wants it: file:line:col (col left out when 0), names
/// and call sites spelled out, fused locations joined.
static void printLocation(mlir::Location loc, llvm::raw_ostream &os) {
  if (auto file = mlir::dyn_cast<mlir::FileLineColLoc>(loc)) {
    os << file.getFilename().getValue() << ":" << file.getLine();
    if (file.getColumn())
      os << ":" << file.getColumn();
  } else if (auto name = mlir::dyn_cast<mlir::NameLoc>(loc)) {
    os << name.getName().getValue();
    if (!mlir::isa<mlir::UnknownLoc>(name.getChildLoc())) {
      os << " at ";
      printLocation(name.getChildLoc(), os);
    }
  } else if (auto call = mlir::dyn_cast<mlir::CallSiteLoc>(loc)) {
    printLocation(call.getCallee(), os);
    os << " called from ";
    printLocation(call.getCaller(), os);
  } else if (auto fused = mlir::dyn_cast<mlir::FusedLoc>(loc)) {
    llvm::interleave(
        fused.getLocations(), os,
        [&](mlir::Location part) { printLocation(part, os); }, ", ");
  } else if (mlir::isa<mlir::UnknownLoc>(loc)) {
    os << "<unknown location>";
  } else {
    loc.print(os);
  }
}

/// A diagnostic handler writing "location: severity: message" lines.
static mlir::LogicalResult collectDiagnostic(mlir::Diagnostic &diag,
                                             llvm::raw_ostream &os) {
  printLocation(diag.getLocation(), os);
  switch (diag.getSeverity()) {
  case mlir::DiagnosticSeverity::Error:
    os << ": error: ";
    break;
  case mlir::DiagnosticSeverity::Warning:
    os << ": warning: ";
    break;
  case mlir::DiagnosticSeverity::Note:
    os << ": note: ";
    break;
  case mlir::DiagnosticSeverity::Remark:
    os << ": remark: ";
    break;
  }
  os << diag << "\n";
  for (const mlir::Diagnostic &note : diag.getNotes()) {
    printLocation(note.getLocation(), os);
    os << ": note: " << note << "\n";
  }
  return mlir::success();
}

static std::atomic<unsigned> parses{0};
static std::mutex timesMutex;
static CompileTimes times;

/// Seconds since `start`.
static double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

struct Jit::Impl {
  JitOptions options;
  std::string cacheDir;
  JitStats stats;
  /// The context modules are compiled in: the Jit's own, or the shared one.
  std::unique_ptr<mlir::MLIRContext> ownedContext;
  mlir::MLIRContext *context;
  /// The CPU target, or why the name did not resolve (reported by every
  /// compile).
  CpuTarget target;
  std::string targetError;
  /// CUDA: the chip kernels are compiled for.
  std::string chip;
  /// Where lowerAndCompile is (the pass running, or the LLVM step), for the
  /// message of a crash.
  std::string stage;
  /// HARP_DEBUG_CRASH_COMPILER, read once per compile.
  std::string crashIn;
  /// While compileLibraryObject compiles: the functions and the prefix of
  /// the library's entry points.
  struct LibraryTarget {
    std::vector<FunctionSignature> functions;
    std::string prefix;
  };
  std::optional<LibraryTarget> library;
  /// The lowering pipeline, built on the first compile and run again for
  /// every module after it: a pass manager built anew initialized its
  /// passes for each module (the canonicalizers' pattern sets; a small
  /// module lowered in 3.2 ms instead of 5.4 with this and the single
  /// verification). Rebuilt when its options change (a library compile
  /// without profiling); dropped, not destroyed, after a crash inside it.
  std::unique_ptr<mlir::PassManager> lowering;
  bool loweringProfiles = false;
  /// Held while the context and the caches are used.
  std::unique_ptr<std::recursive_mutex> ownedMutex;
  std::recursive_mutex *mutex;
  std::unordered_map<std::string, std::shared_ptr<Executable>> memory;
  /// Executables by the exact text they were compiled from (the options
  /// are the Jit's own): a hit costs a hash table lookup and one compare of
  /// the text, not a cryptographic hash of it.
  llvm::StringMap<std::shared_ptr<Executable>> byText;
  /// The kernels compiled apart, linked once (KernelStore).
  std::shared_ptr<KernelStore> kernelStore = std::make_shared<KernelStore>();
  /// The target machine of compiles on the calling thread (compileHere),
  /// made at the first.
  std::unique_ptr<llvm::TargetMachine> callerTarget;

  Impl(JitOptions opts, mlir::MLIRContext *sharedContext,
       std::recursive_mutex *sharedMutex)
      : options(std::move(opts)), context(sharedContext), mutex(sharedMutex) {
    if (!context) {
      ownedContext = std::make_unique<mlir::MLIRContext>();
      context = ownedContext.get();
      configureContext(*context);
    }
    if (!mutex) {
      ownedMutex = std::make_unique<std::recursive_mutex>();
      mutex = ownedMutex.get();
    }
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
          StringRef(options.profile ? "profile" : "noprofile"),
          StringRef(deviceName(options.device)),
          StringRef(options.device == Device::CUDA ? chip : ""),
          StringRef(options.device == Device::CUDA ? options.cudaFormat
                                                   : "")}) {
      hasher.update(part);
      hasher.update(StringRef("\0", 1));
    }
    hasher.update(std::to_string(options.optLevel));
    if (options.threads && options.parallelMinWork)
      hasher.update("minWork" + std::to_string(*options.parallelMinWork));
    if (options.device == Device::CUDA)
      hasher.update("epThread" + std::to_string(options.cudaElementsPerThread));
    // The numbers code generation derives its tiles from: the caches are
    // this machine's, not the CPU name's.
    hasher.update(std::to_string(target.l1Bytes) + "," +
                  std::to_string(target.l2Bytes) + "," +
                  std::to_string(target.fmaPerCycle));
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
    std::string path = pathOf(key);
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
    if (llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%", fd, temp))
      return;
    {
      llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
      os.write(reinterpret_cast<const char *>(&header), sizeof(header));
      os << object;
    }
    if (llvm::sys::fs::rename(temp, path))
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
    // A library's object is linked into a shared library.
    if (library)
      builder.setRelocationModel(llvm::Reloc::PIC_);
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
    stage.clear();
    // A test hook (lit: Runtime/compiler-crash.test): "1" crashes here, a
    // pass's argument (harp-vector-cleanup) as that pass starts.
    crashIn = llvm::sys::Process::GetEnv("HARP_DEBUG_CRASH_COMPILER")
                  .value_or(std::string());
    if (!context.RunSafely([&] {
          if (crashIn == "1")
            std::raise(SIGSEGV);
          result.emplace(lowerAndCompile(module, key));
        })) {
      // The pass manager may be left mid-run: leaked, as the rest of the
      // crashed compile's state, and built again for the next module.
      (void)lowering.release();
      std::string where = stage.empty() ? "" : ", " + stage;
      std::string message = "harp crashed while compiling the module (signal " +
                            std::to_string(context.RetCode - 128) + where +
                            "): this is a bug in harp; please report it with "
                            "the module";
      std::string path = writeCrashReproducer(module);
      if (path.empty())
        message += " (harp-run FILE --compile-only reproduces it)";
      else
        message += ", written to " + path + " (`harp-run " + path +
                   " --compile-only" + reproducerFlags() + "` reproduces it)";
      return makeError(message + ". The process can go on, but restarting it "
                                 "is safer");
    }
    return std::move(*result);
  }

  /// Names the pass running in `stage` (and crashes as the pass `crashIn`
  /// names starts).
  struct StageInstrumentation : mlir::PassInstrumentation {
    StageInstrumentation(std::string &stage, const std::string &crashIn)
        : stage(stage), crashIn(crashIn) {}
    void runBeforePass(mlir::Pass *pass, mlir::Operation *) override {
      llvm::StringRef name = pass->getArgument();
      if (name.empty())
        name = pass->getName();
      stage = ("in pass " + name).str();
      if (!name.empty() && crashIn == name)
        std::raise(SIGSEGV);
    }
    std::string &stage;
    const std::string &crashIn;
  };

  /// Writes `module` (the input of the crashed compile, which lowering
  /// never touches: it works on a clone) to a fresh file in the temporary
  /// directory and returns its path, or "" where that fails (printing
  /// runs in a recovery context of its own).
  static std::string writeCrashReproducer(mlir::ModuleOp module) {
    int fd = -1;
    llvm::SmallString<128> path;
    if (llvm::sys::fs::createTemporaryFile("harp-crash", "mlir", fd, path))
      return "";
    bool written = false;
    {
      llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
      llvm::CrashRecoveryContext printing;
      written =
          printing.RunSafely([&] { module->print(os); }) && !os.has_error();
      os.clear_error();
    }
    if (!written) {
      llvm::sys::fs::remove(path);
      return "";
    }
    return path.str().str();
  }

  /// harp-run's flags for this Jit's options, after --compile-only.
  std::string reproducerFlags() const {
    std::string flags;
    if (options.device == Device::CUDA)
      flags += " --device cuda";
    else // The CPU itself for native, to reproduce on another machine.
      flags += " --cpu " + (target.name == "native" ? target.cpu : target.name);
    if (!options.fuse)
      flags += " --no-fuse";
    if (!options.vectorize)
      flags += " --no-vectorize";
    if (options.threads)
      flags += " --parallel";
    if (options.threads && options.parallelMinWork)
      flags +=
          " --parallel-min-work=" + std::to_string(*options.parallelMinWork);
    return flags;
  }

  /// Builds `lowering`: harp-to-llvm for this Jit's target and options
  /// (with harp-profile-kernels where `profiles`), or harp-to-gpu.
  Error buildLowering(bool profiles) {
    auto pm = std::make_unique<mlir::PassManager>(context);
    if (options.device == Device::CUDA) {
      if (options.cudaFormat != "ptx" && options.cudaFormat != "cubin")
        return makeError("unknown CUDA kernel format '" + options.cudaFormat +
                         "' (expected ptx or cubin)");
      mlir::harp::HarpToGPUOptions pipelineOptions;
      pipelineOptions.fuse = options.fuse;
      pipelineOptions.chip = chip;
      pipelineOptions.format = options.cudaFormat;
      pipelineOptions.elementsPerThread = options.cudaElementsPerThread;
      mlir::harp::buildHarpToGPUPipeline(*pm, pipelineOptions);
    } else {
      mlir::harp::HarpToLLVMOptions pipelineOptions;
      pipelineOptions.fuse = options.fuse;
      pipelineOptions.vectorBits = target.vectorBits;
      pipelineOptions.vectorRegisters = target.vectorRegisters;
      pipelineOptions.l1Cache = unsigned(target.l1Bytes);
      pipelineOptions.l2Cache = unsigned(target.l2Bytes);
      pipelineOptions.fmaPerCycle = target.fmaPerCycle;
      pipelineOptions.fma = target.fma;
      pipelineOptions.vectorize = options.vectorize;
      pipelineOptions.threads = options.threads;
      if (options.parallelMinWork)
        pipelineOptions.parallelMinWork = *options.parallelMinWork;
      pipelineOptions.profile = profiles;
      if (mlir::failed(
              mlir::harp::buildHarpToLLVMPipeline(*pm, pipelineOptions)))
        return makeError("cannot build harp-to-llvm");
    }
    pm->addInstrumentation(
        std::make_unique<StageInstrumentation>(stage, crashIn));
    lowering = std::move(pm);
    loweringProfiles = profiles;
    return Error::success();
  }

  /// Lowers `module` through harp-to-llvm and compiles it to an object.
  Expected<std::unique_ptr<llvm::MemoryBuffer>>
  lowerAndCompile(mlir::ModuleOp module, const std::string &key) {
    if (!targetError.empty())
      return makeError(targetError);
    mlir::OwningOpRef<mlir::ModuleOp> clone(module.clone());
    std::string diagnostics;
    llvm::raw_string_ostream diagOS(diagnostics);
    mlir::ScopedDiagnosticHandler handler(context, [&](mlir::Diagnostic &diag) {
      return collectDiagnostic(diag, diagOS);
    });
    // A test hook (test_builders.py): an error at every op of this name, as
    // a pass reports one, so located errors can be tested end to end.
    if (std::optional<std::string> rejected =
            llvm::sys::Process::GetEnv("HARP_DEBUG_REJECT_OP")) {
      bool any = false;
      clone->walk([&](mlir::Operation *op) {
        if (op->getName().getStringRef() == *rejected) {
          op->emitOpError("rejected by HARP_DEBUG_REJECT_OP");
          any = true;
        }
      });
      if (any)
        return makeError("lowering failed:\n" + diagnostics);
    }
    bool profiles = options.profile && !library;
    if (!lowering || loweringProfiles != profiles) {
      if (Error err = buildLowering(profiles))
        return std::move(err);
    }
    mlir::PassManager &pm = *lowering;
    // The module is verified before it is lowered (parsing or Jit::compile)
    // and once after, not after every pass: between the pipeline's ~50
    // passes the verifier took a quarter of lowering's time (docs/Runtime.md).
    // HARP_DEBUG_VERIFY_PASSES=1 verifies after each pass, as harp-opt does.
    bool verifyEach = verifyEachPass();
    pm.enableVerifier(verifyEach);
    auto start = std::chrono::steady_clock::now();
    if (mlir::failed(pm.run(*clone)))
      return makeError("lowering failed:\n" + diagnostics);
    if (!verifyEach && mlir::failed(mlir::verify(*clone)))
      return makeError(
          "lowering produced invalid IR (HARP_DEBUG_VERIFY_PASSES=1 "
          "names the pass):\n" +
          diagnostics);
    CompileTimes spent;
    spent.modules = 1;
    spent.lowerSeconds = secondsSince(start);
    clone->walk([&](mlir::LLVM::LLVMFuncOp func) {
      if (!func.isExternal() &&
          func.getLinkage() == mlir::LLVM::linkage::Linkage::Internal)
        ++spent.kernelFunctions;
    });

    stage = "translating to LLVM IR";
    start = std::chrono::steady_clock::now();
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> llvmModule =
        mlir::translateModuleToLLVMIR(*clone, llvmContext, "harp");
    if (!llvmModule)
      return makeError("translation to LLVM IR failed:\n" + diagnostics);
    spent.translateSeconds = secondsSince(start);
    if (Error err = addPackedWrappers(*llvmModule))
      return std::move(err);
    if (library) {
      // The library's loader runs its constructors; only the entry points
      // stay global.
      if (Error err = jit::addLibraryEntries(*llvmModule, library->functions,
                                             library->prefix))
        return std::move(err);
    } else {
      exportInitializers(*llvmModule);
    }
    // HARP_DEBUG_DUMP_LLVM=DIR: the LLVM IR handed to LLVM's optimizer, as
    // DIR/<key>.ll, and what code generation gets, as DIR/<key>.opt.ll
    // (DIR/<key>.part<n>.opt.ll when compiled in parts); "module" for the
    // key of harp-run --compile-only.
    std::string dumpAs = key.empty() ? std::string("module") : key;
    dumpLLVM(*llvmModule, dumpAs + ".ll");
    // Natively compiled modules compile kernels, not graphs: each kernel
    // is a unit of its own, compiled once per Jit and kept in memory and on
    // disk (docs/Runtime.md, "The kernel cache"). Otherwise a part per 4
    // kernel functions, on as many threads as there are; one object for
    // harp-run --compile-only (no key).
    auto compile = [&]() -> Expected<std::unique_ptr<llvm::MemoryBuffer>> {
      if (!key.empty() && options.device == Device::CPU && kernelCacheEnabled())
        return compileKernelsApart(std::move(llvmModule), spent, dumpAs);
      unsigned parts = key.empty() ? 1
                                   : std::clamp(spent.kernelFunctions / 4, 1u,
                                                compileThreads());
      if (parts > 1)
        return optimizeInParts(std::move(llvmModule), parts, spent, dumpAs);
      auto tm = targetMachine();
      if (!tm)
        return tm.takeError();
      return optimizeAndGenerate(*llvmModule, **tm, spent, &stage,
                                 dumpAs + ".opt.ll");
    };
    Expected<std::unique_ptr<llvm::MemoryBuffer>> object = compile();
    if (!object)
      return object.takeError();
    {
      std::lock_guard<std::mutex> lock(timesMutex);
      times.modules += spent.modules;
      times.kernelFunctions += spent.kernelFunctions;
      times.reusedKernels += spent.reusedKernels;
      times.lowerSeconds += spent.lowerSeconds;
      times.translateSeconds += spent.translateSeconds;
      times.optimizeSeconds += spent.optimizeSeconds;
      times.codegenSeconds += spent.codegenSeconds;
    }
    return std::move(*object);
  }

  /// Compiles `module` with its kernels apart (splitKernels): a kernel in
  /// the kernel store is reused; the others are compiled, a part per 4 of
  /// them on as many threads as there are, the first part with what is
  /// left of the module (its entry functions). The payload (packKernels)
  /// holds every kernel group the module calls into and, last, its own
  /// object, so its disk entry loads alone.
  Expected<std::unique_ptr<llvm::MemoryBuffer>>
  compileKernelsApart(std::unique_ptr<llvm::Module> module, CompileTimes &spent,
                      const std::string &dumpAs) {
    stage = "moving kernels into units";
    std::vector<jit::KernelUnit> units =
        jit::splitKernels(*module, [&](StringRef text) { return keyOf(text); });
    // Kernels splitKernels left in the module (they use its variables).
    unsigned kept = 0;
    for (const llvm::Function &f : *module)
      if (!f.isDeclaration() && f.hasLocalLinkage() &&
          f.hasFnAttribute(llvm::Attribute::NoInline))
        ++kept;
    std::vector<std::shared_ptr<const KernelGroup>> groups;
    std::vector<jit::KernelUnit *> missing;
    for (jit::KernelUnit &unit : units) {
      auto it = kernelStore->kernels.find(unit.symbol);
      if (it == kernelStore->kernels.end()) {
        missing.push_back(&unit);
        continue;
      }
      ++spent.reusedKernels;
      if (!llvm::is_contained(groups, it->second.group))
        groups.push_back(it->second.group);
    }
    spent.kernelFunctions = missing.size() + kept;
    // The new kernels in parts: part 0 is the module itself.
    size_t partCount =
        std::clamp<size_t>(missing.size() / 4, 1, compileThreads());
    std::vector<std::unique_ptr<llvm::Module>> parts;
    parts.push_back(std::move(module));
    std::vector<std::vector<std::string>> partSymbols(partCount);
    for (size_t i = 0; i < missing.size(); ++i) {
      size_t part = i % partCount;
      std::unique_ptr<llvm::Module> &unit = missing[i]->module;
      partSymbols[part].push_back(missing[i]->symbol);
      if (part == parts.size()) {
        parts.push_back(std::move(unit));
        continue;
      }
      if (llvm::Linker::linkModules(*parts[part], std::move(unit)))
        return makeError("cannot link kernel " + missing[i]->symbol +
                         " into its part");
    }
    units.clear();
    Expected<std::vector<std::unique_ptr<llvm::MemoryBuffer>>> compiled =
        parts.size() == 1 ? compileHere(*parts[0], spent, dumpAs + ".opt.ll")
                          : compileParts(parts, spent, dumpAs);
    parts.clear();
    if (!compiled)
      return compiled.takeError();
    for (size_t p = 0; p < compiled->size(); ++p) {
      auto group = std::make_shared<KernelGroup>();
      group->symbols = std::move(partSymbols[p]);
      group->object = (*compiled)[p]->getBuffer().str();
      groups.push_back(std::move(group));
    }
    // The module's own object last.
    std::rotate(groups.end() - compiled->size(),
                groups.end() - compiled->size() + 1, groups.end());
    return packKernels(groups);
  }

  /// One part, compiled on the calling thread in the context it was
  /// translated in, with the Jit's own target machine.
  Expected<std::vector<std::unique_ptr<llvm::MemoryBuffer>>>
  compileHere(llvm::Module &part, CompileTimes &spent,
              const std::string &dumpAs) {
    if (!callerTarget) {
      auto made = targetMachine();
      if (!made)
        return made.takeError();
      callerTarget = std::move(*made);
    }
    auto object =
        optimizeAndGenerate(part, *callerTarget, spent, &stage, dumpAs);
    if (!object)
      return object.takeError();
    std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects;
    objects.push_back(std::move(*object));
    return std::move(objects);
  }

  /// The parts, each as bitcode compiled on the compile threads
  /// (compileBitcode), dumped as `<dumpAs>.opt.ll`, `<dumpAs>.part<n>.opt.ll`.
  Expected<std::vector<std::unique_ptr<llvm::MemoryBuffer>>>
  compileParts(llvm::ArrayRef<std::unique_ptr<llvm::Module>> parts,
               CompileTimes &spent, const std::string &dumpAs) {
    std::vector<llvm::SmallVector<char, 0>> bitcode;
    std::vector<std::string> dumpNames;
    for (size_t p = 0; p < parts.size(); ++p) {
      bitcode.push_back(bitcodeOf(*parts[p]));
      dumpNames.push_back(dumpAs + (p ? ".part" + std::to_string(p) : "") +
                          ".opt.ll");
    }
    return compileBitcode(bitcode, spent, dumpNames);
  }

  /// Links `group` into a new library of the kernel store, which finds
  /// the runtime's symbols and the store's kernels (KernelGenerator), and
  /// adds the kernels it defines that the store lacks (a kernel already
  /// there keeps its address).
  Expected<llvm::orc::JITDylib &>
  addKernelGroup(std::shared_ptr<const KernelGroup> group, bool strict) {
    KernelStore &store = *kernelStore;
    if (!store.jit) {
      auto jit = createJit();
      if (!jit)
        return jit.takeError();
      store.jit = std::move(*jit);
    }
    auto library = store.jit->createJITDylib("harp-kernels-" +
                                             std::to_string(store.libraries++));
    if (!library)
      return library.takeError();
    // The main library alone after this one, as an executable's own JIT
    // searches: its runtime symbols (generated code's malloc and free are
    // harp's block cache) come before the process's (a new library's
    // default order searches the process's symbols first).
    library->setLinkOrder({{&store.jit->getMainJITDylib(),
                            llvm::orc::JITDylibLookupFlags::MatchAllSymbols}});
    library->addGenerator(std::make_unique<KernelGenerator>(store, strict));
    if (Error err = store.jit->addObjectFile(
            *library, llvm::MemoryBuffer::getMemBufferCopy(group->object,
                                                           "harp-kernels")))
      return err;
    for (const std::string &symbol : group->symbols) {
      if (store.kernels.contains(symbol))
        continue;
      auto address = store.jit->lookup(*library, symbol);
      if (!address)
        return address.takeError();
      store.kernels.try_emplace(symbol, KernelStore::Kernel{*address, group});
    }
    return *library;
  }

  /// Splits `module` into `parts` modules of about equal size (its kernel
  /// functions are many and independent) and compiles them
  /// (compileBitcode), joined into one buffer (joinObjects).
  Expected<std::unique_ptr<llvm::MemoryBuffer>>
  optimizeInParts(std::unique_ptr<llvm::Module> module, unsigned parts,
                  CompileTimes &spent, const std::string &dumpAs) {
    stage = "splitting LLVM IR";
    std::vector<llvm::SmallVector<char, 0>> bitcode;
    llvm::SplitModule(
        *module, parts,
        [&](std::unique_ptr<llvm::Module> part) {
          bitcode.push_back(bitcodeOf(*part));
        },
        /*PreserveLocals=*/false, /*RoundRobin=*/true);
    module.reset();
    std::vector<std::string> dumpNames;
    for (size_t i = 0; i < bitcode.size(); ++i)
      dumpNames.push_back(dumpAs + ".part" + std::to_string(i) + ".opt.ll");
    auto objects = compileBitcode(bitcode, spent, dumpNames);
    if (!objects)
      return objects.takeError();
    std::vector<StringRef> buffers;
    for (const auto &object : *objects)
      buffers.push_back(object->getBuffer());
    return joinObjects(buffers);
  }

  /// Optimizes and compiles each module of `bitcode` (dumped optimized as
  /// `dumpNames[i]`) in a context of its own, spread over as many threads
  /// as there are: module i on thread i % threads. `spent` gets the busiest
  /// thread's seconds, which is what the caller waits for.
  Expected<std::vector<std::unique_ptr<llvm::MemoryBuffer>>>
  compileBitcode(const std::vector<llvm::SmallVector<char, 0>> &bitcode,
                 CompileTimes &spent,
                 const std::vector<std::string> &dumpNames) {
    struct Part {
      std::unique_ptr<llvm::MemoryBuffer> object;
      std::string error;
    };
    std::vector<Part> results(bitcode.size());
    unsigned threadCount = std::min<size_t>(compileThreads(), bitcode.size());
    std::vector<CompileTimes> threadSpent(threadCount);
    // A target machine per thread, made for its first module.
    auto compileOne = [&](size_t i, CompileTimes &threadTimes,
                          std::unique_ptr<llvm::TargetMachine> &tm) {
      Part &result = results[i];
      llvm::CrashRecoveryContext recovery;
      bool ran = recovery.RunSafely([&] {
        // A test hook (lit: Runtime/compiler-crash.test): "llvm-part"
        // crashes the last part's thread.
        if (crashIn == "llvm-part" && i + 1 == bitcode.size())
          std::raise(SIGSEGV);
        llvm::LLVMContext context;
        auto part = llvm::parseBitcodeFile(
            llvm::MemoryBufferRef(
                StringRef(bitcode[i].data(), bitcode[i].size()), "part"),
            context);
        if (!part) {
          result.error = llvm::toString(part.takeError());
          return;
        }
        if (!tm) {
          auto made = targetMachine();
          if (!made) {
            result.error = llvm::toString(made.takeError());
            return;
          }
          tm = std::move(*made);
        }
        CompileTimes one;
        auto object =
            optimizeAndGenerate(**part, *tm, one, nullptr, dumpNames[i]);
        threadTimes.optimizeSeconds += one.optimizeSeconds;
        threadTimes.codegenSeconds += one.codegenSeconds;
        if (!object)
          result.error = llvm::toString(object.takeError());
        else
          result.object = std::move(*object);
      });
      if (!ran)
        result.error =
            "harp crashed while compiling the module (signal " +
            std::to_string(recovery.RetCode - 128) + ", in LLVM, part " +
            std::to_string(i + 1) + " of " + std::to_string(bitcode.size()) +
            " compiled on threads): this is a bug in harp; please report it "
            "with the module (HARP_COMPILE_THREADS=1 compiles it on one "
            "thread, HARP_KERNEL_CACHE=0 in one part). The process can go "
            "on, but restarting it is safer";
    };
    auto work = [&](unsigned thread) {
      std::unique_ptr<llvm::TargetMachine> tm;
      for (size_t i = thread; i < bitcode.size(); i += threadCount)
        compileOne(i, threadSpent[thread], tm);
    };
    stage = "optimizing and generating machine code in " +
            std::to_string(bitcode.size()) + " parts";
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < threadCount; ++t)
      threads.emplace_back(work, t);
    work(0);
    for (std::thread &thread : threads)
      thread.join();
    std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects;
    for (Part &result : results) {
      if (!result.error.empty())
        return makeError(result.error);
      objects.push_back(std::move(result.object));
    }
    for (const CompileTimes &one : threadSpent) {
      spent.optimizeSeconds =
          std::max(spent.optimizeSeconds, one.optimizeSeconds);
      spent.codegenSeconds = std::max(spent.codegenSeconds, one.codegenSeconds);
    }
    return std::move(objects);
  }

  /// Optimizes `module` and generates its object with `tm`, setting the
  /// seconds of each in `spent`, and naming each step in `*steps` where
  /// given (the calling thread's stage, for crash reports); the optimized
  /// module is dumped as `dumpAs` (dumpLLVM).
  Expected<std::unique_ptr<llvm::MemoryBuffer>>
  optimizeAndGenerate(llvm::Module &module, llvm::TargetMachine &tm,
                      CompileTimes &spent, std::string *steps,
                      const std::string &dumpAs) const {
    module.setDataLayout(tm.createDataLayout());
    module.setTargetTriple(tm.getTargetTriple());
    auto optimize = mlir::makeOptimizingTransformer(options.optLevel, 0, &tm);
    if (steps)
      *steps = "optimizing LLVM IR";
    auto start = std::chrono::steady_clock::now();
    if (Error err = optimize(&module))
      return std::move(err);
    for (llvm::Function &f : module)
      if (f.getName().starts_with("_harp_packed_"))
        sinkArgumentLoads(f);
    spent.optimizeSeconds = secondsSince(start);
    dumpLLVM(module, dumpAs);
    if (steps)
      *steps = "generating machine code";
    start = std::chrono::steady_clock::now();
    llvm::orc::SimpleCompiler compiler(tm);
    auto object = compiler(module);
    if (!object)
      return object.takeError();
    spent.codegenSeconds = secondsSince(start);
    return std::move(*object);
  }

  /// A fresh LLJIT whose main library finds the process's symbols and the
  /// runtime's (bound here: the generated code's memrefCopy, malloc and
  /// free, float conversions, profile hooks, the CUDA entry points).
  Expected<std::unique_ptr<llvm::orc::LLJIT>> createJit() {
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
    auto bind = [&](StringRef name, const void *address) {
      runtime[(*jit)->mangleAndIntern(name)] = {
          llvm::orc::ExecutorAddr::fromPtr(address),
          llvm::JITSymbolFlags::Exported};
    };
    bind("memrefCopy", reinterpret_cast<const void *>(&harpMemrefCopy));
    for (const RuntimeSymbol &conversion : floatConversionSymbols())
      bind(conversion.name, conversion.address);
    if (options.device == Device::CPU) {
      bind("harp_profile_clock",
           reinterpret_cast<const void *>(&harp_profile_clock));
      bind("harp_profile_record",
           reinterpret_cast<const void *>(&harp_profile_record));
      bind("malloc", reinterpret_cast<const void *>(&harpMalloc));
      bind("free", reinterpret_cast<const void *>(&harpFree));
    }
    if (options.device == Device::CUDA)
      for (auto [name, address] : cuda::entryPoints())
        bind(name, address);
    if (Error err = main.define(llvm::orc::absoluteSymbols(runtime)))
      return std::move(err);
    return std::move(*jit);
  }

  /// compileLibraryObject of a verified module.
  Expected<LibraryObject> compileLibrary(mlir::ModuleOp module,
                                         StringRef prefix) {
    if (options.device != Device::CPU)
      return makeError("a library can only be compiled for the cpu device");
    auto functions = harp::jit::signaturesOf(module);
    if (!functions)
      return functions.takeError();
    if (functions->empty())
      return makeError("the module has no public function to export");
    library = LibraryTarget{*functions, prefix.str()};
    auto object = compileObject(module, "");
    library.reset();
    if (!object)
      return object.takeError();
    return LibraryObject{(*object)->getBuffer().str(), std::move(*functions)};
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
    if (object->getBuffer().starts_with(
            StringRef(kKernelsMagic, sizeof(kKernelsMagic))))
      return loadWithKernels(object->getBuffer(), std::move(sigs));
    auto jit = createJit();
    if (!jit)
      return jit.takeError();
    auto objects = splitObjects(std::move(object));
    if (!objects)
      return objects.takeError();
    for (std::unique_ptr<llvm::MemoryBuffer> &part : *objects)
      if (Error err = (*jit)->addObjectFile(std::move(part)))
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
    return harp::jit::makeExecutable(std::move(*jit), std::move(sigs),
                                     std::move(entries), options.device, fini);
  }

  /// Loads a module compiled with its kernels apart (packKernels): the
  /// objects it calls into whose kernels the store lacks, then its own
  /// object, in a library of the store that finds every kernel it calls. Its
  /// code stays with the store, as the Jit keeps every executable it made
  /// anyway.
  Expected<std::shared_ptr<Executable>>
  loadWithKernels(StringRef payload, std::vector<FunctionSignature> sigs) {
    auto groups = unpackKernels(payload);
    if (!groups)
      return groups.takeError();
    if (groups->empty())
      return makeError("a compiled module with its kernels apart has no "
                       "object of its own");
    std::shared_ptr<const KernelGroup> own = groups->back();
    groups->pop_back();
    for (const std::shared_ptr<const KernelGroup> &group : *groups) {
      bool known = llvm::all_of(group->symbols, [&](const std::string &s) {
        return kernelStore->kernels.contains(s);
      });
      if (!known)
        if (auto library = addKernelGroup(group, /*strict=*/false); !library)
          return library.takeError();
    }
    auto library = addKernelGroup(own, /*strict=*/true);
    if (!library)
      return library.takeError();
    llvm::orc::LLJIT &jit = *kernelStore->jit;
    InitFn fini = nullptr;
    if (auto init = jit.lookup(*library, "_harp_init"))
      init->toPtr<InitFn>()();
    else
      llvm::consumeError(init.takeError());
    if (auto finiSymbol = jit.lookup(*library, "_harp_fini"))
      fini = finiSymbol->toPtr<InitFn>();
    else
      llvm::consumeError(finiSymbol.takeError());
    std::vector<PackedFn> entries;
    for (const FunctionSignature &sig : sigs) {
      auto symbol = jit.lookup(*library, "_harp_packed_" + sig.name);
      if (!symbol)
        return symbol.takeError();
      entries.push_back(symbol->toPtr<PackedFn>());
    }
    return harp::jit::makeExecutable(nullptr, std::move(sigs),
                                     std::move(entries), options.device, fini,
                                     kernelStore);
  }

  /// Parses and verifies harp IR text; the error carries the diagnostics.
  Expected<mlir::OwningOpRef<mlir::ModuleOp>>
  parse(StringRef source, StringRef sourceName = "<input>") {
    std::string diagnostics;
    llvm::raw_string_ostream os(diagnostics);
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(source, sourceName),
        llvm::SMLoc());
    mlir::SourceMgrDiagnosticHandler handler(sourceMgr, context, os);
    ++parses;
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, context);
    if (!module)
      return makeError("invalid IR:\n" + diagnostics);
    return std::move(module);
  }

  Expected<std::shared_ptr<Executable>> compile(mlir::ModuleOp module) {
    if (!targetError.empty())
      return makeError(targetError);
    std::lock_guard<std::recursive_mutex> lock(*mutex);
    // The disk cache's key is the module's text (locations left out).
    std::string text;
    {
      llvm::raw_string_ostream os(text);
      module.print(os, mlir::OpPrintingFlags().enableDebugInfo(false));
    }
    std::string key = keyOf(text);
    if (auto it = memory.find(key); it != memory.end()) {
      ++stats.memoryHits;
      return it->second;
    }
    // HARP_DEBUG_DUMP_IR=DIR: each module compiled or loaded from the disk
    // cache, as DIR/<key>.mlir (the programs the Tensor API builds, for
    // harp-opt and harp-run).
    if (std::optional<std::string> dir =
            llvm::sys::Process::GetEnv("HARP_DEBUG_DUMP_IR")) {
      std::error_code ec;
      llvm::raw_fd_ostream os(*dir + "/" + key + ".mlir", ec);
      if (!ec)
        os << text;
    }
    auto sigs = harp::jit::signaturesOf(module);
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
    : impl(std::make_unique<Impl>(std::move(options), nullptr, nullptr)) {}
Jit::Jit(JitOptions options, mlir::MLIRContext &context,
         std::recursive_mutex &mutex)
    : impl(std::make_unique<Impl>(std::move(options), &context, &mutex)) {}
Jit::~Jit() = default;

mlir::MLIRContext &Jit::sharedContext() {
  static mlir::MLIRContext *context = [] {
    auto *created = new mlir::MLIRContext(); // lives as long as the process
    configureContext(*created);
    return created;
  }();
  return *context;
}

std::recursive_mutex &Jit::sharedContextMutex() {
  static auto *mutex = new std::recursive_mutex();
  return *mutex;
}

unsigned Jit::parseCount() { return parses.load(); }

CompileTimes Jit::compileTimes() {
  std::lock_guard<std::mutex> lock(timesMutex);
  return times;
}

Jit &Jit::shared(Device device, StringRef cpu) {
  JitOptions options;
  options.device = device;
  options.cpu = cpu.str();
  return shared(options);
}

Jit &Jit::shared(const JitOptions &requested) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Jit>> jits;
  std::string name = requested.cpu.empty() ? defaultCpuName() : requested.cpu;
  std::string key = std::string(deviceName(requested.device)) + "/" + name +
                    (requested.fuse ? "/fuse" : "/nofuse") +
                    (requested.vectorize ? "/vectorize" : "/novectorize") +
                    (requested.threads ? "/threads" : "/nothreads") +
                    (requested.profile ? "/profile" : "/noprofile");
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Jit> &jit = jits[key];
  if (!jit) {
    JitOptions options;
    options.device = requested.device;
    options.cpu = name;
    options.fuse = requested.fuse;
    options.vectorize = requested.vectorize;
    options.threads = requested.threads;
    options.profile = requested.profile;
    jit = std::make_unique<Jit>(std::move(options), sharedContext(),
                                sharedContextMutex());
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

/// Verifies a module built by a caller (text is verified as it is parsed).
static Error verifyModule(mlir::ModuleOp module) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  mlir::ScopedDiagnosticHandler handler(
      module.getContext(),
      [&](mlir::Diagnostic &diag) { return collectDiagnostic(diag, os); });
  if (mlir::failed(mlir::verify(module)))
    return makeError("invalid IR:\n" + diagnostics);
  return Error::success();
}

Expected<std::shared_ptr<Executable>> Jit::compile(mlir::ModuleOp module) {
  std::lock_guard<std::recursive_mutex> lock(*impl->mutex);
  if (Error err = verifyModule(module))
    return std::move(err);
  return impl->compile(module);
}

Expected<std::string> Jit::compileObject(StringRef source) {
  std::lock_guard<std::recursive_mutex> lock(*impl->mutex);
  // Parsing verifies the module.
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> module = impl->parse(source);
  if (!module)
    return module.takeError();
  auto object = impl->compileObject(**module, "");
  if (!object)
    return object.takeError();
  return (*object)->getBuffer().str();
}

Expected<LibraryObject> Jit::compileLibraryObject(StringRef source,
                                                  StringRef sourceName,
                                                  StringRef prefix) {
  std::lock_guard<std::recursive_mutex> lock(*impl->mutex);
  // Parsing verifies the module.
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
      impl->parse(source, sourceName);
  if (!module)
    return module.takeError();
  return impl->compileLibrary(**module, prefix);
}

Expected<LibraryObject> Jit::compileLibraryObject(mlir::ModuleOp module,
                                                  StringRef prefix) {
  std::lock_guard<std::recursive_mutex> lock(*impl->mutex);
  if (Error err = verifyModule(module))
    return std::move(err);
  return impl->compileLibrary(module, prefix);
}

Expected<std::shared_ptr<Executable>> Jit::compile(StringRef source,
                                                   StringRef sourceName) {
  std::lock_guard<std::recursive_mutex> lock(*impl->mutex);
  // Text seen before is served without parsing or printing.
  if (auto it = impl->byText.find(source); it != impl->byText.end()) {
    ++impl->stats.memoryHits;
    return it->second;
  }
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
      impl->parse(source, sourceName);
  if (!module)
    return module.takeError();
  Expected<std::shared_ptr<Executable>> exe = impl->compile(**module);
  if (exe)
    impl->byText[source] = *exe;
  return exe;
}
