// Collectives run on the CPU over MPI: the CUDA target refuses them with a located error
// (ms-gpu-reject-collectives), and the CPU target compiles the same module.
// RUN: not mscc %s --target cuda --emit=ptx 2>&1 | FileCheck %s
// RUN: mscc %s --emit=llvm-ir | FileCheck %s --check-prefix=CPU

// CHECK: collectives.mlir:[[# @LINE + 5]]:8: error: 'ms.all_reduce': collectives run on the CPU target over MPI; the CUDA target has none
// CHECK-NOT: internal compiler error
// CPU: define void @_mlir_ciface_sum
// CPU: call i32 @MPI_Allreduce
func.func @sum(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "ms.all_reduce"(%x) {reduce_op = "sum"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
