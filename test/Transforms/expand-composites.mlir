// ms-expand-composites: training-mode BatchNorm becomes the ms ops it stands for, at the op's
// location; after ms-autodiff, its gradient is MindSpore's BatchNormGrad: two reductions of
// the output gradient (the composed ops' own gradients make four).
// RUN: ms-opt %s --ms-expand-composites --split-input-file | FileCheck %s
// RUN: ms-opt %s --ms-autodiff --ms-inline --ms-expand-composites --ms-canonicalize --split-input-file | FileCheck %s --check-prefix=GRAD

// The batch statistics over every axis but 1, then the per-channel scale and shift.
// CHECK-LABEL: func.func @nchw
// CHECK-NOT:     "ms.batch_norm"
// CHECK:         %[[MEAN:.+]] = "ms.reduce_mean"(%arg0) {axis = array<i64: 0, 2, 3>, keep_dims = true}
// CHECK:         %[[CENTERED:.+]] = "ms.sub"(%arg0, %[[MEAN]])
// CHECK:         %[[SQUARE:.+]] = "ms.mul"(%[[CENTERED]], %[[CENTERED]])
// CHECK:         %[[VAR:.+]] = "ms.reduce_mean"(%[[SQUARE]]) {axis = array<i64: 0, 2, 3>, keep_dims = true}
// CHECK:         %[[EPS:.+]] = "ms.constant"() {value = dense<1.000000e-03> : tensor<f32>}
// CHECK:         %[[SHIFTED:.+]] = "ms.add"(%[[VAR]], %[[EPS]])
// CHECK:         %[[RSTD:.+]] = "ms.rsqrt"(%[[SHIFTED]])
// CHECK:         %[[XHAT:.+]] = "ms.mul"(%[[CENTERED]], %[[RSTD]])
// CHECK:         %[[GAMMA:.+]] = "ms.reshape"(%arg1) {shape = array<i64: 1, 3, 1, 1>}
// CHECK:         %[[SCALED:.+]] = "ms.mul"(%[[XHAT]], %[[GAMMA]])
// CHECK:         %[[BETA:.+]] = "ms.reshape"(%arg2) {shape = array<i64: 1, 3, 1, 1>}
// CHECK:         %[[Y:.+]] = "ms.add"(%[[SCALED]], %[[BETA]])
// CHECK:         return %[[Y]]
func.func @nchw(%x: tensor<4x3x5x5xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<4x3x5x5xf32> {
  %0 = "ms.batch_norm"(%x, %g, %b) {epsilon = 1.0e-3 : f64} : (tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3x5x5xf32>
  return %0 : tensor<4x3x5x5xf32>
}

// -----

// (N, C): the statistics over axis 0 only.
// CHECK-LABEL: func.func @nc
// CHECK:         "ms.reduce_mean"(%arg0) {axis = array<i64: 0>, keep_dims = true}
// CHECK:         "ms.reshape"(%arg1) {shape = array<i64: 1, 8>}
// CHECK-NOT:     "ms.batch_norm"
func.func @nc(%x: tensor<16x8xf64>, %g: tensor<8xf64>, %b: tensor<8xf64>) -> tensor<16x8xf64> {
  %0 = "ms.batch_norm"(%x, %g, %b) {epsilon = 1.0e-5 : f64} : (tensor<16x8xf64>, tensor<8xf64>, tensor<8xf64>) -> tensor<16x8xf64>
  return %0 : tensor<16x8xf64>
}

// -----

// The gradient of x, gamma and beta: the forward's two statistics (the backward's recomputed
// ones merged with them), and two sums of the output gradient, dbeta = sum(dy) and
// dgamma = sum(dy * xhat), which dx reuses.
// GRAD-LABEL: func.func @train
// GRAD-NOT:      "ms.batch_norm"
// GRAD-COUNT-2:  "ms.reduce_mean"
// GRAD-NOT:      "ms.reduce_mean"
// GRAD:          %[[DBETA:.+]] = "ms.reduce_sum"(%[[DY:.+]]) {axis = array<i64: 0, 2, 3>, keep_dims = true}
// GRAD:          %[[DGAMMA:.+]] = "ms.reduce_sum"(%{{.+}}) {axis = array<i64: 0, 2, 3>, keep_dims = true}
// GRAD-NOT:      "ms.reduce_mean"
// GRAD-NOT:      "ms.reduce_sum"
// GRAD:          "ms.reshape"(%[[DGAMMA]]) {shape = array<i64: 3>}
// GRAD:          "ms.reshape"(%[[DBETA]]) {shape = array<i64: 3>}
// GRAD:          return
func.func private @loss(%x: tensor<4x3x5x5xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<f32> {
  %0 = "ms.batch_norm"(%x, %g, %b) {epsilon = 1.0e-3 : f64} : (tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3x5x5xf32>
  %1 = "ms.tanh"(%0) : (tensor<4x3x5x5xf32>) -> tensor<4x3x5x5xf32>
  %2 = "ms.reduce_sum"(%1) {axis = array<i64>, keep_dims = false} : (tensor<4x3x5x5xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}
func.func @train(%x: tensor<4x3x5x5xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>) {
  %grad = "ms.grad"() {callee = @loss, grad_position = array<i64: 0, 1, 2>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>))
  %0:3 = func.call_indirect %grad(%x, %g, %b) : (tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>)
  return %0#0, %0#1, %0#2 : tensor<4x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>
}
