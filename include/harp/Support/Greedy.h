//===- Greedy.h - Greedy rewrites over structured IR ------------*- C++ -*-===//
//
// The configuration harp's greedy pattern rewrites use before the loops
// become control flow.
//
//===----------------------------------------------------------------------===//

#ifndef HARP_SUPPORT_GREEDY_H
#define HARP_SUPPORT_GREEDY_H

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::harp {

/// A greedy rewrite without region simplification. Until scf-to-cf harp's
/// pipelines hold structured loops (functions, loop bodies and map_reduce
/// bodies are single blocks), where simplification has no block to merge or
/// drop; its liveness walk of the whole function after every sweep was
/// about a fifth of the lowering's time on long functions (an unrolled
/// recurrence; docs/Lowering.md). The greedy driver still erases trivially
/// dead ops. On the modules measured, harp-to-llvm's output did not change.
inline GreedyRewriteConfig structuredGreedyConfig() {
  GreedyRewriteConfig config;
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  return config;
}

} // namespace mlir::harp

#endif // HARP_SUPPORT_GREEDY_H
