func.func @f(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "ms.log_softmax"(%a) {axis = 0 : i64} : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
