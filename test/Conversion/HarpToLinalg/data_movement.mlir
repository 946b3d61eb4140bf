// RUN: harp-opt %s --convert-harp-to-linalg --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x5xf32>)
// CHECK: %[[C:.*]] = tensor.concat dim(1) %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
// CHECK: return %[[C]]
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %0 = harp.concat dim(1) %a, %b : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// gather: one kernel over the index; the index is clamped, then extracted.
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[X:.*]]: tensor<4x5xf32>, %[[I:.*]]: tensor<4x2xi64>)
// CHECK: linalg.generic {{.*}} ins(%[[I]] : tensor<4x2xi64>)
// CHECK: ^bb0(%[[V:.*]]: i64, %{{.*}}: f32):
// CHECK: %[[R:.*]] = linalg.index 0 : index
// CHECK: %[[C:.*]] = arith.index_cast %[[V]] : i64 to index
// CHECK: %[[LO:.*]] = arith.maxsi %[[C]], %{{.*}} : index
// CHECK: %[[AT:.*]] = arith.minsi %[[LO]], %{{.*}} : index
// CHECK: tensor.extract %[[X]][%[[R]], %[[AT]]] : tensor<4x5xf32>
func.func @gather(%x: tensor<4x5xf32>, %idx: tensor<4x2xi64>) -> tensor<4x2xf32> {
  %0 = harp.gather %x[%idx] dim(1) : (tensor<4x5xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// An index broadcast along the innermost dim (an embedding lookup) is read
// in the body through its view, one index per row, so harp-vectorize reads
// each row as contiguous vectors instead of gathering elements.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[T:.*]]: tensor<10x16xf32>, %[[I:.*]]: tensor<4xi64>)
// CHECK: linalg.generic
// CHECK-NOT: ins(
// CHECK: %[[R:.*]] = linalg.index 0 : index
// CHECK: %[[C:.*]] = linalg.index 1 : index
// CHECK: %[[AT:.*]] = tensor.extract %[[I]][%[[R]]] : tensor<4xi64>
// CHECK: arith.index_cast %[[AT]]
// CHECK: tensor.extract %[[T]][%{{.*}}, %[[C]]] : tensor<10x16xf32>
func.func @embedding(%t: tensor<10x16xf32>, %i: tensor<4xi64>) -> tensor<4x16xf32> {
  %ib = harp.view %i <(d0, d1) -> (d0)> : tensor<4xi64> -> tensor<4x16xi64>
  %g = harp.gather %t[%ib] dim(0) : (tensor<10x16xf32>, tensor<4x16xi64>) -> tensor<4x16xf32>
  return %g : tensor<4x16xf32>
}

// -----

// scatter_add: a loop nest over the index carrying the accumulated tensor.
// CHECK-LABEL: func.func @scatter_add
// CHECK-SAME: (%[[S:.*]]: tensor<2x3xf32>, %[[D:.*]]: tensor<5x3xf32>, %[[I:.*]]: tensor<2x3xi32>)
// CHECK: scf.for %[[P:.*]] = {{.*}} iter_args(%[[ACC0:.*]] = %[[D]])
// CHECK: scf.for %[[Q:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %[[ACC0]])
// CHECK: tensor.extract %[[I]][%[[P]], %[[Q]]]
// CHECK: %[[ADD:.*]] = tensor.extract %[[S]][%[[P]], %[[Q]]]
// CHECK: %[[OLD:.*]] = tensor.extract %[[ACC]]
// CHECK: %[[SUM:.*]] = arith.addf %[[OLD]], %[[ADD]] : f32
// CHECK: tensor.insert %[[SUM]] into %[[ACC]]
func.func @scatter_add(%src: tensor<2x3xf32>, %dest: tensor<5x3xf32>, %idx: tensor<2x3xi32>) -> tensor<5x3xf32> {
  %0 = harp.scatter_add %src into %dest[%idx] dim(0) : tensor<2x3xf32> into tensor<5x3xf32>[tensor<2x3xi32>]
  return %0 : tensor<5x3xf32>
}

// -----

// scatter_add with an index broadcast along the innermost dim (an embedding
// lookup's gradient): one loop per outer dim, the index read once per row
// through its view (not materialised, clamped), and the row added by one
// element-wise kernel on slices of the source and the accumulated tensor.
// CHECK-LABEL: func.func @scatter_add_rows
// CHECK-SAME: (%[[S:.*]]: tensor<2x4x16xf32>, %[[D:.*]]: tensor<10x4x16xf32>, %[[I:.*]]: tensor<4x2xi64>)
// CHECK: scf.for %[[P:.*]] = {{.*}} iter_args(%[[ACC0:.*]] = %[[D]])
// CHECK: scf.for %[[Q:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %[[ACC0]])
// CHECK-NOT: scf.for
// CHECK: %[[RAW:.*]] = tensor.extract %[[I]][%[[Q]], %[[P]]] : tensor<4x2xi64>
// CHECK: %[[ROW:.*]] = arith.index_cast %[[RAW]] : i64 to index
// CHECK: %[[LO:.*]] = arith.maxsi %[[ROW]], %{{.*}} : index
// CHECK: %[[AT:.*]] = arith.minsi %[[LO]], %{{.*}} : index
// CHECK: %[[ADD:.*]] = tensor.extract_slice %[[S]][%[[P]], %[[Q]], 0] [1, 1, 16] [1, 1, 1] : tensor<2x4x16xf32> to tensor<16xf32>
// CHECK: %[[OLD:.*]] = tensor.extract_slice %[[ACC]][%[[AT]], %[[Q]], 0] [1, 1, 16] [1, 1, 1] : tensor<10x4x16xf32> to tensor<16xf32>
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[OLD]], %[[ADD]] : tensor<16xf32>, tensor<16xf32>) outs(%[[OLD]] : tensor<16xf32>)
// CHECK: arith.addf
// CHECK: tensor.insert_slice %[[SUM]] into %[[ACC]][%[[AT]], %[[Q]], 0] [1, 1, 16] [1, 1, 1]
func.func @scatter_add_rows(%src: tensor<2x4x16xf32>, %dest: tensor<10x4x16xf32>, %i: tensor<4x2xi64>) -> tensor<10x4x16xf32> {
  %ib = harp.view %i <(d0, d1, d2) -> (d1, d0)> : tensor<4x2xi64> -> tensor<2x4x16xi64>
  %0 = harp.scatter_add %src into %dest[%ib] dim(0) : tensor<2x4x16xf32> into tensor<10x4x16xf32>[tensor<2x4x16xi64>]
  return %0 : tensor<10x4x16xf32>
}

// -----

// An index that varies along the innermost dim, or a scatter along it,
// keeps the element-wise loop nest.
// CHECK-LABEL: func.func @scatter_add_innermost
// CHECK: scf.for
// CHECK: scf.for
// CHECK: tensor.extract
// CHECK: tensor.insert
// CHECK-NOT: linalg.generic
func.func @scatter_add_innermost(%src: tensor<2x3xf32>, %dest: tensor<2x5xf32>, %i: tensor<2xi64>) -> tensor<2x5xf32> {
  %ib = harp.view %i <(d0, d1) -> (d0)> : tensor<2xi64> -> tensor<2x3xi64>
  %0 = harp.scatter_add %src into %dest[%ib] dim(1) : tensor<2x3xf32> into tensor<2x5xf32>[tensor<2x3xi64>]
  return %0 : tensor<2x5xf32>
}

// -----

// A view operand of a data-movement op is materialised first.
// CHECK-LABEL: func.func @concat_of_view
// CHECK: %[[T:.*]] = linalg.generic
// CHECK: tensor.concat dim(0) %[[T]], %[[T]]
func.func @concat_of_view(%a: tensor<3x2xf32>) -> tensor<4x3xf32> {
  %t = harp.view %a <(d0, d1) -> (d1, d0)> : tensor<3x2xf32> -> tensor<2x3xf32>
  %0 = harp.concat dim(0) %t, %t : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
