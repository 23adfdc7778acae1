// Loops and conditionals on the CUDA target (passes/gpu_control.py): each region is outlined
// into its own function with its own kernels (its own launch plan); in the parent the loop
// is a call of a private declaration describing it, which the launch plan reads as a
// control node. The CPU target compiles the same module to a loop.
// RUN: mscc %s --target cuda --emit=gpu | FileCheck %s
// RUN: mscc %s --target cuda --emit=ptx | FileCheck %s --check-prefix=PTX
// RUN: mscc %s --emit=llvm-ir | FileCheck %s --check-prefix=CPU

// CHECK-LABEL: func.func @loop(
// CHECK-NOT: scf.for
// CHECK: call @loop__for1(%{{.*}}) : (memref<4xf32>) -> memref<4xf32>
// CHECK: func.func @loop__for1_body(%{{.*}}: memref<i64>, %{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>)
// CHECK: gpu.launch_func @kernels::@loop__for1_body_kernel
// CHECK: func.func private @loop__for1(memref<4xf32> {bufferization.access = "read"}) -> memref<4xf32>
// CHECK-SAME: ms.ctl = "{\22kind\22: \22for\22, \22api\22: \22ForiLoop\22, \22carries\22: 1, \22captured\22: 0, \22lower\22: 0, \22upper\22: 3, \22step\22: 1, \22body\22: \22loop__for1_body\22}"
// PTX: .entry loop__for1_body_kernel(
// CPU: define void @_mlir_ciface_loop
func.func @loop(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %iv = %c0 to %c3 step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %0 = "ms.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %0 : tensor<4xf32>
  } {ms.api = "ForiLoop"}
  return %r : tensor<4xf32>
}
