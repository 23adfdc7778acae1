// The CUDA target runs straight-line programs only, for now: a loop or a conditional is a
// located error naming it (never a crash), and the CPU target compiles the same module.
// RUN: not mscc %s --target cuda --emit=ptx 2>&1 | FileCheck %s
// RUN: mscc %s --emit=llvm-ir | FileCheck %s --check-prefix=CPU

// CHECK: control-flow.mlir:[[# @LINE + 7]]:8: error: 'scf.for' (ForiLoop): control flow is not yet supported on the CUDA target (compile for the CPU)
// CHECK-NOT: internal compiler error
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
