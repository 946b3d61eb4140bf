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
/// memory. All initialize the driver first.
llvm::Expected<void *> allocate(size_t bytes);
void release(void *device);
llvm::Error copyToDevice(void *device, const void *host, size_t bytes);
llvm::Error copyToHost(void *host, const void *device, size_t bytes);
llvm::Error copyOnDevice(void *device, const void *from, size_t bytes);
/// Waits for all work on the device.
llvm::Error synchronize();

/// The first driver failure recorded by an `mgpu*` entry point since the
/// last call, or success.
llvm::Error takeError();

/// The entry points generated host code calls, by symbol name.
std::vector<std::pair<const char *, void *>> entryPoints();

} // namespace harp::cuda

#endif // HARP_RUNTIME_CUDA_H
