//===- GradCheck.h - harp-run --gradcheck -----------------------*- C++ -*-===//

#ifndef HARP_TOOLS_HARP_RUN_GRADCHECK_H
#define HARP_TOOLS_HARP_RUN_GRADCHECK_H

#include "harp/Runtime/Jit.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <vector>

namespace harp {

struct GradCheckOptions {
  /// Arguments to differentiate; empty means every float or complex one.
  std::vector<int64_t> wrt;
  /// Central-difference step, relative and absolute tolerances; unset means
  /// the element type's default (f64: 1e-6, 1e-6, 1e-8; f32: 1e-3, 1e-2,
  /// 1e-3).
  std::optional<double> step, rtol, atol;
  /// Seed of the random cotangents.
  uint64_t seed = 0;
};

/// Compares harp-autodiff's gradient of `entry` (a function of `source`)
/// at `inputs` with central finite differences of the same compiled
/// function, for `L = sum_k Re(<conj(seed_k), result_k>)` with random seeds.
/// Prints a report to stdout; returns 0 when every element is within
/// tolerance, 1 otherwise (errors are printed and return 1 too).
int runGradCheck(Jit &jit, llvm::StringRef source,
                 const FunctionSignature &entry, std::vector<Array> inputs,
                 const GradCheckOptions &options);

} // namespace harp

#endif // HARP_TOOLS_HARP_RUN_GRADCHECK_H
