// matmul lowers to linalg.matmul (transposes folded into its indexing_maps, so no copy);
// batch_matmul to a linalg.generic contraction over (batch..., m, n, k) with numpy-broadcast
// batch dims. float16 accumulates in float32 and is rounded once at the end.
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | FileCheck %s
// The output is valid IR (re-parsed and verified, ms ops included).
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | ms-opt --split-input-file > /dev/null

// CHECK-LABEL: func.func @matmul(
// CHECK-SAME:    %[[A:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<8x16xf32>) -> tensor<4x16xf32>
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<4x16xf32>
// CHECK-NEXT:    %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[ACC:.+]] = linalg.fill ins(%[[Z]] : f32) outs(%[[E]] : tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %[[R:.+]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<4x8xf32>, tensor<8x16xf32>) outs(%[[ACC]] : tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    return %[[R]] : tensor<4x16xf32>
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %0 = "ms.matmul"(%a, %b) {transpose_a = false, transpose_b = false} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// CHECK-DAG:   #[[$AT:.+]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG:   #[[$B:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG:   #[[$C:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @matmul_transpose_a(
// CHECK-SAME:    %[[A:.+]]: tensor<8x4xf64>, %[[B:.+]]: tensor<8x16xf64>) -> tensor<4x16xf64>
// CHECK:         linalg.matmul indexing_maps = [#[[$AT]], #[[$B]], #[[$C]]] ins(%[[A]], %[[B]] : tensor<8x4xf64>, tensor<8x16xf64>) outs(%{{.+}} : tensor<4x16xf64>)
func.func @matmul_transpose_a(%a: tensor<8x4xf64>, %b: tensor<8x16xf64>) -> tensor<4x16xf64> {
  %0 = "ms.matmul"(%a, %b) {transpose_a = true, transpose_b = false} : (tensor<8x4xf64>, tensor<8x16xf64>) -> tensor<4x16xf64>
  return %0 : tensor<4x16xf64>
}

// -----

// CHECK-DAG:   #[[$A:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG:   #[[$BT:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG:   #[[$C:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @matmul_transpose_b(
// CHECK:         linalg.matmul indexing_maps = [#[[$A]], #[[$BT]], #[[$C]]] ins(%{{.+}}, %{{.+}} : tensor<4x8xi32>, tensor<16x8xi32>) outs(%{{.+}} : tensor<4x16xi32>)
func.func @matmul_transpose_b(%a: tensor<4x8xi32>, %b: tensor<16x8xi32>) -> tensor<4x16xi32> {
  %0 = "ms.matmul"(%a, %b) {transpose_a = false, transpose_b = true} : (tensor<4x8xi32>, tensor<16x8xi32>) -> tensor<4x16xi32>
  return %0 : tensor<4x16xi32>
}

// -----

// float16 with both transposes: a float32 accumulator, then one truncf.
// CHECK-DAG:   #[[$AT:.+]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG:   #[[$BT:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG:   #[[$C:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG:   #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @matmul_f16(
// CHECK-SAME:    %[[A:.+]]: tensor<8x4xf16>, %[[B:.+]]: tensor<16x8xf16>) -> tensor<4x16xf16>
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<4x16xf32>
// CHECK-NEXT:    %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[ACC:.+]] = linalg.fill ins(%[[Z]] : f32) outs(%[[E]] : tensor<4x16xf32>)
// CHECK-NEXT:    %[[P:.+]] = linalg.matmul indexing_maps = [#[[$AT]], #[[$BT]], #[[$C]]] ins(%[[A]], %[[B]] : tensor<8x4xf16>, tensor<16x8xf16>) outs(%[[ACC]] : tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK:         %[[R:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[P]] : tensor<4x16xf32>) outs(%{{.+}} : tensor<4x16xf16>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f32, %{{.+}}: f16):
// CHECK-NEXT:      %[[H:.+]] = arith.truncf %[[X]] : f32 to f16
// CHECK-NEXT:      linalg.yield %[[H]] : f16
// CHECK:         return %[[R]] : tensor<4x16xf16>
func.func @matmul_f16(%a: tensor<8x4xf16>, %b: tensor<16x8xf16>) -> tensor<4x16xf16> {
  %0 = "ms.matmul"(%a, %b) {transpose_a = true, transpose_b = true} : (tensor<8x4xf16>, tensor<16x8xf16>) -> tensor<4x16xf16>
  return %0 : tensor<4x16xf16>
}

// -----

// uint8 multiplies modulo 2^8 like numpy, in its i8 storage.
// CHECK-LABEL: func.func @matmul_uint8(
// CHECK-SAME:    %[[A:.+]]: tensor<4x8xi8>, %[[B:.+]]: tensor<8x16xi8>) -> tensor<4x16xi8>
// CHECK:         %[[Z:.+]] = arith.constant 0 : i8
// CHECK-NEXT:    %[[ACC:.+]] = linalg.fill ins(%[[Z]] : i8) outs(%{{.+}} : tensor<4x16xi8>)
// CHECK-NEXT:    linalg.matmul ins(%[[A]], %[[B]] : tensor<4x8xi8>, tensor<8x16xi8>) outs(%[[ACC]] : tensor<4x16xi8>)
func.func @matmul_uint8(%a: tensor<4x8xui8>, %b: tensor<8x16xui8>) -> tensor<4x16xui8> {
  %0 = "ms.matmul"(%a, %b) {transpose_a = false, transpose_b = false} : (tensor<4x8xui8>, tensor<8x16xui8>) -> tensor<4x16xui8>
  return %0 : tensor<4x16xui8>
}

// -----

// Batch dims broadcast (A's size-1 batch dim reads index 0, B lacks the leading one).
// CHECK-DAG:   #[[$A:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d2, d4)>
// CHECK-DAG:   #[[$BT:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d4)>
// CHECK-DAG:   #[[$C:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @batch_matmul_broadcast(
// CHECK-SAME:    %[[A:.+]]: tensor<2x1x3x4xf32>, %[[B:.+]]: tensor<5x6x4xf32>) -> tensor<2x5x3x6xf32>
// CHECK:         %[[ACC:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x5x3x6xf32>)
// CHECK-NEXT:    %[[R:.+]] = linalg.generic {indexing_maps = [#[[$A]], #[[$BT]], #[[$C]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<2x1x3x4xf32>, tensor<5x6x4xf32>) outs(%[[ACC]] : tensor<2x5x3x6xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f32, %[[Y:.+]]: f32, %[[O:.+]]: f32):
// CHECK-NEXT:      %[[P:.+]] = arith.mulf %[[X]], %[[Y]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[O]], %[[P]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK:         return %[[R]]
func.func @batch_matmul_broadcast(%a: tensor<2x1x3x4xf32>, %b: tensor<5x6x4xf32>) -> tensor<2x5x3x6xf32> {
  %0 = "ms.batch_matmul"(%a, %b) {transpose_a = false, transpose_b = true} : (tensor<2x1x3x4xf32>, tensor<5x6x4xf32>) -> tensor<2x5x3x6xf32>
  return %0 : tensor<2x5x3x6xf32>
}

// -----

// CHECK-DAG:   #[[$AT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>
// CHECK-DAG:   #[[$B:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG:   #[[$C:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @batch_matmul_int_transpose_a(
// CHECK:         linalg.generic {indexing_maps = [#[[$AT]], #[[$B]], #[[$C]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-NEXT:    ^bb0(%[[X:.+]]: i64, %[[Y:.+]]: i64, %[[O:.+]]: i64):
// CHECK-NEXT:      %[[P:.+]] = arith.muli %[[X]], %[[Y]] : i64
// CHECK-NEXT:      %[[S:.+]] = arith.addi %[[O]], %[[P]] : i64
// CHECK-NEXT:      linalg.yield %[[S]] : i64
func.func @batch_matmul_int_transpose_a(%a: tensor<2x8x4xi64>, %b: tensor<2x8x3xi64>) -> tensor<2x4x3xi64> {
  %0 = "ms.batch_matmul"(%a, %b) {transpose_a = true, transpose_b = false} : (tensor<2x8x4xi64>, tensor<2x8x3xi64>) -> tensor<2x4x3xi64>
  return %0 : tensor<2x4x3xi64>
}

// -----

// CHECK-LABEL: func.func @batch_matmul_f16(
// CHECK:         %[[ACC:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x4x3xf32>)
// CHECK-NEXT:    %[[P:.+]] = linalg.generic
// CHECK-SAME:      outs(%[[ACC]] : tensor<2x4x3xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f16, %[[Y:.+]]: f16, %[[O:.+]]: f32):
// CHECK-NEXT:      %[[WX:.+]] = arith.extf %[[X]] : f16 to f32
// CHECK-NEXT:      %[[WY:.+]] = arith.extf %[[Y]] : f16 to f32
// CHECK-NEXT:      %[[M:.+]] = arith.mulf %[[WX]], %[[WY]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[O]], %[[M]] fastmath<reassoc,contract> : f32
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[P]] : tensor<2x4x3xf32>) outs(%{{.+}} : tensor<2x4x3xf16>)
// CHECK:           arith.truncf %{{.+}} : f32 to f16
func.func @batch_matmul_f16(%a: tensor<2x4x8xf16>, %b: tensor<2x8x3xf16>) -> tensor<2x4x3xf16> {
  %0 = "ms.batch_matmul"(%a, %b) {transpose_a = false, transpose_b = false} : (tensor<2x4x8xf16>, tensor<2x8x3xf16>) -> tensor<2x4x3xf16>
  return %0 : tensor<2x4x3xf16>
}
