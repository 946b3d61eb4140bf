//===- Export.h - compiled harp code as a library of its own ----*- C++ -*-===//
//
// harp::exportLibrary compiles a harp module ahead of time into a library a
// C or C++ program links without harp, MLIR or LLVM: a shared library
// (`.so`), a static archive (`.a`) or an object file (`.o`), with a C header
// that declares a typed entry point per public function. The library needs
// libc, libm and harp's small library runtime (`libharp_runtime.a`, linked
// into `.so` and `.a` outputs; an `.o` is linked with it). docs/Embedding.md,
// "Libraries ahead of time", describes the entry points.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_RUNTIME_EXPORT_H
#define HARP_RUNTIME_EXPORT_H

#include "harp/Runtime/Jit.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace harp {

struct ExportOptions {
  /// The prefix of every C symbol and of the header's names: entry points
  /// are `<prefix>_<function>`. Empty means the output file's name without
  /// `lib` and its extension (`libmlp.so`: `mlp`).
  std::string prefix;
  /// Where to write the C header; empty writes none.
  std::string headerPath;
  /// The C compiler driver that links a shared library; empty means $CC,
  /// else `cc`.
  std::string linker;
};

/// Compiles `module` with `jit`'s options (its CPU target, fusion,
/// vectorization, threads; the CPU device only) and writes the library
/// `path`, whose extension picks the kind: `.so`, `.a` or `.o`. Every public
/// function must take and return ranked tensors of static shape. A `.mlir`
/// path gets the module's harp IR instead (nothing is compiled).
llvm::Error exportLibrary(Jit &jit, mlir::ModuleOp module, llvm::StringRef path,
                          const ExportOptions &options = {});
/// exportLibrary of harp IR given as text; diagnostics name `sourceName`
/// (a library only: the text is the IR already).
llvm::Error exportLibrary(Jit &jit, llvm::StringRef source,
                          llvm::StringRef sourceName, llvm::StringRef path,
                          const ExportOptions &options = {});

/// The C header of a library of `functions` whose symbols start with
/// `prefix`; `sourceName` is named in its comment.
std::string libraryHeader(llvm::ArrayRef<FunctionSignature> functions,
                          llvm::StringRef prefix, llvm::StringRef sourceName);

/// The library runtime every exported library links, as an archive's bytes
/// (installed as lib/libharp_runtime.a).
llvm::StringRef libraryRuntimeArchive();

/// `name` as a C identifier: characters other than letters, digits and `_`
/// become `_`, and a leading digit gets a `_` before it.
std::string cIdentifier(llvm::StringRef name);

} // namespace harp

#endif // HARP_RUNTIME_EXPORT_H
