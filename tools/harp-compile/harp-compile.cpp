//===- harp-compile.cpp - compile a harp module into a library ------------===//
//
// Compiles a .mlir file (or a .graph program) ahead of time into a library
// a C or C++ program links without harp, MLIR or LLVM, and writes its C
// header (docs/Embedding.md, "Libraries ahead of time"):
//
//   harp-compile mlp.mlir -o libmlp.so --header mlp.h
//   harp-compile mlp.mlir -o libmlp.a --cpu x86-64-v3
//   harp-compile model.graph --bind B=32 -o model.o --prefix model
//
// The output's extension picks the kind: a shared library (.so, linked with
// the C compiler, $CC or cc), a static archive (.a) or an object file (.o,
// to link with libharp_runtime.a, which --emit-runtime writes). Every
// failure is reported as "harp-compile: error: ..." with exit code 1.
//
//===----------------------------------------------------------------------===//

#include "harp/Frontend/ImportGraph.h"
#include "harp/Runtime/Export.h"
#include "harp/Runtime/Jit.h"
#include "harp/Support/Version.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace harp;
namespace cl = llvm::cl;

static cl::OptionCategory category("harp-compile options");

static cl::opt<std::string>
    sourceFile(cl::Positional,
               cl::desc("<file.mlir or file.graph, or - for stdin (.mlir)>"),
               cl::cat(category));
static cl::opt<std::string>
    outputFile("o", cl::desc("The library to write: a .so, .a or .o file"),
               cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string>
    headerFile("header", cl::desc("Write the library's C header here"),
               cl::value_desc("file.h"), cl::cat(category));
static cl::opt<std::string>
    prefix("prefix",
           cl::desc("Prefix of the C symbols: <prefix>_<function> (default: "
                    "the output's name without lib and its extension)"),
           cl::cat(category));
static cl::opt<std::string> cpuOption(
    "cpu",
    cl::desc("The CPU to generate code for: native (default; $HARP_CPU), "
             "x86-64-v2, x86-64-v3, x86-64-v4 or an LLVM CPU name"),
    cl::init(""), cl::cat(category));
static cl::opt<bool> noFuse("no-fuse", cl::desc("Lower without harp-fuse"),
                            cl::cat(category));
static cl::opt<bool>
    noVectorize("no-vectorize",
                cl::desc("Lower without harp-vectorize: scalar loops"),
                cl::cat(category));
static cl::opt<bool> useThreads(
    "parallel",
    cl::desc("Run parallel tile loops on OpenMP threads; the library then "
             "needs libomp.so.5 too"),
    cl::cat(category));
static cl::opt<std::string>
    linker("linker",
           cl::desc("The C compiler that links a .so (default: $CC, else cc)"),
           cl::value_desc("program"), cl::cat(category));
static cl::opt<std::string> emitRuntime(
    "emit-runtime",
    cl::desc("Write the library runtime (libharp_runtime.a), which an .o "
             "output is linked with, to this file"),
    cl::value_desc("file.a"), cl::cat(category));
static cl::opt<std::string>
    bindDims("bind",
             cl::desc("A .graph file: sizes of main's symbolic dims "
                      "(B=32,N=128); every dim of main must be bound"),
             cl::cat(category));

static cl::opt<unsigned>
    maxDepth("max-depth",
             cl::desc("A .graph file: how deep graph calls may nest"),
             cl::init(10), cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "harp-compile") << message << "\n";
  return 1;
}

static int writeRuntime(llvm::StringRef path) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fail("cannot write " + path + ": " + ec.message());
  os << libraryRuntimeArchive();
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(category);
  harp::addVersionPrinter();
  cl::ParseCommandLineOptions(
      argc, argv,
      "harp-compile: compile a harp module ahead of time into a library "
      "with a C header\n");

  if (!emitRuntime.empty())
    if (int rc = writeRuntime(emitRuntime))
      return rc;
  if (sourceFile.empty()) {
    if (!emitRuntime.empty())
      return 0;
    return fail("no input file (give a .mlir or .graph file, or - for stdin)");
  }
  if (outputFile.empty())
    return fail("no output file (-o libname.so, .a or .o)");

  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> source =
      llvm::MemoryBuffer::getFileOrSTDIN(sourceFile, /*IsText=*/true);
  if (!source)
    return fail("cannot read '" + sourceFile +
                "': " + source.getError().message());
  if (llvm::StringRef(sourceFile).ends_with(".graph")) {
    graph::ImportOptions importOptions;
    importOptions.maxDepth = maxDepth;
    if (std::optional<std::string> message =
            graph::parseBindings(bindDims, importOptions.bindings))
      return fail(*message);
    llvm::Expected<std::string> text = graph::importGraphText(
        std::move(*source), &Jit::sharedContext(), importOptions);
    if (!text)
      return fail(llvm::toString(text.takeError()));
    source = llvm::MemoryBuffer::getMemBufferCopy(*text, sourceFile);
  } else if (bindDims.getNumOccurrences() || maxDepth.getNumOccurrences()) {
    return fail("--bind and --max-depth are for .graph files");
  }

  JitOptions options;
  options.diskCache = false;
  options.fuse = !noFuse;
  options.vectorize = !noVectorize;
  options.threads = useThreads;
  options.profile = false;
  options.cpu = cpuOption;
  Jit jit(options, Jit::sharedContext(), Jit::sharedContextMutex());
  if (llvm::Expected<std::string> cpu = jit.cpu(); !cpu)
    return fail("--cpu: " + llvm::toString(cpu.takeError()));

  ExportOptions exportOptions;
  exportOptions.prefix = prefix;
  exportOptions.headerPath = headerFile;
  exportOptions.linker = linker;
  std::string sourceName =
      sourceFile == "-" ? std::string("<stdin>") : sourceFile.getValue();
  if (llvm::Error err = exportLibrary(jit, (*source)->getBuffer(), sourceName,
                                      outputFile, exportOptions))
    return fail(llvm::toString(std::move(err)));
  return 0;
}
