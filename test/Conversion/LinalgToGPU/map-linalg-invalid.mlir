// RUN: ms-opt %s --ms-gpu-map-linalg --split-input-file --verify-diagnostics

func.func @named_op(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %c: memref<4x4xf32>) {
  // expected-error@+1 {{'linalg.matmul' has no GPU mapping (run linalg-generalize-named-ops first)}}
  linalg.matmul ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%c : memref<4x4xf32>)
  return
}

// -----

#id = affine_map<(d0) -> (d0)>
func.func @dynamic(%a: memref<?xf32>, %b: memref<?xf32>) {
  // expected-error@+1 {{cannot map to the GPU: loop sizes are not static}}
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<?xf32>) outs(%b : memref<?xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}
