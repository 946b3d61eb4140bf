//===- Jit.h - compile harp modules to native code and run them -*- C++ -*-===//
//
// harp::Jit lowers a harp module with the harp-to-llvm pipeline, compiles it
// at -O3 for a target CPU (the host's by default; harp/Target/CPU.h) with
// ORC, and calls its functions on dense arrays. Compiled objects are cached
// in memory and on disk, keyed by a hash of the module's canonical text, the
// pipeline options, the target CPU and LLVM's version.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_RUNTIME_JIT_H
#define HARP_RUNTIME_JIT_H

#include "harp/Runtime/Array.h"
#include "harp/Runtime/Profile.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
class ModuleOp;
} // namespace mlir

namespace harp {

/// The tensor types of one function's arguments and results.
struct FunctionSignature {
  std::string name;
  std::vector<TensorType> inputs;
  std::vector<TensorType> results;
};

/// A compiled module: call its functions by name.
class Executable {
public:
  virtual ~Executable();
  /// The public functions, in module order.
  virtual llvm::ArrayRef<FunctionSignature> functions() const = 0;
  /// Looks up `name`, or null.
  const FunctionSignature *lookup(llvm::StringRef name) const;
  /// Calls `name` on `inputs` (checked against its signature: count, element
  /// type and shape) and returns freshly allocated results.
  llvm::Expected<std::vector<Array>> call(llvm::StringRef name,
                                          llvm::ArrayRef<Array> inputs) const;
  /// Calls `name` writing its results into `results`, which must match the
  /// result types and must not overlap the inputs or each other: no
  /// allocation, so repeated calls touch no fresh pages.
  virtual llvm::Error callInto(llvm::StringRef name,
                               llvm::ArrayRef<Array> inputs,
                               llvm::ArrayRef<Array> results) const = 0;
  /// CUDA executables: calls `name` on device buffers (harp::cuda::allocate)
  /// that already hold the inputs, writing the results into device buffers:
  /// no copies, for device-resident pipelines and kernel timings. Only the
  /// buffer counts can be checked. CPU executables return an error.
  virtual llvm::Error callDevice(llvm::StringRef name,
                                 llvm::ArrayRef<void *> inputs,
                                 llvm::ArrayRef<void *> results) const;
};

/// Where compiled code runs.
enum class Device { CPU, CUDA };

/// "cpu" or "cuda" (case-insensitive); anything else is an error naming the
/// devices.
llvm::Expected<Device> parseDevice(llvm::StringRef name);
const char *deviceName(Device device);

struct JitOptions {
  /// LLVM optimisation level for the generated code.
  unsigned optLevel = 3;
  /// On-disk cache directory; empty means $HARP_CACHE_DIR, else
  /// $XDG_CACHE_HOME/harp, else ~/.cache/harp.
  std::string cacheDir;
  /// Whether compiled objects are read from and written to `cacheDir`.
  bool diskCache = true;
  /// Run harp-fuse before lowering.
  bool fuse = true;
  /// Tile and vectorize kernels (harp-vectorize) for the target's vector
  /// width.
  bool vectorize = true;
  /// The CPU code is generated for (harp/Target/CPU.h): "native", an ISA
  /// profile ("x86-64-v2", "x86-64-v3", "x86-64-v4") or an LLVM CPU name;
  /// empty means $HARP_CPU, else native. Code for a CPU whose features this
  /// machine lacks compiles (compileObject) but does not load.
  std::string cpu;
  /// Run the outermost parallel tile loops on OpenMP threads
  /// (harp-parallelize), threadCount() of them. Loads the OpenMP runtime,
  /// libomp.so.5, when the first such module is loaded.
  bool threads = false;
  /// With threads: the lane operations a loop nest must do to run on
  /// threads (harp-parallelize's min-work; empty: its default; 0: every
  /// parallel loop does).
  std::optional<int64_t> parallelMinWork;
  /// CPU: time every kernel into the process-wide profile
  /// (harp-profile-kernels, harp/Runtime/Profile.h). Default: whether
  /// $HARP_PROFILE asks for it.
  bool profile = profilingRequested();
  /// CPU: harp-to-llvm, run in-process. CUDA: harp-to-gpu, the kernels
  /// loaded on the GPU through harp's CUDA runtime; calls copy the inputs
  /// to the device and the results back.
  Device device = Device::CPU;
  /// CUDA: the chip to compile for; empty means the selected device's
  /// (sm_90 when there is none, for compileObject).
  std::string cudaChip;
  /// CUDA: how kernels are embedded: "ptx" (compiled by the driver on load)
  /// or "cubin" (compiled by ptxas at compile time, which checks them).
  std::string cudaFormat = "ptx";
  /// CUDA: outputs per thread of large element-wise kernels, accumulators
  /// per thread of block reductions (harp-gpu-kernels' elements-per-thread).
  unsigned cudaElementsPerThread = 4;
};

/// The threads compiled code's parallel loops run on (torch.get_num_threads):
/// what setThreadCount set, else the first number of $OMP_NUM_THREADS, else
/// the physical cores this process may run on.
unsigned threadCount();
/// Sets threadCount() for every later call of threaded code (0 restores
/// the default). Code compiled without threads runs on the calling thread.
void setThreadCount(unsigned count);

/// How the last compile calls were served.
struct JitStats {
  unsigned memoryHits = 0;
  unsigned diskHits = 0;
  unsigned compilations = 0;
  /// Disk entries found corrupt or stale and rebuilt.
  unsigned rejectedDiskEntries = 0;
};

/// Where the compiles of every JIT in this process spent their time, and
/// what they compiled (cache hits cost none of it).
struct CompileTimes {
  /// Modules lowered and compiled.
  unsigned modules = 0;
  /// Kernel functions LLVM compiled (harp-outline-kernels' functions,
  /// after equal ones were merged).
  unsigned kernelFunctions = 0;
  /// Kernel functions found compiled already, in this Jit's memory or in
  /// the disk cache's kernels (docs/Runtime.md, "The kernel cache").
  unsigned reusedKernels = 0;
  /// Seconds in the MLIR pipeline (harp-to-llvm or harp-to-gpu), in the
  /// translation to LLVM IR, in LLVM's optimization pipeline and in code
  /// generation.
  double lowerSeconds = 0, translateSeconds = 0, optimizeSeconds = 0,
         codegenSeconds = 0;
};

/// The object of a library compiled ahead of time (Jit::compileLibraryObject)
/// and the functions it exports.
struct LibraryObject {
  std::string object;
  std::vector<FunctionSignature> functions;
};

class Jit {
public:
  explicit Jit(JitOptions options = {});
  /// A JIT compiling in `context` (not owned) under `mutex`.
  Jit(JitOptions options, mlir::MLIRContext &context,
      std::recursive_mutex &mutex);
  ~Jit();
  Jit(const Jit &) = delete;
  Jit &operator=(const Jit &) = delete;

  /// Parses, verifies, lowers and compiles harp IR given as text;
  /// diagnostics and locations name it `sourceName`.
  llvm::Expected<std::shared_ptr<Executable>>
  compile(llvm::StringRef source, llvm::StringRef sourceName = "<input>");
  /// Compiles `module` (which is not modified).
  llvm::Expected<std::shared_ptr<Executable>> compile(mlir::ModuleOp module);
  /// Parses, lowers and compiles `source` to a host object file without
  /// loading it: no device is needed, so CUDA code can be checked on a
  /// machine without a GPU. Bypasses the caches.
  llvm::Expected<std::string> compileObject(llvm::StringRef source);
  /// Compiles `module` to a position-independent object for a library that
  /// runs without harp (harp/Runtime/Export.h, which links it): its global
  /// symbols are the typed entry points `<prefix>_<function>` and
  /// `<prefix>_last_error`, everything else is internal. CPU only; bypasses
  /// the caches; the kernel profile is off.
  llvm::Expected<LibraryObject> compileLibraryObject(mlir::ModuleOp module,
                                                     llvm::StringRef prefix);
  /// compileLibraryObject of harp IR given as text (parsed in this Jit's
  /// context; diagnostics name `sourceName`).
  llvm::Expected<LibraryObject> compileLibraryObject(llvm::StringRef source,
                                                     llvm::StringRef sourceName,
                                                     llvm::StringRef prefix);

  /// The process-wide JIT of `device` and CPU target `cpu` (as
  /// JitOptions::cpu; default options otherwise), shared by the Tensor API
  /// and the Python bindings: one cache per device and target. An unknown
  /// `cpu` gives a JIT whose every compile reports it.
  static Jit &shared(Device device, llvm::StringRef cpu = "");
  /// The process-wide JIT for `options` (device, cpu, fuse, vectorize,
  /// threads and profile select it; the other fields take their defaults).
  static Jit &shared(const JitOptions &options);
  /// The MLIRContext every shared JIT compiles in, in which the Tensor API
  /// builds its IR: modules built there are compiled without printing or
  /// parsing. Multithreading is off in it (a crash in a pass stays on the
  /// calling thread, where it is recovered), so whoever creates IR in it
  /// holds sharedContextMutex(), as the shared JITs do while compiling.
  static mlir::MLIRContext &sharedContext();
  static std::recursive_mutex &sharedContextMutex();
  /// How many modules were parsed from text by any JIT in this process.
  static unsigned parseCount();
  /// The compile times of every JIT in this process so far.
  static CompileTimes compileTimes();

  const JitStats &stats() const;
  const JitOptions &options() const;
  /// The directory of the on-disk cache (resolved from the options).
  const std::string &cacheDir() const;
  /// The CPU target resolved from the options ("native" resolves to the
  /// host's CPU name), or an error for an unknown name.
  llvm::Expected<std::string> cpu() const;
  /// harp-vectorize's vector width for the CPU target (0 for an unknown
  /// target).
  unsigned vectorBits() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace harp

#endif // HARP_RUNTIME_JIT_H
