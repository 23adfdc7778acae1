// Reductions: linalg.fill of the identity, one linalg.generic with reduction iterators over the
// reduced axes, then (mean, float16, keep_dims) a post-processing step; float sums over more
// than 8192 elements in blocks (a view with the block as a dim, one generic summing each block,
// one summing the partials); softmax and log_softmax are max / exp-sum / normalize generics.
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | FileCheck %s
// The output is valid IR (re-parsed and verified, ms ops included).
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | ms-opt --split-input-file > /dev/null

// keep_dims: the result is computed without the reduced axis, then reshaped to put it back.
// CHECK-DAG:   #[[$IN:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG:   #[[$OUT:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @sum_keep_dims(
// CHECK-SAME:    %[[A:.+]]: tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<2x4xf32>
// CHECK-NEXT:    %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[ACC:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[R:.+]] = linalg.generic {indexing_maps = [#[[$IN]], #[[$OUT]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME:      ins(%[[A]] : tensor<2x3x4xf32>) outs(%[[ACC]] : tensor<2x4xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f32, %[[O:.+]]: f32):
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[O]], %[[X]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK-NEXT:    } -> tensor<2x4xf32>
// CHECK-NEXT:    %[[C:.+]] = tensor.collapse_shape %[[R]] {{\[}}[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
// CHECK-NEXT:    %[[K:.+]] = tensor.expand_shape %[[C]] {{\[}}[0, 1, 2]] output_shape [2, 1, 4] : tensor<8xf32> into tensor<2x1x4xf32>
// CHECK-NEXT:    return %[[K]] : tensor<2x1x4xf32>
func.func @sum_keep_dims(%a: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %0 = "ms.reduce_sum"(%a) {axis = array<i64: 1>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  return %0 : tensor<2x1x4xf32>
}

// -----

// Several axes, negative ones normalized, without keep_dims: no reshape.
// CHECK-DAG:   #[[$OUT:.+]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @sum_two_axes(
// CHECK:         linalg.generic {indexing_maps = [#{{.+}}, #[[$OUT]]], iterator_types = ["reduction", "parallel", "reduction"]}
// CHECK-SAME:      outs(%{{.+}} : tensor<3xi32>)
// CHECK:           arith.addi %{{.+}}, %{{.+}} : i32
// CHECK:         } -> tensor<3xi32>
// CHECK-NEXT:    return
func.func @sum_two_axes(%a: tensor<2x3x4xi32>) -> tensor<3xi32> {
  %0 = "ms.reduce_sum"(%a) {axis = array<i64: 0, -1>, keep_dims = false} : (tensor<2x3x4xi32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

// An empty axis list reduces every axis; integer means accumulate and divide in float32.
// CHECK-DAG:   #[[$IN:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[$ALL:.+]] = affine_map<(d0, d1) -> ()>
// CHECK-DAG:   #[[$S:.+]] = affine_map<() -> ()>
// CHECK-LABEL: func.func @mean_all_int(
// CHECK-SAME:    -> tensor<f32>
// CHECK:         %[[ACC:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<f32>) -> tensor<f32>
// CHECK:         %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[$IN]], #[[$ALL]]], iterator_types = ["reduction", "reduction"]}
// CHECK-SAME:      outs(%[[ACC]] : tensor<f32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: i32, %[[O:.+]]: f32):
// CHECK-NEXT:      %[[F:.+]] = arith.sitofp %[[X]] : i32 to f32
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[O]], %[[F]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK:         %[[M:.+]] = linalg.generic {indexing_maps = [#[[$S]], #[[$S]]], iterator_types = []} ins(%[[SUM]] : tensor<f32>)
// CHECK-NEXT:    ^bb0(%[[V:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      %[[N:.+]] = arith.constant 6.000000e+00 : f32
// CHECK-NEXT:      %[[Q:.+]] = arith.divf %[[V]], %[[N]] fastmath<contract> : f32
// CHECK-NEXT:      linalg.yield %[[Q]] : f32
// CHECK:         return %[[M]] : tensor<f32>
func.func @mean_all_int(%a: tensor<2x3xi32>) -> tensor<f32> {
  %0 = "ms.reduce_mean"(%a) {axis = array<i64>, keep_dims = false} : (tensor<2x3xi32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// float16 sums accumulate in float32 and round once at the end.
// CHECK-LABEL: func.func @sum_f16(
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<2xf32>
// CHECK:         %[[ACC:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[E]] : tensor<2xf32>)
// CHECK:         %[[R:.+]] = linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "reduction"]
// CHECK-SAME:      ins(%{{.+}} : tensor<2x3xf16>) outs(%[[ACC]] : tensor<2xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f16, %[[O:.+]]: f32):
// CHECK-NEXT:      %[[W:.+]] = arith.extf %[[X]] : f16 to f32
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[O]], %[[W]] fastmath<reassoc,contract> : f32
// CHECK:         %[[H:.+]] = linalg.generic
// CHECK-SAME:      ins(%[[R]] : tensor<2xf32>) outs(%{{.+}} : tensor<2xf16>)
// CHECK-NEXT:    ^bb0(%[[V:.+]]: f32, %{{.+}}: f16):
// CHECK-NEXT:      %[[T:.+]] = arith.truncf %[[V]] : f32 to f16
// CHECK-NEXT:      linalg.yield %[[T]] : f16
// CHECK:         return %[[H]] : tensor<2xf16>
func.func @sum_f16(%a: tensor<2x3xf16>) -> tensor<2xf16> {
  %0 = "ms.reduce_sum"(%a) {axis = array<i64: -1>, keep_dims = false} : (tensor<2x3xf16>) -> tensor<2xf16>
  return %0 : tensor<2xf16>
}

// -----

// Summing bools counts them in int64.
// CHECK-LABEL: func.func @sum_bool(
// CHECK-SAME:    %{{.+}}: tensor<2x3xi8>) -> tensor<3xi64>
// CHECK:         %[[Z:.+]] = arith.constant 0 : i64
// CHECK:         linalg.fill ins(%[[Z]] : i64)
// CHECK:         ^bb0(%[[X:.+]]: i8, %[[O:.+]]: i64):
// CHECK-NEXT:      %[[B:.+]] = arith.trunci %[[X]] : i8 to i1
// CHECK-NEXT:      %[[W:.+]] = arith.extui %[[B]] : i1 to i64
// CHECK-NEXT:      %[[S:.+]] = arith.addi %[[O]], %[[W]] : i64
func.func @sum_bool(%a: tensor<2x3xi1>) -> tensor<3xi64> {
  %0 = "ms.reduce_sum"(%a) {axis = array<i64: 0>, keep_dims = false} : (tensor<2x3xi1>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

// max/min start from the dtype's lowest/highest value.
// CHECK-LABEL: func.func @max_min_identities(
// CHECK:         %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:    linalg.fill ins(%[[NINF]] : f32)
// CHECK:           arith.maximumf %{{.+}}, %{{.+}} : f32
// CHECK:         %[[U0:.+]] = arith.constant 0 : i8
// CHECK-NEXT:    linalg.fill ins(%[[U0]] : i8)
// CHECK:           arith.maxui %{{.+}}, %{{.+}} : i8
// CHECK:         %[[IMAX:.+]] = arith.constant 2147483647 : i32
// CHECK-NEXT:    linalg.fill ins(%[[IMAX]] : i32)
// CHECK:           arith.minsi %{{.+}}, %{{.+}} : i32
// CHECK:         %[[I8MIN:.+]] = arith.constant -128 : i8
// CHECK-NEXT:    linalg.fill ins(%[[I8MIN]] : i8)
// CHECK:           arith.maxsi %{{.+}}, %{{.+}} : i8
// CHECK:         %[[INF:.+]] = arith.constant 0x7FF0000000000000 : f64
// CHECK-NEXT:    linalg.fill ins(%[[INF]] : f64)
// CHECK:           arith.minimumf %{{.+}}, %{{.+}} : f64
func.func @max_min_identities(%a: tensor<2x3xf32>, %b: tensor<2x3xui8>, %c: tensor<2x3xi32>,
                              %d: tensor<2x3xi8>, %e: tensor<2x3xf64>)
    -> (tensor<2xf32>, tensor<2xui8>, tensor<2x1xi32>, tensor<3xi8>, tensor<f64>) {
  %0 = "ms.reduce_max"(%a) {axis = array<i64: 1>, keep_dims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  %1 = "ms.reduce_max"(%b) {axis = array<i64: 1>, keep_dims = false} : (tensor<2x3xui8>) -> tensor<2xui8>
  %2 = "ms.reduce_min"(%c) {axis = array<i64: 1>, keep_dims = true} : (tensor<2x3xi32>) -> tensor<2x1xi32>
  %3 = "ms.reduce_max"(%d) {axis = array<i64: 0>, keep_dims = false} : (tensor<2x3xi8>) -> tensor<3xi8>
  %4 = "ms.reduce_min"(%e) {axis = array<i64>, keep_dims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %0, %1, %2, %3, %4 : tensor<2xf32>, tensor<2xui8>, tensor<2x1xi32>, tensor<3xi8>, tensor<f64>
}

// -----

// keep_dims on a 2-D input: the reduced result expands back in place.
// CHECK-LABEL: func.func @min_keep_dims_2d(
// CHECK:         %[[R:.+]] = linalg.generic
// CHECK:         %[[K:.+]] = tensor.expand_shape %[[R]] {{\[}}[0, 1]] output_shape [2, 1] : tensor<2xi32> into tensor<2x1xi32>
// CHECK-NEXT:    return %[[K]]
func.func @min_keep_dims_2d(%a: tensor<2x3xi32>) -> tensor<2x1xi32> {
  %0 = "ms.reduce_min"(%a) {axis = array<i64: 1>, keep_dims = true} : (tensor<2x3xi32>) -> tensor<2x1xi32>
  return %0 : tensor<2x1xi32>
}

// -----

// softmax: max along the axis (maxnum: a NaN makes the row's sum NaN anyway), sum of
// exp(x - max), one reciprocal per row, then exp(x - max) * (1 / sum): a multiply per element
// instead of a division.
// CHECK-DAG:   #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[$ROW:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:    %[[A:.+]]: tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK:         %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK:         %[[MAX:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[A]] : tensor<2x5xf32>)
// CHECK:           arith.maxnumf
// CHECK:         %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ROW]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      ins(%[[A]], %[[MAX]] : tensor<2x5xf32>, tensor<2xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f32, %[[M:.+]]: f32, %[[O:.+]]: f32):
// CHECK-NEXT:      %[[D:.+]] = arith.subf %[[X]], %[[M]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:      %[[E:.+]] = math.exp %[[D]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[O]], %[[E]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK:         %[[INV:.+]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<2xf32>)
// CHECK:           arith.divf %{{.+}}, %{{.+}} fastmath<reassoc,contract> : f32
// CHECK:         %[[R:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ROW]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[A]], %[[MAX]], %[[INV]] : tensor<2x5xf32>, tensor<2xf32>, tensor<2xf32>)
// CHECK-NEXT:    ^bb0(%[[X2:.+]]: f32, %[[M2:.+]]: f32, %[[T2:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      %[[D2:.+]] = arith.subf %[[X2]], %[[M2]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:      %[[E2:.+]] = math.exp %[[D2]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:      %[[Q:.+]] = arith.mulf %[[E2]], %[[T2]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:      linalg.yield %[[Q]] : f32
// CHECK:         return %[[R]] : tensor<2x5xf32>
func.func @softmax(%a: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = "ms.softmax"(%a) {axis = -1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// log_softmax along axis 0 of float16: computed in float32, x - max - log(sum), rounded once.
// CHECK-DAG:   #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[$COL:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @log_softmax_f16(
// CHECK-SAME:    %[[A:.+]]: tensor<2x5xf16>) -> tensor<2x5xf16>
// CHECK:         %[[MAX:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$COL]]], iterator_types = ["reduction", "parallel"]}
// CHECK-SAME:      outs(%{{.+}} : tensor<5xf32>)
// CHECK:         %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$COL]], #[[$COL]]], iterator_types = ["reduction", "parallel"]}
// CHECK:         %[[LOG:.+]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<5xf32>)
// CHECK:           math.log
// CHECK:         %[[R:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$COL]], #[[$COL]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[A]], %[[MAX]], %[[LOG]] : tensor<2x5xf16>, tensor<5xf32>, tensor<5xf32>) outs(%{{.+}} : tensor<2x5xf16>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f16, %[[M:.+]]: f32, %[[L:.+]]: f32, %{{.+}}: f16):
// CHECK-NEXT:      %[[W:.+]] = arith.extf %[[X]] : f16 to f32
// CHECK-NEXT:      %[[D:.+]] = arith.subf %[[W]], %[[M]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:      %[[Y:.+]] = arith.subf %[[D]], %[[L]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:      %[[H:.+]] = arith.truncf %[[Y]] : f32 to f16
// CHECK-NEXT:      linalg.yield %[[H]] : f16
func.func @log_softmax_f16(%a: tensor<2x5xf16>) -> tensor<2x5xf16> {
  %0 = "ms.log_softmax"(%a) {axis = 0 : i64} : (tensor<2x5xf16>) -> tensor<2x5xf16>
  return %0 : tensor<2x5xf16>
}

// -----

// argmax: one reduction carrying (value, index); the first largest wins (strictly greater),
// and a first NaN wins and stays (unordered element, ordered best), as in numpy.
// CHECK-DAG:   #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[$ROW:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @argmax_rows(
// CHECK:         %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK:         %[[BEST:.+]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.+}} : tensor<4xf32>)
// CHECK:         %[[AT:.+]] = linalg.fill ins(%{{.+}} : i32) outs(%{{.+}} : tensor<4xi32>)
// CHECK:         %[[R:.+]]:2 = linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ROW]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      ins(%{{.+}} : tensor<4x6xf32>) outs(%[[BEST]], %[[AT]] : tensor<4xf32>, tensor<4xi32>)
// CHECK-NEXT:    ^bb0(%[[E:.+]]: f32, %[[B:.+]]: f32, %[[K:.+]]: i32):
// CHECK-NEXT:      %[[GT:.+]] = arith.cmpf ogt, %[[E]], %[[B]] : f32
// CHECK-NEXT:      %[[ENAN:.+]] = arith.cmpf uno, %[[E]], %[[E]] : f32
// CHECK-NEXT:      %[[BORD:.+]] = arith.cmpf ord, %[[B]], %[[B]] : f32
// CHECK-NEXT:      %[[NAN:.+]] = arith.andi %[[ENAN]], %[[BORD]] : i1
// CHECK-NEXT:      %[[TAKE:.+]] = arith.ori %[[GT]], %[[NAN]] : i1
// CHECK-NEXT:      %[[POS:.+]] = linalg.index 1 : index
// CHECK-NEXT:      %[[POS32:.+]] = arith.index_cast %[[POS]] : index to i32
// CHECK-NEXT:      %[[NB:.+]] = arith.select %[[TAKE]], %[[E]], %[[B]] : f32
// CHECK-NEXT:      %[[NK:.+]] = arith.select %[[TAKE]], %[[POS32]], %[[K]] : i32
// CHECK-NEXT:      linalg.yield %[[NB]], %[[NK]] : f32, i32
// CHECK:         return %[[R]]#1 : tensor<4xi32>
func.func @argmax_rows(%x: tensor<4x6xf32>) -> tensor<4xi32> {
  %0 = "ms.argmax"(%x) {axis = 1 : i64, keep_dims = false} : (tensor<4x6xf32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// A float sum over more than 8192 elements is summed in blocks: the large axis seen as
// (500, 4000) (4000 divides it), one generic sums each block of 4000 consecutive elements
// (its blocks are a parallel loop), a second sums each row's 500 partials.
// CHECK-DAG:   #[[$IN:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG:   #[[$PART:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG:   #[[$ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[$ROW:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @sum_large_axis(
// CHECK-SAME:    %[[A:.+]]: tensor<4x2000000xf32>) -> tensor<4x1xf32>
// CHECK:         %[[V:.+]] = tensor.expand_shape %[[A]] {{\[}}[0], [1, 2]] output_shape [4, 500, 4000] : tensor<4x2000000xf32> into tensor<4x500x4000xf32>
// CHECK:         %[[ACC:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<4x500xf32>)
// CHECK-NEXT:    %[[P:.+]] = linalg.generic {indexing_maps = [#[[$IN]], #[[$PART]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME:      ins(%[[V]] : tensor<4x500x4000xf32>) outs(%[[ACC]] : tensor<4x500xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f32, %[[O:.+]]: f32):
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[O]], %[[X]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK:         %[[ACC2:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<4xf32>)
// CHECK-NEXT:    %[[R:.+]] = linalg.generic {indexing_maps = [#[[$ID2]], #[[$ROW]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      ins(%[[P]] : tensor<4x500xf32>) outs(%[[ACC2]] : tensor<4xf32>)
// CHECK:           arith.addf
// CHECK:         %[[K:.+]] = tensor.expand_shape %[[R]] {{\[}}[0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
// CHECK-NEXT:    return %[[K]]
func.func @sum_large_axis(%a: tensor<4x2000000xf32>) -> tensor<4x1xf32> {
  %0 = "ms.reduce_sum"(%a) {axis = array<i64: 1>, keep_dims = true} : (tensor<4x2000000xf32>) -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// Adjacent reduced dims are merged first (every dim here: 6422528 elements as 1568 blocks of
// 4096); the mean divides the sum of the partials.
// CHECK-LABEL: func.func @mean_all_large(
// CHECK-SAME:    %[[A:.+]]: tensor<32x64x56x56xf32>) -> tensor<f32>
// CHECK:         %[[C:.+]] = tensor.collapse_shape %[[A]] {{\[}}[0, 1, 2, 3]] : tensor<32x64x56x56xf32> into tensor<6422528xf32>
// CHECK-NEXT:    %[[V:.+]] = tensor.expand_shape %[[C]] {{\[}}[0, 1]] output_shape [1568, 4096] : tensor<6422528xf32> into tensor<1568x4096xf32>
// CHECK:         %[[P:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[V]] : tensor<1568x4096xf32>) outs(%{{.+}} : tensor<1568xf32>)
// CHECK:         %[[S:.+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[P]] : tensor<1568xf32>) outs(%{{.+}} : tensor<f32>)
// CHECK:         %[[M:.+]] = linalg.generic {{.*}} ins(%[[S]] : tensor<f32>)
// CHECK:           %[[N:.+]] = arith.constant 0x4AC40000 : f32
// CHECK-NEXT:      arith.divf %{{.+}}, %[[N]]
// CHECK:         return %[[M]] : tensor<f32>
func.func @mean_all_large(%a: tensor<32x64x56x56xf32>) -> tensor<f32> {
  %0 = "ms.reduce_mean"(%a) {axis = array<i64>, keep_dims = false} : (tensor<32x64x56x56xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A reduced extent without a divisor near the block size (a prime) accumulates in float64.
// CHECK-LABEL: func.func @sum_prime(
// CHECK:         %[[ACC:.+]] = linalg.fill ins(%{{.+}} : f64) outs(%{{.+}} : tensor<f64>)
// CHECK:         %[[R:.+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.+}} : tensor<1000003xf32>) outs(%[[ACC]] : tensor<f64>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f32, %[[O:.+]]: f64):
// CHECK-NEXT:      %[[W:.+]] = arith.extf %[[X]] : f32 to f64
// CHECK-NEXT:      arith.addf %[[O]], %[[W]] fastmath<reassoc,contract> : f64
// CHECK:         linalg.generic {{.*}} ins(%[[R]] : tensor<f64>) outs(%{{.+}} : tensor<f32>)
// CHECK:           arith.truncf %{{.+}} : f64 to f32
func.func @sum_prime(%a: tensor<1000003xf32>) -> tensor<f32> {
  %0 = "ms.reduce_sum"(%a) {axis = array<i64>, keep_dims = false} : (tensor<1000003xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A fused reduction (MSE): its prologue's operands are viewed as blocks too, and the
// difference is squared inside the loop summing the blocks: nothing is materialized.
// CHECK-DAG:   #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[$ROW:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @fused_mse(
// CHECK-SAME:    %[[A:[^:]+]]: tensor<4x1000000xf32>, %[[B:[^:]+]]: tensor<4x1000000xf32>)
// CHECK-DAG:     %[[CA:.+]] = tensor.collapse_shape %[[A]] {{\[}}[0, 1]]
// CHECK-DAG:     %[[CB:.+]] = tensor.collapse_shape %[[B]] {{\[}}[0, 1]]
// CHECK-DAG:     %[[VA:.+]] = tensor.expand_shape %[[CA]] {{\[}}[0, 1]] output_shape [1000, 4000]
// CHECK-DAG:     %[[VB:.+]] = tensor.expand_shape %[[CB]] {{\[}}[0, 1]] output_shape [1000, 4000]
// CHECK:         %[[P:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]], #[[$ROW]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      ins(%[[VA]], %[[VB]] : tensor<1000x4000xf32>, tensor<1000x4000xf32>) outs(%{{.+}} : tensor<1000xf32>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f32, %[[Y:.+]]: f32, %[[O:.+]]: f32):
// CHECK-NEXT:      %[[D:.+]] = arith.subf %[[X]], %[[Y]]
// CHECK-NEXT:      %[[Q:.+]] = arith.mulf %[[D]], %[[D]]
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[O]], %[[Q]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK:         %[[T:.+]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[P]] : tensor<1000xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[T]] : tensor<f32>)
// CHECK:           arith.divf
func.func @fused_mse(%a: tensor<4x1000000xf32>, %b: tensor<4x1000000xf32>) -> tensor<f32> {
  %r = "ms.fused"() ({
    %d = "ms.sub"(%a, %b) : (tensor<4x1000000xf32>, tensor<4x1000000xf32>) -> tensor<4x1000000xf32>
    %sq = "ms.mul"(%d, %d) : (tensor<4x1000000xf32>, tensor<4x1000000xf32>) -> tensor<4x1000000xf32>
    %m = "ms.reduce_mean"(%sq) {axis = array<i64>, keep_dims = false} : (tensor<4x1000000xf32>) -> tensor<f32>
    gpu.yield %m : tensor<f32>
  }) {kind = "reduction"} : () -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// An operand broadcast over part of the reduced dims (w along the rows) has no view of the
// rows and columns merged: they stay apart, the columns split into blocks of 2500, w seen
// as 1x2x2500.
// CHECK-DAG:   #[[$IN:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG:   #[[$W:.+]] = affine_map<(d0, d1, d2) -> (0, d1, d2)>
// CHECK-DAG:   #[[$PART:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @fused_weighted(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<1000x5000xf32>, %[[W:[^:]+]]: tensor<5000xf32>)
// CHECK-NOT:     tensor.collapse_shape
// CHECK:         %[[VX:.+]] = tensor.expand_shape %[[X]] {{\[}}[0], [1, 2]] output_shape [1000, 2, 2500]
// CHECK-NEXT:    %[[VW:.+]] = tensor.expand_shape %[[W]] {{\[}}[0, 1, 2]] output_shape [1, 2, 2500]
// CHECK:         %[[P:.+]] = linalg.generic {indexing_maps = [#[[$IN]], #[[$W]], #[[$PART]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME:      ins(%[[VX]], %[[VW]] : tensor<1000x2x2500xf32>, tensor<1x2x2500xf32>) outs(%{{.+}} : tensor<1000x2xf32>)
// CHECK-NEXT:    ^bb0(%[[E:.+]]: f32, %[[F:.+]]: f32, %[[O:.+]]: f32):
// CHECK-NEXT:      %[[M:.+]] = arith.mulf %[[E]], %[[F]]
// CHECK-NEXT:      arith.addf %[[O]], %[[M]] fastmath<reassoc,contract> : f32
// CHECK:         linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%[[P]] : tensor<1000x2xf32>) outs(%{{.+}} : tensor<f32>)
func.func @fused_weighted(%x: tensor<1000x5000xf32>, %w: tensor<5000xf32>) -> tensor<f32> {
  %r = "ms.fused"() ({
    %p = "ms.mul"(%x, %w) : (tensor<1000x5000xf32>, tensor<5000xf32>) -> tensor<1000x5000xf32>
    %s = "ms.reduce_sum"(%p) {axis = array<i64>, keep_dims = false} : (tensor<1000x5000xf32>) -> tensor<f32>
    gpu.yield %s : tensor<f32>
  }) {kind = "reduction"} : () -> tensor<f32>
  return %r : tensor<f32>
}
