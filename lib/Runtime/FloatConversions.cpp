//===- FloatConversions.cpp - conversions LLVM calls by name
//---------------===//

#include "FloatConversions.h"

#include <cmath>
#include <cstring>

using namespace harp;

static uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

static float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint16_t harp::bf16FromFloat(float value) {
  uint32_t bits = bitsOf(value);
  if (std::isnan(value))
    return uint16_t((bits >> 16) | 0x40); // quiet, sign and payload kept
  // Adding 0x7fff plus the kept part's lowest bit rounds to nearest, ties
  // to even; a carry into the exponent is the right result (up to inf).
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

uint16_t harp::bf16FromDouble(double value) {
  if (std::isnan(value))
    return bf16FromFloat(float(value));
  // Round to f32 by "round to odd" (truncate, then set the lowest bit when
  // anything was cut off), then to bf16 to nearest: f32 keeps 16 bits more
  // than bf16, so the second rounding sees the first one's inexactness and
  // the result is the once-rounded nearest.
  float nearest = float(value);
  if (double(nearest) == value)
    return bf16FromFloat(nearest);
  float truncated = nearest;
  if (std::fabs(double(nearest)) > std::fabs(value))
    truncated = std::nextafter(nearest, 0.0f);
  return bf16FromFloat(floatOf(bitsOf(truncated) | 1));
}

// The x86-64 calling convention returns a bf16 in the low 16 bits of xmm0,
// where a float is returned: the result travels as a float whose bit
// pattern holds the bf16 (a move, never arithmetic, so no bit changes).
static float returnBF16(uint16_t bits) { return floatOf(bits); }

extern "C" float harpTruncSFBF2(float value) {
  return returnBF16(bf16FromFloat(value));
}
extern "C" float harpTruncDFBF2(double value) {
  return returnBF16(bf16FromDouble(value));
}

llvm::ArrayRef<RuntimeSymbol> harp::floatConversionSymbols() {
  static const RuntimeSymbol symbols[] = {
      {"__truncsfbf2", reinterpret_cast<void *>(&harpTruncSFBF2)},
      {"__truncdfbf2", reinterpret_cast<void *>(&harpTruncDFBF2)},
  };
  return symbols;
}
