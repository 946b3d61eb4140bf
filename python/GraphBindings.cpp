//===- GraphBindings.cpp - harp.graph: the graph language from Python -----===//
//
// _harp.graph: parse a program, call its graphs on tensors (subgraph calls
// inlined: the results are lazy tensors with gradients), and import it as
// harp IR text (which harp.ir parses, runs and draws). GraphError carries the
// program's file, line and column.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "harp/Frontend/ImportGraph.h"
#include "harp/Runtime/Jit.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/SourceMgr.h"

#include <optional>

using namespace harp;
using namespace harp::python;

namespace {
py::dict signatureDict(const graph::GraphSignature &sig) {
  auto params = [](const std::vector<graph::ParamSpec> &list) {
    py::list out;
    for (const graph::ParamSpec &p : list) {
      py::list dims;
      for (const graph::DimSpec &d : p.dims)
        dims.append(d.symbol.empty() ? py::object(py::int_(d.size))
                                     : py::object(py::str(d.symbol)));
      out.append(py::make_tuple(p.name, p.dtype, py::tuple(dims), p.typeStr()));
    }
    return out;
  };
  py::dict d;
  d["name"] = sig.name;
  d["inputs"] = params(sig.inputs);
  d["outputs"] = params(sig.outputs);
  d["line"] = sig.loc.line;
  return d;
}

/// The module the importer builds, as text; its diagnostics raise.
std::string
toMlir(const graph::Program &program,
       const std::map<std::string, int64_t> &bindings,
       const std::optional<std::vector<std::vector<int64_t>>> &shapes,
       unsigned maxDepth) {
  graph::ImportOptions options;
  options.bindings = bindings;
  options.inputShapes = shapes;
  options.maxDepth = maxDepth;
  mlir::MLIRContext &context = Jit::sharedContext();
  std::lock_guard<std::recursive_mutex> lock(Jit::sharedContextMutex());
  // The first error, as the GraphError it was in the front end.
  std::optional<graph::GraphError> error;
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    if (diag.getSeverity() != mlir::DiagnosticSeverity::Error || error) {
      diagnostics += "\n" + diag.str();
      return mlir::success();
    }
    graph::SourceLoc loc;
    if (auto fileLoc = llvm::dyn_cast<mlir::FileLineColLoc>(diag.getLocation()))
      loc = graph::SourceLoc::at(fileLoc.getFilename().str(), fileLoc.getLine(),
                                 fileLoc.getColumn());
    std::vector<graph::GraphError::Note> notes;
    for (const mlir::Diagnostic &note : diag.getNotes()) {
      graph::SourceLoc noteLoc;
      if (auto fileLoc =
              llvm::dyn_cast<mlir::FileLineColLoc>(note.getLocation()))
        noteLoc = graph::SourceLoc::at(fileLoc.getFilename().str(),
                                       fileLoc.getLine(), fileLoc.getColumn());
      notes.push_back({noteLoc, note.str()});
    }
    error.emplace(loc, diag.str(), notes);
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      graph::importGraph(program, &context, options);
  if (!module) {
    if (error)
      throw *error;
    throw Error("graph import failed:" + diagnostics);
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  os << "\n";
  return text;
}

} // namespace

void harp::python::bindGraph(py::module_ &parent) {
  py::module_ m = parent.def_submodule(
      "graph", "The graph language (docs/GraphDSL.md): parse, call, import");
  static py::exception<graph::GraphError> graphError(m, "GraphError",
                                                     parent.attr("HarpError"));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const graph::GraphError &e) {
      py::object error = py::handle(graphError.ptr())(e.what());
      error.attr("filename") =
          e.loc().file ? py::object(py::str(*e.loc().file)) : py::none();
      error.attr("lineno") = e.loc().line;
      error.attr("colno") = e.loc().column;
      error.attr("message") = e.message();
      PyErr_SetObject(graphError.ptr(), error.ptr());
    }
  });

  py::class_<graph::Program>(m, "Program", "A parsed graph program.")
      .def_static("parse", &graph::Program::parse, py::arg("text"),
                  py::arg("filename") = "<string>")
      .def_property_readonly("graphs", &graph::Program::graphNames)
      .def("has_graph", &graph::Program::hasGraph)
      .def("signature",
           [](const graph::Program &p, const std::string &name) {
             return signatureDict(p.signature(name));
           })
      .def(
          "call",
          [](const graph::Program &p, const std::string &name,
             const std::vector<NodePtr> &args, unsigned maxDepth) {
            graph::EvalOptions options;
            options.maxDepth = maxDepth;
            return p.call(name, args, options);
          },
          py::arg("name"), py::arg("args"), py::arg("max_depth") = 10)
      .def("to_mlir", &toMlir, py::arg("bindings"), py::arg("shapes"),
           py::arg("max_depth") = 10);
  m.def("builtins", &graph::builtinNames,
        "The names of the language's built-in functions.");
}
