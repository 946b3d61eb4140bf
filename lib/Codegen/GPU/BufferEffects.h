//===- BufferEffects.h - which host ops touch buffers -----------*- C++ -*-===//

#ifndef HARP_LIB_CONVERSION_HARPTOGPU_BUFFEREFFECTS_H
#define HARP_LIB_CONVERSION_HARPTOGPU_BUFFEREFFECTS_H

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::harp {

/// The first op in `op` (itself included) that reads or writes a buffer, or
/// null. Allocation and freeing do not count: they are host calls.
inline Operation *firstBufferAccess(Operation *op) {
  Operation *found = nullptr;
  op->walk([&](Operation *inner) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
    if (!effects)
      return WalkResult::advance();
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &effect : list)
      if (isa<MemoryEffects::Read, MemoryEffects::Write>(effect.getEffect())) {
        found = inner;
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return found;
}

} // namespace mlir::harp

#endif // HARP_LIB_CONVERSION_HARPTOGPU_BUFFEREFFECTS_H
