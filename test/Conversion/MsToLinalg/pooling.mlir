// Pooling: each op is one linalg.generic. The forward ops read the padded input (a fill and
// an insert_slice) through `o * stride + k * dilation` maps and reduce over the window loops,
// whose sizes come from a tensor.empty of the kernel shape; the gradients are gathers over the
// input's positions, reducing over the candidate windows (ceil(kernel / stride) per dim) and
// reading dy with tensor.extract. max_pool's gradient goes to the first maximal element of a
// window: an scf.for over the earlier elements, under an scf.if that runs it only for maxima.
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | FileCheck %s
// The output is valid IR (re-parsed and verified, ms ops included).
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | ms-opt --split-input-file > /dev/null

// Padding is -inf; 3x3 windows, stride 2, over the padded 7x7 input.
// CHECK-DAG:   #[[$READ:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
// CHECK-DAG:   #[[$WIN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
// CHECK-DAG:   #[[$OUT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @max_pool_padded(
// CHECK-SAME:    %[[X:.+]]: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
// CHECK:         %[[NEG:.+]] = arith.constant 0xFF800000 : f32
// CHECK:         %[[BORDER:.+]] = linalg.fill ins(%[[NEG]] : f32) outs(%{{.+}} : tensor<1x2x7x7xf32>)
// CHECK:         %[[PADDED:.+]] = tensor.insert_slice %[[X]] into %[[BORDER]][0, 0, 1, 1] [1, 2, 5, 5] [1, 1, 1, 1]
// CHECK:         %[[WINDOW:.+]] = tensor.empty() : tensor<3x3xf32>
// CHECK:         %[[INIT:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x2x3x3xf32>)
// CHECK:         %[[R:.+]] = linalg.generic {indexing_maps = [#[[$READ]], #[[$WIN]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK-SAME:      ins(%[[PADDED]], %[[WINDOW]] : tensor<1x2x7x7xf32>, tensor<3x3xf32>) outs(%[[INIT]] : tensor<1x2x3x3xf32>)
// CHECK-NEXT:    ^bb0(%[[V:.+]]: f32, %{{.+}}: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT:      %[[M:.+]] = arith.maximumf %[[ACC]], %[[V]] : f32
// CHECK-NEXT:      linalg.yield %[[M]] : f32
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
func.func @max_pool_padded(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %0 = "ms.max_pool"(%x) {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 1, 1>, pad_hi = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// 1-D, dilation 2, int32: no padding to write, the identity of max is the smallest int32.
// CHECK-DAG:   #[[$READ:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * 2 + d3 * 2)>
// CHECK-LABEL: func.func @max_pool_int_dilated_1d(
// CHECK-SAME:    %[[X:.+]]: tensor<2x3x9xi32>) -> tensor<2x3x3xi32>
// CHECK-NOT:     tensor.insert_slice
// CHECK:         %[[WINDOW:.+]] = tensor.empty() : tensor<3xi32>
// CHECK:         %[[MIN:.+]] = arith.constant -2147483648 : i32
// CHECK:         %[[INIT:.+]] = linalg.fill ins(%[[MIN]] : i32)
// CHECK:         linalg.generic {indexing_maps = [#[[$READ]], {{.+}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME:      ins(%[[X]], %[[WINDOW]] : tensor<2x3x9xi32>, tensor<3xi32>) outs(%[[INIT]] : tensor<2x3x3xi32>)
// CHECK:           arith.maxsi
func.func @max_pool_int_dilated_1d(%x: tensor<2x3x9xi32>) -> tensor<2x3x3xi32> {
  %0 = "ms.max_pool"(%x) {kernel = array<i64: 3>, stride = array<i64: 2>, dilation = array<i64: 2>, pad_lo = array<i64: 0>, pad_hi = array<i64: 0>, ceil_mode = false} : (tensor<2x3x9xi32>) -> tensor<2x3x3xi32>
  return %0 : tensor<2x3x3xi32>
}

// -----

// 3-D, ceil_mode: 5 -> 3 windows of 2 with stride 2; the last one reads one element of the
// extra high padding (6 = 5 + 1), which holds -inf.
// CHECK-LABEL: func.func @max_pool_3d_ceil(
// CHECK:         tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 0, 0, 0] [1, 1, 5, 4, 4] [1, 1, 1, 1, 1] : tensor<1x1x5x4x4xf32> into tensor<1x1x6x4x4xf32>
// CHECK:         tensor.empty() : tensor<2x2x2xf32>
// CHECK:         linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK-SAME:      outs(%{{.+}} : tensor<1x1x3x2x2xf32>)
func.func @max_pool_3d_ceil(%x: tensor<1x1x5x4x4xf32>) -> tensor<1x1x3x2x2xf32> {
  %0 = "ms.max_pool"(%x) {kernel = array<i64: 2, 2, 2>, stride = array<i64: 2, 2, 2>, dilation = array<i64: 1, 1, 1>, pad_lo = array<i64: 0, 0, 0>, pad_hi = array<i64: 0, 0, 0>, ceil_mode = true} : (tensor<1x1x5x4x4xf32>) -> tensor<1x1x3x2x2xf32>
  return %0 : tensor<1x1x3x2x2xf32>
}

// -----

// Excluding the padding: the H windows hold 2, 3 and 2 elements of the input (a vector of
// their reciprocals, read at the output row), the W windows 2 each (a scalar factor).
// CHECK-DAG:   #[[$ROW:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d2)>
// CHECK-LABEL: func.func @avg_pool_exclude_pad(
// CHECK:         %[[W:.+]] = arith.constant dense<[5.000000e-01, 0.333333343, 5.000000e-01]> : tensor<3xf32>
// CHECK:         %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[BORDER:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<1x2x7x4xf32>)
// CHECK:         %[[PADDED:.+]] = tensor.insert_slice %{{.+}} into %[[BORDER]][0, 0, 1, 0]
// CHECK:         linalg.generic {indexing_maps = [{{.+}}, {{.+}}, #[[$ROW]], {{.+}}]
// CHECK-SAME:      ins(%[[PADDED]], %{{.+}}, %[[W]] : tensor<1x2x7x4xf32>, tensor<3x2xf32>, tensor<3xf32>)
// CHECK-NEXT:    ^bb0(%[[V:.+]]: f32, %{{.+}}: f32, %[[WR:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT:      %[[HALF:.+]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[SCALE:.+]] = arith.mulf %[[HALF]], %[[WR]]
// CHECK-NEXT:      %[[T:.+]] = arith.mulf %[[V]], %[[SCALE]]
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[ACC]], %[[T]]
// CHECK-NEXT:      linalg.yield %[[S]] : f32
func.func @avg_pool_exclude_pad(%x: tensor<1x2x5x4xf32>) -> tensor<1x2x3x2xf32> {
  %0 = "ms.avg_pool"(%x) {kernel = array<i64: 3, 2>, stride = array<i64: 2, 2>, pad_lo = array<i64: 1, 0>, pad_hi = array<i64: 1, 0>, ceil_mode = false, count_include_pad = false, divisor_override = 0} : (tensor<1x2x5x4xf32>) -> tensor<1x2x3x2xf32>
  return %0 : tensor<1x2x3x2xf32>
}

// -----

// float16 accumulates in float32 (one cast after the reduction); divisor_override divides
// every window by 3.
// CHECK-LABEL: func.func @avg_pool_f16_divisor(
// CHECK-SAME:    %[[X:.+]]: tensor<1x2x4x4xf16>) -> tensor<1x2x2x2xf16>
// CHECK:         %[[SUM:.+]] = linalg.generic
// CHECK-SAME:      ins(%[[X]], %{{.+}} : tensor<1x2x4x4xf16>, tensor<2x2xf16>) outs(%{{.+}} : tensor<1x2x2x2xf32>)
// CHECK-NEXT:    ^bb0(%[[V:.+]]: f16, %{{.+}}: f16, %[[ACC:.+]]: f32):
// CHECK-NEXT:      %[[THIRD:.+]] = arith.constant 0.333333343 : f32
// CHECK-NEXT:      %[[E:.+]] = arith.extf %[[V]] : f16 to f32
// CHECK-NEXT:      %[[T:.+]] = arith.mulf %[[E]], %[[THIRD]]
// CHECK-NEXT:      arith.addf %[[ACC]], %[[T]]
// CHECK:         %[[R:.+]] = linalg.generic
// CHECK-SAME:      ins(%[[SUM]] : tensor<1x2x2x2xf32>) outs(%{{.+}} : tensor<1x2x2x2xf16>)
// CHECK:           arith.truncf
// CHECK:         return %[[R]]
func.func @avg_pool_f16_divisor(%x: tensor<1x2x4x4xf16>) -> tensor<1x2x2x2xf16> {
  %0 = "ms.avg_pool"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, ceil_mode = false, count_include_pad = true, divisor_override = 3} : (tensor<1x2x4x4xf16>) -> tensor<1x2x2x2xf16>
  return %0 : tensor<1x2x2x2xf16>
}

// -----

// One loop nest over dx (n, c, h, w) and the 2x2 candidate windows: dy and y read at the
// covering window, the earlier elements scanned only where x is the window's maximum.
// CHECK-DAG:   #[[$CAND:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
// CHECK-DAG:   #[[$POS:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @max_pool_grad(
// CHECK-SAME:    %[[X:.+]]: tensor<1x2x5x5xf32>, %[[Y:.+]]: tensor<1x2x3x3xf32>, %[[DY:.+]]: tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>
// CHECK:         %[[CANDS:.+]] = tensor.empty() : tensor<2x2xf32>
// CHECK:         %[[ZEROS:.+]] = linalg.fill
// CHECK:         %[[R:.+]] = linalg.generic {indexing_maps = [#[[$POS]], #[[$CAND]], #[[$POS]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK-SAME:      ins(%[[X]], %[[CANDS]] : tensor<1x2x5x5xf32>, tensor<2x2xf32>) outs(%[[ZEROS]] : tensor<1x2x5x5xf32>)
// CHECK-NEXT:    ^bb0(%[[V:.+]]: f32, %{{.+}}: f32, %[[ACC:.+]]: f32):
// CHECK:           %[[N:.+]] = linalg.index 0 : index
// CHECK:           %[[C:.+]] = linalg.index 1 : index
// CHECK:           %[[YV:.+]] = tensor.extract %[[Y]][%[[N]], %[[C]], %[[OH:.+]], %[[OW:.+]]] : tensor<1x2x3x3xf32>
// CHECK:           %[[EQ:.+]] = arith.cmpf oeq, %[[V]], %[[YV]] : f32
// CHECK:           %[[FIRST:.+]] = scf.if %{{.+}} -> (i1) {
// CHECK:             %[[EARLIER:.+]] = scf.for {{.+}} iter_args({{.+}}) -> (i1) {
// CHECK:               tensor.extract %[[X]][%[[N]], %[[C]], {{.+}}] : tensor<1x2x5x5xf32>
// CHECK:               scf.yield
// CHECK:             arith.xori %[[EARLIER]]
// CHECK:           } else {
// CHECK:           %[[G:.+]] = tensor.extract %[[DY]][%[[N]], %[[C]], %[[OH]], %[[OW]]] : tensor<1x2x3x3xf32>
// CHECK:           %[[PICK:.+]] = arith.select %[[FIRST]], %[[G]], %{{.+}} : f32
// CHECK:           %[[S:.+]] = arith.addf %[[ACC]], %[[PICK]]
// CHECK:           linalg.yield %[[S]] : f32
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
func.func @max_pool_grad(%x: tensor<1x2x5x5xf32>, %y: tensor<1x2x3x3xf32>, %dy: tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32> {
  %0 = "ms.max_pool_grad"(%x, %y, %dy) {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 1, 1>, pad_hi = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x2x5x5xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  return %0 : tensor<1x2x5x5xf32>
}

// -----

// The gather of avg_pool's gradient: dy at the covering window times its 1 / count (the H
// counts from a vector, the W factor a constant), masked where no window covers.
// CHECK-LABEL: func.func @avg_pool_grad(
// CHECK-SAME:    %[[DY:.+]]: tensor<1x2x3x2xf32>) -> tensor<1x2x5x4xf32>
// CHECK:         %[[W:.+]] = arith.constant dense<[5.000000e-01, 0.333333343, 5.000000e-01]> : tensor<3xf32>
// CHECK:         %[[CANDS:.+]] = tensor.empty() : tensor<2x1xf32>
// CHECK:         %[[R:.+]] = linalg.generic
// CHECK-SAME:      ins(%[[CANDS]] : tensor<2x1xf32>) outs(%{{.+}} : tensor<1x2x5x4xf32>)
// CHECK:           %[[N:.+]] = linalg.index 0 : index
// CHECK:           %[[C:.+]] = linalg.index 1 : index
// CHECK:           %[[OH:.+]] = arith.select %[[OK:.+]], %{{.+}}, %{{.+}} : index
// CHECK:           %[[OW:.+]] = arith.select %[[OK]], %{{.+}}, %{{.+}} : index
// CHECK:           %[[WH:.+]] = tensor.extract %[[W]][%[[OH]]] : tensor<3xf32>
// CHECK:           %[[SCALE:.+]] = arith.mulf %{{.+}}, %[[WH]]
// CHECK:           %[[G:.+]] = tensor.extract %[[DY]][%[[N]], %[[C]], %[[OH]], %[[OW]]] : tensor<1x2x3x2xf32>
// CHECK:           %[[T:.+]] = arith.mulf %[[G]], %[[SCALE]]
// CHECK:           arith.select %[[OK]], %[[T]], %{{.+}} : f32
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
func.func @avg_pool_grad(%dy: tensor<1x2x3x2xf32>) -> tensor<1x2x5x4xf32> {
  %0 = "ms.avg_pool_grad"(%dy) {kernel = array<i64: 3, 2>, stride = array<i64: 2, 2>, pad_lo = array<i64: 1, 0>, pad_hi = array<i64: 1, 0>, ceil_mode = false, count_include_pad = false, divisor_override = 0, input_shape = array<i64: 1, 2, 5, 4>} : (tensor<1x2x3x2xf32>) -> tensor<1x2x5x4xf32>
  return %0 : tensor<1x2x5x4xf32>
}

// -----

// max_pool_grad's gradient: v read at each window's first maximal element of x.
// CHECK-LABEL: func.func @max_pool_gather(
// CHECK-SAME:    %[[X:.+]]: tensor<1x1x4x4xf32>, %[[Y:.+]]: tensor<1x1x2x2xf32>, %[[V:.+]]: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
// CHECK:         %[[R:.+]] = linalg.generic
// CHECK-SAME:      ins(%[[Y]], %{{.+}} : tensor<1x1x2x2xf32>, tensor<2x2xf32>) outs(%{{.+}} : tensor<1x1x2x2xf32>)
// CHECK:           %[[XV:.+]] = tensor.extract %[[X]]
// CHECK:           arith.cmpf oeq, %[[XV]]
// CHECK:           %[[FIRST:.+]] = scf.if
// CHECK:           %[[VV:.+]] = tensor.extract %[[V]]
// CHECK:           arith.select %[[FIRST]], %[[VV]]
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
func.func @max_pool_gather(%x: tensor<1x1x4x4xf32>, %y: tensor<1x1x2x2xf32>, %v: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %0 = "ms.max_pool_gather"(%x, %y, %v) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, ceil_mode = false} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}
