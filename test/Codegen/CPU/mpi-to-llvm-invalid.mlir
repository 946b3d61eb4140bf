// harp-mpi-to-llvm checks what the library calls assume of their buffers.
// RUN: harp-opt %s --split-input-file --verify-diagnostics --harp-mpi-to-llvm

func.func @two_dims(%a: memref<2x3xf32>, %b: memref<2x3xf32>) {
  %comm = mpi.comm_world : !mpi.comm
  // expected-error @+1 {{'mpi.allreduce' op needs a 1-D buffer with a unit stride (MPI is passed its pointer and its size), got 'memref<2x3xf32>'}}
  mpi.allreduce(%a, %b, MPI_SUM, %comm) : memref<2x3xf32>, memref<2x3xf32>
  return
}

// -----

func.func @strided(%a: memref<4xf32, strided<[2]>>) {
  %comm = mpi.comm_world : !mpi.comm
  %tag = arith.constant 0 : i32
  // expected-error @+1 {{'mpi.send' op needs a 1-D buffer with a unit stride}}
  mpi.send(%a, %tag, %tag, %comm) : memref<4xf32, strided<[2]>>, i32, i32
  return
}

// -----

func.func @bits(%a: memref<4xi1>) {
  %comm = mpi.comm_world : !mpi.comm
  %tag = arith.constant 0 : i32
  // expected-error @+1 {{'mpi.recv' op has no MPI datatype for 'i1' (supported: f32, f64, 8- to 64-bit integers)}}
  mpi.recv(%a, %tag, %tag, %comm) : memref<4xi1>, i32, i32
  return
}

// -----

func.func @half(%a: memref<4xf16>, %b: memref<4xf16>) {
  %comm = mpi.comm_world : !mpi.comm
  // expected-error @+1 {{'mpi.allreduce' op has no MPI datatype for 'f16'}}
  mpi.allreduce(%a, %b, MPI_SUM, %comm) : memref<4xf16>, memref<4xf16>
  return
}
