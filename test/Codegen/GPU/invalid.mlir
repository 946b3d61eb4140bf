// RUN: harp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(harp-gpu-kernels,harp-gpu-host))'
// RUN: not harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-gpu-kernels{block-size=2048}))' 2>&1 | FileCheck %s --check-prefix=BLOCK

// RUN: not harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-gpu-kernels{elements-per-thread=0}))' 2>&1 | FileCheck %s --check-prefix=PER-THREAD
// RUN: not harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-gpu-kernels{elements-per-thread=17}))' 2>&1 | FileCheck %s --check-prefix=PER-THREAD17
// RUN: not harp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(harp-gpu-host))' 2>&1 | FileCheck %s --check-prefix=HOST

// BLOCK: block-size must be in [32, 1024], got 2048
// PER-THREAD: elements-per-thread must be in [1, 16], got 0
// PER-THREAD17: elements-per-thread must be in [1, 16], got 17

// harp-gpu-host alone: the load is still on the host.
// HOST: invalid.mlir:[[# @LINE + 6]]:8: error: harp-gpu-host: 'memref.load' would access device memory on the host (run harp-gpu-kernels first)

// A host op whose result the host needs cannot move to the device.
func.func @scalar_on_host(%x: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{harp-gpu-kernels: cannot run this op on the device: its results are used on the host}}
  %v = memref.load %x[%c0] : memref<4xf32>
  return %v : f32
}

// -----

#id = affine_map<(d0) -> (d0)>
func.func @dynamic(%a: memref<?xf32>, %b: memref<?xf32>) {
  // expected-error @+1 {{harp-gpu-kernels: dynamic loop ranges are not supported on the GPU}}
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<?xf32>) outs(%b : memref<?xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

#id = affine_map<(d0) -> (d0)>
func.func @tensors(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{harp-gpu-kernels: expects a kernel on buffers (run after bufferization)}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%a : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @dynamic_view(%x: memref<?x4xf32, strided<[?, 1]>>, %out: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{harp-gpu-host: a kernel reads a view with a dynamic layout: 'memref<?x4xf32, strided<[?, 1]>>'}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%a = %c1, %b = %c1, %c = %c1) {
    %v = memref.load %x[%tx, %ty] : memref<?x4xf32, strided<[?, 1]>>
    memref.store %v, %out[%tx] : memref<4xf32>
    gpu.terminator
  }
  return
}

// -----

// A constant buffer as a function's result: results are out-parameters,
// and the device copy the host would pass is freed before returning.
memref.global "private" constant @table : memref<4xf32> = dense<1.0>
func.func @returns_constant() -> memref<4xf32> {
  %g = memref.get_global @table : memref<4xf32>
  // expected-error @+1 {{harp-gpu-host: a function returns the constant buffer @table; results are out-parameters}}
  return %g : memref<4xf32>
}
