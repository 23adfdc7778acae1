#id = affine_map<(d0) -> (d0)>
func.func @first(%x: memref<4xf32>, %y: memref<4xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}
#twice = affine_map<(d0) -> (d0 * 2)>
func.func @second(%x: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf32>
  return %v, %v : f32, f32
}
