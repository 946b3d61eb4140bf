//===- JitInternal.h - shared by the JIT's files ----------------*- C++ -*-===//
//
// Private to lib/Runtime: the JIT (Jit.cpp: compile cache, lowering, object
// linking) loads executables defined in Executable.cpp and defines, for the
// code it loads, the runtime functions of JitSupport.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_LIB_RUNTIME_JITINTERNAL_H
#define HARP_LIB_RUNTIME_JITINTERNAL_H

#include "harp/Runtime/Jit.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace llvm::orc {
class LLJIT;
} // namespace llvm::orc

namespace harp::jit {

llvm::Error makeError(const llvm::Twine &message);

/// `_harp_packed_<name>(void **args)`: every compiled function, one
/// pointer per memref argument and result.
using PackedFn = void (*)(void **);
/// `_harp_init` / `_harp_fini`: a module's constructors and destructors.
using InitFn = void (*)();

/// The public functions of `module` with their tensor types, or an error
/// naming a type the runtime cannot pass.
llvm::Expected<std::vector<FunctionSignature>>
signaturesOf(mlir::ModuleOp module);

/// An executable over a loaded LLJIT: `entries[i]` calls `sigs[i]`; `fini`
/// (may be null) runs when it is destroyed.
std::shared_ptr<Executable>
makeExecutable(std::unique_ptr<llvm::orc::LLJIT> jit,
               std::vector<FunctionSignature> sigs,
               std::vector<PackedFn> entries, Device device, InitFn fini);

} // namespace harp::jit

/// An unranked memref as generated code passes it.
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};

/// memref.copy of non-contiguous memrefs (`memrefCopy`).
extern "C" void harpMemrefCopy(int64_t elementSize, UnrankedMemRef *src,
                               UnrankedMemRef *dst);
/// malloc and free of generated code, with reuse of large blocks.
extern "C" void *harpMalloc(size_t size);
extern "C" void harpFree(void *ptr);

#endif // HARP_LIB_RUNTIME_JITINTERNAL_H
