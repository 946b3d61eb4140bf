//===- Npy.h - NumPy .npy files and NumPy-style printing --------*- C++ -*-===//
//
// harp-run and the tests exchange arrays with NumPy through .npy files
// (format versions 1.0, 2.0 and 3.0). Supported dtypes and their element
// kinds:
//
//   <f2 f16   <f4 f32   <f8 f64   |b1 i1 (one byte, 0 or 1)   |i1 i8
//   <i2 i16   <i4 i32   <i8 i64   <c8 complex<f32>   <c16 complex<f64>
//
// bf16 has no .npy dtype and is rejected on write. Unsigned dtypes (u1...)
// are rejected on read rather than reinterpreted, since values above the
// signed range would silently change. Fortran-ordered, big-endian and
// structured arrays are rejected too.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_RUNTIME_NPY_H
#define HARP_RUNTIME_NPY_H

#include "harp/Runtime/Array.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace harp {

/// Reads the .npy file at `path` ("-" reads stdin) into a fresh array. Errors
/// name the file.
llvm::Expected<Array> readNpy(llvm::StringRef path);

/// Writes `array` to `path` ("-" writes stdout) as a .npy file, version 1.0
/// unless the header needs 2.0. Errors name the file.
llvm::Error writeNpy(llvm::StringRef path, const Array &array);

/// Prints `array` the way NumPy does: a header line with its type
/// ("tensor<2x3xf32>"), then nested brackets; floats with up to 6 significant
/// digits, complex numbers as (re+imj), booleans as true/false. Arrays of more
/// than 1000 elements show the first and last 3 entries along each axis,
/// with "..." between. No trailing newline.
std::string formatArray(const Array &array);

} // namespace harp

#endif // HARP_RUNTIME_NPY_H
