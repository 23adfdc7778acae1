// ms-autodiff's errors, each at the op that causes it.
// RUN: ms-opt %s --ms-autodiff --split-input-file --verify-diagnostics

// A differentiated value reaches an op without a gradient rule (ms.fused has none: fusion
// runs after autodiff).
func.func private @fused(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'ms.fused' op has no gradient rule, but a differentiated input reaches it}}
  %0 = "ms.fused"() ({
    %1 = "ms.exp"(%x) : (tensor<3xf32>) -> tensor<3xf32>
    gpu.yield %1 : tensor<3xf32>
  }) {kind = "elementwise"} : () -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @missing_rule(%x: tensor<3xf32>) -> tensor<3xf32> {
  %g = "ms.grad"() {callee = @fused, grad_position = array<i64: 0>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<3xf32>) -> tensor<3xf32>)
  %0 = func.call_indirect %g(%x) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func private @f(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "ms.mul"(%x, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @position_out_of_range(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'ms.grad' op grad_position 2 is out of range for @f, which takes 2 arguments}}
  %g = "ms.grad"() {callee = @f, grad_position = array<i64: 2>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>)
  %0 = func.call_indirect %g(%x, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func private @f(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "ms.mul"(%x, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @negative_position(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'ms.grad' op grad_position -1 is out of range for @f, which takes 2 arguments}}
  %g = "ms.grad"() {callee = @f, grad_position = array<i64: -1>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>)
  %0 = func.call_indirect %g(%x, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func private @f(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "ms.mul"(%x, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @duplicate_position(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  // expected-error@+1 {{'ms.grad' op grad_position [1, 1] names an argument twice}}
  %g = "ms.grad"() {callee = @f, grad_position = array<i64: 1, 1>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>))
  %0:2 = func.call_indirect %g(%x, %x) : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %0#0, %0#1 : tensor<3xf32>, tensor<3xf32>
}

// -----

func.func private @f(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "ms.mul"(%x, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @declared_type_mismatch(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'ms.grad' op has type (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>, but the gradient function of @f has type (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)}}
  %g = "ms.grad"() {callee = @f, grad_position = array<i64: 0>, get_by_list = false, sens_param = false, with_value = true} : () -> ((tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>)
  %0 = func.call_indirect %g(%x, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @missing_callee(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'ms.grad' op callee @nowhere is not a function of this module}}
  %g = "ms.grad"() {callee = @nowhere, grad_position = array<i64: 0>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<3xf32>) -> tensor<3xf32>)
  %0 = func.call_indirect %g(%x) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func private @external(%x: tensor<3xf32>) -> tensor<3xf32>
func.func @callee_without_body(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{function @external has no body; ms functions are a single block}}
  %g = "ms.grad"() {callee = @external, grad_position = array<i64: 0>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<3xf32>) -> tensor<3xf32>)
  %0 = func.call_indirect %g(%x) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @own_gradient(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{@own_gradient depends on its own gradient}}
  %g = "ms.grad"() {callee = @own_gradient, grad_position = array<i64: 0>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<3xf32>) -> tensor<3xf32>)
  %0 = func.call_indirect %g(%x) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
