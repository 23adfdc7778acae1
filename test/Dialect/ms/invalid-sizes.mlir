// Verifier errors for input that MLIR would accept and then abort on later (assertions are
// on in its build): shapes whose byte size overflows int64, empty symbol names, attribute
// forms the bindings or numpy cannot read, const inputs too big to read.
// RUN: ms-opt %s --split-input-file --verify-diagnostics

// 3e9 x 3e9 elements fit int64, their 4 bytes each do not (lowering aborted with "integer
// overflow in size computation"): reported at the function (its argument) and at each op.
// (More elements than int64 counts are refused before parsing: test/ms-opt/robustness.test.)
// expected-error@+1 {{'func.func' op type tensor<3000000000x3000000000xf32>: shape (3000000000, 3000000000) of 4-byte elements is 36000000000000000000 bytes, more than sizes in int64 can hold}}
func.func @huge_argument(%a: tensor<3000000000x3000000000xf32>) -> tensor<3000000000x3000000000xf32> {
  // expected-error@+1 {{'ms.neg' op type tensor<3000000000x3000000000xf32>: shape (3000000000, 3000000000)}}
  %0 = "ms.neg"(%a) : (tensor<3000000000x3000000000xf32>) -> tensor<3000000000x3000000000xf32>
  return %0 : tensor<3000000000x3000000000xf32>
}

// -----

// The element count fits int64, the byte count does not.
// expected-error@+1 {{'func.func' op type () -> tensor<2147483648x2147483648xf64>}}
func.func @huge_result() -> tensor<2147483648x2147483648xf64> {
  // expected-error@+1 {{'ms.constant' op type tensor<2147483648x2147483648xf64>: shape (2147483648, 2147483648) of 8-byte elements is 36893488147419103232 bytes}}
  %0 = "ms.constant"() {value = dense<1.0> : tensor<2147483648x2147483648xf64>} : () -> tensor<2147483648x2147483648xf64>
  return %0 : tensor<2147483648x2147483648xf64>
}

// -----

// Memrefs and vectors have sizes too (and nested in function types).
// expected-error@+1 {{'func.func' op type (memref<1152921504606846976x4xi16>) -> (): shape (1152921504606846976, 4) of 2-byte elements}}
func.func private @huge_memref(memref<1152921504606846976x4xi16>)

// -----

// The largest size that fits is fine.
func.func private @largest(tensor<1152921504606846975xf64>)

// -----

// A symbol without a name: nothing can refer to it, and LLVM cannot name it.
// expected-error@+1 {{'func.func' op has an empty symbol name}}
func.func @""(%a: tensor<2xf32>) -> tensor<2xf32> {
  return %a : tensor<2xf32>
}

// -----

// A dense array the bindings cannot read back (i128) is rejected before parsing, at the
// array (reading such an attribute elsewhere, outside ms ops, aborted the process).
func.func @unreadable_array(%a: tensor<6xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{dense array elements must be integers or floats (i1, i8, i16, i32, i64, f32, f64), not 'i128'}}
  %0 = "ms.reshape"(%a) {shape = array<i128: 2, 3>} : (tensor<6xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @unsupported_dense() -> tensor<2xf8E4M3FN> {
  // expected-error@+1 {{'ms.constant' op attribute 'value' must have a statically shaped tensor type of a supported element type, got tensor<2xf8E4M3FN>}}
  %0 = "ms.constant"() {value = dense<0.5> : tensor<2xf8E4M3FN>} : () -> tensor<2xf8E4M3FN>
  return %0 : tensor<2xf8E4M3FN>
}

// -----

func.func @big_const_input(%a: tensor<6xf32>) -> tensor<6xf32> {
  %s = "ms.constant"() {value = dense<1> : tensor<100000xi64>} : () -> tensor<100000xi64>
  // expected-error@+1 {{'ms.reshape' op operand 'shape' has 100000 elements; a const input (a shape, axes, ...) holds at most 65536}}
  %0 = "ms.reshape"(%a, %s) : (tensor<6xf32>, tensor<100000xi64>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @const_input_element_type(%a: tensor<6xf32>, %s: tensor<1xi128>) -> tensor<6xf32> {
  // expected-error@+1 {{'ms.reshape' op operand 'shape' must be a statically shaped tensor of a supported element type, got tensor<1xi128>}}
  %0 = "ms.reshape"(%a, %s) : (tensor<6xf32>, tensor<1xi128>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// A splat is a few bytes of text; read into an array (the verifier's attribute check) this
// one is 32 GiB (a MemoryError, an internal error before): constants are limited to 2 GiB.
func.func @huge_splat() -> tensor<4xi64> {
  // expected-error@+1 {{'ms.constant' op attribute 'value' holds 34359738368 bytes (tensor<4294967296xi64>); constants are limited to 2147483648 bytes}}
  %0 = "ms.constant"() {value = dense<1> : tensor<4294967296xi64>} : () -> tensor<4xi64>
  return %0 : tensor<4xi64>
}
