//===- BlockCache.cpp - large blocks kept for reuse -----------------------===//
//
// Large blocks are kept after release and handed out again for the same
// size instead of going back to the system: a kernel's temporaries and a
// training step's results and gradients have the same sizes at every call,
// and fresh pages from the system cost a page fault each (with the kernel
// zeroing the page).
//
//===----------------------------------------------------------------------===//

#include "BlockCache.h"

#include <cstdint>
#include <cstdlib>
#include <malloc.h>
#include <mutex>
#include <unordered_map>
#include <vector>

#ifdef __linux__
#include <sys/mman.h>
#endif

using namespace harp::detail;

/// Asks the kernel to back the 2 MiB-aligned part of a large block with
/// transparent huge pages: a fresh block is mapped page by page on first
/// write, and 4 KiB pages cost a page fault (and the kernel's zeroing) per
/// 4 KiB, which took longer than a kernel writing a 64 MiB result. Where
/// huge pages are off (or not Linux) this does nothing.
static void adviseHugePages(void *ptr, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t(2) << 20;
  if (bytes < 2 * kHuge)
    return;
  uintptr_t begin =
      (reinterpret_cast<uintptr_t>(ptr) + kHuge - 1) & ~(kHuge - 1);
  uintptr_t end = (reinterpret_cast<uintptr_t>(ptr) + bytes) & ~(kHuge - 1);
  if (end > begin)
    (void)madvise(reinterpret_cast<void *>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)ptr;
  (void)bytes;
#endif
}

namespace {
struct BlockCache {
  static constexpr size_t kMaxKept = size_t(256) << 20;
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void *>> free;
  std::unordered_map<void *, size_t> live;
  size_t kept = 0;

  void *allocate(size_t size) {
    if (size < kMinCachedBlock)
      return std::malloc(size);
    std::lock_guard<std::mutex> lock(mutex);
    void *block = nullptr;
    auto it = free.find(size);
    if (it != free.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
      kept -= size;
    } else {
      // aligned_alloc wants a multiple of the alignment.
      block = std::aligned_alloc(64, (size + 63) / 64 * 64);
      if (block)
        adviseHugePages(block, size);
    }
    if (block)
      live[block] = size;
    return block;
  }

  void release(void *block) {
    // Small blocks (most frees: per-row temporaries) skip the lock.
    if (!block || malloc_usable_size(block) < kMinCachedBlock) {
      std::free(block);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = live.find(block);
      if (it != live.end()) {
        size_t size = it->second;
        live.erase(it);
        if (kept + size <= kMaxKept) {
          free[size].push_back(block);
          kept += size;
          return;
        }
      }
    }
    std::free(block);
  }
};

BlockCache &blockCache() {
  // Never destroyed: generated code and arrays may free blocks during exit.
  static BlockCache *cache = new BlockCache;
  return *cache;
}
} // namespace

void *harp::detail::allocateBlock(size_t size) {
  return blockCache().allocate(size);
}

void harp::detail::releaseBlock(void *block) { blockCache().release(block); }
