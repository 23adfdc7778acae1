#none = affine_map<(d0, d1, d2) -> ()>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @matmul_map_without_results(%x: tensor<4x3xf32>, %w: tensor<3x5xf32>, %c: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %0 = linalg.matmul indexing_maps = [#none, #b, #c] ins(%x, %w : tensor<4x3xf32>, tensor<3x5xf32>) outs(%c : tensor<4x5xf32>) -> tensor<4x5xf32>
  %1 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> ()>, #c] ins(%x, %w : tensor<4x3xf32>, tensor<3x5xf32>) outs(%0 : tensor<4x5xf32>) -> tensor<4x5xf32>
  return %1 : tensor<4x5xf32>
}
func.func @overflowing_map(%x: memref<8xf32>, %y: memref<8x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 * 9223372036854775807)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}
// A scalar operand's map has no results: fine outside a matmul.
#scalar = affine_map<(d0) -> ()>
