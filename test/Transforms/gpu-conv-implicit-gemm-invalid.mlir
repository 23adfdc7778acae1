// RUN: ms-opt %s --ms-gpu-conv-implicit-gemm --split-input-file --verify-diagnostics

#x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#y = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @dynamic_batch(%x: memref<?x3x6x6xf32>, %w: memref<4x3x3x3xf32>, %y: memref<?x4x4x4xf32>) {
  // expected-error@+1 {{ms.implicit_gemm expects static shapes (dynamic ones keep im2col)}}
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<?x3x6x6xf32>, memref<4x3x3x3xf32>) outs(%y : memref<?x4x4x4xf32>)
      attrs = {ms.implicit_gemm = {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>}} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The tag says stride 2; the maps read stride 1.
#x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#y = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @maps_disagree(%x: memref<1x3x6x6xf32>, %w: memref<4x3x3x3xf32>, %y: memref<1x4x2x2xf32>) {
  // expected-error@+1 {{ms.implicit_gemm: the indexing maps are not the convolution's window maps}}
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<1x3x6x6xf32>, memref<4x3x3x3xf32>) outs(%y : memref<1x4x2x2xf32>)
      attrs = {ms.implicit_gemm = {stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>}} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Tagged on tensors: the pass runs after bufferization.
#x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#y = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @tensors(%x: tensor<1x3x6x6xf32>, %w: tensor<4x3x3x3xf32>, %y: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error@+1 {{ms.implicit_gemm expects a generic on memrefs (input, weight; output)}}
  %0 = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>) outs(%y : tensor<1x4x4x4xf32>)
      attrs = {ms.implicit_gemm = {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>}} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// A tag without a dilation (a KeyError inside the pass, found by bench/fuzz_ir.py
// --own-passes, seed 75), and one that is no dictionary.
#x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#y = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @tag_without_dilation(%x: memref<1x3x6x6xf32>, %w: memref<4x3x3x3xf32>, %y: memref<1x4x4x4xf32>) {
  // expected-error@+1 {{ms.implicit_gemm expects a dictionary with 'dilation' = array<i64: ...>}}
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<1x3x6x6xf32>, memref<4x3x3x3xf32>) outs(%y : memref<1x4x4x4xf32>)
      attrs = {ms.implicit_gemm = {stride = array<i64: 1, 1>}} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#y = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @tag_not_a_dictionary(%x: memref<1x3x6x6xf32>, %w: memref<4x3x3x3xf32>, %y: memref<1x4x4x4xf32>) {
  // expected-error@+1 {{ms.implicit_gemm expects a dictionary with 'stride' = array<i64: ...>}}
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<1x3x6x6xf32>, memref<4x3x3x3xf32>) outs(%y : memref<1x4x4x4xf32>)
      attrs = {ms.implicit_gemm = "stride 1"} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}
