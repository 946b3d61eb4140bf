//===- JitInternal.h - shared by the JIT's files ----------------*- C++ -*-===//
//
// Private to lib/Runtime: the JIT (Jit.cpp: compile cache, lowering, object
// linking, the kernel store) moves kernels into modules of their own with
// KernelUnits.cpp, loads executables defined in Executable.cpp and defines,
// for the code it loads, the runtime functions of JitSupport.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_LIB_RUNTIME_JITINTERNAL_H
#define HARP_LIB_RUNTIME_JITINTERNAL_H

#include "RuntimeAbi.h"
#include "harp/Runtime/Jit.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Module;
namespace orc {
class LLJIT;
} // namespace orc
} // namespace llvm

namespace harp::jit {

llvm::Error makeError(const llvm::Twine &message);

/// `_harp_packed_<name>(void **args)`: every compiled function, one
/// pointer per memref argument and result.
using PackedFn = void (*)(void **);
/// `_harp_init` / `_harp_fini`: a module's constructors and destructors.
using InitFn = void (*)();

/// Sets the calling thread's OpenMP thread count to threadCount() where the
/// OpenMP runtime is loaded (threaded code was): called before every call
/// of compiled CPU code.
void applyThreadCount();

/// The public functions of `module` with their tensor types, or an error
/// naming a type the runtime cannot pass.
llvm::Expected<std::vector<FunctionSignature>>
signaturesOf(mlir::ModuleOp module);

/// An executable over a loaded LLJIT: `entries[i]` calls `sigs[i]`; `fini`
/// (may be null) runs when it is destroyed; `kernels` (may be null) is kept
/// alive as long as it: the kernel store whose code it calls.
std::shared_ptr<Executable>
makeExecutable(std::unique_ptr<llvm::orc::LLJIT> jit,
               std::vector<FunctionSignature> sigs,
               std::vector<PackedFn> entries, Device device, InitFn fini,
               std::shared_ptr<const void> kernels = nullptr);

/// A kernel function of a module in an LLVM module of its own
/// (KernelUnits.cpp).
struct KernelUnit {
  /// `keyOf` of the unit's text, where its kernel was `_harp_kernel`.
  std::string key;
  /// The kernel's name in the unit and in the module: `_harp_k_<key>`.
  std::string symbol;
  std::unique_ptr<llvm::Module> module;
};

/// Folds the constant arguments of `module`'s kernel functions
/// (harp-outline-kernels' internal, `noinline` functions) into them and
/// drops those they never read, then moves each into a unit of its own, with
/// the local functions it calls and the local constants it reads; in `module`
/// it becomes a declaration of the unit's symbol. Equal kernels give one unit.
/// A kernel that uses a variable of the module, or an exported definition
/// of it, stays where it is.
std::vector<KernelUnit>
splitKernels(llvm::Module &module,
             llvm::function_ref<std::string(llvm::StringRef)> keyOf);

/// Makes `module` (translated, with its packed entries) the object of a
/// library: a constant description of each of `functions`, an entry
/// `i32 <prefix>_<name>(ptr...)` per function passing its tensors to
/// harp_lib_call, `<prefix>_last_error`, and every other definition made
/// internal (Library/LibraryAbi.h). Export.cpp.
llvm::Error addLibraryEntries(llvm::Module &module,
                              llvm::ArrayRef<FunctionSignature> functions,
                              llvm::StringRef prefix);

/// How many times generated code has called malloc (harpMalloc) in this
/// process: a test that the JIT binds it (JitTest).
uint64_t generatedMallocs();

} // namespace harp::jit

/// malloc and free of generated code, with reuse of large blocks.
extern "C" void *harpMalloc(size_t size);
extern "C" void harpFree(void *ptr);

#endif // HARP_LIB_RUNTIME_JITINTERNAL_H
