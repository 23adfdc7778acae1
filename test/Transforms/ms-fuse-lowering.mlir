// Lowering ms.fused: an elementwise region is one linalg.generic composing the ops' scalar
// rules; a reduction region computes its prologue inside the reduction's loops; a matmul
// region's epilogue updates the matmul's result in place and moves with it into its kernel.
// RUN: ms-opt %s --convert-ms-to-linalg --canonicalize --split-input-file | FileCheck %s
// RUN: ms-opt %s --convert-ms-to-linalg --ms-outline-matmul --canonicalize --split-input-file | FileCheck %s --check-prefix=KERNEL

// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @chain
// CHECK-DAG: %[[HALF:.+]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[E:.+]] = tensor.empty() {ms.region = {id = 0 : i64, kind = "elementwise"}}
// CHECK-NEXT: %[[R:.+]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<8xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK-SAME: attrs = {ms.region = {id = 0 : i64, kind = "elementwise"}}
// CHECK-NEXT: ^bb0(%[[X:.+]]: f32, %[[A:.+]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[M:.+]] = arith.mulf %[[X]], %[[A]]
// CHECK-NEXT: %[[T:.+]] = math.tanh %[[M]]
// CHECK-NEXT: %[[H:.+]] = arith.mulf %[[X]], %[[HALF]]
// CHECK-NEXT: %[[Y:.+]] = arith.addf %[[T]], %[[H]]
// CHECK-NEXT: linalg.yield %[[Y]] : f32
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @chain(%x: tensor<4x8xf32>, %a: tensor<8xf32>) -> tensor<4x8xf32> {
  %half = "ms.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %r = "ms.fused"() ({
    %0 = "ms.mul"(%x, %a) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %1 = "ms.tanh"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %2 = "ms.mul"(%x, %half) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %3 = "ms.add"(%1, %2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    gpu.yield %3 : tensor<4x8xf32>
  }) {kind = "elementwise"} : () -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// A value used twice in the region is computed once per element.
// CHECK-LABEL: func.func @shared
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[X:.+]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[E:.+]] = math.exp %[[X]]
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[E]], %[[E]]
// CHECK-NEXT: linalg.yield %[[P]]
func.func @shared(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = "ms.fused"() ({
    %0 = "ms.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
    %1 = "ms.mul"(%0, %0) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    gpu.yield %1 : tensor<8xf32>
  }) {kind = "elementwise"} : () -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// Mixed dtypes: the bool compare and the select stay in one body (bool stored as i8).
// CHECK-LABEL: func.func @where
// CHECK: linalg.generic
// CHECK-SAME: ins(%arg0 : tensor<8xi32>) outs(%{{.*}} : tensor<8xf32>)
// CHECK: arith.cmpi sgt
// CHECK: arith.sitofp
// CHECK: arith.select
// CHECK-NOT: linalg.generic
func.func @where(%x: tensor<8xi32>) -> tensor<8xf32> {
  %zero = "ms.constant"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
  %fzero = "ms.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %r = "ms.fused"() ({
    %0 = "ms.greater"(%x, %zero) : (tensor<8xi32>, tensor<i32>) -> tensor<8xi1>
    %1 = "ms.cast"(%x) {dtype = f32} : (tensor<8xi32>) -> tensor<8xf32>
    %2 = "ms.select"(%0, %1, %fzero) : (tensor<8xi1>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
    gpu.yield %2 : tensor<8xf32>
  }) {kind = "elementwise"} : () -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// The variance of layernorm: x - mean and the square are computed in the reduction's loop;
// the mean's division and + eps, rsqrt follow on the row values.
// CHECK-LABEL: func.func @variance
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: ins(%arg0, %arg1 : tensor<16x32xf32>, tensor<16x1xf32>)
// CHECK-SAME: attrs = {ms.region = {id = 0 : i64, kind = "reduction"}}
// CHECK-NEXT: ^bb0(%[[X:.+]]: f32, %[[MEAN:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT: %[[D:.+]] = arith.subf %[[X]], %[[MEAN]]
// CHECK-NEXT: %[[SQ:.+]] = arith.mulf %[[D]], %[[D]]
// CHECK-NEXT: %[[NEW:.+]] = arith.addf %[[ACC]], %[[SQ]]
// CHECK-NEXT: linalg.yield %[[NEW]]
// CHECK: arith.divf
// CHECK: tensor.expand_shape
// CHECK: linalg.generic
// CHECK: math.rsqrt
func.func @variance(%x: tensor<16x32xf32>, %mean: tensor<16x1xf32>) -> tensor<16x1xf32> {
  %eps = "ms.constant"() {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %r = "ms.fused"() ({
    %d = "ms.sub"(%x, %mean) : (tensor<16x32xf32>, tensor<16x1xf32>) -> tensor<16x32xf32>
    %sq = "ms.mul"(%d, %d) : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
    %var = "ms.reduce_mean"(%sq) {axis = array<i64: 1>, keep_dims = true} : (tensor<16x32xf32>) -> tensor<16x1xf32>
    %ve = "ms.add"(%var, %eps) : (tensor<16x1xf32>, tensor<f32>) -> tensor<16x1xf32>
    %rstd = "ms.rsqrt"(%ve) : (tensor<16x1xf32>) -> tensor<16x1xf32>
    gpu.yield %rstd : tensor<16x1xf32>
  }) {kind = "reduction"} : () -> tensor<16x1xf32>
  return %r : tensor<16x1xf32>
}

// -----

// A scaled softmax: the scale is computed in each of the softmax's three loops.
// CHECK-LABEL: func.func @scaled_softmax
// CHECK: %[[C:.+]] = arith.constant 1.250000e-01 : f32
// CHECK-COUNT-3: arith.mulf %{{.*}}, %[[C]]
func.func @scaled_softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = "ms.constant"() {value = dense<0.125> : tensor<f32>} : () -> tensor<f32>
  %r = "ms.fused"() ({
    %0 = "ms.mul"(%x, %c) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %1 = "ms.softmax"(%0) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    gpu.yield %1 : tensor<4x8xf32>
  }) {kind = "reduction"} : () -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// A dense layer: the epilogue reads and writes the matmul's result (no new tensor), and
// goes into the matmul's kernel function; the output's initialization stays with the caller.
// CHECK-LABEL: func.func @dense
// CHECK: %[[MM:.+]] = linalg.matmul {ms.region = {id = 0 : i64, kind = "matmul"}}
// CHECK-NEXT: %[[R:.+]] = linalg.generic
// CHECK-SAME: ins(%arg2 : tensor<32xf32>) outs(%[[MM]] : tensor<8x32xf32>)
// CHECK-NEXT: ^bb0(%[[B:.+]]: f32, %[[C:.+]]: f32):
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[C]], %[[B]]
// CHECK-NEXT: arith.maximumf %[[S]]
// CHECK: return %[[R]]
// KERNEL-LABEL: func.func @dense
// KERNEL: %[[INIT:.+]] = linalg.fill
// KERNEL-NEXT: %[[R:.+]] = call @dense__matmul0(%arg0, %arg1, %[[INIT]], %arg2)
// KERNEL-NEXT: return %[[R]]
// KERNEL: func.func private @dense__matmul0({{.*}}) -> tensor<8x32xf32> attributes {ms.kernel = "matmul"}
// KERNEL: linalg.matmul
// KERNEL-NEXT: linalg.generic
// KERNEL: return
func.func @dense(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %r = "ms.fused"() ({
    %0 = "ms.matmul"(%x, %w) {transpose_a = false, transpose_b = false} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %1 = "ms.add"(%0, %b) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    %2 = "ms.relu"(%1) : (tensor<8x32xf32>) -> tensor<8x32xf32>
    gpu.yield %2 : tensor<8x32xf32>
  }) {kind = "matmul"} : () -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
