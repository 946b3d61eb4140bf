//===- Cuda.cpp - harp's CUDA runtime on the driver API -------------------===//
//
// The driver is opened with dlopen on first use; every driver function is
// called through a pointer looked up then. cuda.h gives the types and the
// versioned names (cuMemAlloc is cuMemAlloc_v2), nothing is linked.
//
//===----------------------------------------------------------------------===//

#include "harp/Runtime/Cuda.h"

#include "llvm/ADT/Twine.h"

#include <cstdint>
#include <cstdlib>
#include <mutex>

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
  // A zero-byte buffer still gets a distinct address.
  if (Error err = checked(d->cuMemAlloc(&ptr, bytes ? bytes : 1), "cuMemAlloc"))
    return std::move(err);
  return reinterpret_cast<void *>(ptr);
}

void harp::cuda::release(void *device) {
  if (Driver *d = ready(); d && device)
    d->cuMemFree(reinterpret_cast<CUdeviceptr>(device));
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
  check(d->cuLaunchKernel(static_cast<CUfunction>(function), gridX, gridY,
                          gridZ, blockX, blockY, blockZ, smem,
                          static_cast<CUstream>(stream), params, extra),
        "cuLaunchKernel");
}

static void *mgpuStreamCreate() {
  Driver *d = readyOrRecord("mgpuStreamCreate");
  CUstream stream = nullptr;
  if (d && check(d->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
                 "cuStreamCreate"))
    return stream;
  return nullptr;
}

static void mgpuStreamDestroy(void *stream) {
  if (Driver *d = ready(); d && stream)
    check(d->cuStreamDestroy(static_cast<CUstream>(stream)), "cuStreamDestroy");
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
  CUdeviceptr ptr = 0;
  // The stream is ordered: allocation is synchronous, so work queued
  // before it cannot see the buffer anyway.
  (void)stream;
  CUresult r = hostShared ? d->cuMemAllocManaged(&ptr, bytes ? bytes : 1,
                                                 CU_MEM_ATTACH_GLOBAL)
                          : d->cuMemAlloc(&ptr, bytes ? bytes : 1);
  if (!check(r, "cuMemAlloc"))
    return nullptr;
  return reinterpret_cast<void *>(ptr);
}

static void mgpuMemFree(void *ptr, void *stream) {
  Driver *d = readyOrRecord("mgpuMemFree");
  if (!d || !ptr)
    return;
  // Kernels queued on the stream may still read the buffer.
  if (stream)
    check(d->cuStreamSynchronize(static_cast<CUstream>(stream)),
          "cuStreamSynchronize (a kernel failed)");
  check(d->cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree");
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
