// ms.constant becomes arith.constant in the storage type (uint8 and bool as i8: 200 is stored
// as the bit pattern -56, true as 1); ms.assign lowers to its value (under jit the runtime
// writes it into the Parameter).
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | FileCheck %s
// The output is valid IR (re-parsed and verified, ms ops included).
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | ms-opt --split-input-file > /dev/null

// CHECK-LABEL: func.func @constants() -> (tensor<2xf32>, tensor<2xi8>, tensor<2xi8>, tensor<f64>)
// CHECK-NEXT:    %[[F:.+]] = arith.constant dense<[1.500000e+00, -2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[U:.+]] = arith.constant dense<[-56, 3]> : tensor<2xi8>
// CHECK-NEXT:    %[[B:.+]] = arith.constant dense<[1, 0]> : tensor<2xi8>
// CHECK-NEXT:    %[[S:.+]] = arith.constant dense<5.000000e-01> : tensor<f64>
// CHECK-NEXT:    return %[[F]], %[[U]], %[[B]], %[[S]]
func.func @constants() -> (tensor<2xf32>, tensor<2xui8>, tensor<2xi1>, tensor<f64>) {
  %0 = "ms.constant"() {value = dense<[1.5, -2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %1 = "ms.constant"() {value = dense<[200, 3]> : tensor<2xui8>} : () -> tensor<2xui8>
  %2 = "ms.constant"() {value = dense<[true, false]> : tensor<2xi1>} : () -> tensor<2xi1>
  %3 = "ms.constant"() {value = dense<0.5> : tensor<f64>, is_scalar} : () -> tensor<f64>
  return %0, %1, %2, %3 : tensor<2xf32>, tensor<2xui8>, tensor<2xi1>, tensor<f64>
}

// -----

// A constant feeding an op is used directly by its lowering.
// CHECK-LABEL: func.func @constant_operand(
// CHECK-SAME:    %[[A:.+]]: tensor<3xi64>) -> tensor<3xi64>
// CHECK-NEXT:    %[[C:.+]] = arith.constant dense<[1, 2, 3]> : tensor<3xi64>
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[A]], %[[C]] : tensor<3xi64>, tensor<3xi64>)
func.func @constant_operand(%a: tensor<3xi64>) -> tensor<3xi64> {
  %c = "ms.constant"() {value = dense<[1, 2, 3]> : tensor<3xi64>} : () -> tensor<3xi64>
  %0 = "ms.add"(%a, %c) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

// CHECK-LABEL: func.func @assign(
// CHECK-SAME:    %{{.+}}: tensor<3xf32> {ms.parameter = "w"}, %[[V:.+]]: tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    return %[[V]] : tensor<3xf32>
func.func @assign(%w: tensor<3xf32> {ms.parameter = "w"}, %v: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "ms.assign"(%w, %v) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A bool Parameter keeps its attribute when its type becomes the i8 storage type.
// CHECK-LABEL: func.func @assign_bool(
// CHECK-SAME:    %{{.+}}: tensor<3xi8> {ms.parameter = "mask"}, %[[V:.+]]: tensor<3xi8>) -> tensor<3xi8>
// CHECK-NEXT:    return %[[V]] : tensor<3xi8>
func.func @assign_bool(%w: tensor<3xi1> {ms.parameter = "mask"}, %v: tensor<3xi1>) -> tensor<3xi1> {
  %0 = "ms.assign"(%w, %v) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

// random_uniform: one parallel generic over the result hashing (row-major index, counter,
// seed) with lowbias32; the top 24 bits scaled to [0, 1).
// CHECK-DAG:   #[[$SCALAR:.+]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @random_uniform(
// CHECK-SAME:    %[[K:.+]]: tensor<i64>) -> tensor<4x6xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[$SCALAR]], #{{.+}}], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[K]] : tensor<i64>)
// CHECK:           %[[ROW:.+]] = linalg.index 0 : index
// CHECK:           %[[COL:.+]] = linalg.index 1 : index
// CHECK:           %[[LOW:.+]] = arith.trunci %{{.+}} : i64 to i32
// CHECK-COUNT-2:   arith.muli %{{.+}}, %{{.+}} : i32
// CHECK:           %[[C8:.+]] = arith.constant 8 : i32
// CHECK-NEXT:      %[[BITS:.+]] = arith.shrui %{{.+}}, %[[C8]] : i32
// CHECK-NEXT:      %[[F:.+]] = arith.uitofp %[[BITS]] : i32 to f32
// CHECK-NEXT:      %[[SCALE:.+]] = arith.constant 5.96046448E-8 : f32
// CHECK-NEXT:      %[[U:.+]] = arith.mulf %[[F]], %[[SCALE]] : f32
// CHECK-NEXT:      linalg.yield %[[U]] : f32
func.func @random_uniform(%k: tensor<i64>) -> tensor<4x6xf32> {
  %0 = "ms.random_uniform"(%k) {shape = array<i64: 4, 6>, seed = 3 : i64} : (tensor<i64>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}
