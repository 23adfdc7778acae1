// ms-cpu-matmul-calls calls the quick tier's compiled matrix product, declared once. A module
// with another symbol of that name gets a located error at it.
// RUN: ms-opt %s --ms-cpu-matmul-calls --split-input-file --verify-diagnostics

// expected-error@+1 {{'mscc_quick_matmul_f32' is the C library function (index, index, index, index, index, index, index, index, index) -> () that this compile calls}}
func.func private @mscc_quick_matmul_f32(%x: f32)
func.func @product(%a: memref<5x3xf32>, %b: memref<3x7xf32>, %c: memref<5x7xf32>) {
  linalg.matmul ins(%a, %b : memref<5x3xf32>, memref<3x7xf32>) outs(%c : memref<5x7xf32>)
  return
}
