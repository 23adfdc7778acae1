// ms-verify's checks of calls that carry a custom gradient (dialects/ops/custom.py).
// RUN: ms-opt %s --ms-verify --split-input-file --verify-diagnostics

func.func private @cell(%x: tensor<3xf32>) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}
func.func private @bad_bprop(%out: tensor<3xf32>, %dout: tensor<3xf32>) -> tensor<3xf32> {
  return %dout : tensor<3xf32>
}
func.func @bprop_type(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'func.call' op ms.bprop function @bad_bprop has type (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>, but nn.Id's bprop must have type (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>}}
  %0 = func.call @cell(%x) {ms.bprop = @bad_bprop, ms.bprop_inputs = 1 : i64, ms.api = "nn.Id"} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func private @cell(%x: tensor<3xf32>) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}
func.func @bprop_missing(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'func.call' op ms.bprop names @nowhere, which is not a function of this module}}
  %0 = func.call @cell(%x) {ms.bprop = @nowhere, ms.bprop_inputs = 1 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func private @cell(%x: tensor<3xf32>) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}
func.func @inputs_missing(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'func.call' op carries ms.bprop but not ms.bprop_inputs}}
  %0 = func.call @cell(%x) {ms.bprop = @cell} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func private @cell(%x: tensor<3xf32>) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}
func.func @inputs_out_of_range(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'func.call' op ms.bprop_inputs = 2 is not between 0 and its 1 operands}}
  %0 = func.call @cell(%x) {ms.bprop = @cell, ms.bprop_inputs = 2 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func private @cell(%x: tensor<3xf32>) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}
func.func @bprop_not_a_symbol(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'func.call' op ms.bprop must be a function symbol (@name), got "cell"}}
  %0 = func.call @cell(%x) {ms.bprop = "cell", ms.bprop_inputs = 1 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func private @cell(%x: tensor<3xf32>) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}
func.func @inputs_not_an_integer(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'func.call' op ms.bprop_inputs must be an integer, got "one"}}
  %0 = func.call @cell(%x) {ms.bprop = @cell, ms.bprop_inputs = "one"} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func private @counts(%x: tensor<f32>, %n: tensor<f32> {ms.parameter = "n"}) -> tensor<f32> {
  %0 = "ms.assign"(%n, %x) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @recompute_writes(%x: tensor<f32>, %n: tensor<f32> {ms.parameter = "n"}) -> tensor<f32> {
  // expected-error@+1 {{'func.call' op ms.recompute calls @counts, which writes a Parameter (ms.assign): the backward would write it again}}
  %0 = func.call @counts(%x, %n) {ms.recompute} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func private @declared(%x: tensor<f32>) -> tensor<f32>
func.func @recompute_no_body(%x: tensor<f32>) -> tensor<f32> {
  // expected-error@+1 {{'func.call' op ms.recompute calls @declared, which has no body in this module}}
  %0 = func.call @declared(%x) {ms.recompute} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
