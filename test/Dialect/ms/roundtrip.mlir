// Every ms op parses, verifies and prints back, through ms-opt and through plain mlir-opt
// loading the IRDL definition.
// RUN: ms-opt %s | ms-opt | FileCheck %s
// RUN: mlir-opt --irdl-file=%ms_irdl %s | mlir-opt --irdl-file=%ms_irdl | FileCheck %s

// CHECK-LABEL: func.func @binary
func.func @binary(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xi1> {
  // CHECK: "ms.add"(%{{.*}}, %{{.*}}) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = "ms.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: "ms.sub"
  %1 = "ms.sub"(%0, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: "ms.mul"
  %2 = "ms.mul"(%1, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: "ms.div"
  %3 = "ms.div"(%2, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: "ms.pow"
  %4 = "ms.pow"(%3, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: "ms.maximum"
  %5 = "ms.maximum"(%4, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: "ms.minimum"
  %6 = "ms.minimum"(%5, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: "ms.equal"({{.*}}) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %7 = "ms.equal"(%6, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK: "ms.not_equal"
  %8 = "ms.not_equal"(%6, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK: "ms.less"
  %9 = "ms.less"(%6, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK: "ms.less_equal"
  %10 = "ms.less_equal"(%6, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK: "ms.greater"
  %11 = "ms.greater"(%6, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK: "ms.greater_equal"
  %12 = "ms.greater_equal"(%6, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK: "ms.logical_and"
  %13 = "ms.logical_and"(%7, %8) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK: "ms.logical_or"
  %14 = "ms.logical_or"(%13, %9) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK: "ms.logical_not"
  %15 = "ms.logical_not"(%14) : (tensor<2x3xi1>) -> tensor<2x3xi1>
  return %15 : tensor<2x3xi1>
}

// CHECK-LABEL: func.func @unary
func.func @unary(%a: tensor<4xf32>, %i: tensor<4xi32>) -> tensor<4xf32> {
  // CHECK: "ms.neg"
  %0 = "ms.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: "ms.exp"
  %1 = "ms.exp"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: "ms.log"
  %2 = "ms.log"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: "ms.tanh"
  %3 = "ms.tanh"(%2) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: "ms.sigmoid"
  %4 = "ms.sigmoid"(%3) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: "ms.relu"
  %5 = "ms.relu"(%4) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: "ms.sqrt"
  %6 = "ms.sqrt"(%5) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: "ms.rsqrt"
  %7 = "ms.rsqrt"(%6) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: "ms.abs"
  %8 = "ms.abs"(%7) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: "ms.zeros_like"
  %9 = "ms.zeros_like"(%8) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: "ms.ones_like"
  %10 = "ms.ones_like"(%9) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: "ms.stop_gradient"
  %11 = "ms.stop_gradient"(%10) : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: "ms.exp"({{.*}}) : (tensor<4xi32>) -> tensor<4xf32>
  %12 = "ms.exp"(%i) : (tensor<4xi32>) -> tensor<4xf32>
  return %11 : tensor<4xf32>
}

// CHECK-LABEL: func.func @select_cast_constant
func.func @select_cast_constant(%c: tensor<4xi1>, %a: tensor<4xf32>) -> tensor<4xf16> {
  // CHECK: "ms.constant"() {is_scalar, value = dense<2.500000e+00> : tensor<f32>} : () -> tensor<f32>
  %s = "ms.constant"() {value = dense<2.5> : tensor<f32>, is_scalar} : () -> tensor<f32>
  // CHECK: "ms.constant"() {value = dense<[1, 2, 3, 4]> : tensor<4xui8>} : () -> tensor<4xui8>
  %u = "ms.constant"() {value = dense<[1, 2, 3, 4]> : tensor<4xui8>} : () -> tensor<4xui8>
  // CHECK: "ms.select"({{.*}}) : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %0 = "ms.select"(%c, %a, %s) : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  // CHECK: "ms.cast"({{.*}}) {dtype = f16} : (tensor<4xf32>) -> tensor<4xf16>
  %1 = "ms.cast"(%0) {dtype = f16} : (tensor<4xf32>) -> tensor<4xf16>
  return %1 : tensor<4xf16>
}

// CHECK-LABEL: func.func @contractions
func.func @contractions(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %x: tensor<5x2x3xf32>, %y: tensor<1x3x4xf32>) -> tensor<5x2x4xf32> {
  // CHECK: "ms.matmul"({{.*}}) {transpose_a = false, transpose_b = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %0 = "ms.matmul"(%a, %b) {transpose_a = false, transpose_b = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  // CHECK: "ms.batch_matmul"({{.*}}) {transpose_a = false, transpose_b = false} : (tensor<5x2x3xf32>, tensor<1x3x4xf32>) -> tensor<5x2x4xf32>
  %1 = "ms.batch_matmul"(%x, %y) {transpose_a = false, transpose_b = false} : (tensor<5x2x3xf32>, tensor<1x3x4xf32>) -> tensor<5x2x4xf32>
  return %1 : tensor<5x2x4xf32>
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%a: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %axis = "ms.constant"() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
  // CHECK: "ms.reduce_sum"({{.*}}) {keep_dims = false} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x4xf32>
  %0 = "ms.reduce_sum"(%a, %axis) {keep_dims = false} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x4xf32>
  // CHECK: "ms.reduce_mean"({{.*}}) {axis = array<i64: 0, 2>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %1 = "ms.reduce_mean"(%a) {axis = array<i64: 0, 2>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  // CHECK: "ms.reduce_max"({{.*}}) {axis = array<i64>, keep_dims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  %2 = "ms.reduce_max"(%a) {axis = array<i64>, keep_dims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  // CHECK: "ms.reduce_min"
  %3 = "ms.reduce_min"(%a) {axis = array<i64: -1>, keep_dims = false} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  // CHECK: "ms.softmax"({{.*}}) {axis = -1 : i64}
  %4 = "ms.softmax"(%a) {axis = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK: "ms.log_softmax"({{.*}}) {axis = 1 : i64}
  %5 = "ms.log_softmax"(%4) {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %5 : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %shape = "ms.constant"() {value = dense<[3, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  // CHECK: "ms.reshape"({{.*}}) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  %0 = "ms.reshape"(%a, %shape) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  // CHECK: "ms.transpose"({{.*}}) {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %1 = "ms.transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  // CHECK: "ms.broadcast_to"({{.*}}) {shape = array<i64: 4, 2, 3>} : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
  %2 = "ms.broadcast_to"(%1) {shape = array<i64: 4, 2, 3>} : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
  // CHECK: "ms.expand_dims"({{.*}}) {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<1x2x3xf32>
  %3 = "ms.expand_dims"(%1) {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<1x2x3xf32>
  // CHECK: "ms.squeeze"({{.*}}) {axis = array<i64: 0>} : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
  %4 = "ms.squeeze"(%3) {axis = array<i64: 0>} : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
  // CHECK: "ms.tile"({{.*}}) {multiples = array<i64: 2, 1>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  %5 = "ms.tile"(%4) {multiples = array<i64: 2, 1>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  // CHECK: "ms.slice"({{.*}}) {begin = array<i64: 1, 0>, operandSegmentSizes = array<i32: 1, 0, 0>, size = array<i64: 2, -1>} : (tensor<4x3xf32>) -> tensor<2x3xf32>
  %6 = "ms.slice"(%5) {begin = array<i64: 1, 0>, size = array<i64: 2, -1>, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<4x3xf32>) -> tensor<2x3xf32>
  // CHECK: "ms.strided_slice"({{.*}}) {begin = array<i64: 0, 0>, end = array<i64: 4, 3>, operandSegmentSizes = array<i32: 1, 0, 0, 0>, strides = array<i64: 2, 1>} : (tensor<4x3xf32>) -> tensor<2x3xf32>
  %7 = "ms.strided_slice"(%5) {begin = array<i64: 0, 0>, end = array<i64: 4, 3>, strides = array<i64: 2, 1>, operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<4x3xf32>) -> tensor<2x3xf32>
  // CHECK: "ms.concat"({{.*}}) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %8 = "ms.concat"(%7, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  return %8 : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @const_input_operands
func.func @const_input_operands(%a: tensor<4x3xf32>) -> tensor<2x2xf32> {
  %b = "ms.constant"() {value = dense<[1, 0]> : tensor<2xi64>} : () -> tensor<2xi64>
  %e = "ms.constant"() {value = dense<[3, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %s = "ms.constant"() {value = dense<[1, 1]> : tensor<2xi64>} : () -> tensor<2xi64>
  // CHECK: "ms.strided_slice"({{.*}}) {operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (tensor<4x3xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x2xf32>
  %0 = "ms.strided_slice"(%a, %b, %e, %s) {operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (tensor<4x3xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// CHECK-LABEL: func.func @indexing
func.func @indexing(%p: tensor<5x3xf32>, %i: tensor<4xi32>) -> tensor<4x6xf32> {
  // CHECK: "ms.gather"({{.*}}) {axis = 0 : i64} : (tensor<5x3xf32>, tensor<4xi32>) -> tensor<4x3xf32>
  %0 = "ms.gather"(%p, %i) {axis = 0 : i64} : (tensor<5x3xf32>, tensor<4xi32>) -> tensor<4x3xf32>
  %on = "ms.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %off = "ms.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  // CHECK: "ms.one_hot"({{.*}}) {axis = -1 : i64, depth = 3 : i64} : (tensor<4xi32>, tensor<f32>, tensor<f32>) -> tensor<4x3xf32>
  %1 = "ms.one_hot"(%i, %on, %off) {axis = -1 : i64, depth = 3 : i64} : (tensor<4xi32>, tensor<f32>, tensor<f32>) -> tensor<4x3xf32>
  %2 = "ms.concat"(%0, %1) {axis = 1 : i64} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x6xf32>
  return %2 : tensor<4x6xf32>
}

// CHECK-LABEL: func.func @assign
func.func @assign(%w: tensor<3xf32> {ms.parameter = "w"}, %v: tensor<3xf32>) -> tensor<3xf32> {
  // CHECK: "ms.assign"
  %0 = "ms.assign"(%w, %v) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// CHECK-LABEL: func.func @grad_and_fused
func.func @grad_and_fused(%w: tensor<3xf32>, %x: tensor<3xf32>) -> tensor<3xf32> {
  // CHECK: %[[G:.+]] = "ms.grad"() {callee = @assign, get_by_list = false, grad_position = array<i64: 0>, sens_param = false, with_value = false} : () -> ((tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>)
  %g = "ms.grad"() {callee = @assign, grad_position = array<i64: 0>, get_by_list = false, sens_param = false, with_value = false} : () -> ((tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>)
  // CHECK: call_indirect %[[G]]
  %0 = func.call_indirect %g(%w, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  // CHECK: "ms.fused"() ({
  // CHECK: "ms.exp"
  // CHECK: gpu.yield
  // CHECK: }) {kind = "elementwise"} : () -> tensor<3xf32>
  %1 = "ms.fused"() ({
    %2 = "ms.exp"(%0) : (tensor<3xf32>) -> tensor<3xf32>
    gpu.yield %2 : tensor<3xf32>
  }) {kind = "elementwise"} : () -> tensor<3xf32>
  return %1 : tensor<3xf32>
}
