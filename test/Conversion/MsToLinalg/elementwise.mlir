// Elementwise ops lower to one parallel linalg.generic whose body is the op's scalar rule;
// operands broadcast numpy-style through their indexing maps.
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | FileCheck %s
// The output is valid IR (re-parsed and verified, ms ops included).
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | ms-opt --split-input-file > /dev/null

// CHECK-DAG:   #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[$ROW:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_broadcast_row(
// CHECK-SAME:    %[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<3xf32>) -> tensor<2x3xf32>
// CHECK:         %[[INIT:.+]] = tensor.empty() : tensor<2x3xf32>
// CHECK:         %[[R:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<2x3xf32>, tensor<3xf32>) outs(%[[INIT]] : tensor<2x3xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f32, %[[Y:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[X]], %[[Y]] fastmath<contract> : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK:         return %[[R]] : tensor<2x3xf32>
func.func @add_broadcast_row(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "ms.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Size-1 dimensions that broadcast read index 0; a missing leading dimension is dropped.
// CHECK-DAG:   #[[$COL:.+]] = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
// CHECK-DAG:   #[[$LAST:.+]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-DAG:   #[[$ID3:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @mul_broadcast_size_one(
// CHECK-SAME:    %[[A:.+]]: tensor<2x1x4xf64>, %[[B:.+]]: tensor<3x1xf64>) -> tensor<2x3x4xf64>
// CHECK:         linalg.generic {indexing_maps = [#[[$COL]], #[[$LAST]], #[[$ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<2x1x4xf64>, tensor<3x1xf64>) outs(%{{.+}} : tensor<2x3x4xf64>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f64, %[[Y:.+]]: f64, %{{.+}}: f64):
// CHECK-NEXT:      %[[P:.+]] = arith.mulf %[[X]], %[[Y]] fastmath<contract> : f64
// CHECK-NEXT:      linalg.yield %[[P]] : f64
func.func @mul_broadcast_size_one(%a: tensor<2x1x4xf64>, %b: tensor<3x1xf64>) -> tensor<2x3x4xf64> {
  %0 = "ms.mul"(%a, %b) : (tensor<2x1x4xf64>, tensor<3x1xf64>) -> tensor<2x3x4xf64>
  return %0 : tensor<2x3x4xf64>
}

// -----

// A 0-d operand is read through a map with no results.
// CHECK-DAG:   #[[$ID1:.+]] = affine_map<(d0) -> (d0)>
// CHECK-DAG:   #[[$SCALAR:.+]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @sub_scalar_operand(
// CHECK-SAME:    %[[A:.+]]: tensor<4xi32>, %[[B:.+]]: tensor<i32>) -> tensor<4xi32>
// CHECK:         linalg.generic {indexing_maps = [#[[$ID1]], #[[$SCALAR]], #[[$ID1]]], iterator_types = ["parallel"]}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<4xi32>, tensor<i32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: i32, %[[Y:.+]]: i32, %{{.+}}: i32):
// CHECK-NEXT:      %[[D:.+]] = arith.subi %[[X]], %[[Y]] : i32
// CHECK-NEXT:      linalg.yield %[[D]] : i32
func.func @sub_scalar_operand(%a: tensor<4xi32>, %b: tensor<i32>) -> tensor<4xi32> {
  %0 = "ms.sub"(%a, %b) : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// Integer division is true division in float32.
// CHECK-LABEL: func.func @div_int_in_float32(
// CHECK-SAME:    -> tensor<4xf32>
// CHECK:         %[[INIT:.+]] = tensor.empty() : tensor<4xf32>
// CHECK:         linalg.generic
// CHECK-SAME:      outs(%[[INIT]] : tensor<4xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: i32, %[[Y:.+]]: i32, %{{.+}}: f32):
// CHECK-NEXT:      %[[FX:.+]] = arith.sitofp %[[X]] : i32 to f32
// CHECK-NEXT:      %[[FY:.+]] = arith.sitofp %[[Y]] : i32 to f32
// CHECK-NEXT:      %[[Q:.+]] = arith.divf %[[FX]], %[[FY]] fastmath<contract> : f32
// CHECK-NEXT:      linalg.yield %[[Q]] : f32
func.func @div_int_in_float32(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xf32> {
  %0 = "ms.div"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// uint8 is stored as signless i8 and compared unsigned; the bool result is stored as i8.
// CHECK-LABEL: func.func @less_uint8(
// CHECK-SAME:    %[[A:.+]]: tensor<2x1xi8>, %[[B:.+]]: tensor<3xi8>) -> tensor<2x3xi8>
// CHECK:         %[[INIT:.+]] = tensor.empty() : tensor<2x3xi8>
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<2x1xi8>, tensor<3xi8>) outs(%[[INIT]] : tensor<2x3xi8>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: i8, %[[Y:.+]]: i8, %{{.+}}: i8):
// CHECK:           %[[LT:.+]] = arith.cmpi ult, %[[X]], %[[Y]] : i8
// CHECK-NEXT:      %[[E:.+]] = arith.extui %[[LT]] : i1 to i8
// CHECK-NEXT:      linalg.yield %[[E]] : i8
func.func @less_uint8(%a: tensor<2x1xui8>, %b: tensor<3xui8>) -> tensor<2x3xi1> {
  %0 = "ms.less"(%a, %b) : (tensor<2x1xui8>, tensor<3xui8>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// -----

// An operand used twice is read once (one generic input).
// CHECK-LABEL: func.func @compare_signed_and_float(
// CHECK:         ^bb0(%[[X:.+]]: i64, %{{.+}}: i8):
// CHECK:           arith.cmpi sge, %[[X]], %[[X]] : i64
// CHECK:         ^bb0(%[[U:.+]]: f16, %{{.+}}: i8):
// CHECK:           arith.cmpf une, %[[U]], %[[U]] : f16
// CHECK:         ^bb0(%[[P:.+]]: f32, %{{.+}}: i8):
// CHECK:           arith.cmpf ogt, %[[P]], %[[P]] : f32
func.func @compare_signed_and_float(%a: tensor<4xi64>, %b: tensor<4xf16>, %c: tensor<4xf32>)
    -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = "ms.greater_equal"(%a, %a) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  %1 = "ms.not_equal"(%b, %b) : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xi1>
  %2 = "ms.greater"(%c, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0, %1, %2 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// bool arithmetic computes in i1: add is `or`, mul is `and`; storage stays i8.
// CHECK-LABEL: func.func @bool_add_mul(
// CHECK-SAME:    %[[A:.+]]: tensor<4xi8>, %[[B:.+]]: tensor<4xi8>) -> tensor<4xi8>
// CHECK:         ^bb0(%[[X:.+]]: i8, %[[Y:.+]]: i8, %{{.+}}: i8):
// CHECK-NEXT:      %[[BX:.+]] = arith.trunci %[[X]] : i8 to i1
// CHECK-NEXT:      %[[BY:.+]] = arith.trunci %[[Y]] : i8 to i1
// CHECK:           %[[OR:.+]] = arith.ori %[[BX]], %[[BY]] : i1
// CHECK-NEXT:      %[[E:.+]] = arith.extui %[[OR]] : i1 to i8
// CHECK-NEXT:      linalg.yield %[[E]] : i8
// CHECK:         ^bb0(%[[U:.+]]: i8, %[[V:.+]]: i8, %{{.+}}: i8):
// CHECK-NEXT:      %[[BU:.+]] = arith.trunci %[[U]] : i8 to i1
// CHECK-NEXT:      %[[BV:.+]] = arith.trunci %[[V]] : i8 to i1
// CHECK:           %[[AND:.+]] = arith.andi %[[BU]], %[[BV]] : i1
// CHECK-NEXT:      %[[E2:.+]] = arith.extui %[[AND]] : i1 to i8
// CHECK-NEXT:      linalg.yield %[[E2]] : i8
func.func @bool_add_mul(%a: tensor<4xi1>, %b: tensor<4xi1>) -> tensor<4xi1> {
  %0 = "ms.add"(%a, %b) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %1 = "ms.mul"(%0, %b) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %1 : tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @logical_not(
// CHECK:         ^bb0(%[[X:.+]]: i8, %{{.+}}: i8):
// CHECK-NEXT:      %[[B:.+]] = arith.trunci %[[X]] : i8 to i1
// CHECK:           %[[F:.+]] = arith.constant false
// CHECK-NEXT:      %[[N:.+]] = arith.cmpi eq, %[[B]], %[[F]] : i1
// CHECK-NEXT:      %[[E:.+]] = arith.extui %[[N]] : i1 to i8
// CHECK-NEXT:      linalg.yield %[[E]] : i8
func.func @logical_not(%a: tensor<4xi1>) -> tensor<4xi1> {
  %0 = "ms.logical_not"(%a) : (tensor<4xi1>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// max/min pick the signed, unsigned or float form from the ms dtype.
// CHECK-LABEL: func.func @max_min_by_dtype(
// CHECK:         arith.maxsi %{{.+}}, %{{.+}} : i8
// CHECK:         arith.minui %{{.+}}, %{{.+}} : i8
// CHECK:         arith.maximumf %{{.+}}, %{{.+}} : f16
// CHECK:         arith.minimumf %{{.+}}, %{{.+}} : f64
func.func @max_min_by_dtype(%a: tensor<4xi8>, %b: tensor<4xui8>, %c: tensor<4xf16>, %d: tensor<4xf64>)
    -> (tensor<4xi8>, tensor<4xui8>, tensor<4xf16>, tensor<4xf64>) {
  %0 = "ms.maximum"(%a, %a) : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %1 = "ms.minimum"(%b, %b) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %2 = "ms.maximum"(%c, %c) : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  %3 = "ms.minimum"(%d, %d) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  return %0, %1, %2, %3 : tensor<4xi8>, tensor<4xui8>, tensor<4xf16>, tensor<4xf64>
}

// -----

// CHECK-LABEL: func.func @pow_abs_neg(
// CHECK:         math.ipowi %{{.+}}, %{{.+}} : i32
// CHECK:         math.powf %{{.+}}, %{{.+}} : f32
// CHECK:         math.absi %{{.+}} : i32
// CHECK:         ^bb0(%[[X:.+]]: i32, %{{.+}}: i32):
// CHECK-NEXT:      %[[Z:.+]] = arith.constant 0 : i32
// CHECK-NEXT:      %[[N:.+]] = arith.subi %[[Z]], %[[X]] : i32
// CHECK-NEXT:      linalg.yield %[[N]] : i32
// CHECK:         arith.negf %{{.+}} fastmath<contract> : f32
func.func @pow_abs_neg(%i: tensor<4xi32>, %f: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi32>, tensor<4xf32>) {
  %0 = "ms.pow"(%i, %i) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = "ms.pow"(%f, %f) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = "ms.abs"(%i) : (tensor<4xi32>) -> tensor<4xi32>
  %3 = "ms.neg"(%i) : (tensor<4xi32>) -> tensor<4xi32>
  %4 = "ms.neg"(%f) : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3, %4 : tensor<4xi32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi32>, tensor<4xf32>
}

// -----

// Float-valued math on integers computes in float32.
// CHECK-LABEL: func.func @exp_of_int(
// CHECK-SAME:    -> tensor<4xf32>
// CHECK:         ^bb0(%[[X:.+]]: i16, %{{.+}}: f32):
// CHECK-NEXT:      %[[F:.+]] = arith.sitofp %[[X]] : i16 to f32
// CHECK-NEXT:      %[[E:.+]] = math.exp %[[F]] fastmath<contract> : f32
// CHECK-NEXT:      linalg.yield %[[E]] : f32
func.func @exp_of_int(%a: tensor<4xi16>) -> tensor<4xf32> {
  %0 = "ms.exp"(%a) : (tensor<4xi16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @unary_math(
// CHECK:         math.log %{{.+}} fastmath<contract> : f64
// CHECK:         math.tanh %{{.+}} fastmath<contract> : f64
// CHECK:         math.sqrt %{{.+}} fastmath<contract> : f64
// CHECK:         math.rsqrt %{{.+}} fastmath<contract> : f64
func.func @unary_math(%a: tensor<4xf64>) -> tensor<4xf64> {
  %0 = "ms.log"(%a) : (tensor<4xf64>) -> tensor<4xf64>
  %1 = "ms.tanh"(%0) : (tensor<4xf64>) -> tensor<4xf64>
  %2 = "ms.sqrt"(%1) : (tensor<4xf64>) -> tensor<4xf64>
  %3 = "ms.rsqrt"(%2) : (tensor<4xf64>) -> tensor<4xf64>
  return %3 : tensor<4xf64>
}

// -----

// sigmoid(x) = 1 / (1 + exp(-x)).
// CHECK-LABEL: func.func @sigmoid(
// CHECK:         ^bb0(%[[X:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[ONE2:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[NEG:.+]] = arith.negf %[[X]] fastmath<contract> : f32
// CHECK-NEXT:      %[[EXP:.+]] = math.exp %[[NEG]] fastmath<contract> : f32
// CHECK-NEXT:      %[[DEN:.+]] = arith.addf %[[ONE2]], %[[EXP]] fastmath<contract> : f32
// CHECK-NEXT:      %[[Q:.+]] = arith.divf %[[ONE]], %[[DEN]] fastmath<contract> : f32
// CHECK-NEXT:      linalg.yield %[[Q]] : f32
func.func @sigmoid(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "ms.sigmoid"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @relu_int(
// CHECK:         ^bb0(%[[X:.+]]: i32, %{{.+}}: i32):
// CHECK-NEXT:      %[[Z:.+]] = arith.constant 0 : i32
// CHECK-NEXT:      %[[M:.+]] = arith.maxsi %[[X]], %[[Z]] : i32
// CHECK-NEXT:      linalg.yield %[[M]] : i32
func.func @relu_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "ms.relu"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @value_free(
// CHECK:         ^bb0(%{{.+}}: f32, %{{.+}}: f32):
// CHECK-NEXT:      %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      linalg.yield %[[Z]] : f32
// CHECK:         ^bb0(%{{.+}}: i8, %{{.+}}: i8):
// CHECK:           %[[T:.+]] = arith.constant true
// CHECK-NEXT:      %[[E:.+]] = arith.extui %[[T]] : i1 to i8
// CHECK-NEXT:      linalg.yield %[[E]] : i8
// CHECK:         ^bb0(%[[X:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      linalg.yield %[[X]] : f32
func.func @value_free(%a: tensor<4xf32>, %b: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xi1>, tensor<4xf32>) {
  %0 = "ms.zeros_like"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "ms.ones_like"(%b) : (tensor<4xi1>) -> tensor<4xi1>
  %2 = "ms.stop_gradient"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xi1>, tensor<4xf32>
}

// -----

// select: the bool condition is converted from storage, the branches broadcast.
// CHECK-DAG:   #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[$COL:.+]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG:   #[[$SCALAR:.+]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @select(
// CHECK-SAME:    %[[C:.+]]: tensor<2x3xi8>, %[[A:.+]]: tensor<2x1xf32>, %[[B:.+]]: tensor<f32>) -> tensor<2x3xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[$ID]], #[[$COL]], #[[$SCALAR]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[C]], %[[A]], %[[B]] : tensor<2x3xi8>, tensor<2x1xf32>, tensor<f32>)
// CHECK-NEXT:    ^bb0(%[[CS:.+]]: i8, %[[X:.+]]: f32, %[[Y:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      %[[BC:.+]] = arith.trunci %[[CS]] : i8 to i1
// CHECK-NEXT:      %[[S:.+]] = arith.select %[[BC]], %[[X]], %[[Y]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
func.func @select(%c: tensor<2x3xi1>, %a: tensor<2x1xf32>, %b: tensor<f32>) -> tensor<2x3xf32> {
  %0 = "ms.select"(%c, %a, %b) : (tensor<2x3xi1>, tensor<2x1xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
