// A two-layer MLP forward pass with softmax, written in the ms dialect as MindSpore's
// frontend would emit it: the reshape target is a constant operand and 0.5 is a Python
// scalar, both resolved by the front-end passes.
//   mscc examples/mlp_forward.mlir --run
//   mscc examples/mlp_forward.mlir --emit=linalg
func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %b1: tensor<32xf32>,
               %w2: tensor<32x10xf32>, %b2: tensor<10xf32>) -> tensor<8x10xf32> {
  %h = "ms.matmul"(%x, %w1) {transpose_a = false, transpose_b = false}
      : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %hb = "ms.add"(%h, %b1) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %a = "ms.relu"(%hb) : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %half = "ms.constant"() {value = dense<0.5> : tensor<f64>, is_scalar} : () -> tensor<f64>
  %s = "ms.mul"(%a, %half) : (tensor<8x32xf32>, tensor<f64>) -> tensor<8x32xf32>
  %o = "ms.matmul"(%s, %w2) {transpose_a = false, transpose_b = false}
      : (tensor<8x32xf32>, tensor<32x10xf32>) -> tensor<8x10xf32>
  %ob = "ms.add"(%o, %b2) : (tensor<8x10xf32>, tensor<10xf32>) -> tensor<8x10xf32>
  %shape = "ms.constant"() {value = dense<[8, 10]> : tensor<2xi64>} : () -> tensor<2xi64>
  %r = "ms.reshape"(%ob, %shape) : (tensor<8x10xf32>, tensor<2xi64>) -> tensor<8x10xf32>
  %p = "ms.softmax"(%r) {axis = -1 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf32>
  return %p : tensor<8x10xf32>
}
