//===- FloatConversions.h - conversions LLVM calls by name ------*- C++ -*-===//
//
// Where a CPU has no instruction for a conversion, LLVM emits a call to a
// compiler-runtime function: f32 and f64 to bf16 without AVX512-BF16
// (`__truncsfbf2`, `__truncdfbf2`), f16 to and from f32 and f64 without F16C
// (`__extendhfsf2`, `__truncsfhf2`, `__truncdfhf2`: x86-64-v2 code). The JIT
// binds these names to harp's own definitions, so generated code never depends
// on which compiler runtime the host process happens to have loaded (GCC 12's
// libgcc has none).
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

/// f16 (IEEE half) bits to float, exactly (NaN stays a quiet NaN).
float floatFromF16(uint16_t bits);
/// The f16 bits nearest to `value` (ties to even, subnormals kept, beyond
/// the largest finite value inf; NaN stays a quiet NaN).
uint16_t f16FromFloat(float value);
/// The f16 bits nearest to `value`, rounded once.
uint16_t f16FromDouble(double value);

} // namespace harp

// The definitions, by harp's names (the JIT binds LLVM's to them; an
// exported library's runtime defines LLVM's names over them). A bf16 or f16
// travels in a float register's low 16 bits.
extern "C" float harpTruncSFBF2(float value);
extern "C" float harpTruncDFBF2(double value);
extern "C" float harpExtendHFSF2(float arg);
extern "C" double harpExtendHFDF2(float arg);
extern "C" float harpTruncSFHF2(float value);
extern "C" float harpTruncDFHF2(double value);

#endif // HARP_RUNTIME_FLOATCONVERSIONS_H
