// RUN: ms-opt %s --ms-gpu-map-linalg --split-input-file --verify-diagnostics

func.func @named_op(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %c: memref<4x4xf32>) {
  // expected-error@+1 {{'linalg.matmul' has no GPU mapping (run linalg-generalize-named-ops first)}}
  linalg.matmul ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%c : memref<4x4xf32>)
  return
}
