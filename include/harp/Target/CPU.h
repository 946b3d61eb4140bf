//===- CPU.h - the CPU harp generates code for ------------------*- C++ -*-===//
//
// A CPU target is chosen by name: `native` (the machine harp runs on, the
// default), an x86-64 ISA profile (`x86-64-v2`: SSE4.2, 128-bit vectors;
// `x86-64-v3`: AVX2 and FMA, 256-bit; `x86-64-v4`: AVX-512, 512-bit) or any
// CPU name LLVM knows (`znver3`, `skylake-avx512`, ...). The description it
// resolves to is what code generation derives its numbers from (vector
// width, registers, caches), and is part of every compiled kernel's cache
// key.
//
// Only LLVM's Support library appears here, so tools and bindings can name
// targets without the compiler's headers.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_TARGET_CPU_H
#define HARP_TARGET_CPU_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace harp {

struct CpuTarget {
  /// The name asked for ("native", "x86-64-v3", "znver3").
  std::string name;
  /// LLVM's CPU name: the host's for native, else `name`.
  std::string cpu;
  /// Target features added to the CPU's own, comma-separated ("+avx2,...");
  /// the host's full list for native, empty for a named CPU.
  std::string features;
  /// The widest vector register in bits (128, 256 or 512).
  unsigned vectorBits = 128;
  /// Architectural vector registers (16, or 32 with AVX-512).
  unsigned vectorRegisters = 16;
  /// Whether the CPU has fused multiply-add.
  bool fma = false;
  /// A full-width vector FMA (without FMA: a vector add) in LLVM's
  /// scheduling model of the CPU: latency in cycles and how many issue per
  /// cycle; 0 when the model has none. Reported, not yet used by code
  /// generation (docs/Lowering.md, "The target model").
  unsigned fmaLatency = 0;
  double fmaPerCycle = 0;
  /// Data caches of this machine in bytes (the JIT runs its code here,
  /// whatever ISA it targets): L1 data, L2 and L3 as one core sees them;
  /// 0 for L3 when none is reported.
  uint64_t l1Bytes = 0, l2Bytes = 0, l3Bytes = 0;
  /// Where the cache sizes come from: "sysfs" (Linux's
  /// /sys/devices/system/cpu/cpu0/cache), "sysconf" (the C library's
  /// cpuid), "assumed" (32 KiB L1, 256 KiB L2, the smallest of x86-64
  /// cores with AVX, when neither reports them) or "HARP_CACHES" (the
  /// environment's "L1,L2[,L3]", which overrides the others).
  std::string cacheSource;
  /// Features the target needs that this machine lacks, comma-separated;
  /// empty when its code runs here.
  std::string missingFeatures;

  bool runsHere() const { return missingFeatures.empty(); }
  /// What identifies the generated code: CPU, features and the caches
  /// its blocks are derived from.
  std::string key() const {
    return cpu + ";" + features + ";" + std::to_string(l1Bytes) + "," +
           std::to_string(l2Bytes);
  }
};

/// The target name used when none is given: $HARP_CPU if set and not
/// empty, else "native".
std::string defaultCpuName();

/// Resolves `name` ("" means defaultCpuName()). An unknown name is an error
/// that lists the profiles.
llvm::Expected<CpuTarget> resolveCpuTarget(llvm::StringRef name);

} // namespace harp

#endif // HARP_TARGET_CPU_H
