// RUN: harp-opt %s --verify-roundtrip | FileCheck %s
// RUN: harp-opt %s --mlir-print-op-generic | harp-opt | FileCheck %s

// Every harp op and every form of its attributes, printed, parsed back in the
// custom, generic and bytecode forms.

//===----------------------------------------------------------------------===//
// harp.view and #harp.view
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @view_forms
func.func @view_forms(%x: tensor<3x4xf32>, %v: tensor<4xf32>, %s: tensor<f32>,
                      %i: tensor<6xi32>, %b: tensor<4xi1>,
                      %c: tensor<4xcomplex<f32>>) {
  // CHECK: harp.view %{{.*}} <(d0, d1) -> (d1, d0)> : tensor<3x4xf32> -> tensor<4x3xf32>
  %0 = harp.view %x <(d0, d1) -> (d1, d0)> : tensor<3x4xf32> -> tensor<4x3xf32>
  // Broadcast of a row, and of a 0-d tensor.
  // CHECK: harp.view %{{.*}} <(d0, d1) -> (d1)> : tensor<4xf32> -> tensor<8x4xf32>
  %1 = harp.view %v <(d0, d1) -> (d1)> : tensor<4xf32> -> tensor<8x4xf32>
  // CHECK: harp.view %{{.*}} <(d0, d1) -> ()> : tensor<f32> -> tensor<2x3xf32>
  %2 = harp.view %s <(d0, d1) -> ()> : tensor<f32> -> tensor<2x3xf32>
  // Reshape 3x4 -> 2x6 with floordiv and mod; ceildiv is accepted too.
  // CHECK: harp.view %{{.*}} <(d0, d1) -> ((d0 * 6 + d1) floordiv 4, (d0 * 6 + d1) mod 4)>
  %3 = harp.view %x <(d0, d1) -> ((d0 * 6 + d1) floordiv 4, (d0 * 6 + d1) mod 4)>
      : tensor<3x4xf32> -> tensor<2x6xf32>
  // CHECK: harp.view %{{.*}} <(d0) -> (d0 ceildiv 2)> : tensor<4xf32> -> tensor<7xf32>
  %4 = harp.view %v <(d0) -> (d0 ceildiv 2)> : tensor<4xf32> -> tensor<7xf32>
  // Slice with step 2 and flip.
  // CHECK: harp.view %{{.*}} <(d0) -> (d0 * 2 + 1)> : tensor<4xf32> -> tensor<2xf32>
  %5 = harp.view %v <(d0) -> (d0 * 2 + 1)> : tensor<4xf32> -> tensor<2xf32>
  // CHECK: harp.view %{{.*}} <(d0) -> (-d0 + 3)> : tensor<4xf32> -> tensor<4xf32>
  %6 = harp.view %v <(d0) -> (3 - d0)> : tensor<4xf32> -> tensor<4xf32>
  // Pads of each kind.
  // CHECK: harp.view %{{.*}} <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4)> : tensor<4xf32> -> tensor<6xf32>
  %7 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4)>
      : tensor<4xf32> -> tensor<6xf32>
  // CHECK: mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = one>
  %8 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = one>
      : tensor<4xf32> -> tensor<6xf32>
  // CHECK: mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = -inf>
  %9 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = -inf>
      : tensor<4xf32> -> tensor<6xf32>
  // CHECK: mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = +inf>
  %10 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = +inf>
      : tensor<4xf32> -> tensor<6xf32>
  // CHECK: mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = 2.500000e-01>
  %11 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = 0.25>
      : tensor<4xf32> -> tensor<6xf32>
  // CHECK: mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = -7>
  %12 = harp.view %i <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = -7>
      : tensor<6xi32> -> tensor<6xi32>
  // CHECK: mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = -inf>
  %13 = harp.view %b <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = -inf>
      : tensor<4xi1> -> tensor<6xi1>
  // CHECK: mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = one>
  %14 = harp.view %c <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = one>
      : tensor<4xcomplex<f32>> -> tensor<6xcomplex<f32>>
  // i64 bit patterns above 2^63 - 1 are their two's complement.
  // CHECK: harp.view %{{.*}} mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = -1> : tensor<6xi32> -> tensor<6xi32>
  %21 = harp.view %i <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = 18446744073709551615>
      : tensor<6xi32> -> tensor<6xi32>
  // Explicit `pad = zero` is the default and is not printed.
  // CHECK: harp.view %{{.*}} <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4)> : tensor<4xf32> -> tensor<6xf32>
  %15 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1, -d0 + 4), pad = zero>
      : tensor<4xf32> -> tensor<6xf32>
  // Lower triangle (tril), and an equality mask (zero-stuffing for a stride-2
  // transposed convolution).
  // CHECK: harp.view %{{.*}} <(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d0 - d1), pad = -inf>
  %16 = harp.view %x <(d0, d1) -> (d0, d1), mask_ge = (d0, d1) -> (d0 - d1), pad = -inf>
      : tensor<3x4xf32> -> tensor<3x4xf32>
  // CHECK: harp.view %{{.*}} <(d0) -> (d0 floordiv 2), mask_eq = (d0) -> (d0 mod 2)> : tensor<4xf32> -> tensor<7xf32>
  %17 = harp.view %v <(d0) -> (d0 floordiv 2), mask_eq = (d0) -> (d0 mod 2)>
      : tensor<4xf32> -> tensor<7xf32>
  // Both kinds of constraint.
  // CHECK: harp.view %{{.*}} <(d0) -> (d0 floordiv 2 - 1), mask_ge = (d0) -> (d0 - 2), mask_eq = (d0) -> (d0 mod 2)>
  %18 = harp.view %v <(d0) -> (d0 floordiv 2 - 1), mask_ge = (d0) -> (d0 - 2), mask_eq = (d0) -> (d0 mod 2)>
      : tensor<4xf32> -> tensor<9xf32>
  // Unfold: windows of 3 with stride 2 and dilation 2 over 10 elements.
  // CHECK: harp.view %{{.*}} <(d0, d1) -> (d0 * 2 + d1 * 2)> : tensor<10xf32> -> tensor<3x3xf32>
  %sig = arith.constant dense<1.0> : tensor<10xf32>
  %19 = harp.view %sig <(d0, d1) -> (d0 * 2 + d1 * 2)> : tensor<10xf32> -> tensor<3x3xf32>
  // Empty results read nothing, whatever the map.
  // CHECK: harp.view %{{.*}} <(d0) -> (d0 + 100)> : tensor<4xf32> -> tensor<0xf32>
  %20 = harp.view %v <(d0) -> (d0 + 100)> : tensor<4xf32> -> tensor<0xf32>
  return
}

//===----------------------------------------------------------------------===//
// harp.map_reduce, harp.index, harp.yield
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @map_reduce_forms
func.func @map_reduce_forms(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>,
                            %i: tensor<4x8xi32>, %m: tensor<4x8xi1>,
                            %z: tensor<4x8xcomplex<f64>>) {
  // CHECK: harp.map_reduce ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32):
  // CHECK-NEXT: %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
  // CHECK-NEXT: harp.yield %[[S]] : f32
  // CHECK-NEXT: } : tensor<4x8xf32>
  %0 = harp.map_reduce ins(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    harp.yield %s : f32
  } : tensor<4x8xf32>
  // A cast: the result element type is the yielded type.
  // CHECK: arith.extf %{{.*}} : f32 to f64
  // CHECK: } : tensor<4x8xf64>
  %1 = harp.map_reduce ins(%a : tensor<4x8xf32>) {
  ^bb0(%x: f32):
    %e = arith.extf %x : f32 to f64
    harp.yield %e : f64
  } : tensor<4x8xf64>
  // No operands: the domain is the result shape, read through harp.index.
  // CHECK: harp.map_reduce {
  // CHECK: harp.index 0
  // CHECK: harp.index 1
  // CHECK: } : tensor<3x5xi64>
  %2 = harp.map_reduce {
    %r = harp.index 0
    %c = harp.index 1
    %s = arith.addi %r, %c : index
    %v = arith.index_cast %s : index to i64
    harp.yield %v : i64
  } : tensor<3x5xi64>
  // Each reduction kind.
  // CHECK: } reduce(sum, dims = [1]) : tensor<4xf32>
  %3 = harp.map_reduce ins(%a : tensor<4x8xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = [1]) : tensor<4xf32>
  // CHECK: } reduce(prod, dims = [0, 1]) : tensor<f32>
  %4 = harp.map_reduce ins(%a : tensor<4x8xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(prod, dims = [0, 1]) : tensor<f32>
  // CHECK: } reduce(max, dims = [0], keepdim) : tensor<1x8xf32>
  %5 = harp.map_reduce ins(%a : tensor<4x8xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(max, dims = [0], keepdim) : tensor<1x8xf32>
  // CHECK: } reduce(min, dims = [0, 1], keepdim) : tensor<1x1xi32>
  %6 = harp.map_reduce ins(%i : tensor<4x8xi32>) {
  ^bb0(%x: i32):
    harp.yield %x : i32
  } reduce(min, dims = [0, 1], keepdim) : tensor<1x1xi32>
  // CHECK: } reduce(umax, dims = [1]) : tensor<4xi32>
  %7 = harp.map_reduce ins(%i : tensor<4x8xi32>) {
  ^bb0(%x: i32):
    harp.yield %x : i32
  } reduce(umax, dims = [1]) : tensor<4xi32>
  // CHECK: } reduce(umin, dims = [1]) : tensor<4xi32>
  %8 = harp.map_reduce ins(%i : tensor<4x8xi32>) {
  ^bb0(%x: i32):
    harp.yield %x : i32
  } reduce(umin, dims = [1]) : tensor<4xi32>
  // any() over booleans is max.
  // CHECK: } reduce(max, dims = [1]) : tensor<4xi1>
  %9 = harp.map_reduce ins(%m : tensor<4x8xi1>) {
  ^bb0(%x: i1):
    harp.yield %x : i1
  } reduce(max, dims = [1]) : tensor<4xi1>
  // Complex arithmetic and a complex sum.
  // CHECK: complex.mul
  // CHECK: } reduce(sum, dims = [0]) : tensor<8xcomplex<f64>>
  %10 = harp.map_reduce ins(%z : tensor<4x8xcomplex<f64>>) {
  ^bb0(%x: complex<f64>):
    %sq = complex.mul %x, %x : complex<f64>
    harp.yield %sq : complex<f64>
  } reduce(sum, dims = [0]) : tensor<8xcomplex<f64>>
  // Math ops, a comparison and a select.
  // CHECK: math.tanh
  // CHECK: arith.cmpf ogt
  // CHECK: arith.select
  %11 = harp.map_reduce ins(%a : tensor<4x8xf32>) {
  ^bb0(%x: f32):
    %t = math.tanh %x : f32
    %zero = arith.constant 0.0 : f32
    %gt = arith.cmpf ogt, %t, %zero : f32
    %r = arith.select %gt, %t, %zero : f32
    harp.yield %r : f32
  } : tensor<4x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Data movement, sources, materialisation
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>,
                         %x: tensor<4x5xf32>, %idx: tensor<4x2xi64>,
                         %idx32: tensor<2x3xi32>, %dest: tensor<5x3xf32>,
                         %src: tensor<2x3xf32>) {
  // CHECK: harp.concat dim(1) %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %0 = harp.concat dim(1) %a, %b : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  // CHECK: harp.concat dim(0) %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = harp.concat dim(0) %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: harp.gather %{{.*}}[%{{.*}}] dim(1) : (tensor<4x5xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
  %2 = harp.gather %x[%idx] dim(1) : (tensor<4x5xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
  // CHECK: harp.gather %{{.*}}[%{{.*}}] dim(0) : (tensor<4x5xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  %3 = harp.gather %x[%idx32] dim(0) : (tensor<4x5xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  // CHECK: harp.scatter_add %{{.*}} into %{{.*}}[%{{.*}}] dim(0) : tensor<2x3xf32> into tensor<5x3xf32>[tensor<2x3xi32>]
  %4 = harp.scatter_add %src into %dest[%idx32] dim(0)
      : tensor<2x3xf32> into tensor<5x3xf32>[tensor<2x3xi32>]
  // CHECK: harp.contiguous %{{.*}} : tensor<2x8xf32>
  %5 = harp.contiguous %0 : tensor<2x8xf32>
  return
}

// CHECK-LABEL: func.func @sources
// CHECK-SAME: (%[[S:.*]]: tensor<i64>)
func.func @sources(%seed: tensor<i64>) {
  // CHECK: harp.rand seed(%[[S]]) : tensor<3x5xf32>
  %dyn = harp.rand seed(%seed) : tensor<3x5xf32>
  // CHECK: harp.rand seed(42) : tensor<4x4xf32>
  %0 = harp.rand seed(42) : tensor<4x4xf32>
  // CHECK: harp.rand seed(0) : tensor<8xf16>
  %1 = harp.rand seed(0) : tensor<8xf16>
  // CHECK: harp.rand seed(7) : tensor<2x2xbf16>
  %2 = harp.rand seed(7) : tensor<2x2xbf16>
  // CHECK: harp.rand seed(-1) : tensor<f64>
  %3 = harp.rand seed(-1) : tensor<f64>
  // CHECK: harp.arange start(0 : i64) step(1 : i64) : tensor<10xi64>
  %4 = harp.arange start(0 : i64) step(1 : i64) : tensor<10xi64>
  // CHECK: harp.arange start(1.000000e+00 : f32) step(5.000000e-01 : f32) : tensor<4xf32>
  %5 = harp.arange start(1.0 : f32) step(0.5 : f32) : tensor<4xf32>
  // CHECK: harp.arange start(10 : i8) step(-3 : i8) : tensor<4xi8>
  %6 = harp.arange start(10 : i8) step(-3 : i8) : tensor<4xi8>
  // Unsigned reading: 0, 100, 200 fits i8 as unsigned.
  // CHECK: harp.arange start(0 : i8) step(100 : i8) : tensor<3xi8>
  %7 = harp.arange start(0 : i8) step(100 : i8) : tensor<3xi8>
  return
}

//===----------------------------------------------------------------------===//
// harp.autodiff
//===----------------------------------------------------------------------===//

func.func @loss(%x: tensor<8x4xf32>, %w: tensor<4xf32>) -> tensor<f32> {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

func.func @pair(%x: tensor<4xf64>, %n: tensor<4xi32>) -> (tensor<4xf64>, tensor<4xi32>) {
  return %x, %n : tensor<4xf64>, tensor<4xi32>
}

// CHECK-LABEL: func.func @autodiff_forms
func.func @autodiff_forms(%x: tensor<8x4xf32>, %w: tensor<4xf32>,
                          %y: tensor<4xf64>, %n: tensor<4xi32>,
                          %dy: tensor<4xf64>, %dn: tensor<4xi32>) {
  // CHECK: harp.autodiff @loss(%{{.*}}, %{{.*}}) wrt [1] : (tensor<8x4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  %l, %gw = harp.autodiff @loss(%x, %w) wrt [1]
      : (tensor<8x4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  // CHECK: harp.autodiff @loss(%{{.*}}, %{{.*}}) wrt [0, 1] : (tensor<8x4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<8x4xf32>, tensor<4xf32>)
  %l2, %gx, %gw2 = harp.autodiff @loss(%x, %w) wrt [0, 1]
      : (tensor<8x4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<8x4xf32>, tensor<4xf32>)
  // CHECK: harp.autodiff @pair(%{{.*}}, %{{.*}}) seed(%{{.*}}, %{{.*}} : tensor<4xf64>, tensor<4xi32>) wrt [0]
  %p0, %p1, %gy = harp.autodiff @pair(%y, %n) seed(%dy, %dn : tensor<4xf64>, tensor<4xi32>) wrt [0]
      : (tensor<4xf64>, tensor<4xi32>) -> (tensor<4xf64>, tensor<4xi32>, tensor<4xf64>)
  return
}
