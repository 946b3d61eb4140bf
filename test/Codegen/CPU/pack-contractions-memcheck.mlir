// UNSUPPORTED: asan
// REQUIRES: valgrind
// RUN: valgrind --error-exitcode=9 --quiet harp-opt %s --pass-pipeline='builtin.module(func.func(harp-pack-contractions{vector-bits=256 register-rows=4 l1-cache=32768 l2-cache=262144}))' | FileCheck %s
// RUN: valgrind --error-exitcode=9 --quiet harp-opt %s --pass-pipeline='builtin.module(func.func(harp-pack-contractions{vector-bits=128 register-rows=4 l1-cache=32768 l2-cache=262144}))' | FileCheck %s
// RUN: valgrind --error-exitcode=9 --quiet harp-opt %s --pass-pipeline='builtin.module(func.func(harp-pack-contractions{vector-bits=512 l1-cache=32768 l2-cache=262144}))' | FileCheck %s

// A wide matmul whose n (257) leaves one column past its register-tile
// panels: harp-pack-contractions splits it along n (linalg::splitOp erases
// the original op), packs the 256 columns, and copies the last column of B
// into a row. It once read the erased op's operand to find B in the
// column's matmul: a use-after-free that crashed the compiler now and then
// (test_remainders.py's 13 x 1031 x 257 f64 gradient with AVX2 code and a
// 256 KiB L2). memcheck fails the run on any such read; 128-, 256- and
// 512-bit panels (4, 8 and 16 columns) all leave the one column.
// CHECK-LABEL: func.func @one_tail_column
// CHECK: tensor.extract_slice %{{.*}}[0, 0] [67, 256] [1, 1] : tensor<67x257xf64> to tensor<67x256xf64>
// CHECK: tensor<{{[0-9]+}}x67x{{[0-9]+}}xf64>
// CHECK: %[[COLUMN:.*]] = tensor.extract_slice %{{.*}}[0, 256] [67, 1] [1, 1] : tensor<67x257xf64> to tensor<67x1xf64>
// CHECK: %[[ROW:.*]] = linalg.generic {{.*}} ins(%[[COLUMN]] : tensor<67x1xf64>) outs(%{{.*}} : tensor<1x67xf64>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[ROW]] : tensor<13x67xf64>, tensor<1x67xf64>) outs(%{{.*}} : tensor<13x1xf64>)
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @one_tail_column(%a: tensor<13x67xf64>, %b: tensor<67x257xf64>, %c: tensor<13x257xf64>) -> tensor<13x257xf64> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<13x67xf64>, tensor<67x257xf64>) outs(%c : tensor<13x257xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %p = arith.mulf %x, %y : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<13x257xf64>
  return %r : tensor<13x257xf64>
}
