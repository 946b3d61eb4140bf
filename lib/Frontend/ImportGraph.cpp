//===- ImportGraph.cpp - graph programs as harp IR ------------------------===//
//
// Each graph instance (a graph and a binding of its dims) is evaluated once
// on placeholder nodes and built into its own function; a subgraph call
// becomes a func.call of the callee's instance, built first (callees come
// before callers in the module).
//
//===----------------------------------------------------------------------===//

#include "harp/Frontend/ImportGraph.h"

#include "Evaluator.h"

#include "harp/API/Function.h"
#include "harp/Runtime/Jit.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace harp;
using namespace harp::graph;
using detail::NodePtr;

namespace {
class Importer : public Evaluator {
public:
  Importer(const ProgramImpl &program, unsigned maxDepth, mlir::ModuleOp module)
      : Evaluator(program, maxDepth), module(module),
        builder(module.getBodyRegion()) {}

  /// Keeps `name` for the entry function.
  void reserve(const std::string &name) { usedNames.insert(name); }

  /// The function of `g` under `bindings`, built on first use.
  const std::string &instance(const GraphDef &g, const Bindings &bindings,
                              std::vector<Frame> &chain, bool entry) {
    // The instance: its graph and dims (frameName, whose spelling no
    // identifier has); its function's name: the graph's, with the dims.
    std::string instanceKey = frameName(g.signature.name, bindings);
    if (auto it = names.find(instanceKey); it != names.end())
      return it->second;
    std::string key = g.signature.name;
    for (const auto &[symbol, size] : bindings)
      key += "_" + symbol + std::to_string(size);
    std::vector<NodePtr> args;
    for (const ParamSpec &p : g.signature.inputs) {
      LocationScope scope(locationOf(p.loc));
      args.push_back(detail::input(p.dtype, shapeOf(p, bindings), p.name));
    }
    std::vector<NodePtr> results = execute(g, bindings, args, chain);
    // Function names are unique even where a graph's name looks like
    // another's instance (a graph f_N3 next to f with N = 3); the entry
    // keeps its reserved name.
    std::string name = entry ? g.signature.name : key;
    for (unsigned n = 1; !entry && !usedNames.insert(name).second; ++n)
      name = key + "_" + std::to_string(n);
    builder.setInsertionPointToEnd(module.getBody());
    mlir::Location loc =
        mlir::FileLineColLoc::get(module.getContext(), *g.signature.loc.file,
                                  g.signature.loc.line, g.signature.loc.column);
    detail::buildGraphFunction(builder, name, loc, args, results, !entry);
    return names[instanceKey] = name;
  }

protected:
  std::vector<NodePtr> callGraph(const GraphDef &g, const Bindings &bindings,
                                 const std::vector<NodePtr> &args,
                                 std::vector<Frame> &chain) override {
    const std::string &callee = instance(g, bindings, chain, false);
    std::vector<std::pair<DType, std::vector<int64_t>>> types;
    for (const ParamSpec &p : g.signature.outputs)
      types.push_back({p.dtype, shapeOf(p, bindings)});
    LocationScope scope(locationOf(chain.back().callLoc));
    return detail::callFunction(callee, args, types);
  }

private:
  static SourceLocation locationOf(const SourceLoc &loc) {
    return {loc.file ? loc.file->c_str() : nullptr, loc.line, loc.column};
  }

  mlir::ModuleOp module;
  mlir::OpBuilder builder;
  std::map<std::string, std::string> names;
  std::set<std::string> usedNames;
};

mlir::Location locationOf(mlir::MLIRContext *context, const SourceLoc &loc) {
  if (!loc.file)
    return mlir::UnknownLoc::get(context);
  return mlir::FileLineColLoc::get(context, *loc.file, loc.line, loc.column);
}

void report(mlir::MLIRContext *context, const GraphError &error) {
  mlir::InFlightDiagnostic diag =
      mlir::emitError(locationOf(context, error.loc()), error.message());
  for (const GraphError::Note &note : error.notes())
    diag.attachNote(locationOf(context, note.loc)) << note.message;
}
} // namespace

mlir::OwningOpRef<mlir::ModuleOp>
harp::graph::importGraph(const Program &program, mlir::MLIRContext *context,
                         const ImportOptions &options) {
  std::lock_guard<std::recursive_mutex> lock(Jit::sharedContextMutex());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(context));
  const ProgramImpl &impl = program.impl();
  const GraphDef *main = impl.find("main");
  try {
    if (!main) {
      SourceLoc start = impl.graphs.empty() ? SourceLoc{impl.file, 1, 1}
                                            : impl.graphs.front().signature.loc;
      throw GraphError(start, "the program has no 'graph main': it is the "
                              "entry point");
    }
    const GraphSignature &sig = main->signature;
    std::set<std::string> symbols;
    for (const ParamSpec &p : sig.inputs)
      for (const DimSpec &d : p.dims)
        if (!d.symbol.empty())
          symbols.insert(d.symbol);
    for (const auto &[symbol, size] : options.bindings) {
      if (!symbols.count(symbol))
        throw GraphError(sig.loc,
                         "--bind " + symbol + "=" + std::to_string(size) +
                             ": graph 'main' has no dim '" + symbol + "'");
      if (size < 0)
        throw GraphError(sig.loc, "--bind " + symbol + "=" +
                                      std::to_string(size) +
                                      ": a dim is at least 0");
    }
    Importer importer(impl, options.maxDepth, *module);
    Bindings bindings(options.bindings.begin(), options.bindings.end());
    if (options.inputShapes) {
      // Bind from the shapes as a call would, on placeholder tensors.
      std::vector<Value> args;
      if (options.inputShapes->size() != sig.inputs.size())
        throw GraphError(
            sig.loc, "graph 'main' takes " + std::to_string(sig.inputs.size()) +
                         " inputs, got " +
                         std::to_string(options.inputShapes->size()));
      for (size_t i = 0; i < sig.inputs.size(); ++i)
        args.push_back(Value::ofTensor(detail::input(sig.inputs[i].dtype,
                                                     (*options.inputShapes)[i],
                                                     sig.inputs[i].name)));
      bindings = importer.bind(*main, args, sig.loc, bindings);
    }
    for (const std::string &symbol : symbols)
      if (!bindings.count(symbol))
        throw GraphError(sig.loc, "dim '" + symbol +
                                      "' of graph 'main' is not bound: give "
                                      "its size (--bind " +
                                      symbol + "=SIZE, or bind={'" + symbol +
                                      "': SIZE} in Python) or inputs that "
                                      "have it");
    std::vector<Frame> chain = {{frameName("main", bindings), sig.loc}};
    importer.reserve("main");
    importer.instance(*main, bindings, chain, /*entry=*/true);
  } catch (const GraphError &error) {
    report(context, error);
    return nullptr;
  } catch (const Error &error) {
    mlir::emitError(
        locationOf(context, main ? main->signature.loc : SourceLoc{}),
        error.what());
    return nullptr;
  }
  if (mlir::failed(mlir::verify(*module)))
    return nullptr;
  return module;
}

mlir::OwningOpRef<mlir::ModuleOp>
harp::graph::importGraph(llvm::SourceMgr &sourceMgr, mlir::MLIRContext *context,
                         const ImportOptions &options) {
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  std::optional<Program> program;
  try {
    program = Program::parse(buffer->getBuffer().str(),
                             buffer->getBufferIdentifier().str());
  } catch (const GraphError &error) {
    report(context, error);
    return nullptr;
  }
  return importGraph(*program, context, options);
}

llvm::Expected<std::string>
harp::graph::importGraphText(std::unique_ptr<llvm::MemoryBuffer> buffer,
                             mlir::MLIRContext *context,
                             const ImportOptions &options) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, context, os);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importGraph(sourceMgr, context, options);
  if (!module)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   llvm::StringRef(diagnostics).trim());
  std::string text;
  llvm::raw_string_ostream textStream(text);
  module->print(textStream, mlir::OpPrintingFlags().enableDebugInfo());
  return text;
}

std::optional<std::string>
harp::graph::parseBindings(llvm::StringRef text,
                           std::map<std::string, int64_t> &bindings) {
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    auto [name, value] = item.trim().split('=');
    name = name.trim();
    value = value.trim();
    int64_t size;
    if (name.empty() || value.empty() || value.getAsInteger(10, size))
      return "--bind: expected NAME=SIZE, got '" + item.trim().str() + "'";
    if (!bindings.insert({name.str(), size}).second)
      return "--bind: '" + name.str() + "' is bound twice";
  }
  return std::nullopt;
}
