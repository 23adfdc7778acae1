#map = affine_map<(d0) -> (d0)>
func.func @f(%x: memref<4xf32>, %y: memref<4xf32>) {
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", f16]} ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}
