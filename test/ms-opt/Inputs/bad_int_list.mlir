func.func @f(%x: memref<2x3xf32>, %y: memref<3x2xf32>) {
  linalg.transpose ins(%x : memref<2x3xf32>) outs(%y : memref<3x2xf32>) permutation = [1,, 0]
  return
}
