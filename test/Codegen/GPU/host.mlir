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
