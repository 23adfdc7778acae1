// ms-entry-dps: a public function is an entry the runtime calls with arrays, so it must take
// and return ranked tensors (these were internal compiler errors of `mscc --emit=llvm-ir`).
// RUN: ms-opt %s --ms-entry-dps --split-input-file --verify-diagnostics

// expected-error@+1 {{entry function 'scalar' argument #0 has type f32; entry functions take and return ranked tensors}}
func.func @scalar(%a: f32) -> f32 {
  return %a : f32
}

// -----

// expected-error@+1 {{entry function 'buffers' result #0 has type memref<4xf32>}}
func.func @buffers(%a: tensor<4xf32>) -> memref<4xf32> {
  %0 = memref.alloc() : memref<4xf32>
  return %0 : memref<4xf32>
}

// -----

// expected-error@+1 {{entry function 'vectors' argument #1 has type vector<8xf32>}}
func.func @vectors(%a: tensor<8xf32>, %b: vector<8xf32>) -> tensor<8xf32> {
  return %a : tensor<8xf32>
}

// -----

// Private functions are not entries: any signature.
func.func private @helper(%a: f32) -> f32 {
  return %a : f32
}
func.func @entry(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
