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

/// `value` rounded to f32 by "round to odd": truncated, with the lowest bit
/// set when anything was cut off. Rounded again to a type with at least two
/// bits fewer (bf16, f16), to nearest, it gives the once-rounded nearest:
/// the second rounding sees the first one's inexactness.
static float roundedToOdd(double value) {
  float nearest = float(value);
  if (double(nearest) == value)
    return nearest;
  float truncated = nearest;
  if (std::fabs(double(nearest)) > std::fabs(value))
    truncated = std::nextafter(nearest, 0.0f);
  return floatOf(bitsOf(truncated) | 1);
}

uint16_t harp::bf16FromDouble(double value) {
  if (std::isnan(value))
    return bf16FromFloat(float(value));
  return bf16FromFloat(roundedToOdd(value)); // f32 keeps 16 bits more
}

// The x86-64 calling convention returns a bf16 or an f16 in the low 16 bits
// of xmm0, where a float is returned: the result travels as a float whose
// bit pattern holds it (a move, never arithmetic, so no bit changes).
static float returnHalf(uint16_t bits) { return floatOf(bits); }

extern "C" float harpTruncSFBF2(float value) {
  return returnHalf(bf16FromFloat(value));
}
extern "C" float harpTruncDFBF2(double value) {
  return returnHalf(bf16FromDouble(value));
}

float harp::floatFromF16(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  if (exponent == 0) { // zero or subnormal: mantissa * 2^-24, exact
    float magnitude = std::ldexp(float(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) // inf, or a NaN (quiet, payload kept)
    return floatOf(sign | 0x7f800000 |
                   (mantissa ? 0x400000 | (mantissa << 13) : 0));
  return floatOf(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

uint16_t harp::f16FromFloat(float value) {
  uint32_t bits = bitsOf(value);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude > 0x7f800000) // NaN: quiet, the payload's top bits kept
    return sign | 0x7e00 | uint16_t((magnitude >> 13) & 0x3ff);
  // 65520 and up (halfway above f16's largest, 65504, which is odd) and
  // inf round to inf.
  if (magnitude >= 0x477ff000)
    return sign | 0x7c00;
  if (magnitude < 0x38800000) {
    // Below f16's smallest normal (2^-14): a multiple of 2^-24, rounded to
    // nearest even by rint (scaling by 2^24 is exact); 1024 is the smallest
    // normal's bit pattern.
    float scaled = std::fabs(value) * 16777216.0f;
    return sign | uint16_t(std::rint(scaled));
  }
  uint32_t mantissa = magnitude & 0x7fffff;
  uint32_t half = (((magnitude >> 23) - 127 + 15) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half; // a carry into the exponent is the right result
  return sign | uint16_t(half);
}

uint16_t harp::f16FromDouble(double value) {
  if (std::isnan(value))
    return f16FromFloat(float(value));
  // f32 keeps 13 bits more than f16 (more still in f16's subnormal range).
  return f16FromFloat(roundedToOdd(value));
}

// An f16 argument travels in the low 16 bits of xmm0 as a bf16 result does.
static uint16_t argumentF16(float arg) { return uint16_t(bitsOf(arg)); }

extern "C" float harpExtendHFSF2(float arg) {
  return floatFromF16(argumentF16(arg));
}
extern "C" double harpExtendHFDF2(float arg) {
  return double(floatFromF16(argumentF16(arg)));
}
extern "C" float harpTruncSFHF2(float value) {
  return returnHalf(f16FromFloat(value));
}
extern "C" float harpTruncDFHF2(double value) {
  return returnHalf(f16FromDouble(value));
}

llvm::ArrayRef<RuntimeSymbol> harp::floatConversionSymbols() {
  static const RuntimeSymbol symbols[] = {
      {"__truncsfbf2", reinterpret_cast<void *>(&harpTruncSFBF2)},
      {"__truncdfbf2", reinterpret_cast<void *>(&harpTruncDFBF2)},
      {"__extendhfsf2", reinterpret_cast<void *>(&harpExtendHFSF2)},
      {"__extendhfdf2", reinterpret_cast<void *>(&harpExtendHFDF2)},
      {"__truncsfhf2", reinterpret_cast<void *>(&harpTruncSFHF2)},
      {"__truncdfhf2", reinterpret_cast<void *>(&harpTruncDFHF2)},
  };
  return symbols;
}
