//===- MemrefCopy.cpp - the strided copy generated code calls -------------===//
//
// Shared by the JIT and the runtime of an exported library (RuntimeAbi.h):
// plain C, no C++ library.
//
//===----------------------------------------------------------------------===//

#include "RuntimeAbi.h"

#include <stdlib.h>
#include <string.h>

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
    memmove(dstBase, srcBase, elementSize);
    return;
  }
  // The innermost dim: one run of `inner` elements, or single elements.
  int64_t inner = sizes[rank - 1];
  int64_t innerSrc = srcStrides[rank - 1], innerDst = dstStrides[rank - 1];
  bool contiguous = innerSrc == 1 && innerDst == 1;
  // The outer dims' index: on the stack unless the rank is very high.
  int64_t stackIndex[16] = {0};
  int64_t *index =
      rank - 1 <= 16
          ? stackIndex
          : static_cast<int64_t *>(calloc(rank - 1, sizeof(int64_t)));
  if (!index)
    abort();
  int64_t so = 0, dof = 0;
  while (true) {
    char *to = dstBase + dof * elementSize;
    const char *from = srcBase + so * elementSize;
    if (contiguous) {
      memmove(to, from, inner * elementSize);
    } else {
      for (int64_t j = 0; j < inner; ++j)
        memmove(to + j * innerDst * elementSize,
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
      break;
  }
  if (index != stackIndex)
    free(index);
}
