// mscc's own attributes read from a file may say anything: a kernel kind that is no string
// (a ValueError in every pass that asked: ms-cpu-matmul-schedule, ms-cpu-merge-kernels,
// ms-cpu-kernel-zero-init, ...) and a Parameter name that is no string (a ValueError in
// ms-implicit-cast) are located errors. (IR fuzzing with --own-passes and mutated ms.*
// attribute values, seeds 80-87.)
// RUN: ms-opt %s --ms-cpu-merge-kernels --split-input-file --verify-diagnostics
// RUN: ms-opt %s --ms-cpu-matmul-schedule --split-input-file --verify-diagnostics

// expected-error@+1 {{'ms.kernel' must be a string naming the kernel's kind, like "matmul", not {kind = 5 : i64}}}
func.func private @f__matmul0(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %c: memref<4x5xf32>) attributes {ms.kernel = {kind = 5}} {
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%c : memref<4x5xf32>)
  return
}
func.func @f(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %c: memref<4x5xf32>) {
  func.call @f__matmul0(%a, %b, %c) : (memref<4x3xf32>, memref<3x5xf32>, memref<4x5xf32>) -> ()
  return
}
