//===- JitSupport.cpp - functions generated code calls --------------------===//
//
// What harp's compiled kernels call besides libc and libm: malloc/free
// through the runtime's block cache (the strided memref copy is in
// MemrefCopy.cpp). The JIT defines these symbols for every module it loads
// (Jit.cpp).
//
//===----------------------------------------------------------------------===//

#include "BlockCache.h"
#include "JitInternal.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

/// `malloc` and `free` as generated code sees them (the JIT binds those
/// names to these; LLVM still knows them as malloc and free): the runtime's
/// block cache (BlockCache.cpp), which keeps blocks of 64 KiB and more for
/// reuse by exact size. A kernel's temporaries (a packed operand, a padded
/// input, an intermediate result) have the same sizes at every call, and
/// fresh pages from the system cost a page fault each (a 4 MB temporary:
/// 1024 faults, about a millisecond). With $HARP_DEBUG_POISON set, every
/// block is filled with 0xff bytes (NaN as floats), so a kernel that reads
/// a temporary before writing it (a fill dropped by mistake) fails a test.
static std::atomic<uint64_t> mallocs{0};

uint64_t harp::jit::generatedMallocs() { return mallocs.load(); }

extern "C" void *harpMalloc(size_t size) {
  static const bool poison = std::getenv("HARP_DEBUG_POISON") != nullptr;
  mallocs.fetch_add(1, std::memory_order_relaxed);
  void *block = harp::detail::allocateBlock(size);
  if (poison && block)
    std::memset(block, 0xff, size);
  return block;
}
extern "C" void harpFree(void *ptr) { harp::detail::releaseBlock(ptr); }
