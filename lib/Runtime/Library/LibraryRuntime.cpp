//===- LibraryRuntime.cpp - the runtime of an exported library ------------===//
//
// What a library harp-compile writes links besides libc and libm: the
// checks and the call behind its typed entry points, and the functions its
// kernels call by name (a strided copy, float conversions a CPU may lack).
// Built without exceptions, RTTI or the C++ library, with hidden
// visibility, so a shared library exports only its own entry points and two
// libraries of harp's in one process never bind to each other's runtime.
//
//===----------------------------------------------------------------------===//

#include "LibraryAbi.h"

#include "../FloatConversions.h"
#include "../RuntimeAbi.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

namespace {
thread_local char lastError[1024];

/// Formats the message of a failed call into lastError and returns `code`.
__attribute__((format(printf, 2, 3))) int fail(int code, const char *format,
                                               ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(lastError, sizeof(lastError), format, args);
  va_end(args);
  return code;
}

/// "[2, 3]" of `rank` sizes into `out`.
void shapeText(const int64_t *shape, int64_t rank, char *out, size_t size) {
  size_t at = (size_t)snprintf(out, size, "[");
  for (int64_t i = 0; i < rank && at < size; ++i)
    at += (size_t)snprintf(out + at, size - at, i ? ", %lld" : "%lld",
                           (long long)shape[i]);
  if (at < size)
    snprintf(out + at, size - at, "]");
}

int64_t byteSize(const HarpLibArgument &arg) {
  int64_t n = arg.elementBytes;
  for (int64_t i = 0; i < arg.rank; ++i)
    n *= arg.shape[i];
  return n;
}

/// Checks one caller tensor against its argument.
int check(const HarpLibFunction &fn, const HarpLibArgument &arg,
          const HarpLibTensor *tensor) {
  char expected[256];
  shapeText(arg.shape, arg.rank, expected, sizeof(expected));
  if (!tensor)
    return fail(HARP_LIB_ERROR_NULL, "%s: %s (%s%s) is a null pointer", fn.name,
                arg.name, arg.dtype, expected);
  if (tensor->rank != arg.rank)
    return fail(HARP_LIB_ERROR_RANK,
                "%s: %s has rank %lld, expected %lld (%s%s)", fn.name, arg.name,
                (long long)tensor->rank, (long long)arg.rank, arg.dtype,
                expected);
  if (arg.rank > 0 && !tensor->shape)
    return fail(HARP_LIB_ERROR_NULL, "%s: %s has a null shape (expected %s%s)",
                fn.name, arg.name, arg.dtype, expected);
  for (int64_t i = 0; i < arg.rank; ++i)
    if (tensor->shape[i] != arg.shape[i]) {
      char got[256];
      shapeText(tensor->shape, arg.rank, got, sizeof(got));
      return fail(HARP_LIB_ERROR_SHAPE,
                  "%s: %s has shape %s, expected %s%s (dim %lld is %lld, not "
                  "%lld)",
                  fn.name, arg.name, got, arg.dtype, expected, (long long)i,
                  (long long)tensor->shape[i], (long long)arg.shape[i]);
    }
  if (!tensor->data && byteSize(arg) != 0)
    return fail(HARP_LIB_ERROR_NULL, "%s: %s (%s%s) has null data", fn.name,
                arg.name, arg.dtype, expected);
  return HARP_LIB_OK;
}

bool overlap(const HarpLibTensor *a, int64_t aBytes, const HarpLibTensor *b,
             int64_t bBytes) {
  const char *a0 = (const char *)a->data, *b0 = (const char *)b->data;
  return aBytes && bBytes && a0 < b0 + bBytes && b0 < a0 + aBytes;
}
} // namespace

extern "C" int harp_lib_call(const HarpLibFunction *fn,
                             const HarpLibTensor *const *tensors) {
  lastError[0] = '\0';
  int64_t count = fn->inputs + fn->results;
  if (count && !tensors)
    return fail(HARP_LIB_ERROR_NULL, "%s: the tensor array is a null pointer",
                fn->name);
  int64_t words = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (int code = check(*fn, fn->arguments[i], tensors[i]))
      return code;
    words += 3 + 2 * fn->arguments[i].rank;
  }
  // The kernels write the results while they read the inputs.
  for (int64_t r = fn->inputs; r < count; ++r)
    for (int64_t o = 0; o < r; ++o)
      if (overlap(tensors[r], byteSize(fn->arguments[r]), tensors[o],
                  byteSize(fn->arguments[o])))
        return fail(HARP_LIB_ERROR_OVERLAP, "%s: %s overlaps %s", fn->name,
                    fn->arguments[r].name, fn->arguments[o].name);
  // A memref descriptor per argument: {allocated, aligned, offset, sizes,
  // strides}, on the stack unless the function has very many arguments.
  int64_t stackWords[512];
  void *stackPointers[64];
  int64_t *descriptors =
      words <= 512 ? stackWords : (int64_t *)malloc(words * sizeof(int64_t));
  void **pointers =
      count <= 64 ? stackPointers : (void **)malloc(count * sizeof(void *));
  if (!descriptors || !pointers) {
    if (descriptors != stackWords)
      free(descriptors);
    if (pointers != stackPointers)
      free(pointers);
    return fail(HARP_LIB_ERROR_NULL, "%s: out of memory", fn->name);
  }
  int64_t *d = descriptors;
  for (int64_t i = 0; i < count; ++i) {
    const HarpLibArgument &arg = fn->arguments[i];
    pointers[i] = d;
    d[0] = d[1] = (int64_t)tensors[i]->data;
    d[2] = 0;
    int64_t stride = 1;
    for (int64_t k = arg.rank - 1; k >= 0; --k) {
      d[3 + k] = arg.shape[k];
      d[3 + arg.rank + k] = stride;
      stride *= arg.shape[k];
    }
    d += 3 + 2 * arg.rank;
  }
  fn->entry(pointers);
  if (descriptors != stackWords)
    free(descriptors);
  if (pointers != stackPointers)
    free(pointers);
  return HARP_LIB_OK;
}

extern "C" const char *harp_lib_last_error(void) { return lastError; }

// The functions generated code calls by name, which the JIT binds to harp's
// (Jit.cpp) and a library links from here.
extern "C" void memrefCopy(int64_t elementSize, UnrankedMemRef *src,
                           UnrankedMemRef *dst) {
  harpMemrefCopy(elementSize, src, dst);
}
extern "C" float __truncsfbf2(float value) { return harpTruncSFBF2(value); }
extern "C" float __truncdfbf2(double value) { return harpTruncDFBF2(value); }
extern "C" float __extendhfsf2(float arg) { return harpExtendHFSF2(arg); }
extern "C" double __extendhfdf2(float arg) { return harpExtendHFDF2(arg); }
extern "C" float __truncsfhf2(float value) { return harpTruncSFHF2(value); }
extern "C" float __truncdfhf2(double value) { return harpTruncDFHF2(value); }
