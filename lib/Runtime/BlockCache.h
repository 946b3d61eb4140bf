//===- BlockCache.h - large blocks kept for reuse ---------------*- C++ -*-===//
//
// The allocator behind generated code's malloc/free (JitSupport.cpp) and
// harp::Array's storage (Array.cpp). Internal to lib/Runtime.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_LIB_RUNTIME_BLOCKCACHE_H
#define HARP_LIB_RUNTIME_BLOCKCACHE_H

#include <cstddef>

namespace harp::detail {

/// Blocks at least this large are kept after release for reuse.
constexpr size_t kMinCachedBlock = 64 * 1024;

/// A block of `size` bytes, 64-byte aligned when `size` is at least
/// kMinCachedBlock (a released block of the same size when one is kept;
/// fresh ones of 4 MiB or more are advised transparent huge pages), from
/// malloc otherwise.
void *allocateBlock(size_t size);

/// Returns a block from allocateBlock (or malloc); large blocks are kept
/// for the next allocateBlock of their size, up to 256 MiB in all.
void releaseBlock(void *block);

} // namespace harp::detail

#endif // HARP_LIB_RUNTIME_BLOCKCACHE_H
