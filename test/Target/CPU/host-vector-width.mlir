// REQUIRES: host-avx512
// On a host with AVX-512 the code compiled for the host (no MSCC_CPU) uses 512-bit zmm
// registers: passes/cpu_target.py asks LLVM for them, which its tuning for Intel's AVX-512
// CPUs would not use by itself.
// RUN: env -u MSCC_CPU -u MSCC_VECTOR_BITS mscc %s --emit asm | FileCheck %s
// RUN: env -u MSCC_CPU -u MSCC_VECTOR_BITS mscc %s --emit llvm | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: softmax_rows..omp_par:
// CHECK:       {{vmaxps|vmaxnumps|vmaxss}} {{.*}}%zmm
// CHECK:       vfmadd{{[0-9]+}}ps {{.*}}%zmm
// LLVM-LABEL:  llvm.func internal @mscc.softmax_rows(
// LLVM-SAME:     passthrough = ["alwaysinline", ["prefer-vector-width", "512"]]
// LLVM-LABEL:  llvm.func @_mlir_ciface_softmax_rows(
// LLVM-SAME:     passthrough = {{\[\[}}"prefer-vector-width", "512"]]
func.func @softmax_rows(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %y = "ms.softmax"(%x) {axis = -1 : i64} : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
  return %y : tensor<64x1024xf32>
}
