// RUN: harp-opt %s --harp-fuse --split-input-file | FileCheck %s
// RUN: harp-opt %s --harp-fuse="recompute-bound=0" --split-input-file | FileCheck %s --check-prefix=NORECOMPUTE
// RUN: harp-opt %s --harp-fuse="max-operands=2" --split-input-file | FileCheck %s --check-prefix=FEWOPS
// RUN: harp-opt %s --harp-fuse="recompute-read-slack=100" --split-input-file | FileCheck %s --check-prefix=SLACK

// A chain of element-wise ops becomes one map_reduce.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[R:.*]] = harp.map_reduce ins(%[[X]] : tensor<8xf32>) {
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32):
// CHECK-NEXT: %[[E:.*]] = math.exp %[[A]] : f32
// CHECK-NEXT: %[[N:.*]] = arith.negf %[[E]] : f32
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[N]] : f32
// CHECK-NEXT: harp.yield %[[T]] : f32
// CHECK-NEXT: } : tensor<8xf32>
// CHECK-NEXT: return %[[R]]
func.func @chain(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = harp.map_reduce ins(%x : tensor<8xf32>) {
  ^bb0(%v: f32):
    %e = math.exp %v : f32
    harp.yield %e : f32
  } : tensor<8xf32>
  %b = harp.map_reduce ins(%a : tensor<8xf32>) {
  ^bb0(%v: f32):
    %n = arith.negf %v : f32
    harp.yield %n : f32
  } : tensor<8xf32>
  %c = harp.map_reduce ins(%b : tensor<8xf32>) {
  ^bb0(%v: f32):
    %t = math.tanh %v : f32
    harp.yield %t : f32
  } : tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

// An element-wise producer fuses into a reducing consumer.
// CHECK-LABEL: func.func @into_reduction
// CHECK-NEXT: harp.map_reduce ins(%{{.*}} : tensor<4x8xf32>) {
// CHECK: math.exp
// CHECK: } reduce(sum, dims = [1]) : tensor<4xf32>
// CHECK-NEXT: return
func.func @into_reduction(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %a = harp.map_reduce ins(%x : tensor<4x8xf32>) {
  ^bb0(%v: f32):
    %e = math.exp %v : f32
    harp.yield %e : f32
  } : tensor<4x8xf32>
  %s = harp.map_reduce ins(%a : tensor<4x8xf32>) {
  ^bb0(%v: f32):
    harp.yield %v : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// A reduction is never inlined into its consumer.
// CHECK-LABEL: func.func @reduction_producer
// CHECK-COUNT-2: harp.map_reduce
func.func @reduction_producer(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %s = harp.map_reduce ins(%x : tensor<4x8xf32>) {
  ^bb0(%v: f32):
    harp.yield %v : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  %r = harp.map_reduce ins(%s : tensor<4xf32>) {
  ^bb0(%v: f32):
    %n = math.sqrt %v : f32
    harp.yield %n : f32
  } : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A diamond: one cheap producer read twice is recomputed in the consumer
// (both reads fuse), and the two operands that result are one.
// CHECK-LABEL: func.func @diamond
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>)
// CHECK-NEXT: harp.map_reduce ins(%[[X]] : tensor<8xf32>) {
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32):
// CHECK-NEXT: math.exp %[[A]]
// CHECK-NEXT: math.exp %[[A]]
// CHECK-NEXT: arith.mulf
// NORECOMPUTE-LABEL: func.func @diamond
// NORECOMPUTE-COUNT-2: harp.map_reduce
func.func @diamond(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = harp.map_reduce ins(%x : tensor<8xf32>) {
  ^bb0(%v: f32):
    %e = math.exp %v : f32
    harp.yield %e : f32
  } : tensor<8xf32>
  %b = harp.map_reduce ins(%a, %a : tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%p: f32, %q: f32):
    %m = arith.mulf %p, %q : f32
    harp.yield %m : f32
  } : tensor<8xf32>
  return %b : tensor<8xf32>
}

// -----

// A multi-use producer over the bound stays a kernel of its own.
// CHECK-LABEL: func.func @expensive_shared
// CHECK-COUNT-3: harp.map_reduce
func.func @expensive_shared(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = harp.map_reduce ins(%x : tensor<8xf32>) {
  ^bb0(%v: f32):
    %e1 = math.exp %v : f32
    %e2 = math.exp %e1 : f32
    %e3 = math.exp %e2 : f32
    %e4 = math.exp %e3 : f32
    %e5 = math.exp %e4 : f32
    %e6 = math.exp %e5 : f32
    %e7 = math.exp %e6 : f32
    %e8 = math.exp %e7 : f32
    %e9 = math.exp %e8 : f32
    harp.yield %e9 : f32
  } : tensor<8xf32>
  %b = harp.map_reduce ins(%a : tensor<8xf32>) {
  ^bb0(%v: f32):
    %n = arith.negf %v : f32
    harp.yield %n : f32
  } : tensor<8xf32>
  %c = harp.map_reduce ins(%a : tensor<8xf32>) {
  ^bb0(%v: f32):
    %n = math.sqrt %v : f32
    harp.yield %n : f32
  } : tensor<8xf32>
  return %b, %c : tensor<8xf32>, tensor<8xf32>
}

// -----

// A producer also returned stays (its value is needed) but is still
// recomputed in its cheap consumer.
// CHECK-LABEL: func.func @returned_producer
// CHECK: %[[A:.*]] = harp.map_reduce
// CHECK: %[[B:.*]] = harp.map_reduce ins(%{{.*}} : tensor<8xf32>)
// CHECK: math.exp
// CHECK: arith.negf
// CHECK: return %[[A]], %[[B]]
// NORECOMPUTE-LABEL: func.func @returned_producer
// NORECOMPUTE: %[[A:.*]] = harp.map_reduce
// NORECOMPUTE: harp.map_reduce ins(%[[A]] : tensor<8xf32>)
func.func @returned_producer(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = harp.map_reduce ins(%x : tensor<8xf32>) {
  ^bb0(%v: f32):
    %e = math.exp %v : f32
    harp.yield %e : f32
  } : tensor<8xf32>
  %b = harp.map_reduce ins(%a : tensor<8xf32>) {
  ^bb0(%v: f32):
    %n = arith.negf %v : f32
    harp.yield %n : f32
  } : tensor<8xf32>
  return %a, %b : tensor<8xf32>, tensor<8xf32>
}

// -----

// Through a transpose: the view moves onto the producer's operand.
// CHECK-LABEL: func.func @through_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<3x4xf32>, %[[Y:.*]]: tensor<4x3xf32>)
// CHECK: %[[T:.*]] = harp.view %[[X]] <(d0, d1) -> (d1, d0)> : tensor<3x4xf32> -> tensor<4x3xf32>
// CHECK: harp.map_reduce ins(%[[Y]], %[[T]] : tensor<4x3xf32>, tensor<4x3xf32>)
// CHECK: math.exp
// CHECK: arith.addf
func.func @through_transpose(%x: tensor<3x4xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %a = harp.map_reduce ins(%x : tensor<3x4xf32>) {
  ^bb0(%v: f32):
    %e = math.exp %v : f32
    harp.yield %e : f32
  } : tensor<3x4xf32>
  %t = harp.view %a <(d0, d1) -> (d1, d0)> : tensor<3x4xf32> -> tensor<4x3xf32>
  %s = harp.map_reduce ins(%t, %y : tensor<4x3xf32>, tensor<4x3xf32>) {
  ^bb0(%p: f32, %q: f32):
    %r = arith.addf %p, %q : f32
    harp.yield %r : f32
  } : tensor<4x3xf32>
  return %s : tensor<4x3xf32>
}

// -----

// Through a reshape (floordiv/mod) and a strided slice with a flip.
// CHECK-LABEL: func.func @through_reshape_slice
// CHECK: harp.view %{{.*}} <(d0, d1) -> ((d0 * 6 + d1) floordiv 4, (d0 * 6 + d1) mod 4)>
// CHECK-NEXT: harp.map_reduce
// CHECK: arith.negf
// CHECK-NEXT: math.sqrt
// CHECK: harp.view %{{.*}} <(d0) -> (d0 * -2 + 7)>
// CHECK-NEXT: harp.map_reduce
// CHECK: arith.negf
// CHECK-NEXT: math.sqrt
// CHECK-NOT: harp.map_reduce
func.func @through_reshape_slice(%x: tensor<3x4xf32>, %v: tensor<8xf32>) -> (tensor<2x6xf32>, tensor<4xf32>) {
  %a = harp.map_reduce ins(%x : tensor<3x4xf32>) {
  ^bb0(%e: f32):
    %n = arith.negf %e : f32
    harp.yield %n : f32
  } : tensor<3x4xf32>
  %r = harp.view %a <(d0, d1) -> ((d0 * 6 + d1) floordiv 4, (d0 * 6 + d1) mod 4)> : tensor<3x4xf32> -> tensor<2x6xf32>
  %b = harp.map_reduce ins(%r : tensor<2x6xf32>) {
  ^bb0(%e: f32):
    %s = math.sqrt %e : f32
    harp.yield %s : f32
  } : tensor<2x6xf32>
  %c = harp.map_reduce ins(%v : tensor<8xf32>) {
  ^bb0(%e: f32):
    %n = arith.negf %e : f32
    harp.yield %n : f32
  } : tensor<8xf32>
  %f = harp.view %c <(d0) -> (7 - d0 * 2)> : tensor<8xf32> -> tensor<4xf32>
  %d = harp.map_reduce ins(%f : tensor<4xf32>) {
  ^bb0(%e: f32):
    %s = math.sqrt %e : f32
    harp.yield %s : f32
  } : tensor<4xf32>
  return %b, %d : tensor<2x6xf32>, tensor<4xf32>
}

// -----

// Through a broadcast: the producer is recomputed per copy, which a cheap
// producer is allowed (bias add), an expensive one not.
// CHECK-LABEL: func.func @through_broadcast
// CHECK-COUNT-1: harp.map_reduce
// CHECK-NOT: harp.map_reduce
// NORECOMPUTE-LABEL: func.func @through_broadcast
// NORECOMPUTE-COUNT-2: harp.map_reduce
func.func @through_broadcast(%b: tensor<4xf32>, %x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %a = harp.map_reduce ins(%b : tensor<4xf32>) {
  ^bb0(%e: f32):
    %n = arith.negf %e : f32
    harp.yield %n : f32
  } : tensor<4xf32>
  %bb = harp.view %a <(d0, d1) -> (d1)> : tensor<4xf32> -> tensor<3x4xf32>
  %s = harp.map_reduce ins(%x, %bb : tensor<3x4xf32>, tensor<3x4xf32>) {
  ^bb0(%p: f32, %q: f32):
    %r = arith.addf %p, %q : f32
    harp.yield %r : f32
  } : tensor<3x4xf32>
  return %s : tensor<3x4xf32>
}

// -----

// Not into a contraction through a broadcast: relu(h + b) read by a matmul
// (broadcast along the matmul's 10 columns) would be recomputed per column
// and hide the matmul from harp-vectorize's register tiles. The bias add
// still fuses into the relu; a producer read without a broadcast (the
// squares of a dot product) still fuses into its sum of products.
// CHECK-LABEL: func.func @into_contraction
// CHECK-SAME: (%[[H:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>, %[[W:.*]]: tensor<8x10xf32>, %[[U:.*]]: tensor<16xf32>, %[[V:.*]]: tensor<16xf32>)
// CHECK: %[[RELU:.*]] = harp.map_reduce ins(%[[H]], %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: harp.view %[[RELU]]
// CHECK: harp.map_reduce
// CHECK: arith.mulf
// CHECK: } reduce(sum, dims = [2]) : tensor<4x10xf32>
// CHECK: harp.map_reduce ins(%[[V]], %[[U]] : tensor<16xf32>, tensor<16xf32>)
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK: } reduce(sum, dims = [0]) : tensor<f32>
// CHECK-NOT: harp.map_reduce
func.func @into_contraction(%h: tensor<4x8xf32>, %b: tensor<8xf32>, %w: tensor<8x10xf32>,
                            %u: tensor<16xf32>, %v: tensor<16xf32>) -> (tensor<4x10xf32>, tensor<f32>) {
  %bb = harp.view %b <(d0, d1) -> (d1)> : tensor<8xf32> -> tensor<4x8xf32>
  %s = harp.map_reduce ins(%h, %bb : tensor<4x8xf32>, tensor<4x8xf32>) {
  ^bb0(%p: f32, %q: f32):
    %r = arith.addf %p, %q : f32
    harp.yield %r : f32
  } : tensor<4x8xf32>
  %a = harp.map_reduce ins(%s : tensor<4x8xf32>) {
  ^bb0(%p: f32):
    %z = arith.constant 0.0 : f32
    %r = arith.maximumf %p, %z : f32
    harp.yield %r : f32
  } : tensor<4x8xf32>
  %av = harp.view %a <(d0, d1, d2) -> (d0, d2)> : tensor<4x8xf32> -> tensor<4x10x8xf32>
  %wv = harp.view %w <(d0, d1, d2) -> (d2, d1)> : tensor<8x10xf32> -> tensor<4x10x8xf32>
  %m = harp.map_reduce ins(%av, %wv : tensor<4x10x8xf32>, tensor<4x10x8xf32>) {
  ^bb0(%p: f32, %q: f32):
    %r = arith.mulf %p, %q : f32
    harp.yield %r : f32
  } reduce(sum, dims = [2]) : tensor<4x10xf32>
  %sq = harp.map_reduce ins(%u : tensor<16xf32>) {
  ^bb0(%p: f32):
    %r = arith.mulf %p, %p : f32
    harp.yield %r : f32
  } : tensor<16xf32>
  %dot = harp.map_reduce ins(%sq, %v : tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%p: f32, %q: f32):
    %r = arith.mulf %p, %q : f32
    harp.yield %r : f32
  } reduce(sum, dims = [0]) : tensor<f32>
  return %m, %dot : tensor<4x10xf32>, tensor<f32>
}

// -----

// Through a pad (a masked view): the operand is read through the same map
// and mask, and the producer's value is replaced by the pad where the mask
// is false, so relu's result still reads -inf at the border. The operand's
// own pad is never observed; it is one, on which no op traps or gives NaN.
// CHECK-LABEL: func.func @through_pad
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[V:.*]] = harp.view %[[X]] <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = one> : tensor<4xf32> -> tensor<6xf32>
// CHECK: harp.map_reduce ins(%[[V]] : tensor<6xf32>) {
// CHECK: ^bb0(%[[A:.*]]: f32):
// CHECK-DAG: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[RELU:.*]] = arith.maximumf %[[A]]
// CHECK-DAG: harp.index 0
// CHECK: %[[IN:.*]] = arith.andi
// CHECK: %[[SEL:.*]] = arith.select %[[IN]], %[[RELU]], %[[NEG]] : f32
// CHECK: } reduce(max, dims = [0]) : tensor<f32>
func.func @through_pad(%x: tensor<4xf32>) -> tensor<f32> {
  %a = harp.map_reduce ins(%x : tensor<4xf32>) {
  ^bb0(%e: f32):
    %z = arith.constant 0.0 : f32
    %r = arith.maximumf %e, %z : f32
    harp.yield %r : f32
  } : tensor<4xf32>
  %p = harp.view %a <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = -inf> : tensor<4xf32> -> tensor<6xf32>
  %m = harp.map_reduce ins(%p : tensor<6xf32>) {
  ^bb0(%e: f32):
    harp.yield %e : f32
  } reduce(max, dims = [0]) : tensor<f32>
  return %m : tensor<f32>
}

// -----

// A producer using harp.index, read through a flip: its index becomes the
// flipped consumer index.
// CHECK-LABEL: func.func @index_through_flip
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C:.*]] = arith.constant -1 : index
// CHECK: %[[I:.*]] = harp.index 0
// CHECK: %[[M:.*]] = arith.muli %[[I]], %[[C]] : index
// CHECK: %[[J:.*]] = arith.addi %[[M]], %[[C4]] : index
// CHECK: %[[V:.*]] = arith.index_cast %[[J]] : index to i64
// CHECK: arith.muli %[[V]], %[[V]] : i64
func.func @index_through_flip() -> tensor<5xi64> {
  %a = harp.map_reduce {
    %i = harp.index 0
    %v = arith.index_cast %i : index to i64
    harp.yield %v : i64
  } : tensor<5xi64>
  %f = harp.view %a <(d0) -> (4 - d0)> : tensor<5xi64> -> tensor<5xi64>
  %b = harp.map_reduce ins(%f : tensor<5xi64>) {
  ^bb0(%e: i64):
    %sq = arith.muli %e, %e : i64
    harp.yield %sq : i64
  } : tensor<5xi64>
  return %b : tensor<5xi64>
}

// -----

// contiguous is a barrier.
// CHECK-LABEL: func.func @contiguous_barrier
// CHECK: harp.map_reduce
// CHECK: harp.contiguous
// CHECK: harp.map_reduce
func.func @contiguous_barrier(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = harp.map_reduce ins(%x : tensor<8xf32>) {
  ^bb0(%v: f32):
    %e = math.exp %v : f32
    harp.yield %e : f32
  } : tensor<8xf32>
  %c = harp.contiguous %a : tensor<8xf32>
  %b = harp.map_reduce ins(%c : tensor<8xf32>) {
  ^bb0(%v: f32):
    %n = arith.negf %v : f32
    harp.yield %n : f32
  } : tensor<8xf32>
  return %b : tensor<8xf32>
}

// -----

// max-operands bounds the fused op's distinct operands.
// CHECK-LABEL: func.func @many_operands
// CHECK-COUNT-1: harp.map_reduce
// CHECK-NOT: harp.map_reduce
// FEWOPS-LABEL: func.func @many_operands
// FEWOPS-COUNT-2: harp.map_reduce
func.func @many_operands(%x: tensor<8xf32>, %y: tensor<8xf32>, %z: tensor<8xf32>) -> tensor<8xf32> {
  %a = harp.map_reduce ins(%x, %y : tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%p: f32, %q: f32):
    %s = arith.addf %p, %q : f32
    harp.yield %s : f32
  } : tensor<8xf32>
  %b = harp.map_reduce ins(%a, %z : tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%p: f32, %q: f32):
    %s = arith.mulf %p, %q : f32
    harp.yield %s : f32
  } : tensor<8xf32>
  return %b : tensor<8xf32>
}

// -----

// A producer without operands cannot fuse into a reduction: the fused op
// would have nothing to define its iteration domain.
// CHECK-LABEL: func.func @operandless_into_reduction
// CHECK-COUNT-2: harp.map_reduce
func.func @operandless_into_reduction() -> tensor<f32> {
  %a = harp.map_reduce {
    %i = harp.index 0
    %v = arith.index_cast %i : index to i32
    %f = arith.sitofp %v : i32 to f32
    harp.yield %f : f32
  } : tensor<8xf32>
  %s = harp.map_reduce ins(%a : tensor<8xf32>) {
  ^bb0(%v: f32):
    harp.yield %v : f32
  } reduce(sum, dims = [0]) : tensor<f32>
  return %s : tensor<f32>
}

// -----

// A convolution's input gradient as autodiff writes it: the product summed
// over the output channels (a column tensor), folded onto the padded image
// by a sum over the window, then cropped. The fold of the contraction is
// one contraction over (ky, kx, oc), reading the output gradient through a
// window with the fold's mask (the filter unmasked), computed on the
// cropped image only: a convolution, and no column tensor.
// CHECK-LABEL: func.func @conv_input_gradient
// CHECK-DAG: %[[W:.*]] = harp.view %arg0 <(d0, d1, d2, d3, d4, d5, d6) -> (d6, d1, d4, d5)>
// CHECK-DAG: %[[G:.*]] = harp.view %arg1 <(d0, d1, d2, d3, d4, d5, d6) -> (d0, d6, d2 - d4 + 1, d3 - d5 + 1), mask_ge = (d0, d1, d2, d3, d4, d5, d6) -> (d2 - d4 + 1, -d2 + d4 + 3, d3 - d5 + 1, -d3 + d5 + 3)>
// CHECK: %[[R:.*]] = harp.map_reduce ins(%[[W]], %[[G]] : tensor<2x3x5x5x3x3x4xf32>, tensor<2x3x5x5x3x3x4xf32>)
// CHECK: arith.mulf
// CHECK: reduce(sum, dims = [4, 5, 6]) : tensor<2x3x5x5xf32>
// CHECK-NOT: harp.map_reduce
// CHECK: return %[[R]]
func.func @conv_input_gradient(%w: tensor<4x3x3x3xf32>, %g: tensor<2x4x5x5xf32>) -> tensor<2x3x5x5xf32> {
  %wv = harp.view %w <(d0, d1, d2, d3, d4, d5, d6) -> (d6, d1, d4, d5)> : tensor<4x3x3x3xf32> -> tensor<2x3x5x5x3x3x4xf32>
  %gv = harp.view %g <(d0, d1, d2, d3, d4, d5, d6) -> (d0, d6, d2, d3)> : tensor<2x4x5x5xf32> -> tensor<2x3x5x5x3x3x4xf32>
  %col = harp.map_reduce ins(%wv, %gv : tensor<2x3x5x5x3x3x4xf32>, tensor<2x3x5x5x3x3x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %b, %a : f32
    harp.yield %m : f32
  } reduce(sum, dims = [6]) : tensor<2x3x5x5x3x3xf32>
  %fold = harp.view %col <(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 - d4, d3 - d5, d4, d5), mask_ge = (d0, d1, d2, d3, d4, d5) -> (d2 - d4, -d2 + d4 + 4, d3 - d5, -d3 + d5 + 4)> : tensor<2x3x5x5x3x3xf32> -> tensor<2x3x7x7x3x3xf32>
  %padded = harp.map_reduce ins(%fold : tensor<2x3x7x7x3x3xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [4, 5]) : tensor<2x3x7x7xf32>
  %image = harp.view %padded <(d0, d1, d2, d3) -> (d0, d1, d2 + 1, d3 + 1)> : tensor<2x3x7x7xf32> -> tensor<2x3x5x5xf32>
  return %image : tensor<2x3x5x5xf32>
}

// -----

// A sum over windows of a convolution's output (pooling, `2 y + ky`) may read
// an element more than once: fused, the convolution would be recomputed for
// each window. It stays.
// CHECK-LABEL: func.func @sum_pool_of_convolution_stays
// CHECK-COUNT-2: harp.map_reduce
func.func @sum_pool_of_convolution_stays(%x: tensor<1x2x6x6xf32>, %w: tensor<3x2x1x1xf32>) -> tensor<1x3x3x3xf32> {
  %xv = harp.view %x <(d0, d1, d2, d3, d4) -> (d0, d4, d2, d3)> : tensor<1x2x6x6xf32> -> tensor<1x3x6x6x2xf32>
  %wv = harp.view %w <(d0, d1, d2, d3, d4) -> (d1, d4, 0, 0)> : tensor<3x2x1x1xf32> -> tensor<1x3x6x6x2xf32>
  %conv = harp.map_reduce ins(%xv, %wv : tensor<1x3x6x6x2xf32>, tensor<1x3x6x6x2xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    harp.yield %m : f32
  } reduce(sum, dims = [4]) : tensor<1x3x6x6xf32>
  %windows = harp.view %conv <(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)> : tensor<1x3x6x6xf32> -> tensor<1x3x3x3x2x2xf32>
  %pool = harp.map_reduce ins(%windows : tensor<1x3x3x3x2x2xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [4, 5]) : tensor<1x3x3x3xf32>
  return %pool : tensor<1x3x3x3xf32>
}

// -----

// A plain sum over a contraction's result dim (a matmul's row sum) is not a
// fold: the matmul keeps its register tiles.
// CHECK-LABEL: func.func @matmul_row_sum_stays
// CHECK-COUNT-2: harp.map_reduce
func.func @matmul_row_sum_stays(%a: tensor<4x6xf32>, %b: tensor<6x5xf32>) -> tensor<4xf32> {
  %av = harp.view %a <(d0, d1, d2) -> (d0, d2)> : tensor<4x6xf32> -> tensor<4x5x6xf32>
  %bv = harp.view %b <(d0, d1, d2) -> (d2, d1)> : tensor<6x5xf32> -> tensor<4x5x6xf32>
  %mm = harp.map_reduce ins(%av, %bv : tensor<4x5x6xf32>, tensor<4x5x6xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<4x5xf32>
  %s = harp.map_reduce ins(%mm : tensor<4x5xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// A map_reduce read only through a unit-stride slice computes the slice:
// its domain shrinks and its operands are read at the offsets.
// CHECK-LABEL: func.func @slice_of_reduction
// CHECK: %[[X:.*]] = harp.view %arg0 <(d0, d1) -> (d0 + 2, d1)> : tensor<9x4xf32> -> tensor<5x4xf32>
// CHECK: harp.map_reduce ins(%[[X]] : tensor<5x4xf32>)
// CHECK: reduce(sum, dims = [1]) : tensor<5xf32>
// CHECK-NOT: harp.view
func.func @slice_of_reduction(%x: tensor<9x4xf32>) -> tensor<5xf32> {
  %s = harp.map_reduce ins(%x : tensor<9x4xf32>) {
  ^bb0(%v: f32):
    %e = math.exp %v : f32
    harp.yield %e : f32
  } reduce(sum, dims = [1]) : tensor<9xf32>
  %t = harp.view %s <(d0) -> (d0 + 2)> : tensor<9xf32> -> tensor<5xf32>
  return %t : tensor<5xf32>
}

// -----

// Read twice, it stays whole.
// CHECK-LABEL: func.func @slice_of_shared_reduction
// CHECK: reduce(sum, dims = [1]) : tensor<9xf32>
func.func @slice_of_shared_reduction(%x: tensor<9x4xf32>) -> (tensor<5xf32>, tensor<9xf32>) {
  %s = harp.map_reduce ins(%x : tensor<9x4xf32>) {
  ^bb0(%v: f32):
    harp.yield %v : f32
  } reduce(sum, dims = [1]) : tensor<9xf32>
  %t = harp.view %s <(d0) -> (d0 + 2)> : tensor<9xf32> -> tensor<5xf32>
  return %t, %s : tensor<5xf32>, tensor<9xf32>
}

// -----

// A producer read by a contraction through overlapping windows (a
// convolution's input gradient reading the output gradient as `h - k`) is
// not fused: it would be computed once per tap, and the contraction would
// no longer be a product of two operands for harp-vectorize to tile.
// CHECK-LABEL: func.func @no_fusion_through_windows_into_contraction
// CHECK: %[[G:.*]] = harp.map_reduce ins(%arg0, %arg2
// CHECK: arith.mulf
// CHECK: %[[V:.*]] = harp.view %[[G]]
// CHECK: harp.map_reduce ins(%[[V]], %{{.*}} :
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT: arith.mulf %[[A]], %[[B]]
// CHECK-NEXT: harp.yield
// CHECK: reduce(sum, dims = [2])
func.func @no_fusion_through_windows_into_contraction(%dy: tensor<2x8xf32>, %w: tensor<3xf32>, %s: tensor<2x8xf32>) -> tensor<2x10xf32> {
  %g = harp.map_reduce ins(%dy, %s : tensor<2x8xf32>, tensor<2x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    harp.yield %m : f32
  } : tensor<2x8xf32>
  %gv = harp.view %g <(n, h, k) -> (n, h - k), mask_ge = (n, h, k) -> (h - k, -h + k + 7)> : tensor<2x8xf32> -> tensor<2x10x3xf32>
  %wv = harp.view %w <(n, h, k) -> (k)> : tensor<3xf32> -> tensor<2x10x3xf32>
  %dx = harp.map_reduce ins(%gv, %wv : tensor<2x10x3xf32>, tensor<2x10x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    harp.yield %m : f32
  } reduce(sum, dims = [2]) : tensor<2x10xf32>
  return %dx : tensor<2x10xf32>
}

// -----

// Read through overlapping windows by a reduction (a max pool), a producer
// would be computed once per tap, even where the pool is its only reader
// (its work would not move but be copied per tap): it is not fused. An
// element-wise consumer reading it through the same windows recomputes it
// under the recompute bound.
// CHECK-LABEL: func.func @windows_recompute
// CHECK: %[[E:.*]] = harp.map_reduce ins(%arg0 : tensor<10xf32>)
// CHECK: math.exp
// CHECK: %[[V:.*]] = harp.view %[[E]]
// CHECK: harp.map_reduce ins(%[[V]] : tensor<8x3xf32>)
// CHECK-NOT: math.exp
// CHECK: reduce(max, dims = [1])
// CHECK: harp.map_reduce ins(%{{.*}} : tensor<8x3xf32>)
// CHECK: math.exp
// CHECK: math.sqrt
// NORECOMPUTE-LABEL: func.func @windows_recompute
// NORECOMPUTE-COUNT-3: harp.map_reduce
func.func @windows_recompute(%x: tensor<10xf32>) -> (tensor<8xf32>, tensor<8x3xf32>) {
  %r = harp.map_reduce ins(%x : tensor<10xf32>) {
  ^bb0(%a: f32):
    %e = math.exp %a : f32
    harp.yield %e : f32
  } : tensor<10xf32>
  %rv = harp.view %r <(o, k) -> (o + k)> : tensor<10xf32> -> tensor<8x3xf32>
  %p = harp.map_reduce ins(%rv : tensor<8x3xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(max, dims = [1]) : tensor<8xf32>
  %q = harp.map_reduce ins(%rv : tensor<8x3xf32>) {
  ^bb0(%a: f32):
    %s = math.sqrt %a : f32
    harp.yield %s : f32
  } : tensor<8x3xf32>
  return %p, %q : tensor<8xf32>, tensor<8x3xf32>
}

// -----

// A producer another kernel reads too (here a matmul, into which nothing is
// fused through a broadcast) is computed anyway: a reduction recomputes it
// only from at most one operand of its own. The concatenation of %a and %b
// (two masked views, added) stays for the sum over rows, which reads it;
// the one-operand producer %d (twice %a) is recomputed in its sum.
// CHECK-LABEL: func.func @shared_producer_into_reduction
// CHECK: %[[CAT:.*]] = harp.map_reduce ins(%{{.*}}, %{{.*}} : tensor<4x6xf32>, tensor<4x6xf32>)
// CHECK: harp.map_reduce ins(%{{.*}}, %{{.*}} : tensor<4x6x5xf32>, tensor<4x6x5xf32>)
// CHECK: harp.map_reduce ins(%[[CAT]] : tensor<4x6xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: harp.yield
// CHECK: reduce(sum, dims = [0]) : tensor<6xf32>
// CHECK: harp.map_reduce ins(%arg0 : tensor<4x3xf32>)
// CHECK: } : tensor<4x3xf32>
// CHECK: harp.map_reduce ins(%arg0 : tensor<4x3xf32>)
// CHECK: arith.mulf
// CHECK: reduce(sum, dims = [0]) : tensor<3xf32>
func.func @shared_producer_into_reduction(%a: tensor<4x3xf32>, %b: tensor<4x3xf32>, %w: tensor<6x5xf32>)
    -> (tensor<4x5xf32>, tensor<6xf32>, tensor<4x3xf32>, tensor<3xf32>) {
  %av = harp.view %a <(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (-d1 + 2)> : tensor<4x3xf32> -> tensor<4x6xf32>
  %bv = harp.view %b <(d0, d1) -> (d0, d1 - 3), mask_ge = (d0, d1) -> (d1 - 3)> : tensor<4x3xf32> -> tensor<4x6xf32>
  %cat = harp.map_reduce ins(%av, %bv : tensor<4x6xf32>, tensor<4x6xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    harp.yield %s : f32
  } : tensor<4x6xf32>
  %cb = harp.view %cat <(d0, d1, d2) -> (d0, d1)> : tensor<4x6xf32> -> tensor<4x6x5xf32>
  %wb = harp.view %w <(d0, d1, d2) -> (d1, d2)> : tensor<6x5xf32> -> tensor<4x6x5xf32>
  %mm = harp.map_reduce ins(%cb, %wb : tensor<4x6x5xf32>, tensor<4x6x5xf32>) {
  ^bb0(%x: f32, %y: f32):
    %p = arith.mulf %x, %y : f32
    harp.yield %p : f32
  } reduce(sum, dims = [1]) : tensor<4x5xf32>
  %colsum = harp.map_reduce ins(%cat : tensor<4x6xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = [0]) : tensor<6xf32>
  %d = harp.map_reduce ins(%a : tensor<4x3xf32>) {
  ^bb0(%x: f32):
    %two = arith.constant 2.0 : f32
    %m = arith.mulf %x, %two : f32
    harp.yield %m : f32
  } : tensor<4x3xf32>
  %dsum = harp.map_reduce ins(%d : tensor<4x3xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = [0]) : tensor<3xf32>
  return %mm, %colsum, %d, %dsum : tensor<4x5xf32>, tensor<6xf32>, tensor<4x3xf32>, tensor<3xf32>
}

// -----

// A producer that a reduction keeps a kernel of its own (two full-size
// operands: the sum would read both) is read by an element-wise consumer
// through a transpose, not recomputed there from its operands (which would
// read two tensors in the transposed order for the one it saves). The
// one-operand producer %d (%a scaled by a row statistic) is still
// recomputed in its element-wise reader (it reads no more than its result)
// and then moves into its sum. With recompute-read-slack=100 (operands
// holding twice the result's elements are allowed), %p is recomputed in
// the transposed reader too.
// SLACK-LABEL: func.func @kept_producer_not_recomputed
// SLACK-SAME: (%[[A:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<4x3xf32>
// SLACK-DAG: %[[AT:.*]] = harp.view %[[A]] <(d0, d1) -> (d1, d0)> : tensor<4x3xf32> -> tensor<3x4xf32>
// SLACK-DAG: %[[BT:.*]] = harp.view %[[B]] <(d0, d1) -> (d1, d0)> : tensor<4x3xf32> -> tensor<3x4xf32>
// SLACK: harp.map_reduce ins(%[[AT]], %[[BT]] : tensor<3x4xf32>, tensor<3x4xf32>)
// SLACK-NEXT: ^bb0
// SLACK-NEXT: arith.addf
// SLACK-NEXT: math.exp
// CHECK-LABEL: func.func @kept_producer_not_recomputed
// CHECK-SAME: (%[[A:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<4x3xf32>, %[[R:.*]]: tensor<4x1xf32>
// CHECK: %[[P:.*]] = harp.map_reduce ins(%[[A]], %[[B]] : tensor<4x3xf32>, tensor<4x3xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.addf
// CHECK-NEXT: harp.yield
// CHECK-NEXT: } : tensor<4x3xf32>
// CHECK: harp.map_reduce ins(%[[P]] : tensor<4x3xf32>)
// CHECK: reduce(sum, dims = [0]) : tensor<3xf32>
// CHECK: %[[PT:.*]] = harp.view %[[P]] <(d0, d1) -> (d1, d0)> : tensor<4x3xf32> -> tensor<3x4xf32>
// CHECK: harp.map_reduce ins(%[[PT]] : tensor<3x4xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: math.exp
// CHECK: harp.map_reduce ins(%[[A]], %{{.*}} : tensor<4x3xf32>, tensor<4x3xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: harp.yield
// CHECK-NEXT: } reduce(sum, dims = [0]) : tensor<3xf32>
// CHECK: harp.map_reduce ins(%[[A]], %{{.*}} : tensor<4x3xf32>, tensor<4x3xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: math.exp
// CHECK: } : tensor<4x3xf32>
func.func @kept_producer_not_recomputed(%a: tensor<4x3xf32>, %b: tensor<4x3xf32>, %r: tensor<4x1xf32>)
    -> (tensor<3xf32>, tensor<3x4xf32>, tensor<3xf32>, tensor<4x3xf32>) {
  %p = harp.map_reduce ins(%a, %b : tensor<4x3xf32>, tensor<4x3xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    harp.yield %s : f32
  } : tensor<4x3xf32>
  %colsum = harp.map_reduce ins(%p : tensor<4x3xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = [0]) : tensor<3xf32>
  %pt = harp.view %p <(d0, d1) -> (d1, d0)> : tensor<4x3xf32> -> tensor<3x4xf32>
  %e = harp.map_reduce ins(%pt : tensor<3x4xf32>) {
  ^bb0(%x: f32):
    %y = math.exp %x : f32
    harp.yield %y : f32
  } : tensor<3x4xf32>
  %rb = harp.view %r <(d0, d1) -> (d0, 0)> : tensor<4x1xf32> -> tensor<4x3xf32>
  %d = harp.map_reduce ins(%a, %rb : tensor<4x3xf32>, tensor<4x3xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %y : f32
    harp.yield %m : f32
  } : tensor<4x3xf32>
  %dsum = harp.map_reduce ins(%d : tensor<4x3xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = [0]) : tensor<3xf32>
  %de = harp.map_reduce ins(%d : tensor<4x3xf32>) {
  ^bb0(%x: f32):
    %y = math.exp %x : f32
    harp.yield %y : f32
  } : tensor<4x3xf32>
  return %colsum, %e, %dsum, %de : tensor<3xf32>, tensor<3x4xf32>, tensor<3xf32>, tensor<4x3xf32>
}

// -----

// The phases of a stride-2 window's gradient (harp-autodiff): two sums
// fold the column tensor of a convolution's input gradient, one over the
// even taps (`2 t`), one over the odd ones (`2 t + 1`). Together they read
// each column element once, so the contraction is fused into both: two
// convolutions, no column tensor.
// CHECK-LABEL: func.func @phases_of_a_contraction
// CHECK-COUNT-2: reduce(sum, dims = [2, 3])
// CHECK-NOT: harp.map_reduce
// CHECK: harp.concat
func.func @phases_of_a_contraction(%w: tensor<4x3xf32>, %g: tensor<2x4x5xf32>) -> tensor<2x2x6xf32> {
  %wv = harp.view %w <(n, c, o, k) -> (k, o)> : tensor<4x3xf32> -> tensor<2x5x3x4xf32>
  %gv = harp.view %g <(n, c, o, k) -> (n, k, c)> : tensor<2x4x5xf32> -> tensor<2x5x3x4xf32>
  %col = harp.map_reduce ins(%wv, %gv : tensor<2x5x3x4xf32>, tensor<2x5x3x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %b, %a : f32
    harp.yield %m : f32
  } reduce(sum, dims = [3]) : tensor<2x5x3xf32>
  %even = harp.view %col <(n, m, t) -> (n, m - t, t * 2), mask_ge = (n, m, t) -> (m - t, -m + t + 4)> : tensor<2x5x3xf32> -> tensor<2x6x2xf32>
  %e = harp.map_reduce ins(%even : tensor<2x6x2xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [2]) : tensor<2x6xf32>
  %odd = harp.view %col <(n, m, t) -> (n, m - t, t * 2 + 1), mask_ge = (n, m, t) -> (m - t, -m + t + 4)> : tensor<2x5x3xf32> -> tensor<2x6x1xf32>
  %o = harp.map_reduce ins(%odd : tensor<2x6x1xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [2]) : tensor<2x6xf32>
  %e1 = harp.view %e <(p, n, m) -> (n, m)> : tensor<2x6xf32> -> tensor<1x2x6xf32>
  %o1 = harp.view %o <(p, n, m) -> (n, m)> : tensor<2x6xf32> -> tensor<1x2x6xf32>
  %r = harp.concat dim(0) %e1, %o1 : (tensor<1x2x6xf32>, tensor<1x2x6xf32>) -> tensor<2x2x6xf32>
  return %r : tensor<2x2x6xf32>
}

// -----

// Two sums reading the same taps of a contraction (both `2 t`) would each
// compute it again: the contraction stays a kernel of its own.
// CHECK-LABEL: func.func @overlapping_folds_of_a_contraction_stay
// CHECK-COUNT-3: harp.map_reduce
func.func @overlapping_folds_of_a_contraction_stay(%w: tensor<4x3xf32>, %g: tensor<2x4x5xf32>) -> (tensor<2x6xf32>, tensor<2x6xf32>) {
  %wv = harp.view %w <(n, c, o, k) -> (k, o)> : tensor<4x3xf32> -> tensor<2x5x3x4xf32>
  %gv = harp.view %g <(n, c, o, k) -> (n, k, c)> : tensor<2x4x5xf32> -> tensor<2x5x3x4xf32>
  %col = harp.map_reduce ins(%wv, %gv : tensor<2x5x3x4xf32>, tensor<2x5x3x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %b, %a : f32
    harp.yield %m : f32
  } reduce(sum, dims = [3]) : tensor<2x5x3xf32>
  %f1 = harp.view %col <(n, m, t) -> (n, m - t, t * 2), mask_ge = (n, m, t) -> (m - t, -m + t + 4)> : tensor<2x5x3xf32> -> tensor<2x6x2xf32>
  %a = harp.map_reduce ins(%f1 : tensor<2x6x2xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = [2]) : tensor<2x6xf32>
  %f2 = harp.view %col <(n, m, t) -> (n, m - t, t * 2), mask_ge = (n, m, t) -> (m - t, -m + t + 4)> : tensor<2x5x3xf32> -> tensor<2x6x2xf32>
  %b = harp.map_reduce ins(%f2 : tensor<2x6x2xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = [2]) : tensor<2x6xf32>
  return %a, %b : tensor<2x6xf32>, tensor<2x6xf32>
}

// -----

// An element-wise producer (a depthwise convolution's column tensor, the
// output gradient times the filter) read by the two phases of a stride-2
// window's gradient, each reading its own taps: fused into both, computed
// once in all; none of it left as a kernel of its own.
// CHECK-LABEL: func.func @phases_of_an_elementwise_producer
// CHECK: harp.map_reduce ins(%{{.*}}, %{{.*}} : tensor<6x2xf32>, tensor<6x2xf32>)
// CHECK: arith.mulf
// CHECK: reduce(sum, dims = [1]) : tensor<6xf32>
// CHECK: harp.map_reduce ins(%{{.*}}, %{{.*}} : tensor<6x1xf32>, tensor<6x1xf32>)
// CHECK: arith.mulf
// CHECK: reduce(sum, dims = [1]) : tensor<6xf32>
// CHECK-NOT: harp.map_reduce
func.func @phases_of_an_elementwise_producer(%g: tensor<5xf32>, %w: tensor<3xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %gv = harp.view %g <(o, k) -> (o)> : tensor<5xf32> -> tensor<5x3xf32>
  %wv = harp.view %w <(o, k) -> (k)> : tensor<3xf32> -> tensor<5x3xf32>
  %col = harp.map_reduce ins(%gv, %wv : tensor<5x3xf32>, tensor<5x3xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    harp.yield %m : f32
  } : tensor<5x3xf32>
  %even = harp.view %col <(m, t) -> (m - t, t * 2), mask_ge = (m, t) -> (m - t, -m + t + 4)> : tensor<5x3xf32> -> tensor<6x2xf32>
  %e = harp.map_reduce ins(%even : tensor<6x2xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : tensor<6xf32>
  %odd = harp.view %col <(m, t) -> (m - t, t * 2 + 1), mask_ge = (m, t) -> (m - t, -m + t + 4)> : tensor<5x3xf32> -> tensor<6x1xf32>
  %o = harp.map_reduce ins(%odd : tensor<6x1xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } reduce(sum, dims = [1]) : tensor<6xf32>
  return %e, %o : tensor<6xf32>, tensor<6xf32>
}
