// RUN: harp-opt %s -split-input-file -verify-diagnostics

// One case per diagnostic of the harp dialect: attribute syntax and
// invariants, then each op's verifier.

//===----------------------------------------------------------------------===//
// #harp.view syntax and invariants
//===----------------------------------------------------------------------===//

func.func @mask_twice(%v: tensor<4xf32>) {
  // expected-error @+1 {{mask_ge given twice}}
  %0 = harp.view %v <(d0) -> (d0), mask_ge = (d0) -> (d0), mask_ge = (d0) -> (d0)> : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @mask_empty(%v: tensor<4xf32>) {
  // expected-error @+1 {{mask_eq needs at least one expression}}
  %0 = harp.view %v <(d0) -> (d0), mask_eq = (d0) -> ()> : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @mask_arity(%v: tensor<4xf32>) {
  // expected-error @+1 {{mask_ge must range over the 1 result dims of the view map, without symbols}}
  %0 = harp.view %v <(d0) -> (d0), mask_ge = (d0, d1) -> (d0)> : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @mask_symbols(%v: tensor<4xf32>) {
  // expected-error @+1 {{mask_ge must range over the 1 result dims of the view map, without symbols}}
  %0 = harp.view %v <(d0) -> (d0), mask_ge = (d0)[s0] -> (d0 + s0)> : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @unknown_key(%v: tensor<4xf32>) {
  // expected-error @+1 {{expected 'mask_ge', 'mask_eq' or 'pad'}}
  %0 = harp.view %v <(d0) -> (d0), mask = (d0) -> (d0)> : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @pad_too_wide(%v: tensor<4xi64>) {
  // expected-error @+1 {{pad value does not fit in 64 bits}}
  %0 = harp.view %v <(d0) -> (d0), mask_ge = (d0) -> (d0), pad = 99999999999999999999> : tensor<4xi64> -> tensor<4xi64>
  return
}

// -----

func.func @pad_too_negative(%v: tensor<4xi64>) {
  // expected-error @+1 {{pad value does not fit in 64 bits}}
  %0 = harp.view %v <(d0) -> (d0), mask_ge = (d0) -> (d0), pad = -9223372036854775809> : tensor<4xi64> -> tensor<4xi64>
  return
}

// -----

func.func @pad_not_a_value(%v: tensor<4xf32>) {
  // expected-error @+1 {{expected a pad value: zero, one, -inf, +inf or a number}}
  %0 = harp.view %v <(d0) -> (d0), mask_ge = (d0) -> (d0), pad = nan> : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @map_symbols(%v: tensor<4xf32>) {
  // expected-error @+1 {{view map must not have symbols, found 1}}
  %0 = harp.view %v <(d0)[s0] -> (d0 + s0)> : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @map_negative_divisor(%v: tensor<4xf32>) {
  // expected-error @+1 {{view map divides by '-2' in 'd0 floordiv -2'; divisors must be positive constants}}
  %0 = harp.view %v <(d0) -> (d0 floordiv -2)> : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @map_zero_divisor(%v: tensor<4xf32>) {
  // expected-error @+1 {{view map divides by '0' in 'd0 mod 0'; divisors must be positive constants}}
  %0 = harp.view %v <(d0) -> (d0 mod 0)> : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @mask_zero_divisor(%v: tensor<4xf32>) {
  // expected-error @+1 {{view mask divides by '0' in 'd0 ceildiv 0'; divisors must be positive constants}}
  %0 = harp.view %v <(d0) -> (d0), mask_eq = (d0) -> (d0 ceildiv 0)> : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// Products of two indices are rejected by the affine-map parser itself.
func.func @map_product(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{non-affine expression}}
  %0 = harp.view %x <(d0, d1) -> (d0 * d1, d1)> : tensor<4x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @pad_without_mask(%v: tensor<4xf32>) {
  // expected-error @+1 {{view has a pad but no mask; the pad is read only where a mask is false}}
  %0 = harp.view %v <(d0) -> (d0), pad = one> : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @generic_form_checked(%v: tensor<4xf32>) {
  // expected-error @+1 {{view has a pad but no mask}}
  %0 = "harp.view"(%v) <{layout = #harp.view<(d0) -> (d0), pad = -inf>}> : (tensor<4xf32>) -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// harp.view
//===----------------------------------------------------------------------===//

// -----

func.func @view_element_type(%v: tensor<4xf32>) {
  // expected-error @+1 {{'harp.view' op result element type 'f64' differs from the source element type 'f32'; a view moves no data and cannot convert}}
  %0 = harp.view %v <(d0) -> (d0)> : tensor<4xf32> -> tensor<4xf64>
  return
}

// -----

func.func @view_result_rank(%v: tensor<4xf32>) {
  // expected-error @+1 {{'harp.view' op layout map has 1 dims but the result 'tensor<4x1xf32>' has rank 2}}
  %0 = harp.view %v <(d0) -> (d0)> : tensor<4xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @view_source_rank(%v: tensor<4xf32>) {
  // expected-error @+1 {{'harp.view' op layout map has 2 results but the source 'tensor<4xf32>' has rank 1}}
  %0 = harp.view %v <(d0) -> (d0, d0)> : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @pad_fraction_in_int(%v: tensor<4xi32>) {
  // expected-error @+1 {{'harp.view' op pad value cannot be represented in element type 'i32'}}
  %0 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1), pad = 0.5> : tensor<4xi32> -> tensor<5xi32>
  return
}

// -----

func.func @pad_out_of_i8(%v: tensor<4xi8>) {
  // expected-error @+1 {{'harp.view' op pad value cannot be represented in element type 'i8'}}
  %0 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1), pad = 300> : tensor<4xi8> -> tensor<5xi8>
  return
}

// -----

func.func @pad_two_in_i1(%v: tensor<4xi1>) {
  // expected-error @+1 {{'harp.view' op pad value cannot be represented in element type 'i1'}}
  %0 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1), pad = 2> : tensor<4xi1> -> tensor<5xi1>
  return
}

// -----

func.func @pad_inf_complex(%v: tensor<4xcomplex<f32>>) {
  // expected-error @+1 {{'harp.view' op pad value cannot be represented in element type 'complex<f32>'}}
  %0 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1), pad = -inf> : tensor<4xcomplex<f32>> -> tensor<5xcomplex<f32>>
  return
}

// -----

func.func @pad_overflows_f16(%v: tensor<4xf16>) {
  // expected-error @+1 {{'harp.view' op pad value cannot be represented in element type 'f16'}}
  %0 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1), pad = 1.0e6> : tensor<4xf16> -> tensor<5xf16>
  return
}

// -----

func.func @oob_plain(%v: tensor<4xf32>) {
  // expected-error @+1 {{'harp.view' op reads out of bounds: result index [4] reads index 4 of source dim 0, which has size 4}}
  %0 = harp.view %v <(d0) -> (d0)> : tensor<4xf32> -> tensor<5xf32>
  return
}

// -----

func.func @oob_below(%v: tensor<4xf32>) {
  // expected-error @+1 {{'harp.view' op reads out of bounds: result index [0] reads index -1 of source dim 0, which has size 4}}
  %0 = harp.view %v <(d0) -> (d0 - 1)> : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// The dialect keeps each view's proof of in-bounds reads (the verifier runs
// after every pass): a proof is for its layout and both shapes, so the same
// layout with one shape changed is checked again.
func.func @oob_after_proof(%v: tensor<4xf32>, %w: tensor<3xf32>) {
  %0 = harp.view %v <(d0) -> (d0 + 1)> : tensor<4xf32> -> tensor<3xf32>
  %1 = harp.view %v <(d0) -> (d0 + 1)> : tensor<4xf32> -> tensor<3xf32>
  // expected-error @+1 {{'harp.view' op reads out of bounds: result index [2] reads index 3 of source dim 0, which has size 3}}
  %2 = harp.view %w <(d0) -> (d0 + 1)> : tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @oob_after_proof_result(%v: tensor<4xf32>) {
  %0 = harp.view %v <(d0) -> (d0 + 1)> : tensor<4xf32> -> tensor<3xf32>
  // expected-error @+1 {{'harp.view' op reads out of bounds: result index [3] reads index 4 of source dim 0, which has size 4}}
  %1 = harp.view %v <(d0) -> (d0 + 1)> : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// A reshape of 12 elements read as 13: the last row's floordiv reaches 3.
func.func @oob_reshape(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{'harp.view' op reads out of bounds: result index [6, 0] reads index 3 of source dim 0, which has size 3}}
  %0 = harp.view %x <(d0, d1) -> ((d0 * 2 + d1) floordiv 4, (d0 * 2 + d1) mod 4)> : tensor<3x4xf32> -> tensor<7x2xf32>
  return
}

// -----

// The mask covers the left edge but not the right one.
func.func @oob_mask_too_weak(%v: tensor<4xf32>) {
  // expected-error @+1 {{'harp.view' op reads out of bounds: result index [5] reads index 4 of source dim 0, which has size 4}}
  %0 = harp.view %v <(d0) -> (d0 - 1), mask_ge = (d0) -> (d0 - 1)> : tensor<4xf32> -> tensor<6xf32>
  return
}

// -----

// Padding composed with windows: the mask constrains oh + kh, not oh alone.
func.func @oob_window_mask(%v: tensor<5xf32>) {
  // expected-error @+1 {{'harp.view' op reads out of bounds: result index [4, 2] reads index 5 of source dim 0, which has size 5}}
  %0 = harp.view %v <(d0, d1) -> (d0 + d1 - 1), mask_ge = (d0, d1) -> (d0 + d1 - 1)> : tensor<5xf32> -> tensor<6x3xf32>
  return
}

// -----

// A stride-2 unfold reading one window too many.
func.func @oob_unfold(%v: tensor<10xf32>) {
  // expected-error @+1 {{'harp.view' op reads out of bounds: result index [4, 2] reads index 10 of source dim 0, which has size 10}}
  %0 = harp.view %v <(d0, d1) -> (d0 * 2 + d1)> : tensor<10xf32> -> tensor<5x3xf32>
  return
}

//===----------------------------------------------------------------------===//
// harp.map_reduce, harp.index, harp.yield
//===----------------------------------------------------------------------===//

// -----

func.func @domain_mismatch(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{'harp.map_reduce' op operand #1 has shape [8, 4] but operand #0 has [4, 8]; all operands share the iteration domain}}
  %0 = harp.map_reduce ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) {
  ^bb0(%x: f32, %y: f32):
    harp.yield %x : f32
  } : tensor<4x8xf32>
  return
}

// -----

func.func @dims_without_kind(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'harp.map_reduce' op dims and keepdim need a reduction kind}}
  %0 = harp.map_reduce ins(%a : tensor<4x8xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } {keepdim} : tensor<4x8xf32>
  return
}

// -----

func.func @map_shape(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'harp.map_reduce' op result shape [8, 4] differs from the iteration domain [4, 8]}}
  %0 = harp.map_reduce ins(%a : tensor<4x8xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } : tensor<8x4xf32>
  return
}

// -----

func.func @reduce_without_operands() {
  // expected-error @+1 {{'harp.map_reduce' op a reduction needs an operand to define the iteration domain}}
  %0 = harp.map_reduce {
    %c = arith.constant 1.0 : f32
    harp.yield %c : f32
  } reduce(sum, dims = [0]) : tensor<f32>
  return
}

// -----

func.func @reduce_no_dims(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'harp.map_reduce' op reduction needs at least one dim}}
  %0 = harp.map_reduce ins(%a : tensor<4x8xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = []) : tensor<4x8xf32>
  return
}

// -----

func.func @reduce_dim_range(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'harp.map_reduce' op reduction dim 2 is out of range for an iteration domain of rank 2}}
  %0 = harp.map_reduce ins(%a : tensor<4x8xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = [2]) : tensor<4x8xf32>
  return
}

// -----

func.func @reduce_dim_negative(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'harp.map_reduce' op reduction dim -1 is out of range for an iteration domain of rank 2}}
  %0 = harp.map_reduce ins(%a : tensor<4x8xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = [-1]) : tensor<4xf32>
  return
}

// -----

func.func @reduce_dims_order(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'harp.map_reduce' op reduction dims must be strictly increasing, got [1, 0]}}
  %0 = harp.map_reduce ins(%a : tensor<4x8xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = [1, 0]) : tensor<f32>
  return
}

// -----

func.func @reduce_dims_repeated(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'harp.map_reduce' op reduction dims must be strictly increasing, got [1, 1]}}
  %0 = harp.map_reduce ins(%a : tensor<4x8xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = [1, 1]) : tensor<4xf32>
  return
}

// -----

func.func @reduce_shape(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'harp.map_reduce' op result shape [4] does not match [4, 1], the domain [4, 8] reduced over [1] with keepdim}}
  %0 = harp.map_reduce ins(%a : tensor<4x8xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(sum, dims = [1], keepdim) : tensor<4xf32>
  return
}

// -----

func.func @sum_i1(%a: tensor<4xi1>) {
  // expected-error @+1 {{'harp.map_reduce' op sum reduction is not defined on i1; use max (or) or min (and)}}
  %0 = harp.map_reduce ins(%a : tensor<4xi1>) {
  ^bb0(%x: i1):
    harp.yield %x : i1
  } reduce(sum, dims = [0]) : tensor<i1>
  return
}

// -----

func.func @prod_i1(%a: tensor<4xi1>) {
  // expected-error @+1 {{'harp.map_reduce' op prod reduction is not defined on i1; use max (or) or min (and)}}
  %0 = harp.map_reduce ins(%a : tensor<4xi1>) {
  ^bb0(%x: i1):
    harp.yield %x : i1
  } reduce(prod, dims = [0]) : tensor<i1>
  return
}

// -----

func.func @max_complex(%a: tensor<4xcomplex<f32>>) {
  // expected-error @+1 {{'harp.map_reduce' op max reduction is not defined on complex numbers}}
  %0 = harp.map_reduce ins(%a : tensor<4xcomplex<f32>>) {
  ^bb0(%x: complex<f32>):
    harp.yield %x : complex<f32>
  } reduce(max, dims = [0]) : tensor<complex<f32>>
  return
}

// -----

func.func @umin_float(%a: tensor<4xf32>) {
  // expected-error @+1 {{'harp.map_reduce' op umin reduction compares unsigned integers, not 'f32'}}
  %0 = harp.map_reduce ins(%a : tensor<4xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  } reduce(umin, dims = [0]) : tensor<f32>
  return
}

// -----

func.func @unknown_kind(%a: tensor<4xf32>) {
  %0 = harp.map_reduce ins(%a : tensor<4xf32>) {
  ^bb0(%x: f32):
    harp.yield %x : f32
  // expected-error @+1 {{unknown reduction kind 'mean'; expected sum, prod, max, min, umax or umin}}
  } reduce(mean, dims = [0]) : tensor<f32>
  return
}

// -----

func.func @region_arity(%a: tensor<4xf32>) {
  // expected-error @+1 {{'harp.map_reduce' op region has 2 arguments but the op has 1 operands}}
  %0 = harp.map_reduce ins(%a : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    harp.yield %x : f32
  } : tensor<4xf32>
  return
}

// -----

func.func @region_arg_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'harp.map_reduce' op region argument #0 has type 'f64' but operand #0 has element type 'f32'}}
  %0 = harp.map_reduce ins(%a : tensor<4xf32>) {
  ^bb0(%x: f64):
    harp.yield %x : f64
  } : tensor<4xf64>
  return
}

// -----

func.func @region_foreign_op(%a: tensor<4xf32>) {
  %0 = harp.map_reduce ins(%a : tensor<4xf32>) {
  ^bb0(%x: f32):
    // expected-error @+1 {{'harp.rand' op is not allowed in a harp.map_reduce region; only arith, math and complex scalar ops, harp.index and harp.yield}}
    %r = harp.rand seed(1) : tensor<f32>
    harp.yield %x : f32
  } : tensor<4xf32>
  return
}

// -----

func.func @region_vector(%a: tensor<4xf32>) {
  %0 = harp.map_reduce ins(%a : tensor<4xf32>) {
  ^bb0(%x: f32):
    // expected-error @+1 {{'arith.constant' op produces 'vector<4xf32>'; harp.map_reduce regions compute on scalars}}
    %c = arith.constant dense<1.0> : vector<4xf32>
    harp.yield %x : f32
  } : tensor<4xf32>
  return
}

// -----

func.func @yield_count(%a: tensor<4xf32>) {
  %0 = harp.map_reduce ins(%a : tensor<4xf32>) {
  ^bb0(%x: f32):
    // expected-error @+1 {{'harp.yield' op must yield exactly one value, yields 2}}
    harp.yield %x, %x : f32, f32
  } : tensor<4xf32>
  return
}

// -----

func.func @yield_type(%a: tensor<4xf32>) {
  %0 = harp.map_reduce ins(%a : tensor<4xf32>) {
  ^bb0(%x: f32):
    // expected-error @+1 {{'harp.yield' op yields 'f32' but the map_reduce result element type is 'f64'}}
    harp.yield %x : f32
  } : tensor<4xf64>
  return
}

// -----

func.func @region_no_terminator(%a: tensor<4xf32>) {
  %0 = harp.map_reduce ins(%a : tensor<4xf32>) {
  ^bb0(%x: f32):
    // expected-error @+1 {{block with no terminator}}
    %y = arith.negf %x : f32
  } : tensor<4xf32>
  return
}

// -----

// The body is isolated from above: a value from outside is refused where
// the body is parsed.
func.func @region_captures(%a: tensor<4xf32>, %s: f32) {
  // expected-error @+1 {{reads a value not defined in the body (an undeclared name, or one defined outside: the region is isolated from above)}}
  %0 = harp.map_reduce ins(%a : tensor<4xf32>) {
  ^bb0(%x: f32):
    %y = arith.addf %x, %s : f32
    harp.yield %y : f32
  } : tensor<4xf32>
  return
}

// -----

// An undeclared name in a body, then a later body's block argument of that
// name and a parse error: the name is refused in the first body (MLIR's
// parser had given its use to the later argument, and freed that argument
// under it at the error: a heap error found by test/Fuzz/mutations.py).
func.func @undeclared_then_argument(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{body: 'harp.yield' at}}
  %s = harp.map_reduce ins(%x : tensor<4xf32>) {
  ^bb0(%b: f32):
    harp.yield %a : f32
  } : tensor<4xf32>
  %t = harp.map_reduce ins(%x : tensor<4xf32>) {
  ^bb0(%a: f32):
    harp.yield %a : f32
  } : tensor<axf32>
  return %s : tensor<4xf32>
}

// -----

func.func @index_range(%a: tensor<4x8xf32>) {
  %0 = harp.map_reduce ins(%a : tensor<4x8xf32>) {
  ^bb0(%x: f32):
    // expected-error @+1 {{'harp.index' op dim 2 is out of range for an iteration domain of rank 2}}
    %i = harp.index 2
    harp.yield %x : f32
  } : tensor<4x8xf32>
  return
}

// -----

func.func @index_outside() {
  // expected-error @+1 {{'harp.index' op expects parent op 'harp.map_reduce'}}
  %i = harp.index 0
  return
}

// -----

func.func @yield_outside(%x: f32) {
  // expected-error @+1 {{'harp.yield' op expects parent op 'harp.map_reduce'}}
  harp.yield %x : f32
}

//===----------------------------------------------------------------------===//
// Types accepted by harp ops
//===----------------------------------------------------------------------===//

// -----

func.func @dynamic_shape(%v: tensor<?xf32>) {
  // expected-error @+1 {{'harp.view' op operand #0 must be statically shaped tensor}}
  %0 = harp.view %v <(d0) -> (d0)> : tensor<?xf32> -> tensor<4xf32>
  return
}

// -----

func.func @unsupported_element(%v: tensor<4xi128>) {
  // expected-error @+1 {{'harp.contiguous' op operand #0 must be statically shaped tensor of harp element type}}
  %0 = harp.contiguous %v : tensor<4xi128>
  return
}

// -----

func.func @unsigned_element(%v: tensor<4xui8>) {
  // expected-error @+1 {{'harp.contiguous' op operand #0 must be statically shaped tensor of harp element type}}
  %0 = harp.contiguous %v : tensor<4xui8>
  return
}

// -----

func.func @contiguous_types(%v: tensor<4xf32>) {
  // expected-error @+1 {{'harp.contiguous' op requires the same type for all operands and results}}
  %0 = "harp.contiguous"(%v) : (tensor<4xf32>) -> tensor<4xf64>
  return
}

//===----------------------------------------------------------------------===//
// harp.concat
//===----------------------------------------------------------------------===//

// -----

func.func @concat_empty() {
  // expected-error @+1 {{'harp.concat' op needs at least one operand}}
  %0 = harp.concat dim(0) : () -> tensor<2xf32>
  return
}

// -----

func.func @concat_dim(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'harp.concat' op dim 2 is out of range for rank 2}}
  %0 = harp.concat dim(2) %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @concat_element(%a: tensor<2x3xf32>, %b: tensor<2x3xf64>) {
  // expected-error @+1 {{'harp.concat' op operand #1 has element type 'f64' but the result has 'f32'}}
  %0 = harp.concat dim(0) %a, %b : (tensor<2x3xf32>, tensor<2x3xf64>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<6xf32>) {
  // expected-error @+1 {{'harp.concat' op operand #1 has rank 1 but the result has rank 2}}
  %0 = harp.concat dim(0) %a, %b : (tensor<2x3xf32>, tensor<6xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_other_dim(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{'harp.concat' op operand #1 has size 4 in dim 1 but the result has 3}}
  %0 = harp.concat dim(0) %a, %b : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_sum(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  // expected-error @+1 {{'harp.concat' op operand sizes along dim 0 add up to 4 but the result has 5}}
  %0 = harp.concat dim(0) %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<5x3xf32>
  return
}

//===----------------------------------------------------------------------===//
// harp.gather and harp.scatter_add
//===----------------------------------------------------------------------===//

// -----

func.func @gather_dim(%x: tensor<4x5xf32>, %i: tensor<4x2xi64>) {
  // expected-error @+1 {{'harp.gather' op dim 2 is out of range for rank 2}}
  %0 = harp.gather %x[%i] dim(2) : (tensor<4x5xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
  return
}

// -----

func.func @gather_rank(%x: tensor<4x5xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'harp.gather' op index has rank 1 but the input has rank 2}}
  %0 = harp.gather %x[%i] dim(0) : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @gather_result_shape(%x: tensor<4x5xf32>, %i: tensor<4x2xi64>) {
  // expected-error @+1 {{'harp.gather' op result shape [4, 5] differs from the index shape [4, 2]}}
  %0 = harp.gather %x[%i] dim(1) : (tensor<4x5xf32>, tensor<4x2xi64>) -> tensor<4x5xf32>
  return
}

// -----

func.func @gather_result_element(%x: tensor<4x5xf32>, %i: tensor<4x2xi64>) {
  // expected-error @+1 {{'harp.gather' op result element type 'f64' differs from the input's 'f32'}}
  %0 = harp.gather %x[%i] dim(1) : (tensor<4x5xf32>, tensor<4x2xi64>) -> tensor<4x2xf64>
  return
}

// -----

func.func @gather_index_too_big(%x: tensor<4x5xf32>, %i: tensor<4x6xi64>) {
  // expected-error @+1 {{'harp.gather' op index has size 6 in dim 1, larger than the input's 5}}
  %0 = harp.gather %x[%i] dim(0) : (tensor<4x5xf32>, tensor<4x6xi64>) -> tensor<4x6xf32>
  return
}

// -----

func.func @gather_index_type(%x: tensor<4x5xf32>, %i: tensor<4x2xf32>) {
  // expected-error @+1 {{'harp.gather' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = harp.gather %x[%i] dim(1) : (tensor<4x5xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @scatter_dim(%s: tensor<2x3xf32>, %d: tensor<5x3xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+1 {{'harp.scatter_add' op dim -1 is out of range for rank 2}}
  %0 = harp.scatter_add %s into %d[%i] dim(-1) : tensor<2x3xf32> into tensor<5x3xf32>[tensor<2x3xi64>]
  return
}

// -----

func.func @scatter_bool(%s: tensor<2x3xi1>, %d: tensor<5x3xi1>, %i: tensor<2x3xi64>) {
  // expected-error @+1 {{'harp.scatter_add' op accumulates with addition, which i1 does not have}}
  %0 = harp.scatter_add %s into %d[%i] dim(0) : tensor<2x3xi1> into tensor<5x3xi1>[tensor<2x3xi64>]
  return
}

// -----

func.func @scatter_element(%s: tensor<2x3xf64>, %d: tensor<5x3xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+1 {{'harp.scatter_add' op src element type 'f64' differs from the dest's 'f32'}}
  %0 = harp.scatter_add %s into %d[%i] dim(0) : tensor<2x3xf64> into tensor<5x3xf32>[tensor<2x3xi64>]
  return
}

// -----

func.func @scatter_rank(%s: tensor<6xf32>, %d: tensor<5x3xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+1 {{'harp.scatter_add' op src, dest and index must have one rank, got 1, 2 and 2}}
  %0 = harp.scatter_add %s into %d[%i] dim(0) : tensor<6xf32> into tensor<5x3xf32>[tensor<2x3xi64>]
  return
}

// -----

func.func @scatter_index_vs_src(%s: tensor<2x2xf32>, %d: tensor<5x3xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+1 {{'harp.scatter_add' op index has size 3 in dim 1, larger than the src's 2}}
  %0 = harp.scatter_add %s into %d[%i] dim(0) : tensor<2x2xf32> into tensor<5x3xf32>[tensor<2x3xi64>]
  return
}

// -----

func.func @scatter_index_vs_dest(%s: tensor<2x4xf32>, %d: tensor<5x3xf32>, %i: tensor<2x4xi64>) {
  // expected-error @+1 {{'harp.scatter_add' op index has size 4 in dim 1, larger than the dest's 3}}
  %0 = harp.scatter_add %s into %d[%i] dim(0) : tensor<2x4xf32> into tensor<5x3xf32>[tensor<2x4xi64>]
  return
}

// -----

func.func @scatter_result(%s: tensor<2x3xf32>, %d: tensor<5x3xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+1 {{'harp.scatter_add' op failed to verify that all of {dest, result} have same type}}
  %0 = "harp.scatter_add"(%s, %d, %i) <{dim = 0 : i64}> : (tensor<2x3xf32>, tensor<5x3xf32>, tensor<2x3xi64>) -> tensor<6x3xf32>
  return
}

//===----------------------------------------------------------------------===//
// harp.rand and harp.arange
//===----------------------------------------------------------------------===//

// -----

func.func @rand_int() {
  // expected-error @+1 {{'harp.rand' op result #0 must be statically shaped tensor of harp float element type (f16, bf16, f32, f64) values}}
  %0 = harp.rand seed(1) : tensor<4xi32>
  return
}

// -----

func.func @rand_no_seed() {
  // expected-error @+1 {{'harp.rand' op needs exactly one seed: a constant or a 0-d i64 operand}}
  %0 = "harp.rand"() : () -> tensor<4xf32>
  return
}

// -----

func.func @rand_two_seeds(%s: tensor<i64>) {
  // expected-error @+1 {{'harp.rand' op needs exactly one seed: a constant or a 0-d i64 operand}}
  %0 = "harp.rand"(%s) {seed = 3 : i64} : (tensor<i64>) -> tensor<4xf32>
  return
}

// -----

func.func @rand_seed_type(%s: tensor<i32>) {
  // expected-note @-1 {{prior use here}}
  // expected-error @+1 {{use of value '%s' expects different type than prior uses: 'tensor<i64>' vs 'tensor<i32>'}}
  %0 = harp.rand seed(%s) : tensor<4xf32>
  return
}

// -----

func.func @rand_seed_rank(%s: tensor<2xi64>) {
  // expected-error @+1 {{'harp.rand' op operand #0 must be 0D tensor of 64-bit signless integer values, but got 'tensor<2xi64>'}}
  %0 = "harp.rand"(%s) : (tensor<2xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @arange_rank() {
  // expected-error @+1 {{'harp.arange' op result must have rank 1, got 'tensor<2x2xi64>'}}
  %0 = harp.arange start(0 : i64) step(1 : i64) : tensor<2x2xi64>
  return
}

// -----

func.func @arange_bool() {
  // expected-error @+1 {{'harp.arange' op needs an integer (other than i1) or float element type, got 'i1'}}
  %0 = harp.arange start(false) step(true) : tensor<2xi1>
  return
}

// -----

func.func @arange_start_type() {
  // expected-error @+1 {{'harp.arange' op start must be a number of the element type 'f32', got 0 : i64}}
  %0 = harp.arange start(0 : i64) step(1.0 : f32) : tensor<4xf32>
  return
}

// -----

func.func @arange_step_type() {
  // expected-error @+1 {{'harp.arange' op step must be a number of the element type 'i32', got 1 : i64}}
  %0 = harp.arange start(0 : i32) step(1 : i64) : tensor<4xi32>
  return
}

// -----

func.func @arange_zero_step_int() {
  // expected-error @+1 {{'harp.arange' op step must be non-zero}}
  %0 = harp.arange start(0 : i32) step(0 : i32) : tensor<4xi32>
  return
}

// -----

func.func @arange_zero_step_float() {
  // expected-error @+1 {{'harp.arange' op step must be non-zero}}
  %0 = harp.arange start(1.0 : f64) step(0.0 : f64) : tensor<4xf64>
  return
}

// -----

func.func @arange_overflow() {
  // expected-error @+1 {{'harp.arange' op sequence of 4 elements overflows 'i8'}}
  %0 = harp.arange start(0 : i8) step(100 : i8) : tensor<4xi8>
  return
}

//===----------------------------------------------------------------------===//
// harp.autodiff
//===----------------------------------------------------------------------===//

// -----

func.func @loss(%x: tensor<4xf32>, %n: tensor<4xi32>) -> tensor<f32> {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

func.func @wrt_empty(%x: tensor<4xf32>, %n: tensor<4xi32>) {
  // expected-error @+1 {{'harp.autodiff' op wrt must name at least one argument}}
  %0 = harp.autodiff @loss(%x, %n) wrt [] : (tensor<4xf32>, tensor<4xi32>) -> tensor<f32>
  return
}

// -----

func.func @loss(%x: tensor<4xf32>, %n: tensor<4xi32>) -> tensor<f32> {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

func.func @wrt_range(%x: tensor<4xf32>, %n: tensor<4xi32>) {
  // expected-error @+1 {{'harp.autodiff' op wrt index 2 is out of range for 2 arguments}}
  %0:2 = harp.autodiff @loss(%x, %n) wrt [2] : (tensor<4xf32>, tensor<4xi32>) -> (tensor<f32>, tensor<4xf32>)
  return
}

// -----

func.func @loss(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<f32> {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

func.func @wrt_order(%x: tensor<4xf32>) {
  // expected-error @+1 {{'harp.autodiff' op wrt indices must be strictly increasing, got [1, 0]}}
  %0:3 = harp.autodiff @loss(%x, %x) wrt [1, 0] : (tensor<4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @loss(%x: tensor<4xf32>, %n: tensor<4xi32>) -> tensor<f32> {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

func.func @wrt_integer(%x: tensor<4xf32>, %n: tensor<4xi32>) {
  // expected-error @+1 {{'harp.autodiff' op argument #1 of type 'tensor<4xi32>' is not differentiable; wrt takes float or complex arguments}}
  %0:2 = harp.autodiff @loss(%x, %n) wrt [1] : (tensor<4xf32>, tensor<4xi32>) -> (tensor<f32>, tensor<4xi32>)
  return
}

// -----

func.func @missing_callee(%x: tensor<4xf32>) {
  // expected-error @+1 {{'harp.autodiff' op 'nowhere' does not reference a func.func}}
  %0:2 = harp.autodiff @nowhere(%x) wrt [0] : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  return
}

// -----

func.func @loss(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<f32> {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

func.func @arg_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'harp.autodiff' op callee @loss takes 2 arguments but 1 are given}}
  %0:2 = harp.autodiff @loss(%x) wrt [0] : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  return
}

// -----

func.func @loss(%x: tensor<4xf32>) -> tensor<f32> {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

func.func @arg_type(%x: tensor<4xf64>) {
  // expected-error @+1 {{'harp.autodiff' op argument #0 has type 'tensor<4xf64>' but @loss expects 'tensor<4xf32>'}}
  %0:2 = harp.autodiff @loss(%x) wrt [0] : (tensor<4xf64>) -> (tensor<f32>, tensor<4xf64>)
  return
}

// -----

func.func @nothing(%x: tensor<4xf32>) {
  return
}

func.func @no_results(%x: tensor<4xf32>) {
  // expected-error @+1 {{'harp.autodiff' op callee @nothing returns nothing}}
  %0 = harp.autodiff @nothing(%x) wrt [0] : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @id(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

func.func @seed_needed(%x: tensor<4xf32>) {
  // expected-error @+1 {{'harp.autodiff' op seed may be omitted only when @id's first result is a float scalar or 0-d float tensor; give one cotangent per result}}
  %0:2 = harp.autodiff @id(%x) wrt [0] : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @id(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

func.func @seed_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'harp.autodiff' op has 2 seeds but @id returns 1 results}}
  %0:2 = harp.autodiff @id(%x) seed(%x, %x : tensor<4xf32>, tensor<4xf32>) wrt [0] : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @id(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

func.func @seed_type(%x: tensor<4xf32>, %s: tensor<4xf64>) {
  // expected-error @+1 {{'harp.autodiff' op seed #0 has type 'tensor<4xf64>' but result #0 of @id has type 'tensor<4xf32>'}}
  %0:2 = harp.autodiff @id(%x) seed(%s : tensor<4xf64>) wrt [0] : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @loss(%x: tensor<4xf32>) -> tensor<f32> {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

func.func @result_types(%x: tensor<4xf32>) {
  // expected-error @+1 {{'harp.autodiff' op result types must be the callee's results followed by one gradient per wrt argument: (tensor<f32>, tensor<4xf32>)}}
  %0 = harp.autodiff @loss(%x) wrt [0] : (tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func private @decl(%x: tensor<4xf32>) -> tensor<f32>

func.func @declaration_callee(%x: tensor<4xf32>) {
  // expected-error @+1 {{'harp.autodiff' op callee @decl is a declaration; it has no body to differentiate}}
  %0:2 = harp.autodiff @decl(%x) wrt [0] : (tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  return
}

// -----

// The witness index is exact even where int64 arithmetic would overflow.
func.func @oob_huge(%x: tensor<3xf32>) {
  // expected-error @+1 {{'harp.view' op reads out of bounds: result index [3] reads index 4611686018427387904 of source dim 0, which has size 3}}
  %0 = harp.view %x <(d0) -> ((d0 * 4611686018427387904) floordiv 3), mask_ge = (d0) -> (d0 - 3)> : tensor<3xf32> -> tensor<4xf32>
  return
}
