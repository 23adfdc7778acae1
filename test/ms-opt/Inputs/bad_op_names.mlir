func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> attributes {ms.note = "ms.", ms.unit} {
  %0 = "ms."(%a) : (tensor<2xf32>) -> tensor<2xf32>
  %1 = "func."(%0) : (tensor<2xf32>) -> tensor<2xf32>
  "ms"() : () -> ()
  %2 = "ms\2E"(%1) : (tensor<2xf32>) -> tensor<2xf32>
  %3 = ms.neg %2 : tensor<2xf32>
  "ms.yield"() {shape = array<index: 2>} : () -> ()
  return %3 : tensor<2xf32> loc("ms"("f.py":1:2))
}
