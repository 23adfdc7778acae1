// ms-outline-matmul on a matmul whose fusion region attribute is not a region's (read from a
// file, it may be anything): a located error, not a KeyError.
// RUN: ms-opt %s --ms-outline-matmul --split-input-file --verify-diagnostics

func.func @no_kind(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %c: memref<4x5xf32>) {
  // expected-error@+1 {{'ms.region' must be a dictionary with a string 'kind'}}
  linalg.matmul {ms.region = {id = 5 : i64, k.ind = "matmul"}} ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%c : memref<4x5xf32>)
  return
}

// -----

func.func @not_a_dictionary(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %c: memref<4x5xf32>) {
  // expected-error@+1 {{'ms.region' must be a dictionary with a string 'kind'}}
  linalg.matmul {ms.region = 7 : i64} ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%c : memref<4x5xf32>)
  return
}
