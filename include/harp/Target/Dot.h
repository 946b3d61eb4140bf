//===- Dot.h - harp functions as Graphviz DOT graphs ------------*- C++ -*-===//
//
// `harp-translate --export-dot` and harp.ir's `to_dot`: each function of a
// module as a cluster of a DOT digraph, ops as nodes and values as edges
// labelled with their types. An op with a region (a map_reduce: after
// harp-fuse, one kernel each) is a cluster of its own holding its body's
// scalar ops, so what fusion put together reads off the picture.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_TARGET_DOT_H
#define HARP_TARGET_DOT_H

#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir {
class Operation;
} // namespace mlir

namespace harp {

struct DotOptions {
  /// The function to draw; empty: every func.func of the module.
  std::string function;
  /// Draw the ops inside regions (kernel bodies); otherwise a kernel is
  /// one node.
  bool bodies = true;
};

/// Writes `module` as a DOT digraph; reports a located error (unknown
/// function, no function) and fails otherwise.
llvm::LogicalResult exportDot(mlir::Operation *module, llvm::raw_ostream &os,
                              const DotOptions &options = {});

} // namespace harp

#endif // HARP_TARGET_DOT_H
