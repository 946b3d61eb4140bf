//===- JitSupport.cpp - functions generated code calls --------------------===//
//
// What harp's compiled kernels call besides libc and libm: a strided
// memref copy and malloc/free through the runtime's block cache. The
// JIT defines these symbols for every module it loads (Jit.cpp).
//
//===----------------------------------------------------------------------===//

#include "BlockCache.h"
#include "JitInternal.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

/// memref.copy between non-contiguous memrefs lowers to a call to this
/// (`memrefCopy`); harp provides it instead of linking MLIR's runner library.
/// Copies the innermost dim as one run when it is contiguous in both (a
/// padded copy's rows), element by element otherwise; the outer index is
/// advanced like an odometer, offsets updated incrementally.
extern "C" void harpMemrefCopy(int64_t elementSize, UnrankedMemRef *src,
                               UnrankedMemRef *dst) {
  int64_t rank = src->rank;
  auto fields = [](UnrankedMemRef *m) {
    return static_cast<int64_t *>(m->descriptor);
  };
  int64_t *s = fields(src), *d = fields(dst);
  auto *srcBase = reinterpret_cast<char *>(s[1]) + s[2] * elementSize;
  auto *dstBase = reinterpret_cast<char *>(d[1]) + d[2] * elementSize;
  const int64_t *sizes = s + 3;
  const int64_t *srcStrides = s + 3 + rank, *dstStrides = d + 3 + rank;
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0)
      return;
  if (rank == 0) {
    std::memmove(dstBase, srcBase, elementSize);
    return;
  }
  // The innermost dim: one run of `inner` elements, or single elements.
  int64_t inner = sizes[rank - 1];
  int64_t innerSrc = srcStrides[rank - 1], innerDst = dstStrides[rank - 1];
  bool contiguous = innerSrc == 1 && innerDst == 1;
  std::vector<int64_t> index(rank - 1, 0);
  int64_t so = 0, dof = 0;
  while (true) {
    char *to = dstBase + dof * elementSize;
    const char *from = srcBase + so * elementSize;
    if (contiguous) {
      std::memmove(to, from, inner * elementSize);
    } else {
      for (int64_t j = 0; j < inner; ++j)
        std::memmove(to + j * innerDst * elementSize,
                     from + j * innerSrc * elementSize, elementSize);
    }
    int64_t i = rank - 2;
    for (; i >= 0; --i) {
      so += srcStrides[i];
      dof += dstStrides[i];
      if (++index[i] < sizes[i])
        break;
      so -= srcStrides[i] * sizes[i];
      dof -= dstStrides[i] * sizes[i];
      index[i] = 0;
    }
    if (i < 0)
      return;
  }
}

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
