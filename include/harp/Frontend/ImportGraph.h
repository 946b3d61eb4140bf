//===- ImportGraph.h - graph programs as harp IR ----------------*- C++ -*-===//
//
// Imports a graph program (harp/Frontend/GraphDSL.h) as a harp module: one
// func.func per graph instance (a graph with symbolic dims gets one per
// binding of its dims, named after it: @relu_B32_N64), `main` public and
// the others private, func.call for subgraph calls, several results for
// several outputs. Errors are reported through the context's diagnostic
// handlers at file:line:col locations.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_FRONTEND_IMPORTGRAPH_H
#define HARP_FRONTEND_IMPORTGRAPH_H

#include "harp/Frontend/GraphDSL.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <optional>

namespace llvm {
class MemoryBuffer;
class SourceMgr;
} // namespace llvm

namespace harp::graph {

struct ImportOptions {
  unsigned maxDepth = 10;
  /// Values of main's symbolic dims (`--bind B=32,N=64`).
  std::map<std::string, int64_t> bindings;
  /// The shapes of main's inputs, when known (harp-run's .npy inputs): they
  /// bind main's dims as a call's arguments would.
  std::optional<std::vector<std::vector<int64_t>>> inputShapes;
};

/// Builds the module of `program`, or reports an error and returns null.
/// `context` must be the shared JIT context (harp::Jit::sharedContext),
/// where the Tensor API builds its IR; this takes its mutex.
mlir::OwningOpRef<mlir::ModuleOp> importGraph(const Program &program,
                                              mlir::MLIRContext *context,
                                              const ImportOptions &options);

/// Parses the source manager's main buffer, then imports it.
mlir::OwningOpRef<mlir::ModuleOp> importGraph(llvm::SourceMgr &sourceMgr,
                                              mlir::MLIRContext *context,
                                              const ImportOptions &options);

/// importGraph of the program in `buffer`, printed with its locations (so
/// that later errors point into the graph program), for tools that take
/// .graph files; the diagnostics are the error.
llvm::Expected<std::string>
importGraphText(std::unique_ptr<llvm::MemoryBuffer> buffer,
                mlir::MLIRContext *context, const ImportOptions &options);

/// Parses `--bind` text, "B=32,N=64", into `bindings`; an error message
/// otherwise.
std::optional<std::string>
parseBindings(llvm::StringRef text, std::map<std::string, int64_t> &bindings);

} // namespace harp::graph

#endif // HARP_FRONTEND_IMPORTGRAPH_H
