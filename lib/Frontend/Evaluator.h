//===- Evaluator.h - graphs evaluated on Tensor API nodes -------*- C++ -*-===//
//
// Private to lib/Frontend. The evaluator binds a graph's dims from its
// arguments, runs its statements on Tensor API nodes and checks its outputs
// against their declared types. What a subgraph call becomes is the
// subclass's choice: the nodes of the callee's body (inlined, for
// Program::call) or a func.call of the callee's function (the importer).
//
//===----------------------------------------------------------------------===//

#ifndef HARP_LIB_FRONTEND_EVALUATOR_H
#define HARP_LIB_FRONTEND_EVALUATOR_H

#include "AST.h"
#include "Builtins.h"

#include <map>

namespace harp::graph {

using Bindings = std::map<std::string, int64_t>;

/// "relu(B=2, N=5)": a graph instance as call chains name it.
std::string frameName(const std::string &graph, const Bindings &bindings);

/// One graph call on the way to the one being evaluated.
struct Frame {
  std::string graph;
  SourceLoc callLoc;
};

class Evaluator {
public:
  /// Throws Error for a depth limit above kMaxDepthLimit.
  Evaluator(const ProgramImpl &program, unsigned maxDepth);
  virtual ~Evaluator() = default;

  /// The dims of `g` bound from `args` (one tensor per input; numbers are
  /// accepted for 0-d inputs and converted), with `given` bound first;
  /// checks dtypes, ranks and that each dim has one size.
  Bindings bind(const GraphDef &g, std::vector<Value> &args,
                const SourceLoc &callLoc, Bindings given = {}) const;

  /// Runs `g`'s body on `inputs` (one node per input) under `bindings`;
  /// returns one node per output. `chain` holds the calls that led here.
  std::vector<detail::NodePtr>
  execute(const GraphDef &g, const Bindings &bindings,
          const std::vector<detail::NodePtr> &inputs,
          std::vector<Frame> &chain);

  /// The declared shape of `p` under `bindings`.
  static std::vector<int64_t> shapeOf(const ParamSpec &p,
                                      const Bindings &bindings);

protected:
  /// A call of graph `g` with bound arguments; `chain` ends with its frame.
  virtual std::vector<detail::NodePtr>
  callGraph(const GraphDef &g, const Bindings &bindings,
            const std::vector<detail::NodePtr> &args,
            std::vector<Frame> &chain) = 0;

  const ProgramImpl &program;
  unsigned maxDepth;
  /// How deep eval() recurses now (bounded: see DepthGuard).
  unsigned evalDepth = 0;

private:
  struct Scope;
  void run(const Block &block, Scope &scope);
  Value eval(const Expr &e, Scope &scope);
  Value evalBinary(const Expr &e, Scope &scope);
  Value evalCall(const Expr &e, Scope &scope);
};

/// Program::call's evaluator: subgraph calls inlined.
class InlineEvaluator : public Evaluator {
public:
  using Evaluator::Evaluator;

protected:
  std::vector<detail::NodePtr>
  callGraph(const GraphDef &g, const Bindings &bindings,
            const std::vector<detail::NodePtr> &args,
            std::vector<Frame> &chain) override {
    return execute(g, bindings, args, chain);
  }
};

} // namespace harp::graph

#endif // HARP_LIB_FRONTEND_EVALUATOR_H
