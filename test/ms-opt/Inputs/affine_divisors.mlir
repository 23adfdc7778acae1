#zero = affine_map<(d0) -> (d0 floordiv 0)>
#identity = affine_map<(d0) -> (d0)>
func.func @divides_by_zero(%x: memref<4xf32>, %y: memref<4xf32>) {
  linalg.generic {indexing_maps = [#zero, #identity], iterator_types = ["parallel"]} ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}
#negative = affine_map<(d0, d1) -> (d0 mod -1, d1 ceildiv (2 - 2), d1 floordiv 2, d0 mod (d1 - 1))>
