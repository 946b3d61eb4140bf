//===- FloatConversions.h - conversions LLVM calls by name ------*- C++ -*-===//
//
// Where a CPU has no instruction for a conversion, LLVM emits a call to a
// compiler-runtime function: f32 and f64 to bf16 without AVX512-BF16
// (`__truncsfbf2`, `__truncdfbf2`). The JIT binds these names to harp's own
// definitions, so generated code never depends on which compiler runtime
// the host process happens to have loaded (GCC 12's libgcc has none).
//
//===----------------------------------------------------------------------===//

#ifndef HARP_RUNTIME_FLOATCONVERSIONS_H
#define HARP_RUNTIME_FLOATCONVERSIONS_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>

namespace harp {

struct RuntimeSymbol {
  const char *name;
  void *address;
};

/// The conversion functions, by the names LLVM calls them.
llvm::ArrayRef<RuntimeSymbol> floatConversionSymbols();

/// The bf16 bits nearest to `value` (ties to even; NaN stays a quiet NaN).
uint16_t bf16FromFloat(float value);
/// The bf16 bits nearest to `value`, rounded once (not through f32's
/// nearest, which can round twice).
uint16_t bf16FromDouble(double value);

} // namespace harp

#endif // HARP_RUNTIME_FLOATCONVERSIONS_H
