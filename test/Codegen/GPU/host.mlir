// RUN: harp-opt %s --split-input-file --harp-gpu-host | FileCheck %s

// Host allocations are device allocations; a strided view read by a kernel
// is passed as its base buffer and rebuilt inside the kernel.
// CHECK-LABEL: func.func @buffers
// CHECK: %[[TMP:.*]] = gpu.alloc () : memref<16x16xf32>
// CHECK: %[[VIEW:.*]] = memref.subview %[[TMP]][2, 3] [4, 4] [1, 1]
// CHECK: %[[BASE:.*]], %{{.*}}, %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[VIEW]]
// CHECK: gpu.launch
// CHECK-NEXT: %[[REBUILT:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [35], sizes: [4, 4], strides: [16, 1]
// CHECK: memref.load %[[REBUILT]]
// CHECK: gpu.dealloc %[[TMP]] : memref<16x16xf32>
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.dealloc
func.func @buffers(%out: memref<4x4xf32>) {
  %tmp = memref.alloc() : memref<16x16xf32>
  %view = memref.subview %tmp[2, 3] [4, 4] [1, 1] : memref<16x16xf32> to memref<4x4xf32, strided<[16, 1], offset: 35>>
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%a = %c1, %b = %c1, %c = %c1) {
    %v = memref.load %view[%tx, %ty] : memref<4x4xf32, strided<[16, 1], offset: 35>>
    memref.store %v, %out[%tx, %ty] : memref<4x4xf32>
    gpu.terminator
  }
  memref.dealloc %tmp : memref<16x16xf32>
  return
}

// -----

// A constant read by a kernel is read inside it (outlining copies the
// global into the kernel's module); a host use keeps its own.
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
// CHECK-LABEL: func.func @constant
// CHECK-NOT: gpu.alloc
// CHECK: gpu.launch
// CHECK-NEXT: %[[G:.*]] = memref.get_global @table : memref<4xf32>
// CHECK: memref.load %[[G]]
// CHECK: gpu.terminator
// CHECK: gpu.launch
// CHECK-NEXT: %[[G2:.*]] = memref.get_global @table : memref<4xf32>
// CHECK: memref.load %[[G2]]
// CHECK-NOT: memref.get_global
// CHECK: return
func.func @constant(%out: memref<4xf32>, %out2: memref<4xf32>) {
  %g = memref.get_global @table : memref<4xf32>
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%a = %c1, %b = %c1, %c = %c1) {
    %v = memref.load %g[%tx] : memref<4xf32>
    memref.store %v, %out[%tx] : memref<4xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%a = %c1, %b = %c1, %c = %c1) {
    %v = memref.load %g[%tx] : memref<4xf32>
    memref.store %v, %out2[%tx] : memref<4xf32>
    gpu.terminator
  }
  return
}

// -----

// A constant the host passes on (here to a call, directly and through a
// view) is copied to the device, once per call and freed before returning:
// the callee's kernels read it as device memory. A kernel's own read still
// moves inside it.
memref.global "private" constant @seed : memref<f64> = dense<1.0>
memref.global "private" constant @rows : memref<2x4xf64> = dense<1.0>
func.func private @callee(%s: memref<f64>, %r: memref<4xf64, strided<[1], offset: 4>>, %out: memref<4xf64>)
// CHECK-LABEL: func.func @passed_on
// CHECK-DAG: %[[HOST:.*]] = memref.get_global @seed : memref<f64>
// CHECK-DAG: %[[DEV:.*]] = gpu.alloc () : memref<f64>
// CHECK-DAG: gpu.memcpy %[[DEV]], %[[HOST]] : memref<f64>, memref<f64>
// CHECK-DAG: %[[HOSTROWS:.*]] = memref.get_global @rows : memref<2x4xf64>
// CHECK-DAG: %[[DEVROWS:.*]] = gpu.alloc () : memref<2x4xf64>
// CHECK-DAG: gpu.memcpy %[[DEVROWS]], %[[HOSTROWS]] : memref<2x4xf64>, memref<2x4xf64>
// CHECK: gpu.launch
// CHECK-NEXT: %[[G:.*]] = memref.get_global @seed : memref<f64>
// CHECK: memref.load %[[G]][]
// CHECK: gpu.terminator
// CHECK: %[[ROW:.*]] = memref.subview %[[DEVROWS]][1, 0] [1, 4] [1, 1]
// CHECK: call @callee(%[[DEV]], %[[ROW]], %{{.*}})
// CHECK-DAG: gpu.dealloc %[[DEV]] : memref<f64>
// CHECK-DAG: gpu.dealloc %[[DEVROWS]] : memref<2x4xf64>
// CHECK: return
func.func @passed_on(%out: memref<4xf64>, %out2: memref<f64>) {
  %s = memref.get_global @seed : memref<f64>
  %g = memref.get_global @rows : memref<2x4xf64>
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%a = %c1, %b = %c1, %c = %c1) {
    %v = memref.load %s[] : memref<f64>
    memref.store %v, %out2[] : memref<f64>
    gpu.terminator
  }
  %row = memref.subview %g[1, 0] [1, 4] [1, 1] : memref<2x4xf64> to memref<4xf64, strided<[1], offset: 4>>
  call @callee(%s, %row, %out) : (memref<f64>, memref<4xf64, strided<[1], offset: 4>>, memref<4xf64>) -> ()
  return
}

// -----

// A constant passed on inside a host region is copied at the function's
// start, so the copy dominates the free before each return.
memref.global "private" constant @weights : memref<4xf32> = dense<2.0>
func.func private @use(%w: memref<4xf32>, %out: memref<4xf32>)
// CHECK-LABEL: func.func @nested
// CHECK-NEXT: %[[HOST:.*]] = memref.get_global @weights : memref<4xf32>
// CHECK-NEXT: %[[DEV:.*]] = gpu.alloc () : memref<4xf32>
// CHECK-NEXT: gpu.memcpy %[[DEV]], %[[HOST]]
// CHECK-NEXT: scf.if
// CHECK-NEXT: call @use(%[[DEV]], %{{.*}})
// CHECK: gpu.dealloc %[[DEV]]
// CHECK-NEXT: return
func.func @nested(%c: i1, %out: memref<4xf32>) {
  scf.if %c {
    %w = memref.get_global @weights : memref<4xf32>
    func.call @use(%w, %out) : (memref<4xf32>, memref<4xf32>) -> ()
  }
  return
}
