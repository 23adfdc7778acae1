func.func @f(%x: memref<4x4xf32>, %y: memref<4x4xf32>) {
  linalg.transpose ins(%x : memref<4x4xf32>) outs(%y : memref<4x4xf32>) permutation = [99999999999999999999999, 0]
  return
}
