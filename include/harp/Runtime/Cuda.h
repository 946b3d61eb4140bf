//===- Cuda.h - harp's CUDA runtime -----------------------------*- C++ -*-===//
//
// harp's GPU runtime, on the CUDA driver API. The driver library
// (libcuda.so.1) is opened the first time a GPU is asked for, never at load
// time: harp builds and runs its CPU work on machines with no GPU and no
// driver, and asking for the GPU there is an error that says why.
//
// The code harp-to-gpu generates calls the `mgpu*` entry points (module
// load, launch, streams, device memory) that entryPoints() lists for the
// JIT's symbol table. They cannot throw through generated code: a failing
// driver call is recorded, the call becomes a no-op, and takeError()
// reports the first failure after the generated function returns.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_RUNTIME_CUDA_H
#define HARP_RUNTIME_CUDA_H

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace harp::cuda {

/// Whether harp was built with the CUDA driver API header (cuda.h).
bool builtWithCuda();

/// Opens the driver, initializes it and makes the selected device's primary
/// context usable (once per process). The device is $HARP_CUDA_DEVICE, else
/// 0. Fails with the reason (no cuda.h at build time, no libcuda.so.1, no
/// device, ...).
llvm::Error initialize();

/// "NVIDIA H100 80GB HBM3 (sm_90)": the selected device; initializes.
llvm::Expected<std::string> deviceName();

/// "sm_90": the selected device's compute capability; initializes.
llvm::Expected<std::string> chip();

/// Device memory: allocate, free, and synchronous copies to and from host
/// memory. All initialize the driver first. Blocks are cached: release()
/// keeps a block for the next allocation of its size (as do the frees of
/// generated code), without waiting for the device; the copies run when no
/// generated function is running (each waits for its work before it
/// returns).
llvm::Expected<void *> allocate(size_t bytes);
void release(void *device);
llvm::Error copyToDevice(void *device, const void *host, size_t bytes);
llvm::Error copyToHost(void *host, const void *device, size_t bytes);
llvm::Error copyOnDevice(void *device, const void *from, size_t bytes);
/// Waits for all work on the device.
llvm::Error synchronize();

/// Device memory in bytes (block sizes, rounded up from what was asked):
/// handed out now, the most handed out at once since the start or the last
/// resetPeakMemory(), and held from the driver (handed out plus cached);
/// and how many times the driver was asked to allocate and to free.
struct MemoryStats {
  size_t allocated = 0;
  size_t peakAllocated = 0;
  size_t reserved = 0;
  uint64_t deviceAllocations = 0;
  uint64_t deviceFrees = 0;
};
MemoryStats memoryStats();
void resetPeakMemory();
/// Gives the cached blocks back to the driver (after the work queued
/// before their frees).
llvm::Error emptyCache();

/// The first driver failure recorded by an `mgpu*` entry point since the
/// last call, or success.
llvm::Error takeError();

/// The entry points generated host code calls, by symbol name.
std::vector<std::pair<const char *, void *>> entryPoints();

} // namespace harp::cuda

#endif // HARP_RUNTIME_CUDA_H
