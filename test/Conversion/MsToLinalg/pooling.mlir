// Pooling. The CPU's forms (convert-ms-to-linalg's default, scatter=loops): the windows come
// in boxes, one per run of windows whose offsets inside the input are the same (the interior,
// each border), each box one linalg.generic reading the input itself through
// `o * stride + k * dilation + c` maps (no padded copy), its offsets' sizes from a
// tensor.empty read only by the offset loops, its result inserted at its windows; past 4
// boxes, one nest over a padded copy instead. The loops run (n, c, o[:-1], k[:-1], o[-1],
// k[-1]): the last offset loop innermost (carried in a register, unrolled), then the row of
// windows (vectorized). max_pool_grad takes each window's first maximal offset (a
// min-reduction over the offsets, int32) and adds dy there, one window at a time (scf.for
// loops per image, an scf.forall over the images); avg_pool_grad adds each window's share at
// its elements box by box, a scatter over the kernel offsets.
// With scatter=reduction (CUDA: every linalg op one kernel, parallel over its output), each op
// is one linalg.generic: the forward ops read a padded copy of the input (a fill and an
// insert_slice), the gradients are gathers over the input's positions, reducing over the
// candidate windows (ceil(kernel / stride) per dim) and reading dy with tensor.extract;
// max_pool's gradient goes to the first maximal element of a window: an scf.for over the
// earlier elements, under an scf.if that runs it only for maxima.
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | FileCheck %s --check-prefixes=CHECK,BOTH
// RUN: ms-opt %s '--convert-ms-to-linalg=scatter=reduction' --split-input-file | FileCheck %s --check-prefixes=GPU,BOTH
// The output is valid IR (re-parsed and verified, ms ops included).
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | ms-opt --split-input-file > /dev/null
// RUN: ms-opt %s '--convert-ms-to-linalg=scatter=reduction' --split-input-file | ms-opt --split-input-file > /dev/null

// 3x3 windows, stride 2, padding 1 over 34x34: two runs of windows per dim (window 0 misses
// offset 0, windows 1 to 16 have all), so four boxes: the corner reads offsets 1 and 2 of
// both dims, the top row's 16 windows offsets 1 and 2 of H, the left column's offsets 1 and 2
// of W, the 16x16 interior all nine. Each fills its own part with -inf and is inserted into
// the output (filled too, where windows with no element inside would stay). Rows of 16
// windows run (n, c, oh, kh, ow, kw), the row of windows vectorized; shorter ones (1 here),
// in a max, (n, c, oh, ow, kh, kw), all offsets in a register.
// CHECK-DAG:   #[[$CORNER:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
// CHECK-DAG:   #[[$KS:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
// CHECK-DAG:   #[[$OUT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-DAG:   #[[$TOP:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d3, d4 * 2 + d5 + 1)>
// CHECK-DAG:   #[[$ROW_KS:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d5)>
// CHECK-DAG:   #[[$ROW_OUT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d4)>
// CHECK-DAG:   #[[$LEFT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4 + 1, d3 * 2 + d5)>
// CHECK-DAG:   #[[$INNER:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d3 + 1, d4 * 2 + d5 + 1)>
// GPU-DAG:     #[[$READ:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d3, d4 * 2 + d5)>
// GPU-DAG:     #[[$WIN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d5)>
// GPU-DAG:     #[[$POS:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d4)>
// BOTH-LABEL:  func.func @max_pool_padded(
// BOTH-SAME:     %[[X:[-a-z0-9_]+]]: tensor<1x2x34x34xf32>) -> tensor<1x2x17x17xf32>
// CHECK-NOT:     tensor<1x2x36x36xf32>
// CHECK:         %[[NEG:[-a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK:         linalg.fill ins(%[[NEG]] : f32) outs(%{{.+}} : tensor<1x2x17x17xf32>)
// CHECK:         %[[INIT:[-a-z0-9_]+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x2x1x1xf32>)
// CHECK:         %[[KS2:[-a-z0-9_]+]] = tensor.empty() : tensor<2x2xf32>
// CHECK:         %[[C:[-a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[$CORNER]], #[[$KS]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK-SAME:      ins(%[[X]], %[[KS2]] : tensor<1x2x34x34xf32>, tensor<2x2xf32>) outs(%[[INIT]] : tensor<1x2x1x1xf32>)
// CHECK-NEXT:    ^bb0(%[[V:[-a-z0-9_]+]]: f32, %{{.+}}: f32, %[[ACC:[-a-z0-9_]+]]: f32):
// CHECK-NEXT:      %[[M:[-a-z0-9_]+]] = arith.maximumf %[[ACC]], %[[V]] : f32
// CHECK-NEXT:      linalg.yield %[[M]] : f32
// CHECK:         tensor.insert_slice %[[C]] into %{{.+}}[0, 0, 0, 0] [1, 2, 1, 1] [1, 1, 1, 1]
// CHECK:         tensor.empty() : tensor<2x3xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[$TOP]], #[[$ROW_KS]], #[[$ROW_OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel", "reduction"]}
// CHECK-SAME:      outs(%{{.+}} : tensor<1x2x1x16xf32>)
// CHECK:         tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 0, 1] [1, 2, 1, 16] [1, 1, 1, 1]
// CHECK:         tensor.empty() : tensor<3x2xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[$LEFT]], #[[$KS]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK-SAME:      outs(%{{.+}} : tensor<1x2x16x1xf32>)
// CHECK:         tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 1, 0] [1, 2, 16, 1] [1, 1, 1, 1]
// CHECK:         tensor.empty() : tensor<3x3xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[$INNER]], #[[$ROW_KS]], #[[$ROW_OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel", "reduction"]}
// CHECK-SAME:      outs(%{{.+}} : tensor<1x2x16x16xf32>)
// CHECK:         %[[R:[-a-z0-9_]+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 1, 1] [1, 2, 16, 16] [1, 1, 1, 1]
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
// GPU:           %[[NEG:[-a-z0-9_]+]] = arith.constant 0xFF800000 : f32
// GPU:           %[[BORDER:[-a-z0-9_]+]] = linalg.fill ins(%[[NEG]] : f32) outs(%{{.+}} : tensor<1x2x36x36xf32>)
// GPU:           %[[PADDED:[-a-z0-9_]+]] = tensor.insert_slice %[[X]] into %[[BORDER]][0, 0, 1, 1] [1, 2, 34, 34] [1, 1, 1, 1]
// GPU:           %[[INIT:[-a-z0-9_]+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x2x17x17xf32>)
// GPU:           %[[WINDOW:[-a-z0-9_]+]] = tensor.empty() : tensor<3x3xf32>
// GPU:           %[[R:[-a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[$READ]], #[[$WIN]], #[[$POS]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel", "reduction"]}
// GPU-SAME:        ins(%[[PADDED]], %[[WINDOW]] : tensor<1x2x36x36xf32>, tensor<3x3xf32>) outs(%[[INIT]] : tensor<1x2x17x17xf32>)
// GPU-NEXT:      ^bb0(%[[V:[-a-z0-9_]+]]: f32, %{{.+}}: f32, %[[ACC:[-a-z0-9_]+]]: f32):
// GPU-NEXT:        %[[M:[-a-z0-9_]+]] = arith.maximumf %[[ACC]], %[[V]] : f32
// GPU-NEXT:        linalg.yield %[[M]] : f32
// GPU-NOT:       linalg.generic
// GPU:           return %[[R]]
func.func @max_pool_padded(%x: tensor<1x2x34x34xf32>) -> tensor<1x2x17x17xf32> {
  %0 = "ms.max_pool"(%x) {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 1, 1>, pad_hi = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x2x34x34xf32>) -> tensor<1x2x17x17xf32>
  return %0 : tensor<1x2x17x17xf32>
}

// -----

// 1-D, dilation 2, int32: no padding, so one box of all windows either way; the identity of
// max is the smallest int32.
// BOTH-DAG:    #[[$READ:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * 2 + d3 * 2)>
// BOTH-LABEL:  func.func @max_pool_int_dilated_1d(
// BOTH-SAME:     %[[X:[-a-z0-9_]+]]: tensor<2x3x9xi32>) -> tensor<2x3x3xi32>
// BOTH-NOT:      tensor.insert_slice
// BOTH:          %[[MIN:[-a-z0-9_]+]] = arith.constant -2147483648 : i32
// BOTH:          %[[INIT:[-a-z0-9_]+]] = linalg.fill ins(%[[MIN]] : i32)
// BOTH:          %[[WINDOW:[-a-z0-9_]+]] = tensor.empty() : tensor<3xi32>
// BOTH:          linalg.generic {indexing_maps = [#[[$READ]], {{.+}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// BOTH-SAME:       ins(%[[X]], %[[WINDOW]] : tensor<2x3x9xi32>, tensor<3xi32>) outs(%[[INIT]] : tensor<2x3x3xi32>)
// BOTH:            arith.maxsi
// BOTH-NOT:      tensor.insert_slice
func.func @max_pool_int_dilated_1d(%x: tensor<2x3x9xi32>) -> tensor<2x3x3xi32> {
  %0 = "ms.max_pool"(%x) {kernel = array<i64: 3>, stride = array<i64: 2>, dilation = array<i64: 2>, pad_lo = array<i64: 0>, pad_hi = array<i64: 0>, ceil_mode = false} : (tensor<2x3x9xi32>) -> tensor<2x3x3xi32>
  return %0 : tensor<2x3x3xi32>
}

// -----

// 3-D, ceil_mode: 5 -> 3 windows of 2 with stride 2; the last one along D holds one element
// of the input, the next would be padding: on the CPU a box of its own with one offset along
// D (reading from D = 4; rows of 2 windows: all offsets innermost), elsewhere one element of
// extra high padding (6 = 5 + 1, -inf).
// CHECK-DAG:   #[[$D4:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2 * 2 + d5 + 4, d3 * 2 + d6, d4 * 2 + d7)>
// BOTH-LABEL:  func.func @max_pool_3d_ceil(
// CHECK:         tensor.empty() : tensor<2x2x2xf32>
// CHECK:         linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK-SAME:      outs(%{{.+}} : tensor<1x1x2x2x2xf32>)
// CHECK:         tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 0, 0, 0] [1, 1, 2, 2, 2]
// CHECK:         tensor.empty() : tensor<1x2x2xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[$D4]], {{.+}}]
// CHECK-SAME:      outs(%{{.+}} : tensor<1x1x1x2x2xf32>)
// CHECK:         tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 2, 0, 0] [1, 1, 1, 2, 2]
// GPU:           tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 0, 0, 0] [1, 1, 5, 4, 4] [1, 1, 1, 1, 1] : tensor<1x1x5x4x4xf32> into tensor<1x1x6x4x4xf32>
// GPU:           tensor.empty() : tensor<2x2x2xf32>
// GPU:           linalg.generic
// GPU-SAME:        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "parallel", "reduction"]
// GPU-SAME:        outs(%{{.+}} : tensor<1x1x3x2x2xf32>)
func.func @max_pool_3d_ceil(%x: tensor<1x1x5x4x4xf32>) -> tensor<1x1x3x2x2xf32> {
  %0 = "ms.max_pool"(%x) {kernel = array<i64: 2, 2, 2>, stride = array<i64: 2, 2, 2>, dilation = array<i64: 1, 1, 1>, pad_lo = array<i64: 0, 0, 0>, pad_hi = array<i64: 0, 0, 0>, ceil_mode = true} : (tensor<1x1x5x4x4xf32>) -> tensor<1x1x3x2x2xf32>
  return %0 : tensor<1x1x3x2x2xf32>
}

// -----

// Excluding the padding: the H windows hold 2, 3 and 2 elements of the input (a vector of
// their reciprocals, read at the output row; on the CPU each box of rows reads its slice of
// it), the W windows 2 each (a scalar factor).
// BOTH-DAG:    #[[$ROW:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d2)>
// BOTH-LABEL:  func.func @avg_pool_exclude_pad(
// BOTH-SAME:     %[[X:[-a-z0-9_]+]]: tensor<1x2x5x4xf32>
// BOTH:          %[[W:[-a-z0-9_]+]] = arith.constant dense<[5.000000e-01, 0.333333343, 5.000000e-01]> : tensor<3xf32>
// CHECK-NOT:     tensor<1x2x7x4xf32>
// CHECK:         %[[W0:[-a-z0-9_]+]] = tensor.extract_slice %[[W]][0] [1] [1] : tensor<3xf32> to tensor<1xf32>
// CHECK:         linalg.generic {indexing_maps = [{{.+}}, {{.+}}, #[[$ROW]], {{.+}}]
// CHECK-SAME:      ins(%[[X]], %{{.+}}, %[[W0]] : tensor<1x2x5x4xf32>, tensor<2x2xf32>, tensor<1xf32>)
// CHECK:         %[[W1:[-a-z0-9_]+]] = tensor.extract_slice %[[W]][1] [1] [1] : tensor<3xf32> to tensor<1xf32>
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[X]], %{{.+}}, %[[W1]] : tensor<1x2x5x4xf32>, tensor<3x2xf32>, tensor<1xf32>)
// CHECK:         %[[W2:[-a-z0-9_]+]] = tensor.extract_slice %[[W]][2] [1] [1] : tensor<3xf32> to tensor<1xf32>
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[X]], %{{.+}}, %[[W2]] : tensor<1x2x5x4xf32>, tensor<2x2xf32>, tensor<1xf32>)
// CHECK-NEXT:    ^bb0(%[[V:[-a-z0-9_]+]]: f32, %{{.+}}: f32, %[[WR:[-a-z0-9_]+]]: f32, %[[ACC:[-a-z0-9_]+]]: f32):
// CHECK-NEXT:      %[[HALF:[-a-z0-9_]+]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[SCALE:[-a-z0-9_]+]] = arith.mulf %[[HALF]], %[[WR]]
// CHECK-NEXT:      %[[T:[-a-z0-9_]+]] = arith.mulf %[[V]], %[[SCALE]]
// CHECK-NEXT:      %[[S:[-a-z0-9_]+]] = arith.addf %[[ACC]], %[[T]]
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// GPU:           %[[ZERO:[-a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// GPU:           %[[BORDER:[-a-z0-9_]+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<1x2x7x4xf32>)
// GPU:           %[[PADDED:[-a-z0-9_]+]] = tensor.insert_slice %[[X]] into %[[BORDER]][0, 0, 1, 0]
// GPU:           linalg.generic {indexing_maps = [{{.+}}, {{.+}}, #[[$ROW]], {{.+}}]
// GPU-SAME:        ins(%[[PADDED]], %{{.+}}, %[[W]] : tensor<1x2x7x4xf32>, tensor<3x2xf32>, tensor<3xf32>)
// GPU-NEXT:      ^bb0(%[[V:[-a-z0-9_]+]]: f32, %{{.+}}: f32, %[[WR:[-a-z0-9_]+]]: f32, %[[ACC:[-a-z0-9_]+]]: f32):
// GPU-NEXT:        %[[HALF:[-a-z0-9_]+]] = arith.constant 5.000000e-01 : f32
// GPU-NEXT:        %[[SCALE:[-a-z0-9_]+]] = arith.mulf %[[HALF]], %[[WR]]
// GPU-NEXT:        %[[T:[-a-z0-9_]+]] = arith.mulf %[[V]], %[[SCALE]]
// GPU-NEXT:        %[[S:[-a-z0-9_]+]] = arith.addf %[[ACC]], %[[T]]
// GPU-NEXT:        linalg.yield %[[S]] : f32
func.func @avg_pool_exclude_pad(%x: tensor<1x2x5x4xf32>) -> tensor<1x2x3x2xf32> {
  %0 = "ms.avg_pool"(%x) {kernel = array<i64: 3, 2>, stride = array<i64: 2, 2>, pad_lo = array<i64: 1, 0>, pad_hi = array<i64: 1, 0>, ceil_mode = false, count_include_pad = false, divisor_override = 0} : (tensor<1x2x5x4xf32>) -> tensor<1x2x3x2xf32>
  return %0 : tensor<1x2x3x2xf32>
}

// -----

// float16 accumulates in float32 (one cast after the reduction); divisor_override divides
// every window by 3. No padding: one loop nest either way.
// BOTH-LABEL:  func.func @avg_pool_f16_divisor(
// BOTH-SAME:     %[[X:[-a-z0-9_]+]]: tensor<1x2x4x4xf16>) -> tensor<1x2x2x2xf16>
// BOTH:          %[[SUM:[-a-z0-9_]+]] = linalg.generic
// BOTH-SAME:       ins(%[[X]], %{{.+}} : tensor<1x2x4x4xf16>, tensor<2x2xf32>) outs(%{{.+}} : tensor<1x2x2x2xf32>)
// BOTH-NEXT:     ^bb0(%[[V:[-a-z0-9_]+]]: f16, %{{.+}}: f32, %[[ACC:[-a-z0-9_]+]]: f32):
// BOTH-NEXT:       %[[THIRD:[-a-z0-9_]+]] = arith.constant 0.333333343 : f32
// BOTH-NEXT:       %[[E:[-a-z0-9_]+]] = arith.extf %[[V]] : f16 to f32
// BOTH-NEXT:       %[[T:[-a-z0-9_]+]] = arith.mulf %[[E]], %[[THIRD]]
// BOTH-NEXT:       arith.addf %[[ACC]], %[[T]]
// BOTH:          %[[R:[-a-z0-9_]+]] = linalg.generic
// BOTH-SAME:       ins(%[[SUM]] : tensor<1x2x2x2xf32>) outs(%{{.+}} : tensor<1x2x2x2xf16>)
// BOTH:            arith.truncf
// BOTH:          return %[[R]]
func.func @avg_pool_f16_divisor(%x: tensor<1x2x4x4xf16>) -> tensor<1x2x2x2xf16> {
  %0 = "ms.avg_pool"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, ceil_mode = false, count_include_pad = true, divisor_override = 3} : (tensor<1x2x4x4xf16>) -> tensor<1x2x2x2xf16>
  return %0 : tensor<1x2x2x2xf16>
}

// -----

// On the CPU: over 5x5 the windows make nine boxes, more than 4, so x is padded (-inf) and one
// nest over all windows (rows of 3: all offsets innermost) takes, per window, the row-major
// offset of the first element equal to the window's maximum y (or NaN) and inside the input
// (its position, from the loop indices), as a min-reduction from 2^30 (no
// maximum); then one scf.for nest per image over the channels and windows adds dy at that
// offset's element (a tensor.insert carried by the loops), the images in an scf.forall.
// With scatter=reduction, one loop nest over dx (n, c, h, w) and the 2x2 candidate windows:
// dy and y read at the covering window, the earlier elements scanned only where x is the
// window's maximum.
// CHECK-DAG:   #[[$READ:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
// CHECK-DAG:   #[[$AT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// GPU-DAG:     #[[$CAND:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
// GPU-DAG:     #[[$POS:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// BOTH-LABEL:  func.func @max_pool_grad(
// BOTH-SAME:     %[[X:[-a-z0-9_]+]]: tensor<1x2x5x5xf32>, %[[Y:[-a-z0-9_]+]]: tensor<1x2x3x3xf32>, %[[DY:[-a-z0-9_]+]]: tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>
// CHECK:         %[[PADDED:[-a-z0-9_]+]] = tensor.insert_slice %[[X]] into %{{.+}}[0, 0, 1, 1] [1, 2, 5, 5] [1, 1, 1, 1] : tensor<1x2x5x5xf32> into tensor<1x2x7x7xf32>
// CHECK:         %[[NONE:[-a-z0-9_]+]] = arith.constant 1073741824 : i32
// CHECK:         %[[INIT:[-a-z0-9_]+]] = linalg.fill ins(%[[NONE]] : i32) outs(%{{.+}} : tensor<1x2x3x3xi32>)
// CHECK:         %[[IDX:[-a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[$READ]], {{.+}}, #[[$AT]], #[[$AT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK-SAME:      ins(%[[PADDED]], %{{.+}}, %[[Y]] : tensor<1x2x7x7xf32>, tensor<3x3xi32>, tensor<1x2x3x3xf32>) outs(%[[INIT]] : tensor<1x2x3x3xi32>)
// CHECK-NEXT:    ^bb0(%[[V:[-a-z0-9_]+]]: f32, %{{.+}}: i32, %[[YV:[-a-z0-9_]+]]: f32, %[[FIRST:[-a-z0-9_]+]]: i32):
// CHECK:           %[[EQ:[-a-z0-9_]+]] = arith.cmpf oeq, %[[V]], %[[YV]] : f32
// CHECK:           %[[NAN:[-a-z0-9_]+]] = arith.cmpf uno, %[[V]], %[[V]] : f32
// CHECK:           %[[MAX:[-a-z0-9_]+]] = arith.ori %[[EQ]], %[[NAN]] : i1
// CHECK:           %[[OH:[-a-z0-9_]+]] = linalg.index 2 : index
// CHECK:           %[[KH:[-a-z0-9_]+]] = linalg.index 4 : index
// CHECK:           arith.cmpi sge
// CHECK:           arith.cmpi slt
// CHECK:           %[[OW:[-a-z0-9_]+]] = linalg.index 3 : index
// CHECK:           %[[KW:[-a-z0-9_]+]] = linalg.index 5 : index
// CHECK:           arith.cmpi sge
// CHECK:           arith.cmpi slt
// CHECK:           %[[HIT:[-a-z0-9_]+]] = arith.andi %[[MAX]], %{{.+}} : i1
// CHECK:           linalg.index 4 : index
// CHECK:           linalg.index 5 : index
// CHECK:           %[[LIN:[-a-z0-9_]+]] = arith.index_cast %{{.+}} : index to i32
// CHECK:           %[[CAND:[-a-z0-9_]+]] = arith.select %[[HIT]], %[[LIN]], %{{.+}} : i32
// CHECK:           %[[MIN:[-a-z0-9_]+]] = arith.minsi %[[FIRST]], %[[CAND]] : i32
// CHECK:           linalg.yield %[[MIN]] : i32
// CHECK:         scf.forall (%[[N:[-a-z0-9_]+]]) in (1) shared_outs(%[[OUT:[-a-z0-9_]+]] = %{{.+}}) -> (tensor<1x2x5x5xf32>)
// CHECK:           %[[ZEROS:[-a-z0-9_]+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x2x5x5xf32>)
// CHECK:           scf.for %[[C:[-a-z0-9_]+]] = {{.+}} iter_args(%{{.+}} = %[[ZEROS]])
// CHECK:             scf.for %[[OH:[-a-z0-9_]+]] = {{.+}} iter_args
// CHECK:               scf.for %[[OW:[-a-z0-9_]+]] = {{.+}} iter_args(%[[DX:[-a-z0-9_]+]] = %{{.+}})
// CHECK:                 %[[I:[-a-z0-9_]+]] = tensor.extract %[[IDX]][%[[N]], %[[C]], %[[OH]], %[[OW]]] : tensor<1x2x3x3xi32>
// CHECK:                 %[[FOUND:[-a-z0-9_]+]] = arith.cmpi slt, %[[I]], %{{.+}} : i32
// CHECK:                 %[[G:[-a-z0-9_]+]] = tensor.extract %[[DY]][%[[N]], %[[C]], %[[OH]], %[[OW]]] : tensor<1x2x3x3xf32>
// CHECK:                 %[[OLD:[-a-z0-9_]+]] = tensor.extract %[[DX]][%{{.+}}, %[[C]], %[[H:[-a-z0-9_]+]], %[[W:[-a-z0-9_]+]]] : tensor<1x2x5x5xf32>
// CHECK:                 %[[ADD:[-a-z0-9_]+]] = arith.select %[[FOUND]], %[[G]], %{{.+}} : f32
// CHECK:                 %[[NEW:[-a-z0-9_]+]] = arith.addf %[[OLD]], %[[ADD]]
// CHECK:                 %[[INS:[-a-z0-9_]+]] = tensor.insert %[[NEW]] into %[[DX]][%{{.+}}, %[[C]], %[[H]], %[[W]]]
// CHECK:                 scf.yield %[[INS]]
// CHECK:           scf.forall.in_parallel
// CHECK:             tensor.parallel_insert_slice %{{.+}} into %[[OUT]][%[[N]], 0, 0, 0] [1, 2, 5, 5] [1, 1, 1, 1]
// GPU:           %[[CANDS:[-a-z0-9_]+]] = tensor.empty() : tensor<2x2xf32>
// GPU:           %[[ZEROS:[-a-z0-9_]+]] = linalg.fill
// GPU:           %[[R:[-a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[$POS]], #[[$CAND]], #[[$POS]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// GPU-SAME:        ins(%[[X]], %[[CANDS]] : tensor<1x2x5x5xf32>, tensor<2x2xf32>) outs(%[[ZEROS]] : tensor<1x2x5x5xf32>)
// GPU-NEXT:      ^bb0(%[[V:[-a-z0-9_]+]]: f32, %{{.+}}: f32, %[[ACC:[-a-z0-9_]+]]: f32):
// GPU:             %[[N:[-a-z0-9_]+]] = linalg.index 0 : index
// GPU:             %[[C:[-a-z0-9_]+]] = linalg.index 1 : index
// GPU:             %[[YV:[-a-z0-9_]+]] = tensor.extract %[[Y]][%[[N]], %[[C]], %[[OH:[-a-z0-9_]+]], %[[OW:[-a-z0-9_]+]]] : tensor<1x2x3x3xf32>
// GPU:             %[[EQ:[-a-z0-9_]+]] = arith.cmpf oeq, %[[V]], %[[YV]] : f32
// GPU:             %[[FIRST:[-a-z0-9_]+]] = scf.if %{{.+}} -> (i1) {
// GPU:               %[[EARLIER:[-a-z0-9_]+]] = scf.for {{.+}} iter_args({{.+}}) -> (i1) {
// GPU:                 tensor.extract %[[X]][%[[N]], %[[C]], {{.+}}] : tensor<1x2x5x5xf32>
// GPU:                 scf.yield
// GPU:               arith.xori %[[EARLIER]]
// GPU:             } else {
// GPU:             %[[G:[-a-z0-9_]+]] = tensor.extract %[[DY]][%[[N]], %[[C]], %[[OH]], %[[OW]]] : tensor<1x2x3x3xf32>
// GPU:             %[[PICK:[-a-z0-9_]+]] = arith.select %[[FIRST]], %[[G]], %{{.+}} : f32
// GPU:             %[[S:[-a-z0-9_]+]] = arith.addf %[[ACC]], %[[PICK]]
// GPU:             linalg.yield %[[S]] : f32
// GPU-NOT:       linalg.generic
// GPU:           return %[[R]]
func.func @max_pool_grad(%x: tensor<1x2x5x5xf32>, %y: tensor<1x2x3x3xf32>, %dy: tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32> {
  %0 = "ms.max_pool_grad"(%x, %y, %dy) {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 1, 1>, pad_hi = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x2x5x5xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  return %0 : tensor<1x2x5x5xf32>
}

// -----

// With scatter=reduction, the gather: dy at the covering window times its 1 / count, masked
// where no window covers.
// On the CPU the windows overlap along H, so their shares spread one dim at a time, each a
// scatter onto zeros over that dim's kernel offsets only: along W first (windows' rows by
// input columns, 1x2 offsets, the W factor 1/2 a constant), then along H box by box, each
// box with its slice of the vector of the H windows' reciprocal counts; the output maps are
// `o * 2 + k + c` on the target, every loop but n and c a reduction (windows overlap).
// CHECK-DAG:   #[[$AT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
// CHECK-DAG:   #[[$ALONG_W:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d3, d5 * 2 + d4)>
// CHECK-DAG:   #[[$ROW:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d2)>
// CHECK-DAG:   #[[$TOP:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d3, d4 + d5)>
// CHECK-DAG:   #[[$MID:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d3 + 1, d4 + d5)>
// CHECK-DAG:   #[[$LAST:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d3 + 3, d4 + d5)>
// BOTH-LABEL:  func.func @avg_pool_grad(
// BOTH-SAME:     %[[DY:[-a-z0-9_]+]]: tensor<1x2x3x2xf32>) -> tensor<1x2x5x4xf32>
// BOTH:          %[[W:[-a-z0-9_]+]] = arith.constant dense<[5.000000e-01, 0.333333343, 5.000000e-01]> : tensor<3xf32>
// CHECK:         %[[Z1:[-a-z0-9_]+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x2x3x4xf32>)
// CHECK:         %[[ROWS:[-a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[$AT]], {{.+}}, #[[$ALONG_W]]], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]}
// CHECK-SAME:      ins(%[[DY]], %{{.+}} : tensor<1x2x3x2xf32>, tensor<1x2xf32>) outs(%[[Z1]] : tensor<1x2x3x4xf32>)
// CHECK-NEXT:    ^bb0(%[[G:[-a-z0-9_]+]]: f32, %{{.+}}: f32, %[[ACC:[-a-z0-9_]+]]: f32):
// CHECK-NEXT:      %[[HALF:[-a-z0-9_]+]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[T:[-a-z0-9_]+]] = arith.mulf %[[G]], %[[HALF]]
// CHECK-NEXT:      %[[S:[-a-z0-9_]+]] = arith.addf %[[ACC]], %[[T]]
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK:         %[[Z2:[-a-z0-9_]+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x2x5x4xf32>)
// CHECK:         %[[R0:[-a-z0-9_]+]] = tensor.extract_slice %[[ROWS]][0, 0, 0, 0] [1, 2, 1, 4] [1, 1, 1, 1]
// CHECK:         %[[W0:[-a-z0-9_]+]] = tensor.extract_slice %[[W]][0] [1] [1]
// CHECK:         %[[D0:[-a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[$AT]], {{.+}}, #[[$ROW]], #[[$TOP]]]
// CHECK-SAME:      ins(%[[R0]], %{{.+}}, %[[W0]] : tensor<1x2x1x4xf32>, tensor<2x1xf32>, tensor<1xf32>) outs(%[[Z2]] : tensor<1x2x5x4xf32>)
// CHECK-NEXT:    ^bb0(%[[V:[-a-z0-9_]+]]: f32, %{{.+}}: f32, %[[WH:[-a-z0-9_]+]]: f32, %[[ACC:[-a-z0-9_]+]]: f32):
// CHECK-NEXT:      %[[T:[-a-z0-9_]+]] = arith.mulf %[[V]], %[[WH]]
// CHECK-NEXT:      %[[S:[-a-z0-9_]+]] = arith.addf %[[ACC]], %[[T]]
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK:         %[[D1:[-a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[$AT]], {{.+}}, #[[$ROW]], #[[$MID]]]
// CHECK-SAME:      tensor<3x1xf32>
// CHECK-SAME:      outs(%[[D0]] : tensor<1x2x5x4xf32>)
// CHECK:         %[[D2:[-a-z0-9_]+]] = linalg.generic {indexing_maps = [#[[$AT]], {{.+}}, #[[$ROW]], #[[$LAST]]]
// CHECK-SAME:      outs(%[[D1]] : tensor<1x2x5x4xf32>)
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[D2]]
// GPU:           %[[CANDS:[-a-z0-9_]+]] = tensor.empty() : tensor<2x1xf32>
// GPU:           %[[R:[-a-z0-9_]+]] = linalg.generic
// GPU-SAME:        ins(%[[CANDS]] : tensor<2x1xf32>) outs(%{{.+}} : tensor<1x2x5x4xf32>)
// GPU:             %[[N:[-a-z0-9_]+]] = linalg.index 0 : index
// GPU:             %[[C:[-a-z0-9_]+]] = linalg.index 1 : index
// GPU:             %[[OH:[-a-z0-9_]+]] = arith.select %[[OK:[-a-z0-9_]+]], %{{.+}}, %{{.+}} : index
// GPU:             %[[OW:[-a-z0-9_]+]] = arith.select %[[OK]], %{{.+}}, %{{.+}} : index
// GPU:             %[[WH:[-a-z0-9_]+]] = tensor.extract %[[W]][%[[OH]]] : tensor<3xf32>
// GPU:             %[[SCALE:[-a-z0-9_]+]] = arith.mulf %{{.+}}, %[[WH]]
// GPU:             %[[G:[-a-z0-9_]+]] = tensor.extract %[[DY]][%[[N]], %[[C]], %[[OH]], %[[OW]]] : tensor<1x2x3x2xf32>
// GPU:             %[[T:[-a-z0-9_]+]] = arith.mulf %[[G]], %[[SCALE]]
// GPU:             arith.select %[[OK]], %[[T]], %{{.+}} : f32
// GPU-NOT:       linalg.generic
// GPU:           return %[[R]]
func.func @avg_pool_grad(%dy: tensor<1x2x3x2xf32>) -> tensor<1x2x5x4xf32> {
  %0 = "ms.avg_pool_grad"(%dy) {kernel = array<i64: 3, 2>, stride = array<i64: 2, 2>, pad_lo = array<i64: 1, 0>, pad_hi = array<i64: 1, 0>, ceil_mode = false, count_include_pad = false, divisor_override = 0, input_shape = array<i64: 1, 2, 5, 4>} : (tensor<1x2x3x2xf32>) -> tensor<1x2x5x4xf32>
  return %0 : tensor<1x2x5x4xf32>
}

// -----

// max_pool_grad's gradient: v read at each window's first maximal element of x. On the CPU,
// the first maxima's offsets (as in max_pool_grad), then a fold over the offsets that keeps v
// where the offset is that one; with scatter=reduction, the scan of max_pool_grad's gather,
// per window.
// BOTH-LABEL:  func.func @max_pool_gather(
// BOTH-SAME:     %[[X:[-a-z0-9_]+]]: tensor<1x1x4x4xf32>, %[[Y:[-a-z0-9_]+]]: tensor<1x1x2x2xf32>, %[[V:[-a-z0-9_]+]]: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
// CHECK:         %[[IDX:[-a-z0-9_]+]] = linalg.generic
// CHECK-SAME:      ins(%[[X]], %{{.+}}, %[[Y]] : tensor<1x1x4x4xf32>, tensor<2x2xi32>, tensor<1x1x2x2xf32>) outs(%{{.+}} : tensor<1x1x2x2xi32>)
// CHECK:           arith.minsi
// CHECK:         %[[R:[-a-z0-9_]+]] = linalg.generic
// CHECK-SAME:      ins(%[[V]], %{{.+}}, %[[IDX]] : tensor<1x1x4x4xf32>, tensor<2x2xf32>, tensor<1x1x2x2xi32>) outs(%{{.+}} : tensor<1x1x2x2xf32>)
// CHECK-NEXT:    ^bb0(%[[VV:[-a-z0-9_]+]]: f32, %{{.+}}: f32, %[[FIRST:[-a-z0-9_]+]]: i32, %[[ACC:[-a-z0-9_]+]]: f32):
// CHECK:           %[[LIN:[-a-z0-9_]+]] = arith.index_cast %{{.+}} : index to i32
// CHECK:           %[[HIT:[-a-z0-9_]+]] = arith.cmpi eq, %[[FIRST]], %[[LIN]] : i32
// CHECK:           %[[PICK:[-a-z0-9_]+]] = arith.select %[[HIT]], %[[VV]], %{{.+}} : f32
// CHECK:           arith.addf %[[ACC]], %[[PICK]]
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
// GPU:           %[[R:[-a-z0-9_]+]] = linalg.generic
// GPU-SAME:        ins(%[[Y]], %{{.+}} : tensor<1x1x2x2xf32>, tensor<2x2xf32>) outs(%{{.+}} : tensor<1x1x2x2xf32>)
// GPU:             %[[XV:[-a-z0-9_]+]] = tensor.extract %[[X]]
// GPU:             arith.cmpf oeq, %[[XV]]
// GPU:             %[[FIRST:[-a-z0-9_]+]] = scf.if
// GPU:             %[[VV:[-a-z0-9_]+]] = tensor.extract %[[V]]
// GPU:             arith.select %[[FIRST]], %[[VV]]
// GPU-NOT:       linalg.generic
// GPU:           return %[[R]]
func.func @max_pool_gather(%x: tensor<1x1x4x4xf32>, %y: tensor<1x1x2x2xf32>, %v: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %0 = "ms.max_pool_gather"(%x, %y, %v) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, ceil_mode = false} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}
