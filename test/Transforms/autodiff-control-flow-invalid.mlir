// Loops whose trip count is known only at run time are forward only: differentiating
// through one is an error at the loop that names it and suggests a static trip count.
// RUN: ms-opt %s --ms-autodiff --split-input-file --verify-diagnostics

func.func private @while(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'WhileLoop' cannot be differentiated: its trip count is known only at run time, so a reverse pass would have to store an unknown number of iterations (JAX's while_loop is forward only too). Use ForiLoop with int bounds or Scan, whose trip count is static}}
  %r = scf.while (%a = %x) : (tensor<3xf32>) -> tensor<3xf32> {
    %s = "ms.reduce_sum"(%a) {axis = array<i64>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
    %ten = "ms.constant"() {value = dense<10.0> : tensor<f32>} : () -> tensor<f32>
    %c = "ms.less"(%s, %ten) : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %p = tensor.extract %c[] : tensor<i1>
    scf.condition(%p) %a : tensor<3xf32>
  } do {
  ^bb0(%a: tensor<3xf32>):
    %0 = "ms.add"(%a, %a) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    scf.yield %0 : tensor<3xf32>
  } attributes {ms.api = "WhileLoop"}
  return %r : tensor<3xf32>
}
func.func @grad_while(%x: tensor<3xf32>) -> tensor<3xf32> {
  %g = "ms.grad"() {callee = @while, grad_position = array<i64: 0>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<3xf32>) -> tensor<3xf32>)
  %0 = func.call_indirect %g(%x) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func private @tensor_bounds(%x: tensor<3xf32>, %n: tensor<i64>) -> tensor<3xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %u = tensor.extract %n[] : tensor<i64>
  %ub = arith.index_cast %u : i64 to index
  // expected-error@+1 {{'ForiLoop' with Tensor bounds cannot be differentiated: its trip count is known only at run time (like a WhileLoop, it is forward only). Use ForiLoop with int bounds or Scan, whose trip count is static}}
  %r = scf.for %iv = %c0 to %ub step %c1 iter_args(%a = %x) -> (tensor<3xf32>) {
    %0 = "ms.sin"(%a) : (tensor<3xf32>) -> tensor<3xf32>
    scf.yield %0 : tensor<3xf32>
  } {ms.api = "ForiLoop"}
  return %r : tensor<3xf32>
}
func.func @grad_tensor_bounds(%x: tensor<3xf32>, %n: tensor<i64>) -> tensor<3xf32> {
  %g = "ms.grad"() {callee = @tensor_bounds, grad_position = array<i64: 0>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<3xf32>, tensor<i64>) -> tensor<3xf32>)
  %0 = func.call_indirect %g(%x, %n) : (tensor<3xf32>, tensor<i64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A loop that does not reach the differentiated result is not differentiated.
func.func private @unrelated(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %r = scf.while (%a = %y) : (tensor<3xf32>) -> tensor<3xf32> {
    %f = arith.constant false
    scf.condition(%f) %a : tensor<3xf32>
  } do {
  ^bb0(%a: tensor<3xf32>):
    scf.yield %a : tensor<3xf32>
  } attributes {ms.api = "WhileLoop"}
  %0 = "ms.exp"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  return %0, %r : tensor<3xf32>, tensor<3xf32>
}
func.func @grad_unrelated(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %g = "ms.grad"() {callee = @unrelated, grad_position = array<i64: 0>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>)
  %0 = func.call_indirect %g(%x, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
