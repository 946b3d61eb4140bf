//===- harp-translate.cpp - into and out of harp IR -----------------------===//
//
//   harp-translate --import-graph model.graph --bind B=32   # graph -> harp IR
//   harp-translate --export-dot model.mlir -o model.dot     # harp IR -> DOT
//
// Both work in the shared JIT context, where the Tensor API builds the IR
// the graph importer produces. `--split-input-file` and
// `--verify-diagnostics` work as in harp-opt, on either kind of input.
//
//===----------------------------------------------------------------------===//

#include "harp/Frontend/ImportGraph.h"
#include "harp/Runtime/Jit.h"
#include "harp/Support/Version.h"
#include "harp/Target/Dot.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace harp;
namespace cl = llvm::cl;

static cl::OptionCategory category("harp-translate options");

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("<input file, or - for stdin>"),
                                      cl::init("-"), cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(category));

enum class Translation { None, ImportGraph, ExportDot };
static cl::opt<Translation> translation(
    cl::desc("Translation:"),
    cl::values(clEnumValN(Translation::ImportGraph, "import-graph",
                          "Graph program (docs/GraphDSL.md) to harp IR"),
               clEnumValN(Translation::ExportDot, "export-dot",
                          "harp IR to a Graphviz DOT graph")),
    cl::init(Translation::None), cl::cat(category));

static cl::opt<std::string>
    bind("bind",
         cl::desc("--import-graph: sizes of main's symbolic dims, B=32,N=64"),
         cl::value_desc("NAME=SIZE,..."), cl::cat(category));
static cl::opt<unsigned>
    maxDepth("max-depth",
             cl::desc("--import-graph: how deep graph calls may nest"),
             cl::init(10), cl::cat(category));
static cl::opt<std::string>
    dotFunction("dot-function",
                cl::desc("--export-dot: draw only this function"),
                cl::value_desc("name"), cl::cat(category));
static cl::opt<bool>
    dotNoBodies("dot-no-bodies",
                cl::desc("--export-dot: draw each kernel as one node"),
                cl::cat(category));
static cl::opt<bool> splitInputFile(
    "split-input-file",
    cl::desc("Process each chunk between '// -----' lines on its own"),
    cl::cat(category));
static cl::opt<bool> verifyDiagnostics(
    "verify-diagnostics",
    cl::desc("Check the diagnostics against expected-* comments"),
    cl::cat(category));

static llvm::LogicalResult process(std::unique_ptr<llvm::MemoryBuffer> buffer,
                                   llvm::raw_ostream &os,
                                   const graph::ImportOptions &importOptions) {
  mlir::MLIRContext &context = Jit::sharedContext();
  // As harp-opt: no "see current operation" notes when checking diagnostics.
  context.printOpOnDiagnostic(!verifyDiagnostics);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  auto translate = [&]() -> llvm::LogicalResult {
    if (translation == Translation::ImportGraph) {
      mlir::OwningOpRef<mlir::ModuleOp> module =
          graph::importGraph(sourceMgr, &context, importOptions);
      if (!module)
        return mlir::failure();
      module->print(os);
      os << "\n";
      return mlir::success();
    }
    std::lock_guard<std::recursive_mutex> lock(Jit::sharedContextMutex());
    mlir::OwningOpRef<mlir::Operation *> module =
        mlir::parseSourceFile(sourceMgr, mlir::ParserConfig(&context));
    if (!module)
      return mlir::failure();
    DotOptions options;
    options.function = dotFunction;
    options.bodies = !dotNoBodies;
    return exportDot(module.get(), os, options);
  };
  if (!verifyDiagnostics) {
    mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    return translate();
  }
  mlir::SourceMgrDiagnosticVerifierHandler handler(sourceMgr, &context);
  (void)translate();
  return handler.verify();
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  harp::addVersionPrinter();
  cl::ParseCommandLineOptions(
      argc, argv,
      "harp-translate: graph programs to harp IR, harp IR to DOT\n");
  auto fail = [](const llvm::Twine &message) {
    llvm::WithColor::error(llvm::errs(), "harp-translate") << message << "\n";
    return 1;
  };
  if (translation == Translation::None)
    return fail("choose a translation: --import-graph or --export-dot");

  graph::ImportOptions importOptions;
  importOptions.maxDepth = maxDepth;
  if (std::optional<std::string> error =
          graph::parseBindings(bind, importOptions.bindings))
    return fail(*error);

  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFile, &message);
  if (!input)
    return fail(message);
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &message);
  if (!output)
    return fail(message);

  auto chunk = [&](std::unique_ptr<llvm::MemoryBuffer> buffer,
                   llvm::raw_ostream &os) {
    return process(std::move(buffer), os, importOptions);
  };
  llvm::LogicalResult result =
      splitInputFile
          ? mlir::splitAndProcessBuffer(std::move(input), chunk, output->os(),
                                        mlir::kDefaultSplitMarker,
                                        mlir::kDefaultSplitMarker)
          : chunk(std::move(input), output->os());
  if (mlir::failed(result))
    return 1;
  output->keep();
  return 0;
}
