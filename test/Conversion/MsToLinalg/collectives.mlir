// Collectives lower to calls of the MPI C API from the compiled code (dialects/ops/
// collective.py): a private wrapper per collective checks that every process runs the same
// one (an MPI_Allreduce of a header, MPI_Abort with a located message otherwise), then calls
// MPI_Allreduce from the operand's buffer into a fresh one. MPICH's ABI: integer handles.
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | FileCheck %s
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | ms-opt --split-input-file > /dev/null

// CHECK-LABEL: module attributes {ms.mpi}
// CHECK:       func.func @sum(%[[X:.+]]: tensor<2x3xf32>)
// CHECK:         %[[FLAT:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK:         %[[SEND:.+]] = bufferization.to_buffer %[[FLAT]] read_only : tensor<6xf32> to memref<6xf32>
// CHECK:         %[[RECV:.+]] = memref.alloc() : memref<6xf32>
// CHECK:         call @[[WRAP:ms_mpi_allreduce[_0-9]*]](%[[SEND]], %[[RECV]])
// CHECK:         bufferization.to_tensor %[[RECV]] restrict writable
// CHECK:       llvm.func @MPI_Allreduce(!llvm.ptr, !llvm.ptr, i32, i32, i32, i32) -> i32
// CHECK:       llvm.mlir.global internal constant @ms_mpi_message{{.*}}ms.all_reduce of f32[2,3] (6 elements) at {{.*}}collectives.mlir:[[# @LINE + 10]]: the processes do not run the same collective
// CHECK:       func.func private @ms_mpi_mismatch
// CHECK:         llvm.call @dprintf
// CHECK:         llvm.call @MPI_Abort
// CHECK:       func.func private @[[WRAP]](%{{.*}}: memref<6xf32>, %{{.*}}: memref<6xf32>)
// CHECK-DAG:     %[[FLOAT:.+]] = llvm.mlir.constant(1275069450 : i32) : i32
// CHECK-DAG:     %[[SUM:.+]] = llvm.mlir.constant(1476395011 : i32) : i32
// CHECK:         llvm.call @MPI_Allreduce(
// CHECK:         llvm.call @MPI_Allreduce(%{{.*}}, %{{.*}}, %{{.*}}, %[[FLOAT]], %[[SUM]], %{{.*}})
func.func @sum(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "ms.all_reduce"(%x) {reduce_op = "sum"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// all_gather: the rank's rows placed (at rank * rows) into zeros, as bits, combined with
// MPI_BOR, read back as floats.
// CHECK-LABEL: func.func @gather(
// CHECK:         %[[Z:.+]] = linalg.fill {{.*}} -> tensor<6x2xi32>
// CHECK:         arith.bitcast %{{.*}} : f32 to i32
// CHECK:         %[[RANK:.+]] = call @ms_mpi_rank() : () -> i32
// CHECK:         %[[AT:.+]] = arith.index_cast %[[RANK]] : i32 to index
// CHECK:         %[[OFF:.+]] = arith.muli %[[AT]], %{{.*}} : index
// CHECK:         tensor.insert_slice %{{.*}} into %[[Z]][%[[OFF]], 0] [3, 2] [1, 1]
// CHECK:         call @ms_mpi_allreduce
// CHECK:         arith.bitcast %{{.*}} : i32 to f32
// CHECK:       func.func private @ms_mpi_allreduce
// CHECK:         llvm.mlir.constant(1476395016 : i32)
// CHECK:         call @ms_mpi_size()
func.func @gather(%x: tensor<3x2xf32>) -> tensor<6x2xf32> {
  %0 = "ms.all_gather"(%x) {group_size = 2} : (tensor<3x2xf32>) -> tensor<6x2xf32>
  return %0 : tensor<6x2xf32>
}
