func.func @chain(%x: tensor<8xf32>) -> tensor<2x4xf32> {
  %half = "ms.constant"() {value = dense<0.5> : tensor<f32>, is_scalar} : () -> tensor<f32>
  %0 = "ms.mul"(%x, %half) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %shape = "ms.constant"() {value = dense<[2, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %1 = "ms.reshape"(%0, %shape) : (tensor<8xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
