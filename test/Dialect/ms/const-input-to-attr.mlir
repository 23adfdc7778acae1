// ms-const-input-to-attr: every entry of the const-input table (the op's OpDef.const_inputs)
// turns an operand produced by ms.constant into the attribute of that name, in normal form
// (negative axes and perm entries counted from the front, -1 sizes resolved); constants left
// without uses are erased; operands that are not constants stay for lowering to report.
// RUN: ms-opt %s --ms-const-input-to-attr --split-input-file | FileCheck %s
// The output is valid IR (re-parsed and verified, ms ops included).
// RUN: ms-opt %s --ms-const-input-to-attr --split-input-file | ms-opt --split-input-file > /dev/null

// CHECK-LABEL: func.func @reshape_shape(
// CHECK-SAME:    %[[A:.+]]: tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    %[[R:.+]] = "ms.reshape"(%[[A]]) {shape = array<i64: 4, 6>} : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    return %[[R]]
func.func @reshape_shape(%a: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %s = "ms.constant"() {value = dense<[4, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = "ms.reshape"(%a, %s) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// Any integer element type is accepted for the constant; negative perm entries count from the end.
// CHECK-LABEL: func.func @transpose_perm(
// CHECK-SAME:    %[[A:.+]]: tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %[[R:.+]] = "ms.transpose"(%[[A]]) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    return %[[R]]
func.func @transpose_perm(%a: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %p = "ms.constant"() {value = dense<[-1, 0, 1]> : tensor<3xi32>} : () -> tensor<3xi32>
  %0 = "ms.transpose"(%a, %p) : (tensor<2x3x4xf32>, tensor<3xi32>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// keep_dims stays as it was; the axis order is kept, each axis normalized.
// CHECK-LABEL: func.func @reduce_sum_axis_keep_dims(
// CHECK-NEXT:    %[[R:.+]] = "ms.reduce_sum"(%{{.+}}) {axis = array<i64: 2, 1>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
// CHECK-NEXT:    return %[[R]]
func.func @reduce_sum_axis_keep_dims(%a: tensor<2x3x4xf32>) -> tensor<2x1x1xf32> {
  %axis = "ms.constant"() {value = dense<[-1, 1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = "ms.reduce_sum"(%a, %axis) {keep_dims = true} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x1x1xf32>
  return %0 : tensor<2x1x1xf32>
}

// -----

// A scalar axis becomes a one-element axis list.
// CHECK-LABEL: func.func @reduce_mean_scalar_axis(
// CHECK-NEXT:    %[[R:.+]] = "ms.reduce_mean"(%{{.+}}) {axis = array<i64: 1>, keep_dims = false} : (tensor<2x3x4xi32>) -> tensor<2x4xf32>
// CHECK-NEXT:    return %[[R]]
func.func @reduce_mean_scalar_axis(%a: tensor<2x3x4xi32>) -> tensor<2x4xf32> {
  %axis = "ms.constant"() {value = dense<-2> : tensor<i64>} : () -> tensor<i64>
  %0 = "ms.reduce_mean"(%a, %axis) {keep_dims = false} : (tensor<2x3x4xi32>, tensor<i64>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// An empty axis list (reduce every axis) stays empty.
// CHECK-LABEL: func.func @reduce_sum_empty_axis(
// CHECK-NEXT:    %[[R:.+]] = "ms.reduce_sum"(%{{.+}}) {axis = array<i64>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<1x1xf32>
func.func @reduce_sum_empty_axis(%a: tensor<2x3xf32>) -> tensor<1x1xf32> {
  %axis = "ms.constant"() {value = dense<> : tensor<0xi64>} : () -> tensor<0xi64>
  %0 = "ms.reduce_sum"(%a, %axis) {keep_dims = true} : (tensor<2x3xf32>, tensor<0xi64>) -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// -----

// One constant shared by two ops folds into both and is erased after the last.
// CHECK-LABEL: func.func @shared_axis_reduce_max_min(
// CHECK-SAME:    %[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<2x3xi8>)
// CHECK-NEXT:    %[[MAX:.+]] = "ms.reduce_max"(%[[A]]) {axis = array<i64: 1>, keep_dims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
// CHECK-NEXT:    %[[MIN:.+]] = "ms.reduce_min"(%[[B]]) {axis = array<i64: 1>, keep_dims = true} : (tensor<2x3xi8>) -> tensor<2x1xi8>
// CHECK-NEXT:    return %[[MAX]], %[[MIN]]
func.func @shared_axis_reduce_max_min(%a: tensor<2x3xf32>, %b: tensor<2x3xi8>) -> (tensor<2xf32>, tensor<2x1xi8>) {
  %axis = "ms.constant"() {value = dense<-1> : tensor<1xi64>} : () -> tensor<1xi64>
  %0 = "ms.reduce_max"(%a, %axis) {keep_dims = false} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2xf32>
  %1 = "ms.reduce_min"(%b, %axis) {keep_dims = true} : (tensor<2x3xi8>, tensor<1xi64>) -> tensor<2x1xi8>
  return %0, %1 : tensor<2xf32>, tensor<2x1xi8>
}

// -----

// CHECK-LABEL: func.func @broadcast_to_shape(
// CHECK-NEXT:    %[[R:.+]] = "ms.broadcast_to"(%{{.+}}) {shape = array<i64: 2, 3>} : (tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    return %[[R]]
func.func @broadcast_to_shape(%a: tensor<3xf32>) -> tensor<2x3xf32> {
  %s = "ms.constant"() {value = dense<[2, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = "ms.broadcast_to"(%a, %s) : (tensor<3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A Python-scalar constant folds like any other; -1 inserts after the last axis.
// CHECK-LABEL: func.func @expand_dims_axis(
// CHECK-NEXT:    %[[R:.+]] = "ms.expand_dims"(%{{.+}}) {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
// CHECK-NEXT:    return %[[R]]
func.func @expand_dims_axis(%a: tensor<2x3xf32>) -> tensor<2x3x1xf32> {
  %axis = "ms.constant"() {value = dense<-1> : tensor<i64>, is_scalar} : () -> tensor<i64>
  %0 = "ms.expand_dims"(%a, %axis) : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3x1xf32>
  return %0 : tensor<2x3x1xf32>
}

// -----

// CHECK-LABEL: func.func @tile_multiples(
// CHECK-NEXT:    %[[R:.+]] = "ms.tile"(%{{.+}}) {multiples = array<i64: 2, 1>} : (tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    return %[[R]]
func.func @tile_multiples(%a: tensor<3xf32>) -> tensor<2x3xf32> {
  %m = "ms.constant"() {value = dense<[2, 1]> : tensor<2xi32>} : () -> tensor<2xi32>
  %0 = "ms.tile"(%a, %m) : (tensor<3xf32>, tensor<2xi32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Only depth is a const input: the on/off value constants are data and stay.
// CHECK-LABEL: func.func @one_hot_depth(
// CHECK-SAME:    %[[I:.+]]: tensor<2xi32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[ON:.+]] = "ms.constant"() {value = dense<1.000000e+00> : tensor<f32>} : () -> tensor<f32>
// CHECK-NEXT:    %[[OFF:.+]] = "ms.constant"() {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
// CHECK-NEXT:    %[[R:.+]] = "ms.one_hot"(%[[I]], %[[ON]], %[[OFF]]) {axis = -1 : i64, depth = 4 : i64} : (tensor<2xi32>, tensor<f32>, tensor<f32>) -> tensor<2x4xf32>
// CHECK-NEXT:    return %[[R]]
func.func @one_hot_depth(%i: tensor<2xi32>) -> tensor<2x4xf32> {
  %d = "ms.constant"() {value = dense<4> : tensor<i64>} : () -> tensor<i64>
  %on = "ms.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %off = "ms.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "ms.one_hot"(%i, %d, %on, %off) {axis = -1 : i64} : (tensor<2xi32>, tensor<i64>, tensor<f32>, tensor<f32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Two const inputs; operandSegmentSizes follows the operands that remain; size -1 resolved.
// CHECK-LABEL: func.func @slice_begin_size(
// CHECK-SAME:    %[[A:.+]]: tensor<4x5xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[R:.+]] = "ms.slice"(%[[A]]) {begin = array<i64: 1, 2>, operandSegmentSizes = array<i32: 1, 0, 0>, size = array<i64: 2, 3>} : (tensor<4x5xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    return %[[R]]
func.func @slice_begin_size(%a: tensor<4x5xf32>) -> tensor<2x3xf32> {
  %b = "ms.constant"() {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %s = "ms.constant"() {value = dense<[2, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = "ms.slice"(%a, %b, %s) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<4x5xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// begin/end keep Python-slice semantics (a negative begin counts from the end at lowering).
// CHECK-LABEL: func.func @strided_slice_begin_end_strides(
// CHECK-NEXT:    %[[R:.+]] = "ms.strided_slice"(%{{.+}}) {begin = array<i64: 1, -4>, end = array<i64: 6, 5>, operandSegmentSizes = array<i32: 1, 0, 0, 0>, strides = array<i64: 2, 3>} : (tensor<6x5xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    return %[[R]]
func.func @strided_slice_begin_end_strides(%a: tensor<6x5xf32>) -> tensor<3x2xf32> {
  %b = "ms.constant"() {value = dense<[1, -4]> : tensor<2xi64>} : () -> tensor<2xi64>
  %e = "ms.constant"() {value = dense<[6, 5]> : tensor<2xi64>} : () -> tensor<2xi64>
  %s = "ms.constant"() {value = dense<[2, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = "ms.strided_slice"(%a, %b, %e, %s) {operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (tensor<6x5xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// One constant feeding two const inputs of the same op folds into both and is erased once.
// CHECK-LABEL: func.func @one_constant_two_inputs(
// CHECK-NEXT:    %[[R:.+]] = "ms.slice"(%{{.+}}) {begin = array<i64: 1, 1>, operandSegmentSizes = array<i32: 1, 0, 0>, size = array<i64: 1, 1>} : (tensor<4x5xf32>) -> tensor<1x1xf32>
// CHECK-NEXT:    return %[[R]]
func.func @one_constant_two_inputs(%a: tensor<4x5xf32>) -> tensor<1x1xf32> {
  %c = "ms.constant"() {value = dense<[1, 1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = "ms.slice"(%a, %c, %c) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<4x5xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// -----

// CHECK-LABEL: func.func @gather_axis(
// CHECK-SAME:    %[[P:.+]]: tensor<4x5xf32>, %[[I:.+]]: tensor<3xi32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %[[R:.+]] = "ms.gather"(%[[P]], %[[I]]) {axis = 1 : i64} : (tensor<4x5xf32>, tensor<3xi32>) -> tensor<4x3xf32>
// CHECK-NEXT:    return %[[R]]
func.func @gather_axis(%p: tensor<4x5xf32>, %i: tensor<3xi32>) -> tensor<4x3xf32> {
  %axis = "ms.constant"() {value = dense<-1> : tensor<i64>} : () -> tensor<i64>
  %0 = "ms.gather"(%p, %i, %axis) : (tensor<4x5xf32>, tensor<3xi32>, tensor<i64>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @segment_sum_num_segments(
// CHECK-SAME:    %[[D:.+]]: tensor<5x3xf32>, %[[I:.+]]: tensor<5xi32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %[[R:.+]] = "ms.unsorted_segment_sum"(%[[D]], %[[I]]) {num_segments = 4 : i64} : (tensor<5x3xf32>, tensor<5xi32>) -> tensor<4x3xf32>
// CHECK-NEXT:    return %[[R]]
func.func @segment_sum_num_segments(%d: tensor<5x3xf32>, %i: tensor<5xi32>) -> tensor<4x3xf32> {
  %n = "ms.constant"() {value = dense<4> : tensor<i32>} : () -> tensor<i32>
  %0 = "ms.unsorted_segment_sum"(%d, %i, %n) : (tensor<5x3xf32>, tensor<5xi32>, tensor<i32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// A constant that is also used as data is folded but kept.
// CHECK-LABEL: func.func @constant_still_used(
// CHECK-NEXT:    %[[S:.+]] = "ms.constant"() {value = dense<[3, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
// CHECK-NEXT:    %[[R:.+]] = "ms.reshape"(%{{.+}}) {shape = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    return %[[R]], %[[S]]
func.func @constant_still_used(%a: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2xi64>) {
  %s = "ms.constant"() {value = dense<[3, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = "ms.reshape"(%a, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  return %0, %s : tensor<3x2xf32>, tensor<2xi64>
}

// -----

// Operands that are not constants stay in place (convert-ms-to-linalg reports them); the
// constant ones of the same op still fold.
// CHECK-LABEL: func.func @runtime_operands_stay(
// CHECK-SAME:    %[[A:.+]]: tensor<2x3xf32>, %[[S:.+]]: tensor<2xi64>, %[[B:.+]]: tensor<4x5xf32>, %[[SIZE:.+]]: tensor<2xi64>)
// CHECK-NEXT:    %[[R:.+]] = "ms.reshape"(%[[A]], %[[S]]) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
// CHECK-NEXT:    %[[T:.+]] = "ms.slice"(%[[B]], %[[SIZE]]) {begin = array<i64: 1, 2>, operandSegmentSizes = array<i32: 1, 0, 1>} : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<2x3xf32>
// CHECK-NEXT:    return %[[R]], %[[T]]
func.func @runtime_operands_stay(%a: tensor<2x3xf32>, %s: tensor<2xi64>, %b: tensor<4x5xf32>, %size: tensor<2xi64>)
    -> (tensor<3x2xf32>, tensor<2x3xf32>) {
  %0 = "ms.reshape"(%a, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  %begin = "ms.constant"() {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %1 = "ms.slice"(%b, %begin, %size) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<4x5xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0, %1 : tensor<3x2xf32>, tensor<2x3xf32>
}

// -----

// Ops already in attribute form, and ops without const inputs, are left alone.
// CHECK-LABEL: func.func @attribute_form_untouched(
// CHECK-NEXT:    %[[T:.+]] = "ms.transpose"(%{{.+}}) {perm = array<i64: -1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %[[C:.+]] = "ms.constant"() {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
// CHECK-NEXT:    %[[M:.+]] = "ms.mul"(%[[T]], %[[C]])
// CHECK-NEXT:    return %[[M]]
func.func @attribute_form_untouched(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = "ms.transpose"(%a) {perm = array<i64: -1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %c = "ms.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %1 = "ms.mul"(%0, %c) : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
  return %1 : tensor<3x2xf32>
}
