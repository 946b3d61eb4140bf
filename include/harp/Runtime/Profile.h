//===- Profile.h - time per kernel of JIT-compiled code ---------*- C++ -*-===//
//
// Code compiled with profiling on (JitOptions::profile, HARP_PROFILE, the
// harp-to-llvm option `profile`) times each of its kernels into this
// process-wide table: harp-profile-kernels brackets every kernel with
// harp_profile_clock and harp_profile_record. With HARP_PROFILE set, the
// table is printed on stderr when the process exits.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_RUNTIME_PROFILE_H
#define HARP_RUNTIME_PROFILE_H

#include <cstdint>
#include <string>
#include <vector>

namespace harp {

/// One kernel's line of the profile.
struct KernelProfile {
  /// What harp-profile-kernels named it: function, number, op, trip
  /// counts, buffers written, source.
  std::string kernel;
  uint64_t calls = 0;
  double seconds = 0;
};

/// Whether HARP_PROFILE asks for profiling (set, and neither empty nor "0").
bool profilingRequested();

/// Every kernel timed since the start or the last resetProfile, the most
/// time first; kernels of the same name are one line.
std::vector<KernelProfile> profileReport();

/// Forgets every time recorded so far.
void resetProfile();

/// The report as a table: milliseconds, share of the whole calls' time,
/// calls and kernel, one line each.
std::string formatProfile(const std::vector<KernelProfile> &report);

} // namespace harp

extern "C" {
/// Nanoseconds of a monotonic clock.
int64_t harp_profile_clock();
/// Adds the time since `start` (harp_profile_clock's) and one call to the
/// kernel named by the null-terminated string `kernel`.
void harp_profile_record(const char *kernel, int64_t start);
}

#endif // HARP_RUNTIME_PROFILE_H
