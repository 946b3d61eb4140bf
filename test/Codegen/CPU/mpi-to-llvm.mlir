// harp-mpi-to-llvm: the mpi ops harp's collectives use become calls into the
// MPI library, for the ABI the module's DLTI names. Open MPI's handles are
// addresses of library globals (its reductions named ompi_mpi_op_*, as the
// library exports them); MPICH's are integer constants.
// RUN: harp-opt %s --split-input-file --harp-mpi-to-llvm | FileCheck %s
// The whole CPU pipeline on a collective written on tensors: the reduction
// writes straight into the caller's result buffer.
// RUN: harp-opt %s --split-input-file --harp-to-llvm | FileCheck %s --check-prefix=PIPE

// CHECK-LABEL: module attributes {dlti.map = #dlti.map<"MPI:Implementation" = "OpenMPI">}
// CHECK-DAG: llvm.mlir.global external @ompi_mpi_op_sum()
// CHECK-DAG: llvm.mlir.global external @ompi_mpi_op_max()
// CHECK-DAG: llvm.mlir.global external @ompi_mpi_float()
// CHECK-DAG: llvm.mlir.global external @ompi_mpi_comm_world()
// CHECK-DAG: llvm.func @MPI_Comm_size(!llvm.ptr, !llvm.ptr) -> i32
// CHECK-DAG: llvm.func @MPI_Barrier(!llvm.ptr) -> i32
// CHECK-NOT: @ompi_mpi_sum
// CHECK-LABEL: func.func @collectives
// CHECK: %[[SUM:.*]] = llvm.mlir.addressof @ompi_mpi_op_sum
// CHECK: llvm.call @MPI_Allreduce({{.*}}, %[[SUM]], {{.*}})
// CHECK: llvm.mlir.addressof @ompi_mpi_op_max
// CHECK: llvm.call @MPI_Allreduce
// CHECK: %[[SLOT:.*]] = llvm.alloca {{.*}} x i32
// CHECK: llvm.call @MPI_Comm_size(%{{.*}}, %[[SLOT]])
// CHECK: %[[SIZE:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> i32
// CHECK: llvm.call @MPI_Barrier
// CHECK: llvm.call @MPI_Send
// CHECK: llvm.call @MPI_Recv
// CHECK: return %[[SIZE]] : i32
module attributes {dlti.map = #dlti.map<"MPI:Implementation" = "OpenMPI">} {
  func.func @collectives(%a: memref<7xf32>, %b: memref<7xf32>) -> i32 {
    %comm = mpi.comm_world : !mpi.comm
    mpi.allreduce(%a, %b, MPI_SUM, %comm) : memref<7xf32>, memref<7xf32>
    mpi.allreduce(%b, %a, MPI_MAX, %comm) : memref<7xf32>, memref<7xf32>
    %size = mpi.comm_size(%comm) : i32
    mpi.barrier(%comm)
    %tag = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    mpi.send(%a, %tag, %one, %comm) : memref<7xf32>, i32, i32
    mpi.recv(%b, %tag, %one, %comm) : memref<7xf32>, i32, i32
    return %size : i32
  }
}

// -----

// MPICH: the communicator is an int (MPI_COMM_WORLD = 0x44000000), passed
// truncated to i32.
// CHECK-LABEL: func.func @mpich
// CHECK: %[[WORLD:.*]] = llvm.mlir.constant(1140850688 : i64) : i64
// CHECK: %[[COMM:.*]] = llvm.trunc %[[WORLD]] : i64 to i32
// CHECK: llvm.call @MPI_Comm_size(%[[COMM]], %{{.*}}) : (i32, !llvm.ptr) -> i32
// CHECK: llvm.call @MPI_Barrier(%{{.*}}) : (i32) -> i32
func.func @mpich() -> i32 {
  %comm = mpi.comm_world : !mpi.comm
  %size = mpi.comm_size(%comm) : i32
  mpi.barrier(%comm)
  return %size : i32
}

// -----

// Without mpi ops the pass changes nothing.
// CHECK-LABEL: func.func @none
// CHECK-NEXT: return
func.func @none() {
  return
}

// -----

// One buffer to send and receive: MPI_IN_PLACE as the send buffer, (void *)1
// for Open MPI.
// CHECK-LABEL: func.func @in_place
// CHECK: %[[MARK:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK: %[[IN_PLACE:.*]] = llvm.inttoptr %[[MARK]] : i64 to !llvm.ptr
// CHECK: llvm.call @MPI_Allreduce(%[[IN_PLACE]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
module attributes {dlti.map = #dlti.map<"MPI:Implementation" = "OpenMPI">} {
  func.func @in_place(%a: memref<9xi32>) {
    %comm = mpi.comm_world : !mpi.comm
    mpi.allreduce(%a, %a, MPI_MIN, %comm) : memref<9xi32>, memref<9xi32>
    return
  }
}

// -----

// (void *)-1 for MPICH; two buffers stay two.
// CHECK-LABEL: func.func @in_place_mpich
// CHECK: %[[MARK:.*]] = llvm.mlir.constant(-1 : i64) : i64
// CHECK: %[[IN_PLACE:.*]] = llvm.inttoptr %[[MARK]] : i64 to !llvm.ptr
// CHECK: llvm.call @MPI_Allreduce(%[[IN_PLACE]],
// CHECK-NOT: llvm.inttoptr
// CHECK: llvm.call @MPI_Allreduce(%[[SEND:[^,]*]], %[[RECV:[^,]*]],
func.func @in_place_mpich(%a: memref<9xi64>, %b: memref<9xi64>) {
  %comm = mpi.comm_world : !mpi.comm
  mpi.allreduce(%a, %a, MPI_SUM, %comm) : memref<9xi64>, memref<9xi64>
  mpi.allreduce(%a, %b, MPI_SUM, %comm) : memref<9xi64>, memref<9xi64>
  return
}

// -----

// How harp::distributed builds a collective: the result's buffer, which
// buffer-results-to-out-params makes the caller's, reduced in place. No
// buffer is allocated and nothing is copied.
// PIPE-LABEL: llvm.func @all_reduce(
// PIPE-SAME: %{{[a-z0-9]+}}: !llvm.ptr, %[[ALIGNED:[a-z0-9]+]]: !llvm.ptr, %[[OFFSET:[a-z0-9]+]]: i64
// PIPE-NOT: llvm.call @malloc
// PIPE: %[[BUF:.*]] = llvm.getelementptr %[[ALIGNED]][%[[OFFSET]]]
// PIPE: llvm.call @MPI_Allreduce(%{{.*}}, %[[BUF]],
// PIPE-NOT: llvm.call
// PIPE: llvm.return
module attributes {dlti.map = #dlti.map<"MPI:Implementation" = "OpenMPI">} {
  func.func @all_reduce() -> tensor<5xf64> {
    %buf = memref.alloc() : memref<5xf64>
    %comm = mpi.comm_world : !mpi.comm
    mpi.allreduce(%buf, %buf, MPI_SUM, %comm) : memref<5xf64>, memref<5xf64>
    %r = bufferization.to_tensor %buf restrict writable : memref<5xf64> to tensor<5xf64>
    return %r : tensor<5xf64>
  }
}
