//===- Cuda.cpp - harp's CUDA runtime on the driver API -------------------===//
//
// The driver is opened with dlopen on first use; every driver function is
// called through a pointer looked up then. cuda.h gives the types and the
// versioned names (cuMemAlloc is cuMemAlloc_v2), nothing is linked.
//
//===----------------------------------------------------------------------===//

#include "harp/Runtime/Cuda.h"

#include "llvm/ADT/Twine.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#ifdef HARP_HAVE_CUDA_H
#include <cuda.h>
#include <dlfcn.h>
#endif

using llvm::Error;
using llvm::Expected;

static Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

#ifndef HARP_HAVE_CUDA_H

bool harp::cuda::builtWithCuda() { return false; }
static Error notBuilt() {
  return makeError("harp was built without the CUDA driver API header "
                   "(cuda.h): the GPU runtime is not available");
}
Error harp::cuda::initialize() { return notBuilt(); }
Expected<std::string> harp::cuda::deviceName() { return notBuilt(); }
Expected<std::string> harp::cuda::chip() { return notBuilt(); }
Expected<void *> harp::cuda::allocate(size_t) { return notBuilt(); }
void harp::cuda::release(void *) {}
Error harp::cuda::copyToDevice(void *, const void *, size_t) {
  return notBuilt();
}
Error harp::cuda::copyToHost(void *, const void *, size_t) {
  return notBuilt();
}
Error harp::cuda::copyOnDevice(void *, const void *, size_t) {
  return notBuilt();
}
Error harp::cuda::synchronize() { return notBuilt(); }
harp::cuda::MemoryStats harp::cuda::memoryStats() { return {}; }
void harp::cuda::resetPeakMemory() {}
Error harp::cuda::emptyCache() { return Error::success(); }
Error harp::cuda::takeError() { return Error::success(); }
std::vector<std::pair<const char *, void *>> harp::cuda::entryPoints() {
  return {};
}

#else

// Stringizes after macro expansion: HARP_NAME(cuMemAlloc) is
// "cuMemAlloc_v2", the symbol the driver exports.
#define HARP_STR2(x) #x
#define HARP_NAME(x) HARP_STR2(x)

#define HARP_DRIVER_FUNCTIONS(X)                                               \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuModuleLoadData)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuLaunchKernel)                                                            \
  X(cuStreamCreate)                                                            \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamDestroy)                                                           \
  X(cuStreamWaitEvent)                                                         \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventSynchronize)                                                        \
  X(cuEventRecord)                                                             \
  X(cuMemAlloc)                                                                \
  X(cuMemAllocManaged)                                                         \
  X(cuMemFree)                                                                 \
  X(cuMemcpy)                                                                  \
  X(cuMemcpyAsync)                                                             \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemsetD32Async)                                                          \
  X(cuMemsetD16Async)

#define HARP_TYPE(f) using f##Type = decltype(&f);
HARP_DRIVER_FUNCTIONS(HARP_TYPE)
#undef HARP_TYPE

namespace {
/// The driver's functions, looked up once.
struct Driver {
#define HARP_DECLARE(f) f##Type f = nullptr;
  HARP_DRIVER_FUNCTIONS(HARP_DECLARE)
#undef HARP_DECLARE
  CUcontext context = nullptr;
  CUdevice device = 0;
  std::string failure; // why the GPU cannot be used; empty when it can
};

/// The first failure of an entry point, kept until takeError().
struct RecordedError {
  std::mutex mutex;
  std::string message;
};
} // namespace

static RecordedError &recorded() {
  static RecordedError errors;
  return errors;
}

static std::string describe(const Driver &d, CUresult result) {
  const char *name = nullptr, *text = nullptr;
  if (d.cuGetErrorName)
    d.cuGetErrorName(result, &name);
  if (d.cuGetErrorString)
    d.cuGetErrorString(result, &text);
  return std::string(name ? name : "CUDA error") + " (" +
         std::to_string(static_cast<int>(result)) +
         (text ? std::string("): ") + text : std::string(")"));
}

static Driver &driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!library) {
      const char *why = dlerror();
      d.failure =
          std::string("the CUDA driver library libcuda.so.1 could not "
                      "be loaded (") +
          (why ? why : "not found") +
          "): a GPU and its driver are needed to run on the cuda device";
      return;
    }
#define HARP_LOOKUP(f)                                                         \
  d.f = reinterpret_cast<f##Type>(dlsym(library, HARP_NAME(f)));               \
  if (!d.f) {                                                                  \
    d.failure = std::string("the CUDA driver has no ") + HARP_NAME(f) +        \
                " (driver too old?)";                                          \
    return;                                                                    \
  }
    HARP_DRIVER_FUNCTIONS(HARP_LOOKUP)
#undef HARP_LOOKUP
    if (CUresult r = d.cuInit(0); r != CUDA_SUCCESS) {
      d.failure = "the CUDA driver failed to initialize: " + describe(d, r);
      return;
    }
    int count = 0;
    if (CUresult r = d.cuDeviceGetCount(&count); r != CUDA_SUCCESS) {
      d.failure = "cannot count CUDA devices: " + describe(d, r);
      return;
    }
    int ordinal = 0;
    if (const char *env = std::getenv("HARP_CUDA_DEVICE"))
      ordinal = std::atoi(env);
    if (count == 0 || ordinal < 0 || ordinal >= count) {
      d.failure = "no CUDA device " + std::to_string(ordinal) + " (" +
                  std::to_string(count) + " found; HARP_CUDA_DEVICE selects)";
      return;
    }
    if (CUresult r = d.cuDeviceGet(&d.device, ordinal); r != CUDA_SUCCESS) {
      d.failure = "cannot open CUDA device: " + describe(d, r);
      return;
    }
    if (CUresult r = d.cuDevicePrimaryCtxRetain(&d.context, d.device);
        r != CUDA_SUCCESS) {
      d.failure = "cannot create a CUDA context: " + describe(d, r);
      return;
    }
  });
  return d;
}

/// The driver with the context current on this thread, or null when the GPU
/// cannot be used.
static Driver *ready() {
  Driver &d = driver();
  if (!d.failure.empty())
    return nullptr;
  d.cuCtxSetCurrent(d.context);
  return &d;
}

/// Records the first failure of an entry point; true on success.
static bool check(CUresult result, const char *what) {
  if (result == CUDA_SUCCESS)
    return true;
  RecordedError &errors = recorded();
  std::lock_guard<std::mutex> lock(errors.mutex);
  if (errors.message.empty())
    errors.message =
        std::string(what) + " failed: " + describe(driver(), result);
  return false;
}

static Driver *readyOrRecord(const char *what) {
  Driver *d = ready();
  if (!d) {
    RecordedError &errors = recorded();
    std::lock_guard<std::mutex> lock(errors.mutex);
    if (errors.message.empty())
      errors.message = std::string(what) + ": " + driver().failure;
  }
  return d;
}

static Error checked(CUresult result, const char *what) {
  if (result == CUDA_SUCCESS)
    return Error::success();
  return makeError(llvm::Twine(what) +
                   " failed: " + describe(driver(), result));
}

//===----------------------------------------------------------------------===//
// One stream, and device memory kept for reuse
//===----------------------------------------------------------------------===//

/// harp's stream: the generated code queues all its device work (kernels,
/// device copies, memsets) on it, in order, across calls. It is created
/// once, on first use, and never destroyed (a stream per call cost a create
/// and a destroy per call).
static CUstream theStream(Driver &d) {
  static CUstream stream = nullptr;
  static std::once_flag once;
  std::call_once(once, [&] {
    check(d.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  });
  return stream;
}

static bool envFlag(const char *name) {
  const char *value = std::getenv(name);
  return value && *value && std::strcmp(value, "0") != 0;
}

namespace {
/// Device memory harp allocated, and blocks freed for reuse: a free puts the
/// block in the cache without waiting for the device, and an allocation of
/// the same rounded size takes it back. This is safe because all device
/// work is ordered on theStream(): work queued after the reuse runs after
/// the kernels queued before the free that may still read the block. Memory
/// the host writes (harp::cuda::allocate) waits for the stream when it
/// reuses a block. Running out of memory frees the cache and tries again;
/// HARP_CUDA_NO_CACHING=1 frees every block at once, after waiting for the
/// stream, for tools that look for reads of freed memory.
struct DeviceMemory {
  std::mutex mutex;
  std::map<size_t, std::vector<CUdeviceptr>> cached; // by rounded size
  std::unordered_map<CUdeviceptr, size_t> live;      // handed out, by block
  harp::cuda::MemoryStats stats;
  bool caching = !envFlag("HARP_CUDA_NO_CACHING");
  ~DeviceMemory();
};
} // namespace

static DeviceMemory &deviceMemory() {
  static DeviceMemory memory;
  return memory;
}

/// The size of the block an allocation of `bytes` gets: multiples of 512
/// bytes below 1 MiB, of a sixteenth of the power of two below it above
/// (at most 6.25% more than asked), so that the sizes a program repeats
/// find their blocks again.
static size_t blockSize(size_t bytes) {
  if (bytes <= 512)
    return 512;
  size_t step = bytes < (size_t(1) << 20) ? 512 : llvm::bit_floor(bytes) / 16;
  return llvm::alignTo(bytes, step);
}

/// Frees every cached block (memory.mutex held), after the work queued
/// before their frees.
static CUresult releaseCached(Driver &d, DeviceMemory &memory) {
  if (memory.cached.empty())
    return CUDA_SUCCESS;
  if (CUresult r = d.cuStreamSynchronize(theStream(d)); r != CUDA_SUCCESS)
    return r;
  for (auto &[size, blocks] : memory.cached)
    for (CUdeviceptr block : blocks) {
      d.cuMemFree(block);
      memory.stats.reserved -= size;
      ++memory.stats.deviceFrees;
    }
  memory.cached.clear();
  return CUDA_SUCCESS;
}

DeviceMemory::~DeviceMemory() {
  // At exit: the cache goes back to the driver, which is still loaded (a
  // block in the cache means the driver was opened; a process that only
  // read the counters does not open it now).
  if (!cached.empty())
    if (Driver *d = ready())
      releaseCached(*d, *this);
}

/// A block of at least `bytes`, from the cache or the driver; `reused` says
/// which.
static CUresult allocateBlock(Driver &d, size_t bytes, CUdeviceptr &block,
                              bool &reused) {
  DeviceMemory &memory = deviceMemory();
  std::lock_guard<std::mutex> lock(memory.mutex);
  size_t size = memory.caching ? blockSize(bytes) : std::max<size_t>(bytes, 1);
  auto it = memory.cached.find(size);
  reused = it != memory.cached.end();
  if (reused) {
    block = it->second.back();
    it->second.pop_back();
    if (it->second.empty())
      memory.cached.erase(it);
  } else {
    CUresult r = d.cuMemAlloc(&block, size);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && !memory.cached.empty()) {
      if (CUresult freed = releaseCached(d, memory); freed != CUDA_SUCCESS)
        return freed;
      r = d.cuMemAlloc(&block, size);
    }
    if (r != CUDA_SUCCESS)
      return r;
    memory.stats.reserved += size;
    ++memory.stats.deviceAllocations;
  }
  memory.live[block] = size;
  memory.stats.allocated += size;
  memory.stats.peakAllocated =
      std::max(memory.stats.peakAllocated, memory.stats.allocated);
  return CUDA_SUCCESS;
}

/// Returns a block to the cache (or, not caching, to the driver after the
/// work queued before). Memory harp did not allocate here (managed memory)
/// goes straight back to the driver after that work.
static CUresult freeBlock(Driver &d, CUdeviceptr block) {
  DeviceMemory &memory = deviceMemory();
  std::lock_guard<std::mutex> lock(memory.mutex);
  auto it = memory.live.find(block);
  if (it != memory.live.end()) {
    size_t size = it->second;
    memory.live.erase(it);
    memory.stats.allocated -= size;
    if (memory.caching) {
      memory.cached[size].push_back(block);
      return CUDA_SUCCESS;
    }
    memory.stats.reserved -= size;
    ++memory.stats.deviceFrees;
  }
  if (CUresult r = d.cuStreamSynchronize(theStream(d)); r != CUDA_SUCCESS)
    return r;
  return d.cuMemFree(block);
}

harp::cuda::MemoryStats harp::cuda::memoryStats() {
  DeviceMemory &memory = deviceMemory();
  std::lock_guard<std::mutex> lock(memory.mutex);
  return memory.stats;
}

void harp::cuda::resetPeakMemory() {
  DeviceMemory &memory = deviceMemory();
  std::lock_guard<std::mutex> lock(memory.mutex);
  memory.stats.peakAllocated = memory.stats.allocated;
}

Error harp::cuda::emptyCache() {
  DeviceMemory &memory = deviceMemory();
  std::lock_guard<std::mutex> lock(memory.mutex);
  if (memory.cached.empty())
    return Error::success(); // (and the driver need not be opened)
  Driver *d = ready();
  if (!d)
    return makeError(driver().failure);
  return checked(releaseCached(*d, memory), "cuStreamSynchronize");
}

bool harp::cuda::builtWithCuda() { return true; }

Error harp::cuda::initialize() {
  if (!ready())
    return makeError(driver().failure);
  return Error::success();
}

Expected<std::string> harp::cuda::chip() {
  Driver *d = ready();
  if (!d)
    return makeError(driver().failure);
  int major = 0, minor = 0;
  if (Error err = checked(
          d->cuDeviceGetAttribute(
              &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->device),
          "cuDeviceGetAttribute"))
    return std::move(err);
  if (Error err = checked(
          d->cuDeviceGetAttribute(
              &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->device),
          "cuDeviceGetAttribute"))
    return std::move(err);
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

Expected<std::string> harp::cuda::deviceName() {
  Driver *d = ready();
  if (!d)
    return makeError(driver().failure);
  char name[256] = {0};
  if (Error err = checked(d->cuDeviceGetName(name, sizeof(name), d->device),
                          "cuDeviceGetName"))
    return std::move(err);
  Expected<std::string> sm = chip();
  if (!sm)
    return sm.takeError();
  return std::string(name) + " (" + *sm + ")";
}

Expected<void *> harp::cuda::allocate(size_t bytes) {
  Driver *d = ready();
  if (!d)
    return makeError(driver().failure);
  CUdeviceptr ptr = 0;
  bool reused = false;
  if (Error err = checked(allocateBlock(*d, bytes, ptr, reused), "cuMemAlloc"))
    return std::move(err);
  // The host may write it at once: kernels queued before its free must be
  // done with it.
  if (reused)
    if (Error err = checked(d->cuStreamSynchronize(theStream(*d)),
                            "cuStreamSynchronize")) {
      freeBlock(*d, ptr);
      return std::move(err);
    }
  return reinterpret_cast<void *>(ptr);
}

void harp::cuda::release(void *device) {
  if (Driver *d = ready(); d && device)
    freeBlock(*d, reinterpret_cast<CUdeviceptr>(device));
}

Error harp::cuda::copyToDevice(void *device, const void *host, size_t bytes) {
  Driver *d = ready();
  if (!d)
    return makeError(driver().failure);
  if (!bytes)
    return Error::success();
  return checked(
      d->cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(device), host, bytes),
      "cuMemcpyHtoD");
}

Error harp::cuda::copyToHost(void *host, const void *device, size_t bytes) {
  Driver *d = ready();
  if (!d)
    return makeError(driver().failure);
  if (!bytes)
    return Error::success();
  return checked(
      d->cuMemcpyDtoH(host, reinterpret_cast<CUdeviceptr>(device), bytes),
      "cuMemcpyDtoH");
}

Error harp::cuda::copyOnDevice(void *device, const void *from, size_t bytes) {
  Driver *d = ready();
  if (!d)
    return makeError(driver().failure);
  if (!bytes)
    return Error::success();
  return checked(d->cuMemcpy(reinterpret_cast<CUdeviceptr>(device),
                             reinterpret_cast<CUdeviceptr>(from), bytes),
                 "cuMemcpy");
}

Error harp::cuda::synchronize() {
  Driver *d = ready();
  if (!d)
    return makeError(driver().failure);
  return checked(d->cuCtxSynchronize(), "cuCtxSynchronize");
}

Error harp::cuda::takeError() {
  RecordedError &errors = recorded();
  std::lock_guard<std::mutex> lock(errors.mutex);
  if (errors.message.empty())
    return Error::success();
  std::string message;
  std::swap(message, errors.message);
  return makeError(message);
}

//===----------------------------------------------------------------------===//
// Entry points of generated host code (the gpu-to-llvm ABI)
//===----------------------------------------------------------------------===//

extern "C" {

static void *mgpuModuleLoad(void *data, size_t /*size*/) {
  Driver *d = readyOrRecord("mgpuModuleLoad");
  CUmodule module = nullptr;
  if (d && check(d->cuModuleLoadData(&module, data), "cuModuleLoadData"))
    return module;
  return nullptr;
}

/// PTX, compiled by the driver for the device at `optLevel`.
static void *mgpuModuleLoadJIT(void *data, int optLevel) {
  Driver *d = readyOrRecord("mgpuModuleLoadJIT");
  if (!d)
    return nullptr;
  char log[8192] = {0};
  CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL, CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {reinterpret_cast<void *>(static_cast<intptr_t>(optLevel)),
                    log, reinterpret_cast<void *>(sizeof(log))};
  CUmodule module = nullptr;
  CUresult r = d->cuModuleLoadDataEx(&module, data, 3, options, values);
  if (r != CUDA_SUCCESS) {
    check(r, "cuModuleLoadDataEx (PTX JIT)");
    if (log[0]) {
      RecordedError &errors = recorded();
      std::lock_guard<std::mutex> lock(errors.mutex);
      errors.message += std::string("\n") + log;
    }
    return nullptr;
  }
  return module;
}

static void mgpuModuleUnload(void *module) {
  if (Driver *d = ready(); d && module)
    d->cuModuleUnload(static_cast<CUmodule>(module));
}

static void *mgpuModuleGetFunction(void *module, const char *name) {
  Driver *d = readyOrRecord("mgpuModuleGetFunction");
  CUfunction function = nullptr;
  if (d && module &&
      check(d->cuModuleGetFunction(&function, static_cast<CUmodule>(module),
                                   name),
            "cuModuleGetFunction"))
    return function;
  return nullptr;
}

static void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                             intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                             intptr_t blockZ, int32_t smem, void *stream,
                             void **params, void **extra,
                             size_t /*paramsCount*/) {
  Driver *d = readyOrRecord("mgpuLaunchKernel");
  if (!d || !function)
    return;
  if (!check(d->cuLaunchKernel(static_cast<CUfunction>(function), gridX, gridY,
                               gridZ, blockX, blockY, blockZ, smem,
                               static_cast<CUstream>(stream), params, extra),
             "cuLaunchKernel"))
    return;
  // HARP_CUDA_LAUNCH_BLOCKING=1: a kernel that faults is reported by the
  // launch that started it, not by a later wait.
  static const bool blocking = envFlag("HARP_CUDA_LAUNCH_BLOCKING");
  if (blocking)
    check(d->cuStreamSynchronize(static_cast<CUstream>(stream)),
          "a kernel (HARP_CUDA_LAUNCH_BLOCKING: cuStreamSynchronize after "
          "its launch)");
}

static void *mgpuStreamCreate() {
  Driver *d = readyOrRecord("mgpuStreamCreate");
  return d ? theStream(*d) : nullptr;
}

static void mgpuStreamDestroy(void *stream) {
  // harp's one stream lives on (see theStream).
  (void)stream;
}

static void mgpuStreamSynchronize(void *stream) {
  if (Driver *d = readyOrRecord("mgpuStreamSynchronize"))
    check(d->cuStreamSynchronize(static_cast<CUstream>(stream)),
          "cuStreamSynchronize (a kernel failed)");
}

static void mgpuStreamWaitEvent(void *stream, void *event) {
  if (Driver *d = readyOrRecord("mgpuStreamWaitEvent"))
    check(d->cuStreamWaitEvent(static_cast<CUstream>(stream),
                               static_cast<CUevent>(event), 0),
          "cuStreamWaitEvent");
}

static void *mgpuEventCreate() {
  Driver *d = readyOrRecord("mgpuEventCreate");
  CUevent event = nullptr;
  if (d &&
      check(d->cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate"))
    return event;
  return nullptr;
}

static void mgpuEventDestroy(void *event) {
  if (Driver *d = ready(); d && event)
    check(d->cuEventDestroy(static_cast<CUevent>(event)), "cuEventDestroy");
}

static void mgpuEventSynchronize(void *event) {
  if (Driver *d = readyOrRecord("mgpuEventSynchronize"))
    check(d->cuEventSynchronize(static_cast<CUevent>(event)),
          "cuEventSynchronize");
}

static void mgpuEventRecord(void *event, void *stream) {
  if (Driver *d = readyOrRecord("mgpuEventRecord"))
    check(d->cuEventRecord(static_cast<CUevent>(event),
                           static_cast<CUstream>(stream)),
          "cuEventRecord");
}

static void *mgpuMemAlloc(uint64_t bytes, void *stream, bool hostShared) {
  Driver *d = readyOrRecord("mgpuMemAlloc");
  if (!d)
    return nullptr;
  // Work is ordered on the stream: a reused block is read and written only
  // by work queued after the kernels that were done with it.
  (void)stream;
  CUdeviceptr ptr = 0;
  bool reused = false;
  if (hostShared) {
    if (!check(
            d->cuMemAllocManaged(&ptr, bytes ? bytes : 1, CU_MEM_ATTACH_GLOBAL),
            "cuMemAllocManaged"))
      return nullptr;
  } else if (!check(allocateBlock(*d, bytes, ptr, reused), "cuMemAlloc")) {
    return nullptr;
  }
  return reinterpret_cast<void *>(ptr);
}

static void mgpuMemFree(void *ptr, void *stream) {
  Driver *d = readyOrRecord("mgpuMemFree");
  (void)stream;
  if (d && ptr)
    check(freeBlock(*d, reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree");
}

static void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  if (Driver *d = readyOrRecord("mgpuMemcpy"))
    check(d->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                           reinterpret_cast<CUdeviceptr>(src), bytes,
                           static_cast<CUstream>(stream)),
          "cuMemcpyAsync");
}

static void mgpuMemset32(void *dst, unsigned value, size_t count,
                         void *stream) {
  if (Driver *d = readyOrRecord("mgpuMemset32"))
    check(d->cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                              static_cast<CUstream>(stream)),
          "cuMemsetD32Async");
}

static void mgpuMemset16(void *dst, unsigned short value, size_t count,
                         void *stream) {
  if (Driver *d = readyOrRecord("mgpuMemset16"))
    check(d->cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                              static_cast<CUstream>(stream)),
          "cuMemsetD16Async");
}

} // extern "C"

std::vector<std::pair<const char *, void *>> harp::cuda::entryPoints() {
  std::vector<std::pair<const char *, void *>> table;
#define HARP_ENTRY(f) table.emplace_back(#f, reinterpret_cast<void *>(&f));
  HARP_ENTRY(mgpuModuleLoad)
  HARP_ENTRY(mgpuModuleLoadJIT)
  HARP_ENTRY(mgpuModuleUnload)
  HARP_ENTRY(mgpuModuleGetFunction)
  HARP_ENTRY(mgpuLaunchKernel)
  HARP_ENTRY(mgpuStreamCreate)
  HARP_ENTRY(mgpuStreamDestroy)
  HARP_ENTRY(mgpuStreamSynchronize)
  HARP_ENTRY(mgpuStreamWaitEvent)
  HARP_ENTRY(mgpuEventCreate)
  HARP_ENTRY(mgpuEventDestroy)
  HARP_ENTRY(mgpuEventSynchronize)
  HARP_ENTRY(mgpuEventRecord)
  HARP_ENTRY(mgpuMemAlloc)
  HARP_ENTRY(mgpuMemFree)
  HARP_ENTRY(mgpuMemcpy)
  HARP_ENTRY(mgpuMemset32)
  HARP_ENTRY(mgpuMemset16)
#undef HARP_ENTRY
  return table;
}

#endif // HARP_HAVE_CUDA_H
