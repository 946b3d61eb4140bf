//===- IrBindings.cpp - harp.ir: IR as text in and out --------------------===//
//
// For IR users: parse and print modules, run pass pipelines, compile with
// the JIT and call functions on NumPy arrays. Modules cross the boundary as
// text; this is the only place the extension parses IR.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "harp/InitAllHarp.h"
#include "harp/Runtime/Jit.h"
#include "harp/Target/Dot.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/SourceMgr.h"

using namespace harp;
using namespace harp::python;

namespace {

struct IrContext {
  mlir::MLIRContext context;
  IrContext() {
    mlir::DialectRegistry registry;
    mlir::harp::registerAllHarpDialects(registry);
    context.appendDialectRegistry(registry);
    static bool registered = [] {
      mlir::harp::registerAllHarpPasses();
      return true;
    }();
    (void)registered;
  }
  static IrContext &get() {
    static IrContext instance;
    return instance;
  }
};

mlir::OwningOpRef<mlir::ModuleOp> parseModule(const std::string &text) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "<harp.ir>"), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &IrContext::get().context,
                                           os);
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(
      sourceMgr, &IrContext::get().context);
  if (!module)
    throw py::value_error("invalid IR:\n" + diagnostics);
  return module;
}

std::string printModule(mlir::ModuleOp module) {
  std::string s;
  llvm::raw_string_ostream os(s);
  module.print(os);
  return s;
}

std::string runPipeline(const std::string &text, const std::string &pipeline) {
  auto module = parseModule(text);
  mlir::MLIRContext &ctx = IrContext::get().context;
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    d.getLocation().print(os);
    os << ": " << d << "\n";
    return mlir::success();
  });
  std::string error;
  llvm::raw_string_ostream es(error);
  // The anchored form, `builtin.module(cse)`, as harp-opt --pass-pipeline.
  mlir::FailureOr<mlir::OpPassManager> parsed =
      mlir::parsePassPipeline(pipeline, es);
  if (mlir::failed(parsed))
    throw py::value_error("invalid pass pipeline '" + pipeline + "': " + error);
  if (parsed->getOpAnchorName() != mlir::ModuleOp::getOperationName())
    throw py::value_error("pass pipeline '" + pipeline +
                          "' must be anchored on builtin.module, e.g. "
                          "'builtin.module(canonicalize)'");
  mlir::PassManager pm(&ctx, mlir::ModuleOp::getOperationName());
  static_cast<mlir::OpPassManager &>(pm) = std::move(*parsed);
  if (mlir::failed(pm.run(*module)))
    throw py::value_error("pass pipeline '" + pipeline + "' failed:\n" +
                          diagnostics);
  return printModule(*module);
}

/// The JIT options of harp.ir's `function` called with these arguments.
JitOptions jitOptions(const char *function, const std::string &device,
                      const std::optional<std::string> &cpu, bool fuse,
                      bool vectorize, bool threads,
                      std::optional<int64_t> parallelMinWork) {
  llvm::Expected<Device> where = parseDevice(device);
  if (!where)
    throw py::value_error(std::string(function) + ": " +
                          llvm::toString(where.takeError()));
  JitOptions options;
  options.device = *where;
  options.cpu = cpu ? *cpu : harp::get_cpu();
  options.fuse = fuse;
  options.vectorize = vectorize;
  options.threads = threads;
  if (parallelMinWork) {
    if (!threads)
      throw py::value_error(std::string(function) +
                            ": parallel_min_work needs threads=True");
    if (*parallelMinWork < 0)
      throw py::value_error(std::string(function) +
                            ": parallel_min_work must be at least 0, got " +
                            std::to_string(*parallelMinWork));
  }
  options.parallelMinWork = parallelMinWork;
  return options;
}

py::list call(const std::string &text, const std::string &name,
              const std::vector<py::array> &args, const std::string &device,
              const std::optional<std::string> &cpu, bool fuse, bool vectorize,
              bool threads, std::optional<int64_t> parallelMinWork) {
  JitOptions options = jitOptions("harp.ir.call", device, cpu, fuse, vectorize,
                                  threads, parallelMinWork);
  // Kernels are timed as the Tensor API's are (set_options(profile=...)).
  options.profile =
      *harp::get_options().profile && options.device == Device::CPU;
  llvm::Expected<std::shared_ptr<Executable>> exe =
      Jit::shared(options).compile(text);
  if (!exe)
    throw py::value_error(llvm::toString(exe.takeError()));
  std::vector<Array> inputs;
  std::vector<py::array> keep;
  for (const py::array &a : args) {
    py::array c = py::array::ensure(a, py::array::c_style);
    keep.push_back(c);
    inputs.push_back(Array::borrow(
        TensorType{elementKindOf(dtypeOfNumpy(c.dtype())),
                   std::vector<int64_t>(c.shape(), c.shape() + c.ndim())},
        const_cast<void *>(c.data())));
  }
  llvm::Expected<std::vector<Array>> out = (*exe)->call(name, inputs);
  if (!out)
    throw py::value_error(llvm::toString(out.takeError()));
  py::list results;
  for (const Array &a : *out) {
    results.append(wrapArray(a, numpyOfKind(a.kind())));
  }
  return results;
}

/// The host object `text` compiles to for `device` and `cpu`, not loaded
/// (harp-run --compile-only): code for a CPU this machine cannot execute,
/// or for a GPU where there is none, checked without running it.
py::bytes compileObject(const std::string &text, const std::string &device,
                        const std::optional<std::string> &cpu,
                        const std::string &gpuFormat, bool fuse, bool vectorize,
                        bool threads, std::optional<int64_t> parallelMinWork) {
  JitOptions options = jitOptions("harp.ir.compile_object", device, cpu, fuse,
                                  vectorize, threads, parallelMinWork);
  options.cudaFormat = gpuFormat;
  Jit jit(options, Jit::sharedContext(), Jit::sharedContextMutex());
  llvm::Expected<std::string> object = jit.compileObject(text);
  if (!object)
    throw py::value_error(llvm::toString(object.takeError()));
  return py::bytes(*object);
}

/// The module's functions as a Graphviz DOT graph (harp-translate
/// --export-dot).
std::string toDot(const std::string &text, const std::string &function,
                  bool bodies) {
  mlir::OwningOpRef<mlir::ModuleOp> module = parseModule(text);
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&IrContext::get().context,
                                        [&](mlir::Diagnostic &diag) {
                                          diagnostics += diag.str();
                                          return mlir::success();
                                        });
  DotOptions options;
  options.function = function;
  options.bodies = bodies;
  std::string dot;
  llvm::raw_string_ostream os(dot);
  if (mlir::failed(exportDot(*module, os, options)))
    throw py::value_error(diagnostics);
  return dot;
}

} // namespace

void harp::python::bindIr(py::module_ &m) {
  py::module_ ir = m.def_submodule("ir", "harp IR as text: parse, passes, JIT");
  ir.def(
      "parse",
      [](const std::string &text) { return printModule(*parseModule(text)); },
      "Parses and verifies a module; returns its canonical text.");
  ir.def("run_pipeline", &runPipeline,
         "Runs a textual pass pipeline, e.g. "
         "'builtin.module(canonicalize)', and returns the resulting module.");
  ir.def("call", &call, py::arg("text"), py::arg("name"), py::arg("args"),
         py::arg("device") = "cpu", py::arg("cpu") = py::none(), py::kw_only(),
         py::arg("fuse") = true, py::arg("vectorize") = true,
         py::arg("threads") = false, py::arg("parallel_min_work") = py::none(),
         "Compiles a module with harp's JIT for `device` ('cpu' or 'cuda') "
         "and calls a function on NumPy arrays; returns the results. `cpu` "
         "names the CPU code is generated for (default: harp.get_cpu()); "
         "`fuse=False`, `vectorize=False`, `threads=True` and "
         "`parallel_min_work=N` are harp-run's --no-fuse, --no-vectorize, "
         "--parallel (on harp.get_num_threads() threads) and "
         "--parallel-min-work.");
  ir.def("compile_object", &compileObject, py::arg("text"),
         py::arg("device") = "cpu", py::arg("cpu") = py::none(), py::kw_only(),
         py::arg("gpu_format") = "ptx", py::arg("fuse") = true,
         py::arg("vectorize") = true, py::arg("threads") = false,
         py::arg("parallel_min_work") = py::none(),
         "Compiles a module for `device` and `cpu` without loading it "
         "(harp-run --compile-only) and returns the host object file's "
         "bytes: code for a CPU this machine cannot execute, or for a GPU "
         "where there is none (`gpu_format` 'ptx' or 'cubin', the kernels' "
         "form inside it). Raises ValueError with the diagnostics where "
         "lowering fails.");
  ir.def("to_dot", &toDot, py::arg("text"), py::arg("function") = "",
         py::arg("bodies") = true,
         "The module's functions as a Graphviz DOT graph, each kernel (an op "
         "with a region) a cluster of its body; `function` draws one, "
         "`bodies=False` draws kernels as single nodes.");
}
