//===- harp-run.cpp - run a function of a harp module ---------------------===//
//
// Compiles a .mlir file with harp's JIT and runs one of its functions on
// inputs from .npy files or on seeded random inputs, then writes the results
// to .npy files or prints them:
//
//   harp-run model.mlir --input x.npy --input w.npy --output y.npy
//   harp-run model.mlir --entry main --random-inputs 42 --print --stats
//   harp-run model.graph --input x.npy     # a graph program (docs/GraphDSL.md)
//
// A file ending in .graph is a graph program: it is imported (main's dims
// bound from the --input arrays' shapes or from --bind) and run as the
// module it becomes.
//
// Every failure (unreadable file, missing entry, wrong counts or types, a
// compile error) is reported as "harp-run: error: ..." with exit code 1.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "harp/Codegen/CPU/Passes.h"
#include "harp/Frontend/ImportGraph.h"
#include "harp/Runtime/Array.h"
#include "harp/Runtime/Jit.h"
#include "harp/Runtime/Npy.h"
#include "harp/Runtime/Profile.h"
#include "harp/Support/Version.h"
#include "harp/Target/CPU.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <random>

using namespace harp;
namespace cl = llvm::cl;

static cl::OptionCategory harpRunCategory("harp-run options");

static cl::opt<std::string>
    sourceFile(cl::Positional,
               cl::desc("<file.mlir or file.graph, or - for stdin (.mlir)>"),
               cl::cat(harpRunCategory));

static cl::opt<std::string>
    bindDims("bind",
             cl::desc("A .graph file: sizes of main's symbolic dims that "
                      "no --input gives (needed with --random-inputs)"),
             cl::value_desc("NAME=SIZE,..."), cl::cat(harpRunCategory));

static cl::opt<unsigned>
    maxDepth("max-depth",
             cl::desc("A .graph file: how deep graph calls may nest"),
             cl::init(10), cl::cat(harpRunCategory));

static cl::opt<std::string>
    entryName("entry",
              cl::desc("Function to run (default: the only public function, "
                       "else @main)"),
              cl::value_desc("name"), cl::cat(harpRunCategory));

static cl::list<std::string>
    inputFiles("input",
               cl::desc("A .npy file for the next argument; repeat once per "
                        "argument, in order"),
               cl::value_desc("file.npy"), cl::cat(harpRunCategory));

static cl::opt<uint64_t> randomSeed(
    "random-inputs",
    cl::desc("Run on pseudo-random inputs drawn from this seed: floats in "
             "[-1, 1), integers in [-5, 5], booleans 0/1"),
    cl::value_desc("seed"), cl::cat(harpRunCategory));

static cl::list<std::string>
    outputFiles("output",
                cl::desc("A .npy file for the next result; repeat once per "
                         "result, in order"),
                cl::value_desc("file.npy"), cl::cat(harpRunCategory));

static cl::opt<bool>
    printResults("print",
                 cl::desc("Print the results (the default without --output)"),
                 cl::cat(harpRunCategory));

static cl::opt<bool> noDiskCache("no-disk-cache",
                                 cl::desc("Neither read nor write the on-disk "
                                          "kernel cache"),
                                 cl::cat(harpRunCategory));

static cl::opt<bool>
    noFuse("no-fuse",
           cl::desc("Lower without harp-fuse (to compare fused and unfused "
                    "results)"),
           cl::cat(harpRunCategory));

static cl::opt<bool> useThreads(
    "parallel",
    cl::desc("Run parallel tile loops on OpenMP threads (OMP_NUM_THREADS; "
             "needs libomp.so.5)"),
    cl::cat(harpRunCategory));

static cl::opt<int64_t> parallelMinWork(
    "parallel-min-work",
    cl::desc("With --parallel: the lane operations a loop nest must do to "
             "run on threads (harp-parallelize's min-work; 0: every "
             "parallel loop)"),
    cl::init(mlir::harp::kDefaultParallelMinWork), cl::cat(harpRunCategory));

static cl::opt<bool> profileKernels(
    "profile",
    cl::desc("Time every kernel and print the table on stderr after the "
             "runs (as HARP_PROFILE=1; harp/Runtime/Profile.h)"),
    cl::cat(harpRunCategory));

static cl::opt<unsigned> repeat(
    "repeat",
    cl::desc("Run the entry this many times (the results printed are the "
             "last run's; with --profile, the table sums every run)"),
    cl::init(1), cl::cat(harpRunCategory));

static cl::opt<bool> noVectorize(
    "no-vectorize",
    cl::desc("Lower without harp-vectorize: scalar loops (to compare "
             "vectorized and scalar results)"),
    cl::cat(harpRunCategory));

static cl::opt<std::string>
    deviceOption("device",
                 cl::desc("Where the module runs: cpu (default) or cuda (an "
                          "NVIDIA GPU through harp's CUDA runtime; inputs are "
                          "copied to the GPU and results back)"),
                 cl::value_desc("cpu|cuda"), cl::init("cpu"),
                 cl::cat(harpRunCategory));

static cl::opt<std::string>
    gpuChip("gpu-chip",
            cl::desc("With --device cuda: the chip to compile for (default: "
                     "the GPU's, else sm_90)"),
            cl::value_desc("sm_XY"), cl::cat(harpRunCategory));

static cl::opt<std::string>
    gpuFormat("gpu-format",
              cl::desc("With --device cuda: embed kernels as ptx (default; "
                       "compiled by the driver) or cubin (compiled and checked "
                       "by ptxas now)"),
              cl::value_desc("ptx|cubin"), cl::init("ptx"),
              cl::cat(harpRunCategory));

static cl::opt<std::string> cpuOption(
    "cpu",
    cl::desc("The CPU to generate code for: native, x86-64-v2 (SSE4.2), "
             "x86-64-v3 (AVX2), x86-64-v4 (AVX-512) or an LLVM CPU name "
             "(default: $HARP_CPU, else native). Code for a CPU this machine "
             "cannot execute is compiled with --compile-only, not run"),
    cl::value_desc("name"), cl::cat(harpRunCategory));

static cl::opt<bool> printCpu(
    "print-cpu",
    cl::desc("Describe the CPU code is generated for (--cpu, $HARP_CPU or "
             "native) and whether this machine can run its code, then stop; "
             "no module is needed"),
    cl::cat(harpRunCategory));

static cl::opt<bool> compileOnly(
    "compile-only",
    cl::desc("Lower and compile the module to a host object, then stop: "
             "nothing is loaded or run, so --device cuda needs no GPU"),
    cl::cat(harpRunCategory));

static cl::opt<std::string>
    cacheDir("cache-dir",
             cl::desc("On-disk kernel cache (default: $HARP_CACHE_DIR, else "
                      "$XDG_CACHE_HOME/harp, else ~/.cache/harp)"),
             cl::value_desc("dir"), cl::cat(harpRunCategory));

static cl::opt<bool> gradCheck(
    "gradcheck",
    cl::desc("Instead of printing results, compare harp-autodiff's gradient "
             "of the entry with central finite differences (use f64 "
             "inputs; f32 uses looser defaults)"),
    cl::cat(harpRunCategory));

static cl::list<int64_t>
    gradWrt("wrt", cl::CommaSeparated,
            cl::desc("With --gradcheck: the arguments to differentiate "
                     "(default: every float or complex one)"),
            cl::value_desc("i,j,..."), cl::cat(harpRunCategory));

static cl::opt<double> gradStep("fd-step",
                                cl::desc("With --gradcheck: the finite "
                                         "difference step"),
                                cl::cat(harpRunCategory));
static cl::opt<double>
    gradRtol("rtol", cl::desc("With --gradcheck: relative tolerance"),
             cl::cat(harpRunCategory));
static cl::opt<double>
    gradAtol("atol", cl::desc("With --gradcheck: absolute tolerance"),
             cl::cat(harpRunCategory));

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "harp-run") << message << "\n";
  return 1;
}

static std::string functionList(llvm::ArrayRef<FunctionSignature> functions) {
  std::string s;
  for (const FunctionSignature &f : functions)
    s += (s.empty() ? "@" : ", @") + f.name;
  return s;
}

/// Picks the function to run, or explains why none fits.
static llvm::Expected<const FunctionSignature *>
pickEntry(const Executable &exe) {
  llvm::ArrayRef<FunctionSignature> functions = exe.functions();
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   message.str());
  };
  if (functions.empty())
    return error(sourceFile + " has no public function to run");
  if (!entryName.empty()) {
    // Accept "@main" as well as "main".
    llvm::StringRef name = llvm::StringRef(entryName).ltrim('@');
    if (const FunctionSignature *f = exe.lookup(name))
      return f;
    return error("no public function @" + name + " in " + sourceFile +
                 "; it has " + functionList(functions));
  }
  if (functions.size() == 1)
    return &functions.front();
  if (const FunctionSignature *f = exe.lookup("main"))
    return f;
  return error(sourceFile + " has several public functions and no @main; " +
               "pick one with --entry: " + functionList(functions));
}

namespace {
/// Deterministic inputs for a seed, whatever the standard library: values
/// come straight from mt19937_64's bits, not from <random>'s distributions,
/// whose algorithms differ between implementations.
class RandomInputs {
public:
  explicit RandomInputs(uint64_t seed) : rng(seed) {}

  Array make(const TensorType &type) {
    Array array = Array::allocate(type);
    char *data = static_cast<char *>(array.data());
    size_t size = elementSize(type.kind);
    for (int64_t i = 0, e = array.numElements(); i < e; ++i)
      fill(type.kind, data + i * size);
    return array;
  }

private:
  /// Uniform in [-1, 1) with `bits` significant bits, so that the value is
  /// exact in a type with that precision and rounding never reaches 1.
  double uniform(unsigned bits) {
    double unit = std::ldexp(static_cast<double>(rng() >> (64 - bits)),
                             -static_cast<int>(bits));
    return 2 * unit - 1;
  }

  template <typename T>
  static void store(char *dst, T value) {
    std::memcpy(dst, &value, sizeof(T));
  }

  static uint16_t toHalfBits(double value,
                             const llvm::fltSemantics &semantics) {
    llvm::APFloat f(value);
    bool losesInfo;
    f.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    return static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
  }

  void fill(ElementKind kind, char *dst) {
    switch (kind) {
    case ElementKind::F16:
      return store(dst, toHalfBits(uniform(11), llvm::APFloat::IEEEhalf()));
    case ElementKind::BF16:
      return store(dst, toHalfBits(uniform(8), llvm::APFloat::BFloat()));
    case ElementKind::F32:
      return store(dst, static_cast<float>(uniform(24)));
    case ElementKind::F64:
      return store(dst, uniform(53));
    case ElementKind::I1:
      return store(dst, static_cast<uint8_t>(rng() >> 63));
    case ElementKind::I8:
      return store(dst, static_cast<int8_t>(smallInt()));
    case ElementKind::I16:
      return store(dst, static_cast<int16_t>(smallInt()));
    case ElementKind::I32:
      return store(dst, static_cast<int32_t>(smallInt()));
    case ElementKind::I64:
      return store(dst, smallInt());
    case ElementKind::C64:
      store(dst, static_cast<float>(uniform(24)));
      return store(dst + 4, static_cast<float>(uniform(24)));
    case ElementKind::C128:
      store(dst, uniform(53));
      return store(dst + 8, uniform(53));
    }
  }

  /// Uniform in [-5, 5]; the modulo bias is below 1e-18.
  int64_t smallInt() { return static_cast<int64_t>(rng() % 11) - 5; }

  std::mt19937_64 rng;
};
} // namespace

/// The --input arrays, each file read once (a .graph file's import reads
/// their shapes before the inputs are checked).
static llvm::Expected<const std::vector<Array> &> inputArrays() {
  static std::optional<std::vector<Array>> arrays;
  if (!arrays) {
    std::vector<Array> read;
    for (const std::string &path : inputFiles) {
      llvm::Expected<Array> array = readNpy(path);
      if (!array)
        return array.takeError();
      read.push_back(std::move(*array));
    }
    arrays = std::move(read);
  }
  return *arrays;
}

/// Loads or makes the inputs of `entry` and checks them against its
/// signature.
static llvm::Expected<std::vector<Array>>
prepareInputs(const FunctionSignature &entry) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   message.str());
  };
  std::vector<Array> inputs;
  size_t expected = entry.inputs.size();
  if (randomSeed.getNumOccurrences()) {
    RandomInputs random(randomSeed);
    for (const TensorType &type : entry.inputs)
      inputs.push_back(random.make(type));
    return inputs;
  }
  if (inputFiles.size() != expected) {
    std::string message =
        "@" + entry.name + " expects " + std::to_string(expected) +
        (expected == 1 ? " input" : " inputs") + " but " +
        std::to_string(inputFiles.size()) +
        (inputFiles.size() == 1 ? " was" : " were") + " given";
    if (inputFiles.empty())
      message += "; pass them with --input FILE.npy, or use --random-inputs "
                 "SEED";
    return error(message);
  }
  llvm::Expected<const std::vector<Array> &> arrays = inputArrays();
  if (!arrays)
    return arrays.takeError();
  for (auto [index, array] : llvm::enumerate(*arrays)) {
    const TensorType &want = entry.inputs[index];
    if (!(array.type() == want))
      return error("input #" + llvm::Twine(index + 1) + " (" +
                   inputFiles[index] + ") has type " + array.type().str() +
                   " but @" + entry.name + " expects " + want.str());
    inputs.push_back(array);
  }
  return inputs;
}

/// Imports a graph program, binding main's dims from --bind and the
/// --input arrays' shapes; returns the module's text or the diagnostics.
static llvm::Expected<std::string>
importGraphFile(std::unique_ptr<llvm::MemoryBuffer> buffer) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   message.str());
  };
  graph::ImportOptions options;
  options.maxDepth = maxDepth;
  if (std::optional<std::string> message =
          graph::parseBindings(bindDims, options.bindings))
    return error(*message);
  if (!inputFiles.empty()) {
    llvm::Expected<const std::vector<Array> &> arrays = inputArrays();
    if (!arrays)
      return arrays.takeError();
    options.inputShapes.emplace();
    for (const Array &array : *arrays)
      options.inputShapes->push_back(array.type().shape);
  }
  return graph::importGraphText(std::move(buffer), &Jit::sharedContext(),
                                options);
}

static void reportStats(const Jit &jit) {
  const JitStats &stats = jit.stats();
  llvm::errs() << "harp-run: jit: " << stats.memoryHits << " memory hits, "
               << stats.diskHits << " disk hits, " << stats.compilations
               << " compilations, " << stats.rejectedDiskEntries
               << " rejected disk entries; disk cache ";
  if (jit.options().diskCache)
    llvm::errs() << jit.cacheDir() << "\n";
  else
    llvm::errs() << "disabled\n";
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // libLLVM registers its own -stats (pass statistics, compiled out of
  // release builds) the first time the parser is used, and a second "stats"
  // is a fatal error; harp-run's --stats reports the JIT instead, so it takes
  // the name over and is registered only after LLVM's is gone.
  if (cl::Option *llvmStats = cl::getRegisteredOptions().lookup("stats"))
    llvmStats->removeArgument();
  cl::opt<bool> printStats(
      "stats", cl::desc("Print how the JIT served the module to stderr"),
      cl::cat(harpRunCategory));
  cl::HideUnrelatedOptions(harpRunCategory);
  harp::addVersionPrinter();
  cl::ParseCommandLineOptions(
      argc, argv,
      "harp-run: compile a harp module and run one of its functions\n");

  if (printCpu) {
    llvm::Expected<CpuTarget> target = resolveCpuTarget(cpuOption);
    if (!target)
      return fail("--cpu: " + llvm::toString(target.takeError()));
    llvm::outs() << "cpu: " << target->name << "\nllvm cpu: " << target->cpu
                 << "\nvector bits: " << target->vectorBits
                 << "\nvector registers: " << target->vectorRegisters
                 << "\nfma: " << (target->fma ? "yes" : "no") << "\n"
                 << (target->fma ? "fma" : "vector add")
                 << " latency: " << target->fmaLatency << " cycles, "
                 << llvm::format("%.2g", target->fmaPerCycle)
                 << " per cycle (LLVM's scheduling model; 0: none)"
                 << "\nl1d cache: " << target->l1Bytes
                 << " bytes\nl2 cache: " << target->l2Bytes
                 << " bytes\nl3 cache: " << target->l3Bytes
                 << " bytes\ncaches from: " << target->cacheSource
                 << "\nruns here: "
                 << (target->runsHere()
                         ? std::string("yes")
                         : "no (lacks " + target->missingFeatures + ")")
                 << "\n";
    return 0;
  }
  if (sourceFile.empty())
    return fail("no input file (give a .mlir file, or - for stdin)");
  if (randomSeed.getNumOccurrences() && !inputFiles.empty())
    return fail("--input and --random-inputs cannot be used together");

  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> source =
      llvm::MemoryBuffer::getFileOrSTDIN(sourceFile, /*IsText=*/true);
  if (!source)
    return fail("cannot read '" + sourceFile +
                "': " + source.getError().message());
  if (llvm::StringRef(sourceFile).ends_with(".graph")) {
    // The graph front end: the module's text replaces the source.
    llvm::Expected<std::string> text = importGraphFile(std::move(*source));
    if (!text)
      return fail(llvm::toString(text.takeError()));
    source = llvm::MemoryBuffer::getMemBufferCopy(*text, sourceFile);
  } else if (bindDims.getNumOccurrences() || maxDepth.getNumOccurrences()) {
    return fail("--bind and --max-depth are for .graph files");
  }

  llvm::Expected<Device> device = parseDevice(deviceOption);
  if (!device)
    return fail("--device: " + llvm::toString(device.takeError()));
  if (*device != Device::CUDA &&
      (gpuChip.getNumOccurrences() || gpuFormat.getNumOccurrences()))
    return fail("--gpu-chip and --gpu-format need --device cuda");
  if (*device == Device::CUDA &&
      (useThreads || noVectorize || gradCheck || profileKernels))
    return fail("--parallel, --no-vectorize, --gradcheck and --profile are "
                "CPU options; they cannot be used with --device cuda");
  if (repeat == 0)
    return fail("--repeat must be at least 1");
  if (parallelMinWork.getNumOccurrences() && !useThreads)
    return fail("--parallel-min-work needs --parallel");
  if (parallelMinWork < 0)
    return fail("--parallel-min-work must be at least 0");

  JitOptions options;
  options.device = *device;
  options.cudaChip = gpuChip;
  options.cudaFormat = gpuFormat;
  options.diskCache = !noDiskCache;
  options.fuse = !noFuse;
  options.vectorize = !noVectorize;
  options.threads = useThreads;
  if (parallelMinWork.getNumOccurrences())
    options.parallelMinWork = parallelMinWork;
  options.profile = profileKernels || profilingRequested();
  options.cacheDir = cacheDir;
  options.cpu = cpuOption;
  // The shared context: --gradcheck builds its wrapper next to the module.
  Jit jit(options, Jit::sharedContext(), Jit::sharedContextMutex());
  if (compileOnly) {
    llvm::Expected<std::string> object =
        jit.compileObject((*source)->getBuffer());
    if (!object)
      return fail(llvm::toString(object.takeError()));
    llvm::outs() << "harp-run: compiled for " << deviceName(*device) << " ("
                 << *jit.cpu() << "): " << object->size()
                 << " bytes of host object\n";
    return 0;
  }
  llvm::Expected<std::shared_ptr<Executable>> exe =
      jit.compile((*source)->getBuffer(), (*source)->getBufferIdentifier());
  if (printStats)
    reportStats(jit);
  if (!exe)
    return fail(llvm::toString(exe.takeError()));

  llvm::Expected<const FunctionSignature *> entry = pickEntry(**exe);
  if (!entry)
    return fail(llvm::toString(entry.takeError()));
  const FunctionSignature &signature = **entry;

  // Check what can be checked before running: a long kernel should not run
  // only to find it has nowhere to put its results.
  if (!outputFiles.empty() && outputFiles.size() != signature.results.size())
    return fail("@" + signature.name + " has " +
                llvm::Twine(signature.results.size()) +
                (signature.results.size() == 1 ? " result" : " results") +
                " but " + llvm::Twine(outputFiles.size()) +
                (outputFiles.size() == 1 ? " --output file was"
                                         : " --output files were") +
                " given");

  llvm::Expected<std::vector<Array>> inputs = prepareInputs(signature);
  if (!inputs)
    return fail(llvm::toString(inputs.takeError()));

  if (gradCheck) {
    GradCheckOptions check;
    check.wrt.assign(gradWrt.begin(), gradWrt.end());
    if (gradStep.getNumOccurrences())
      check.step = gradStep;
    if (gradRtol.getNumOccurrences())
      check.rtol = gradRtol;
    if (gradAtol.getNumOccurrences())
      check.atol = gradAtol;
    check.seed = randomSeed.getNumOccurrences() ? randomSeed + 1 : 1;
    return runGradCheck(jit, (*source)->getBuffer(), signature,
                        std::move(*inputs), check);
  }

  llvm::Expected<std::vector<Array>> results =
      (*exe)->call(signature.name, *inputs);
  for (unsigned run = 1; run < repeat && results; ++run)
    results = (*exe)->call(signature.name, *inputs);
  if (!results)
    return fail(llvm::toString(results.takeError()));
  // HARP_PROFILE prints the table at exit by itself.
  if (profileKernels && !profilingRequested())
    llvm::errs() << formatProfile(profileReport());
  if (results->size() != signature.results.size())
    return fail("@" + signature.name + " returned " +
                llvm::Twine(results->size()) + " results, expected " +
                llvm::Twine(signature.results.size()));

  for (auto [path, result] : llvm::zip(outputFiles, *results))
    if (llvm::Error err = writeNpy(path, result))
      return fail(llvm::toString(std::move(err)));

  if (printResults || outputFiles.empty()) {
    for (auto [index, result] : llvm::enumerate(*results)) {
      if (index != 0)
        llvm::outs() << "\n";
      llvm::outs() << formatArray(result) << "\n";
    }
  }
  llvm::outs().flush();
  return 0;
}
