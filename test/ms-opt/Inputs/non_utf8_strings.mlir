func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "ms.ne\cate"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func @"\ff"(%a: tensor<2xf32>) -> tensor<2xf32> attributes {note = "caf\C3\A9 \E2\82\AC"} {
  return %a : tensor<2xf32>
}
