// RUN: harp-opt %s --harp-function-abi | FileCheck %s

// CHECK-LABEL: func.func @public
// CHECK-SAME: (%{{.*}}: tensor<4xf32> {bufferization.writable = false}, %{{.*}}: f32)
// CHECK-SAME: attributes {llvm.emit_c_interface}
func.func @public(%x: tensor<4xf32>, %s: f32) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// Private functions and declarations are not entry points.
// CHECK-LABEL: func.func private @helper
// CHECK-NOT: emit_c_interface
// CHECK-SAME: {
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
