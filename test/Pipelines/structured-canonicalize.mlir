// RUN: harp-opt %s --harp-to-llvm --dump-pass-pipeline -o /dev/null 2>&1 | tr ',' '\n' | FileCheck %s

// harp-to-llvm's canonicalizers between the first (after harp-autodiff) and
// convert-scf-to-cf run without region simplification, in the canonicalize
// pass's own top-down order (include/harp/Support/Greedy.h, docs/Lowering.md);
// the first and those after the loops became control flow keep it. The
// deallocation passes are upstream's buffer-deallocation-pipeline's, in its
// order.

// CHECK: harp-autodiff
// CHECK: canonicalize{{.*}}region-simplify=normal{{.*}}top-down=true
// CHECK: harp-fuse
// CHECK-NOT: region-simplify=normal
// CHECK: convert-harp-to-linalg
// CHECK: canonicalize{{.*}}region-simplify=disabled{{.*}}top-down=true
// CHECK-NOT: region-simplify=normal
// CHECK: one-shot-bufferize
// CHECK-NOT: region-simplify=normal
// CHECK: expand-realloc{emit-deallocs=false}
// CHECK: canonicalize{{.*}}region-simplify=disabled{{.*}}top-down=true
// CHECK: ownership-based-buffer-deallocation
// CHECK: canonicalize{{.*}}region-simplify=disabled{{.*}}top-down=true
// CHECK: buffer-deallocation-simplification
// CHECK: bufferization-lower-deallocations
// CHECK: cse
// CHECK: canonicalize{{.*}}region-simplify=disabled{{.*}}top-down=true
// CHECK-NOT: region-simplify=normal
// CHECK: convert-scf-to-cf
// CHECK: canonicalize{{.*}}region-simplify=normal{{.*}}top-down=true
module {}
