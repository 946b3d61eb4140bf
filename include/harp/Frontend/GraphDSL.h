//===- GraphDSL.h - the graph language: parse and evaluate ------*- C++ -*-===//
//
// harp's text language for tensor graphs (docs/GraphDSL.md):
//
//   graph relu(x: f32[B, N]) -> (y: f32[B, N]) {
//       let zero = 0.0
//       y = max(x, zero)
//   }
//   graph main(input: f32[10]) -> (out: f32[10]) {
//       out = relu(input)
//   }
//
// Program::parse reads a program and checks what can be checked without
// shapes (names, signatures, which outputs are assigned). Program::call
// evaluates one graph on Tensor API nodes, subgraph calls inlined: the
// results are lazy tensors like any other (realize, backward). The IR
// importer (harp/Frontend/ImportGraph.h) builds one function per graph
// and func.call for subgraph calls instead.
//
// Errors are GraphError: a message at file:line:col of the program text.
// No MLIR header here.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_FRONTEND_GRAPHDSL_H
#define HARP_FRONTEND_GRAPHDSL_H

#include "harp/API/Graph.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace harp::graph {

/// A place in a program's text (1-based line and column).
struct SourceLoc {
  /// Interned for the process: stays valid.
  const std::string *file = nullptr;
  unsigned line = 0, column = 0;
  std::string str() const;
  /// A location in `file` (interned here).
  static SourceLoc at(const std::string &file, unsigned line, unsigned column);
};

/// A located error: what() is "file:line:col: message" followed by any
/// notes, one per line.
class GraphError : public Error {
public:
  struct Note {
    SourceLoc loc;
    std::string message;
  };
  GraphError(SourceLoc loc, std::string message, std::vector<Note> notes = {});
  const SourceLoc &loc() const { return loc_; }
  /// The message without its location.
  const std::string &message() const { return message_; }
  const std::vector<Note> &notes() const { return notes_; }

private:
  SourceLoc loc_;
  std::string message_;
  std::vector<Note> notes_;
};

/// One dim of a declared type: a number or a symbol bound by the call.
struct DimSpec {
  int64_t size = -1;  // when `symbol` is empty
  std::string symbol; // "B"
  std::string str() const {
    return symbol.empty() ? std::to_string(size) : symbol;
  }
};

/// An input or output of a graph: `x: f32[B, N]`.
struct ParamSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<DimSpec> dims;
  SourceLoc loc;
  /// "f32[B, N]".
  std::string typeStr() const;
};

struct GraphSignature {
  std::string name;
  std::vector<ParamSpec> inputs, outputs;
  SourceLoc loc;
};

/// The most a depth limit may be: deeper nesting would need more stack
/// than a thread has.
constexpr unsigned kMaxDepthLimit = 200;

struct EvalOptions {
  /// How deep subgraph calls may nest (main is depth 0, at most
  /// kMaxDepthLimit); deeper is an error naming the call chain.
  unsigned maxDepth = 10;
};

struct ProgramImpl;

/// A parsed program. Cheap to copy (shared and immutable).
class Program {
public:
  /// Parses `text`; `filename` names it in errors and IR locations.
  /// Throws GraphError.
  static Program parse(const std::string &text,
                       const std::string &filename = "<graph>");

  /// The graphs in the order written.
  std::vector<std::string> graphNames() const;
  bool hasGraph(const std::string &name) const;
  /// Throws Error for an unknown graph.
  const GraphSignature &signature(const std::string &graph) const;

  /// Evaluates `graph` on `args` (one node per input, of the declared
  /// dtypes and ranks; symbolic dims bound from their shapes), subgraph
  /// calls inlined. Returns one node per output. Throws GraphError.
  std::vector<detail::NodePtr> call(const std::string &graph,
                                    const std::vector<detail::NodePtr> &args,
                                    const EvalOptions &options = {}) const;

  const ProgramImpl &impl() const { return *impl_; }

private:
  std::shared_ptr<const ProgramImpl> impl_;
};

/// The names of the DSL's built-in functions, sorted.
std::vector<std::string> builtinNames();

} // namespace harp::graph

#endif // HARP_FRONTEND_GRAPHDSL_H
