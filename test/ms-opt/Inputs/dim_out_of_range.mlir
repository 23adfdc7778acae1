func.func @f(%x: memref<?x4xf32>) -> memref<?xf32> {
  %c = arith.constant -1 : index
  %n = memref.dim %x, %c : memref<?x4xf32>
  %m = memref.alloc(%n) : memref<?xf32>
  return %m : memref<?xf32>
}
func.func @g(%t: tensor<?xf32>) -> index {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %t, %c1 : tensor<?xf32>
  return %n : index
}
