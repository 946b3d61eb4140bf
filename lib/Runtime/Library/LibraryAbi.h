//===- LibraryAbi.h - what an exported library's entries pass ---*- C++ -*-===//
//
// The layouts shared by the code harp generates for an exported library
// (Export.cpp builds them as LLVM constants) and the runtime that library
// links (LibraryRuntime.cpp). A caller never sees them: the generated header
// declares typed entry points that pass their buffers to harp_lib_call with
// the function's description. docs/Embedding.md describes the library.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_LIB_RUNTIME_LIBRARY_LIBRARYABI_H
#define HARP_LIB_RUNTIME_LIBRARY_LIBRARYABI_H

#include <stdint.h>

extern "C" {

/// A caller's buffer, as every `<prefix>_<dtype>_tensor` of the generated
/// header lays it out: dense row-major data, its rank and its sizes.
struct HarpLibTensor {
  void *data;
  int64_t rank;
  const int64_t *shape;
};

/// One argument (an input, then a result) of an exported function.
struct HarpLibArgument {
  /// The static sizes, `rank` of them.
  const int64_t *shape;
  /// "input0", "result1": how messages name the argument.
  const char *name;
  /// "f32", "i64": how messages name the element type.
  const char *dtype;
  int64_t rank;
  int64_t elementBytes;
};

/// One exported function: its entry (`void entry(void **descriptors)`, a
/// memref descriptor per argument) and arguments.
struct HarpLibFunction {
  const char *name;
  void (*entry)(void **);
  const HarpLibArgument *arguments;
  int64_t inputs;
  int64_t results;
};

/// The error codes an entry returns (the generated header names them).
enum {
  HARP_LIB_OK = 0,
  HARP_LIB_ERROR_NULL = 1,
  HARP_LIB_ERROR_RANK = 2,
  HARP_LIB_ERROR_SHAPE = 3,
  HARP_LIB_ERROR_OVERLAP = 4,
};

/// Checks `tensors` (a pointer per argument of `function`, inputs first)
/// against it and runs it on them; returns HARP_LIB_OK or an error code,
/// with a message harp_lib_last_error returns on this thread.
int harp_lib_call(const HarpLibFunction *function,
                  const HarpLibTensor *const *tensors);
/// This thread's message of the last failed call, or "".
const char *harp_lib_last_error(void);
}

#endif // HARP_LIB_RUNTIME_LIBRARY_LIBRARYABI_H
