// ms-implicit-cast: within each dtype signature group of an op, operands meet at the group's
// destination dtype (dialects/dtypes.promote): the highest-priority tensor dtype
// (bool < uint8 < int8 < int16 < int32 < int64 < float16 < float32 < float64), int8 with uint8
// gives int16, and Python scalars (ms.constant with is_scalar) raise it only in MindSpore's
// cases. Tensors get an ms.cast carrying its `reason`; Python scalars are re-typed instead.
// RUN: ms-opt %s --ms-implicit-cast --split-input-file | FileCheck %s
// The output is valid IR (re-parsed and verified, ms ops included).
// RUN: ms-opt %s --ms-implicit-cast --split-input-file | ms-opt --split-input-file > /dev/null

// The lower-priority operand is cast; the reason names the op, the operand and the dtypes.
// CHECK-LABEL: func.func @float32_float16(
// CHECK-SAME:    %[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<3xf16>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[C:.+]] = "ms.cast"(%[[B]]) {dtype = f32, reason = "operand #1 of 'ms.add' is float16; its dtype group promotes to float32"} : (tensor<3xf16>) -> tensor<3xf32>
// CHECK-NEXT:    %[[R:.+]] = "ms.add"(%[[A]], %[[C]]) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    return %[[R]]
func.func @float32_float16(%a: tensor<2x3xf32>, %b: tensor<3xf16>) -> tensor<2x3xf32> {
  %0 = "ms.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @priority_order(
// CHECK-SAME:    %[[I32:.+]]: tensor<4xi32>, %[[I64:.+]]: tensor<4xi64>, %[[B:.+]]: tensor<4xi1>, %[[U8:.+]]: tensor<4xui8>, %[[I16:.+]]: tensor<4xi16>, %[[F16:.+]]: tensor<4xf16>, %[[F64:.+]]: tensor<4xf64>)
// CHECK-NEXT:    %[[C0:.+]] = "ms.cast"(%[[I32]]) {dtype = i64, reason = "operand #0 of 'ms.sub' is int32; its dtype group promotes to int64"}
// CHECK-NEXT:    %[[R0:.+]] = "ms.sub"(%[[C0]], %[[I64]]) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT:    %[[C1:.+]] = "ms.cast"(%[[B]]) {dtype = ui8, reason = "operand #0 of 'ms.maximum' is bool; its dtype group promotes to uint8"}
// CHECK-NEXT:    %[[R1:.+]] = "ms.maximum"(%[[C1]], %[[U8]]) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
// CHECK-NEXT:    %[[C2:.+]] = "ms.cast"(%[[U8]]) {dtype = i16, reason = "operand #1 of 'ms.minimum' is uint8; its dtype group promotes to int16"}
// CHECK-NEXT:    %[[R2:.+]] = "ms.minimum"(%[[I16]], %[[C2]]) : (tensor<4xi16>, tensor<4xi16>) -> tensor<4xi16>
// CHECK-NEXT:    %[[C3:.+]] = "ms.cast"(%[[I64]]) {dtype = f16, reason = "operand #0 of 'ms.mul' is int64; its dtype group promotes to float16"}
// CHECK-NEXT:    %[[R3:.+]] = "ms.mul"(%[[C3]], %[[F16]]) : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
// CHECK-NEXT:    %[[C4:.+]] = "ms.cast"(%[[F16]]) {dtype = f64, reason = "operand #1 of 'ms.div' is float16; its dtype group promotes to float64"}
// CHECK-NEXT:    %[[R4:.+]] = "ms.div"(%[[F64]], %[[C4]]) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
// CHECK-NEXT:    return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]]
func.func @priority_order(%i32: tensor<4xi32>, %i64: tensor<4xi64>, %b: tensor<4xi1>, %u8: tensor<4xui8>,
                          %i16: tensor<4xi16>, %f16: tensor<4xf16>, %f64: tensor<4xf64>)
    -> (tensor<4xi64>, tensor<4xui8>, tensor<4xi16>, tensor<4xf16>, tensor<4xf64>) {
  %0 = "ms.sub"(%i32, %i64) : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi64>
  %1 = "ms.maximum"(%b, %u8) : (tensor<4xi1>, tensor<4xui8>) -> tensor<4xui8>
  %2 = "ms.minimum"(%i16, %u8) : (tensor<4xi16>, tensor<4xui8>) -> tensor<4xi16>
  %3 = "ms.mul"(%i64, %f16) : (tensor<4xi64>, tensor<4xf16>) -> tensor<4xf16>
  %4 = "ms.div"(%f64, %f16) : (tensor<4xf64>, tensor<4xf16>) -> tensor<4xf64>
  return %0, %1, %2, %3, %4 : tensor<4xi64>, tensor<4xui8>, tensor<4xi16>, tensor<4xf16>, tensor<4xf64>
}

// -----

// int8 with uint8: neither holds the other, both become int16.
// CHECK-LABEL: func.func @int8_uint8(
// CHECK-SAME:    %[[A:.+]]: tensor<4xi8>, %[[B:.+]]: tensor<4xui8>) -> tensor<4xi16>
// CHECK-NEXT:    %[[CA:.+]] = "ms.cast"(%[[A]]) {dtype = i16, reason = "operand #0 of 'ms.mul' is int8; its dtype group promotes to int16"} : (tensor<4xi8>) -> tensor<4xi16>
// CHECK-NEXT:    %[[CB:.+]] = "ms.cast"(%[[B]]) {dtype = i16, reason = "operand #1 of 'ms.mul' is uint8; its dtype group promotes to int16"} : (tensor<4xui8>) -> tensor<4xi16>
// CHECK-NEXT:    %[[R:.+]] = "ms.mul"(%[[CA]], %[[CB]]) : (tensor<4xi16>, tensor<4xi16>) -> tensor<4xi16>
// CHECK-NEXT:    return %[[R]]
func.func @int8_uint8(%a: tensor<4xi8>, %b: tensor<4xui8>) -> tensor<4xi16> {
  %0 = "ms.mul"(%a, %b) : (tensor<4xi8>, tensor<4xui8>) -> tensor<4xi16>
  return %0 : tensor<4xi16>
}

// -----

// A higher-priority dtype in the group wins over the int8/uint8 rule.
// CHECK-LABEL: func.func @int8_uint8_with_int32(
// CHECK:         "ms.cast"(%{{.+}}) {dtype = i32
// CHECK:         "ms.add"(%{{.+}}, %{{.+}}) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
// CHECK:         "ms.cast"(%{{.+}}) {dtype = i32
// CHECK:         "ms.add"(%{{.+}}, %{{.+}}) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
func.func @int8_uint8_with_int32(%a: tensor<4xi8>, %b: tensor<4xui8>, %c: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {
  %0 = "ms.add"(%a, %c) : (tensor<4xi8>, tensor<4xi32>) -> tensor<4xi32>
  %1 = "ms.add"(%c, %b) : (tensor<4xi32>, tensor<4xui8>) -> tensor<4xi32>
  return %0, %1 : tensor<4xi32>, tensor<4xi32>
}

// -----

// bool group with a Python int: int64. The scalar already is int64, so only the tensor is cast.
// CHECK-LABEL: func.func @bool_python_int(
// CHECK-SAME:    %[[A:.+]]: tensor<4xi1>) -> tensor<4xi64>
// CHECK-NEXT:    %[[S:.+]] = "ms.constant"() {is_scalar, value = dense<2> : tensor<i64>} : () -> tensor<i64>
// CHECK-NEXT:    %[[C:.+]] = "ms.cast"(%[[A]]) {dtype = i64, reason = "operand #0 of 'ms.add' is bool; its dtype group promotes to int64"} : (tensor<4xi1>) -> tensor<4xi64>
// CHECK-NEXT:    %[[R:.+]] = "ms.add"(%[[C]], %[[S]]) : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
// CHECK-NEXT:    return %[[R]]
func.func @bool_python_int(%a: tensor<4xi1>) -> tensor<4xi64> {
  %s = "ms.constant"() {value = dense<2> : tensor<i64>, is_scalar} : () -> tensor<i64>
  %0 = "ms.add"(%a, %s) : (tensor<4xi1>, tensor<i64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// bool group with a Python float: float32. The float64 scalar is re-typed (a new constant,
// the old one erased), not cast.
// CHECK-LABEL: func.func @bool_python_float(
// CHECK-SAME:    %[[A:.+]]: tensor<4xi1>) -> tensor<4xf32>
// CHECK-NEXT:    %[[S:.+]] = "ms.constant"() {is_scalar, value = dense<2.500000e+00> : tensor<f32>} : () -> tensor<f32>
// CHECK-NEXT:    %[[C:.+]] = "ms.cast"(%[[A]]) {dtype = f32, reason = "operand #1 of 'ms.mul' is bool; its dtype group promotes to float32"} : (tensor<4xi1>) -> tensor<4xf32>
// CHECK-NEXT:    %[[R:.+]] = "ms.mul"(%[[S]], %[[C]]) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    return %[[R]]
// CHECK-NOT:     tensor<f64>
func.func @bool_python_float(%a: tensor<4xi1>) -> tensor<4xf32> {
  %s = "ms.constant"() {value = dense<2.5> : tensor<f64>, is_scalar} : () -> tensor<f64>
  %0 = "ms.mul"(%s, %a) : (tensor<f64>, tensor<4xi1>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Any non-float group with a Python float: float32.
// CHECK-LABEL: func.func @int_python_float(
// CHECK-SAME:    %[[A:.+]]: tensor<4xi64>, %[[B:.+]]: tensor<4xui8>)
// CHECK-NEXT:    %[[CA:.+]] = "ms.cast"(%[[A]]) {dtype = f32, reason = "operand #0 of 'ms.mul' is int64; its dtype group promotes to float32"}
// CHECK-NEXT:    %[[S:.+]] = "ms.constant"() {is_scalar, value = dense<5.000000e-01> : tensor<f32>}
// CHECK-NEXT:    %[[R0:.+]] = "ms.mul"(%[[CA]], %[[S]]) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[CB:.+]] = "ms.cast"(%[[B]]) {dtype = f32, reason = "operand #0 of 'ms.sub' is uint8; its dtype group promotes to float32"}
// CHECK-NEXT:    %[[S2:.+]] = "ms.constant"() {is_scalar, value = dense<5.000000e-01> : tensor<f32>}
// CHECK-NEXT:    %[[R1:.+]] = "ms.sub"(%[[CB]], %[[S2]]) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT:    return %[[R0]], %[[R1]]
func.func @int_python_float(%a: tensor<4xi64>, %b: tensor<4xui8>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = "ms.constant"() {value = dense<0.5> : tensor<f64>, is_scalar} : () -> tensor<f64>
  %0 = "ms.mul"(%a, %s) : (tensor<4xi64>, tensor<f64>) -> tensor<4xf32>
  %1 = "ms.sub"(%b, %s) : (tensor<4xui8>, tensor<f64>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A float16 tensor with a Python float stays float16: the scalar is re-typed, nothing is cast.
// CHECK-LABEL: func.func @float16_python_float(
// CHECK-SAME:    %[[A:.+]]: tensor<4xf16>) -> tensor<4xf16>
// CHECK-NEXT:    %[[S:.+]] = "ms.constant"() {is_scalar, value = dense<2.500000e-01> : tensor<f16>} : () -> tensor<f16>
// CHECK-NEXT:    %[[R:.+]] = "ms.mul"(%[[A]], %[[S]]) : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
// CHECK-NEXT:    return %[[R]]
// CHECK-NOT:     ms.cast
func.func @float16_python_float(%a: tensor<4xf16>) -> tensor<4xf16> {
  %s = "ms.constant"() {value = dense<0.25> : tensor<f64>, is_scalar} : () -> tensor<f64>
  %0 = "ms.mul"(%a, %s) : (tensor<4xf16>, tensor<f64>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// A Python int does not raise an integer tensor's dtype: it takes the tensor's.
// CHECK-LABEL: func.func @int8_python_int(
// CHECK-SAME:    %[[A:.+]]: tensor<4xi8>) -> tensor<4xi8>
// CHECK-NEXT:    %[[S:.+]] = "ms.constant"() {is_scalar, value = dense<3> : tensor<i8>} : () -> tensor<i8>
// CHECK-NEXT:    %[[R:.+]] = "ms.add"(%[[A]], %[[S]]) : (tensor<4xi8>, tensor<i8>) -> tensor<4xi8>
// CHECK-NEXT:    return %[[R]]
func.func @int8_python_int(%a: tensor<4xi8>) -> tensor<4xi8> {
  %s = "ms.constant"() {value = dense<3> : tensor<i64>, is_scalar} : () -> tensor<i64>
  %0 = "ms.add"(%a, %s) : (tensor<4xi8>, tensor<i64>) -> tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

// A constant that is not a Python scalar is a tensor: it takes part in the priority and is
// cast like one (here it raises float32 to float64).
// CHECK-LABEL: func.func @tensor_constant_is_not_a_scalar(
// CHECK-SAME:    %[[A:.+]]: tensor<4xf32>) -> tensor<4xf64>
// CHECK-NEXT:    %[[K:.+]] = "ms.constant"() {value = dense<2.000000e+00> : tensor<f64>} : () -> tensor<f64>
// CHECK-NEXT:    %[[C:.+]] = "ms.cast"(%[[A]]) {dtype = f64, reason = "operand #0 of 'ms.mul' is float32; its dtype group promotes to float64"}
// CHECK-NEXT:    %[[R:.+]] = "ms.mul"(%[[C]], %[[K]]) : (tensor<4xf64>, tensor<f64>) -> tensor<4xf64>
func.func @tensor_constant_is_not_a_scalar(%a: tensor<4xf32>) -> tensor<4xf64> {
  %k = "ms.constant"() {value = dense<2.0> : tensor<f64>} : () -> tensor<f64>
  %0 = "ms.mul"(%a, %k) : (tensor<4xf32>, tensor<f64>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// A scalar shared by two ops is re-typed for each; the original goes once unused.
// CHECK-LABEL: func.func @shared_scalar(
// CHECK-SAME:    %[[A:.+]]: tensor<4xi32>, %[[B:.+]]: tensor<4xf16>)
// CHECK-NEXT:    %[[S32:.+]] = "ms.constant"() {is_scalar, value = dense<2> : tensor<i32>} : () -> tensor<i32>
// CHECK-NEXT:    %[[R0:.+]] = "ms.mul"(%[[A]], %[[S32]]) : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
// CHECK-NEXT:    %[[S16:.+]] = "ms.constant"() {is_scalar, value = dense<2.000000e+00> : tensor<f16>} : () -> tensor<f16>
// CHECK-NEXT:    %[[R1:.+]] = "ms.mul"(%[[B]], %[[S16]]) : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
// CHECK-NEXT:    return %[[R0]], %[[R1]]
func.func @shared_scalar(%a: tensor<4xi32>, %b: tensor<4xf16>) -> (tensor<4xi32>, tensor<4xf16>) {
  %s = "ms.constant"() {value = dense<2> : tensor<i64>, is_scalar} : () -> tensor<i64>
  %0 = "ms.mul"(%a, %s) : (tensor<4xi32>, tensor<i64>) -> tensor<4xi32>
  %1 = "ms.mul"(%b, %s) : (tensor<4xf16>, tensor<i64>) -> tensor<4xf16>
  return %0, %1 : tensor<4xi32>, tensor<4xf16>
}

// -----

// Only Python scalars in the group: a float among them makes it float32.
// CHECK-LABEL: func.func @scalars_only()
// CHECK-NEXT:    %[[X:.+]] = "ms.constant"() {is_scalar, value = dense<3.000000e+00> : tensor<f32>} : () -> tensor<f32>
// CHECK-NEXT:    %[[Y:.+]] = "ms.constant"() {is_scalar, value = dense<2.500000e-01> : tensor<f32>} : () -> tensor<f32>
// CHECK-NEXT:    %[[R:.+]] = "ms.add"(%[[X]], %[[Y]]) : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT:    return %[[R]]
func.func @scalars_only() -> tensor<f32> {
  %x = "ms.constant"() {value = dense<3> : tensor<i64>, is_scalar} : () -> tensor<i64>
  %y = "ms.constant"() {value = dense<0.25> : tensor<f64>, is_scalar} : () -> tensor<f64>
  %0 = "ms.add"(%x, %y) : (tensor<i64>, tensor<f64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// select: the condition is in no group and is never cast; the branches are group T.
// CHECK-LABEL: func.func @select_branches(
// CHECK-SAME:    %[[C:.+]]: tensor<4xi1>, %[[A:.+]]: tensor<4xi32>, %[[B:.+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[CA:.+]] = "ms.cast"(%[[A]]) {dtype = f32, reason = "operand #1 of 'ms.select' is int32; its dtype group promotes to float32"}
// CHECK-NEXT:    %[[R:.+]] = "ms.select"(%[[C]], %[[CA]], %[[B]]) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    return %[[R]]
func.func @select_branches(%c: tensor<4xi1>, %a: tensor<4xi32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "ms.select"(%c, %a, %b) : (tensor<4xi1>, tensor<4xi32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Bool branches with a Python int: the branches become int64, the bool condition stays.
// CHECK-LABEL: func.func @select_bool_branches_python_int(
// CHECK-SAME:    %[[C:.+]]: tensor<4xi1>, %[[A:.+]]: tensor<4xi1>)
// CHECK-NEXT:    %[[S:.+]] = "ms.constant"() {is_scalar, value = dense<0> : tensor<i64>}
// CHECK-NEXT:    %[[CA:.+]] = "ms.cast"(%[[A]]) {dtype = i64, reason = "operand #1 of 'ms.select' is bool; its dtype group promotes to int64"}
// CHECK-NEXT:    %[[R:.+]] = "ms.select"(%[[C]], %[[CA]], %[[S]]) : (tensor<4xi1>, tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
// CHECK-NOT:     "ms.cast"(%[[C]])
func.func @select_bool_branches_python_int(%c: tensor<4xi1>, %a: tensor<4xi1>) -> tensor<4xi64> {
  %s = "ms.constant"() {value = dense<0> : tensor<i64>, is_scalar} : () -> tensor<i64>
  %0 = "ms.select"(%c, %a, %s) : (tensor<4xi1>, tensor<4xi1>, tensor<i64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// Comparisons unify their operands; the result stays bool.
// CHECK-LABEL: func.func @compare(
// CHECK-SAME:    %[[A:.+]]: tensor<4xi32>, %[[B:.+]]: tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:    %[[CA:.+]] = "ms.cast"(%[[A]]) {dtype = f32, reason = "operand #0 of 'ms.less' is int32; its dtype group promotes to float32"}
// CHECK-NEXT:    %[[R:.+]] = "ms.less"(%[[CA]], %[[B]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
func.func @compare(%a: tensor<4xi32>, %b: tensor<4xf32>) -> tensor<4xi1> {
  %0 = "ms.less"(%a, %b) : (tensor<4xi32>, tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// Non-elementwise ops with a group: matmul, concat, one_hot's on/off values (not its indices).
// CHECK-LABEL: func.func @other_groups(
// CHECK-SAME:    %[[A:.+]]: tensor<2x3xf16>, %[[B:.+]]: tensor<3x4xf32>, %[[I:.+]]: tensor<2xi32>, %[[ON:.+]]: tensor<i64>, %[[OFF:.+]]: tensor<f32>)
// CHECK-NEXT:    %[[CA:.+]] = "ms.cast"(%[[A]]) {dtype = f32, reason = "operand #0 of 'ms.matmul' is float16; its dtype group promotes to float32"}
// CHECK-NEXT:    %[[M:.+]] = "ms.matmul"(%[[CA]], %[[B]]) {transpose_a = false, transpose_b = false} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[CA2:.+]] = "ms.cast"(%[[A]]) {dtype = f32, reason = "operand #1 of 'ms.concat' is float16; its dtype group promotes to float32"}
// CHECK-NEXT:    %[[J:.+]] = "ms.concat"(%[[M]], %[[CA2]]) {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<2x7xf32>
// CHECK-NEXT:    %[[CON:.+]] = "ms.cast"(%[[ON]]) {dtype = f32, reason = "operand #1 of 'ms.one_hot' is int64; its dtype group promotes to float32"}
// CHECK-NEXT:    %[[H:.+]] = "ms.one_hot"(%[[I]], %[[CON]], %[[OFF]]) {axis = -1 : i64, depth = 3 : i64} : (tensor<2xi32>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
func.func @other_groups(%a: tensor<2x3xf16>, %b: tensor<3x4xf32>, %i: tensor<2xi32>, %on: tensor<i64>, %off: tensor<f32>)
    -> (tensor<2x7xf32>, tensor<2x3xf32>) {
  %0 = "ms.matmul"(%a, %b) {transpose_a = false, transpose_b = false} : (tensor<2x3xf16>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = "ms.concat"(%0, %a) {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x3xf16>) -> tensor<2x7xf32>
  %2 = "ms.one_hot"(%i, %on, %off) {axis = -1 : i64, depth = 3 : i64} : (tensor<2xi32>, tensor<i64>, tensor<f32>) -> tensor<2x3xf32>
  return %1, %2 : tensor<2x7xf32>, tensor<2x3xf32>
}

// -----

// Groups that already agree, and ops whose signature has no group (cast, reductions, data
// movement, gather's params/indices), are left as they are.
// CHECK-LABEL: func.func @untouched(
// CHECK-NOT:     reason
// CHECK-NOT:     "ms.constant"
// CHECK:         return
func.func @untouched(%a: tensor<4xf16>, %b: tensor<4xf16>, %p: tensor<5x3xf64>, %i: tensor<2xi32>)
    -> (tensor<4xf16>, tensor<4xf32>, tensor<f16>, tensor<2x3xf64>, tensor<2x2xf16>) {
  %0 = "ms.add"(%a, %b) : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  %1 = "ms.cast"(%0) {dtype = f32} : (tensor<4xf16>) -> tensor<4xf32>
  %2 = "ms.reduce_sum"(%0) {axis = array<i64>, keep_dims = false} : (tensor<4xf16>) -> tensor<f16>
  %3 = "ms.gather"(%p, %i) {axis = 0 : i64} : (tensor<5x3xf64>, tensor<2xi32>) -> tensor<2x3xf64>
  %4 = "ms.reshape"(%0) {shape = array<i64: 2, 2>} : (tensor<4xf16>) -> tensor<2x2xf16>
  return %0, %1, %2, %3, %4 : tensor<4xf16>, tensor<4xf32>, tensor<f16>, tensor<2x3xf64>, tensor<2x2xf16>
}

// -----

// A Parameter written by assign may receive a lower-priority value: the value is cast.
// CHECK-LABEL: func.func @assign_value_cast(
// CHECK-SAME:    %[[W:.+]]: tensor<3xf32> {ms.parameter = "w"}, %[[V:.+]]: tensor<3xf16>) -> tensor<3xf32>
// CHECK-NEXT:    %[[C:.+]] = "ms.cast"(%[[V]]) {dtype = f32, reason = "operand #1 of 'ms.assign' is float16; its dtype group promotes to float32"}
// CHECK-NEXT:    %[[R:.+]] = "ms.assign"(%[[W]], %[[C]]) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
func.func @assign_value_cast(%w: tensor<3xf32> {ms.parameter = "w"}, %v: tensor<3xf16>) -> tensor<3xf32> {
  %0 = "ms.assign"(%w, %v) : (tensor<3xf32>, tensor<3xf16>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A Python int written into an int32 Parameter takes the Parameter's dtype: no error.
// CHECK-LABEL: func.func @assign_python_int(
// CHECK-SAME:    %[[W:.+]]: tensor<i32> {ms.parameter = "step"}) -> tensor<i32>
// CHECK-NEXT:    %[[S:.+]] = "ms.constant"() {is_scalar, value = dense<7> : tensor<i32>} : () -> tensor<i32>
// CHECK-NEXT:    %[[R:.+]] = "ms.assign"(%[[W]], %[[S]]) : (tensor<i32>, tensor<i32>) -> tensor<i32>
func.func @assign_python_int(%w: tensor<i32> {ms.parameter = "step"}) -> tensor<i32> {
  %s = "ms.constant"() {value = dense<7> : tensor<i64>, is_scalar} : () -> tensor<i64>
  %0 = "ms.assign"(%w, %s) : (tensor<i32>, tensor<i64>) -> tensor<i32>
  return %0 : tensor<i32>
}

// -----

// The same Python scalar in both places of a group is re-typed once.
// CHECK-LABEL: func.func @scalar_used_twice(
// CHECK-SAME:    %[[C:.+]]: tensor<4xi1>)
// CHECK-NEXT:    %[[S:.+]] = "ms.constant"() {is_scalar, value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
// CHECK-NEXT:    %[[R:.+]] = "ms.select"(%[[C]], %[[S]], %[[S]]) : (tensor<4xi1>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[T:.+]] = "ms.constant"() {is_scalar, value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
// CHECK-NEXT:    %[[M:.+]] = "ms.mul"(%[[T]], %[[T]]) : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT:    return %[[R]], %[[M]]
func.func @scalar_used_twice(%c: tensor<4xi1>) -> (tensor<4xf32>, tensor<f32>) {
  %s = "ms.constant"() {value = dense<0.5> : tensor<f64>, is_scalar} : () -> tensor<f64>
  %0 = "ms.select"(%c, %s, %s) : (tensor<4xi1>, tensor<f64>, tensor<f64>) -> tensor<4xf32>
  %1 = "ms.mul"(%s, %s) : (tensor<f64>, tensor<f64>) -> tensor<f32>
  return %0, %1 : tensor<4xf32>, tensor<f32>
}

// -----

// float16 with bfloat16 meets at float32 (neither holds the other); bfloat16 outranks int64.
// CHECK-LABEL: func.func @half_floats(
// CHECK-SAME:    %[[H:.+]]: tensor<3xf16>, %[[B:.+]]: tensor<3xbf16>, %[[I:.+]]: tensor<3xi64>)
// CHECK-DAG:     %[[H32:.+]] = "ms.cast"(%[[H]]) {dtype = f32, reason = "operand #0 of 'ms.add' is float16; its dtype group promotes to float32"}
// CHECK-DAG:     %[[B32:.+]] = "ms.cast"(%[[B]]) {dtype = f32, reason = "operand #1 of 'ms.add' is bfloat16; its dtype group promotes to float32"}
// CHECK:         "ms.add"(%[[H32]], %[[B32]]) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK:         %[[IB:.+]] = "ms.cast"(%[[I]]) {dtype = bf16,
// CHECK:         "ms.mul"(%[[B]], %[[IB]]) : (tensor<3xbf16>, tensor<3xbf16>) -> tensor<3xbf16>
func.func @half_floats(%h: tensor<3xf16>, %b: tensor<3xbf16>, %i: tensor<3xi64>) -> (tensor<3xf32>, tensor<3xbf16>) {
  %0 = "ms.add"(%h, %b) : (tensor<3xf16>, tensor<3xbf16>) -> tensor<3xf32>
  %1 = "ms.mul"(%b, %i) : (tensor<3xbf16>, tensor<3xi64>) -> tensor<3xbf16>
  return %0, %1 : tensor<3xf32>, tensor<3xbf16>
}

// -----

// A bool tensor and a Python bool take a uint32 group's dtype.
// CHECK-LABEL: func.func @uint32_with_bools(
// CHECK:         "ms.cast"(%{{.+}}) {dtype = ui32,
// CHECK:         "ms.constant"() {is_scalar, value = dense<1> : tensor<ui32>}
func.func @uint32_with_bools(%u: tensor<3xui32>, %b: tensor<3xi1>) -> (tensor<3xui32>, tensor<3xui32>) {
  %t = "ms.constant"() {value = dense<true> : tensor<i1>, is_scalar} : () -> tensor<i1>
  %0 = "ms.maximum"(%u, %b) : (tensor<3xui32>, tensor<3xi1>) -> tensor<3xui32>
  %1 = "ms.add"(%u, %t) : (tensor<3xui32>, tensor<i1>) -> tensor<3xui32>
  return %0, %1 : tensor<3xui32>, tensor<3xui32>
}
