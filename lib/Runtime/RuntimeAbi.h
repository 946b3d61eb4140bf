//===- RuntimeAbi.h - what generated code calls by name ---------*- C++ -*-===//
//
// The functions harp's generated code calls besides libc and libm, shared by
// the JIT (which binds the names to these) and the runtime of an exported
// library (Library/LibraryRuntime.cpp, which defines them). Plain C types:
// the library runtime is built without the C++ library.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_LIB_RUNTIME_RUNTIMEABI_H
#define HARP_LIB_RUNTIME_RUNTIMEABI_H

#include <stddef.h>
#include <stdint.h>

/// An unranked memref as generated code passes it.
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};

/// memref.copy of non-contiguous memrefs (`memrefCopy`).
extern "C" void harpMemrefCopy(int64_t elementSize, UnrankedMemRef *src,
                               UnrankedMemRef *dst);

#endif // HARP_LIB_RUNTIME_RUNTIMEABI_H
