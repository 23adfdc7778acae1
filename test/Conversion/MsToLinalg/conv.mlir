// ms.conv lowers to the zero-padded input (a fill and an insert_slice), one im2col gather (a
// parallel linalg.generic whose input map is the window map: spatial p*stride + k*dilation,
// channel g*Cg + c), one contraction (a linalg.matmul for one group, a batched generic over
// the groups otherwise) and a copy into the output layout. ms.conv_input_grad gathers the
// windows of dy dilated by the stride (an insert_slice with the stride as its steps) and
// multiplies them by the weight copied flipped (K - 1 - k) with its channel dims swapped;
// ms.conv_filter_grad gathers x's windows in (n, p) x (c, k) order and multiplies dy's
// (O, P) matrix by them, per image in an scf.forall summed over the images afterwards, or
// (conv=batched, the BATCHED run) dy's (O, N*P) matrix by the batch's windows.
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | FileCheck %s
// RUN: ms-opt %s --pass-pipeline='builtin.module(convert-ms-to-linalg{conv=batched})' --split-input-file | FileCheck %s --check-prefix=BATCHED
// RUN: ms-opt %s --pass-pipeline='builtin.module(convert-ms-to-linalg{conv-block-bytes=3500})' --split-input-file | FileCheck %s --check-prefix=BLOCKED
// The output is valid IR (re-parsed and verified).
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | ms-opt --split-input-file > /dev/null

// Loops of the gather (g, c, kh, kw, n, oh, ow) = (d0 .. d6): the padded input is read at
// (n, g*3 + c, oh + kh, ow + kw).
// CHECK-DAG:   #[[$WIN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d0 * 3 + d1, d2 + d5, d3 + d6)>
// CHECK-DAG:   #[[$ID7:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4, d5, d6)>
// CHECK-LABEL: func.func @conv2d_padded(
// CHECK-SAME:    %[[X:.+]]: tensor<1x3x8x8xf32>, %[[W:.+]]: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
// CHECK:         %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[ZEROS:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<1x3x10x10xf32>)
// CHECK:         %[[XP:.+]] = tensor.insert_slice %[[X]] into %[[ZEROS]][0, 0, 1, 1] [1, 3, 8, 8] [1, 1, 1, 1] : tensor<1x3x8x8xf32> into tensor<1x3x10x10xf32>
// CHECK:         %[[COL:.+]] = linalg.generic {indexing_maps = [#[[$WIN]], #[[$ID7]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[XP]] : tensor<1x3x10x10xf32>) outs(%{{.+}} : tensor<1x3x3x3x1x8x8xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      linalg.yield %[[IN]] : f32
// CHECK:         %[[Y:.+]] = linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x27xf32>, tensor<27x64xf32>) outs(%{{.+}} : tensor<4x64xf32>) -> tensor<4x64xf32>
// CHECK-NOT:     linalg.matmul
// CHECK:         linalg.generic {{.*}} ins(%{{.+}} : tensor<1x4x1x8x8xf32>) outs(%{{.+}} : tensor<1x1x4x8x8xf32>)
// CHECK:         return %{{.+}} : tensor<1x4x8x8xf32>
func.func @conv2d_padded(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 1, 1>, pad_hi = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

// Stride 2, dilation 3, no padding: x itself is gathered at (n, g*2 + c, p*2 + k*3), loops
// (g, c, k, n, p) = (d0 .. d4).
// CHECK-DAG:   #[[$WIN:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d3, d0 * 2 + d1, d4 * 2 + d2 * 3)>
// CHECK-LABEL: func.func @conv1d_strided_dilated(
// CHECK-SAME:    %[[X:.+]]: tensor<1x2x11xf64>, %[[W:.+]]: tensor<5x2x3xf64>) -> tensor<1x5x3xf64>
// CHECK-NOT:     tensor.insert_slice
// CHECK:         linalg.generic {indexing_maps = [#[[$WIN]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[X]] : tensor<1x2x11xf64>) outs(%{{.+}} : tensor<1x2x3x1x3xf64>)
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<5x6xf64>, tensor<6x3xf64>) outs(%{{.+}} : tensor<5x3xf64>)
// CHECK:         return %{{.+}} : tensor<1x5x3xf64>
func.func @conv1d_strided_dilated(%x: tensor<1x2x11xf64>, %w: tensor<5x2x3xf64>) -> tensor<1x5x3xf64> {
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 2>, dilation = array<i64: 3>, pad_lo = array<i64: 0>, pad_hi = array<i64: 0>, groups = 1 : i64} : (tensor<1x2x11xf64>, tensor<5x2x3xf64>) -> tensor<1x5x3xf64>
  return %0 : tensor<1x5x3xf64>
}

// -----

// Two groups of 6 input and 3 output channels (more than conv_direct.py's DIRECT_MAX_CHANNELS
// per group: a product): the gather's g loop picks the channel block (g*6 + c); the contraction is an scf.for over the groups, each group's weight (3 x 54) @
// its windows (54 x 9) one linalg.matmul (the tuned schedule), inserted into the (g, 3, 9)
// result.
// CHECK-DAG:   #[[$WIN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d0 * 6 + d1, d2 + d5, d3 + d6)>
// CHECK-LABEL: func.func @conv2d_grouped(
// CHECK-SAME:    %[[X:.+]]: tensor<1x12x5x5xf32>, %[[W:.+]]: tensor<6x6x3x3xf32>) -> tensor<1x6x3x3xf32>
// CHECK:         %[[WM:.+]] = tensor.expand_shape %{{.+}} output_shape [2, 3, 54] : tensor<324xf32> into tensor<2x3x54xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[$WIN]], #{{.+}}], {{.*}} ins(%[[X]] : tensor<1x12x5x5xf32>) outs(%{{.+}} : tensor<2x6x3x3x1x3x3xf32>)
// CHECK:         %[[COLM:.+]] = tensor.expand_shape %{{.+}} output_shape [2, 54, 9] : tensor<972xf32> into tensor<2x54x9xf32>
// CHECK:         scf.for %[[G:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (tensor<2x3x9xf32>)
// CHECK:           %[[A:.+]] = tensor.extract_slice %[[WM]][%[[G]], 0, 0] [1, 3, 54] [1, 1, 1] : tensor<2x3x54xf32> to tensor<3x54xf32>
// CHECK:           %[[B:.+]] = tensor.extract_slice %[[COLM]][%[[G]], 0, 0] [1, 54, 9] [1, 1, 1] : tensor<2x54x9xf32> to tensor<54x9xf32>
// CHECK:           %[[P:.+]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<3x54xf32>, tensor<54x9xf32>) outs(%{{.+}} : tensor<3x9xf32>)
// CHECK:           %[[NEXT:.+]] = tensor.insert_slice %[[P]] into %[[ACC]][%[[G]], 0, 0] [1, 3, 9] [1, 1, 1] : tensor<3x9xf32> into tensor<2x3x9xf32>
// CHECK:           scf.yield %[[NEXT]] : tensor<2x3x9xf32>
// CHECK:         return %{{.+}} : tensor<1x6x3x3xf32>
func.func @conv2d_grouped(%x: tensor<1x12x5x5xf32>, %w: tensor<6x6x3x3xf32>) -> tensor<1x6x3x3xf32> {
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 2 : i64} : (tensor<1x12x5x5xf32>, tensor<6x6x3x3xf32>) -> tensor<1x6x3x3xf32>
  return %0 : tensor<1x6x3x3xf32>
}

// -----

// float16: the matmul accumulates in float32, the layout copy rounds once.
// CHECK-LABEL: func.func @conv2d_f16(
// CHECK:         linalg.generic {{.*}} ins(%{{.+}} : tensor<1x2x4x4xf16>) outs(%{{.+}} : tensor<1x2x3x3x1x2x2xf16>)
// CHECK:         %[[ACC:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<3x4xf32>)
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<3x18xf16>, tensor<18x4xf16>) outs(%[[ACC]] : tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK:         linalg.generic {{.*}} ins(%{{.+}} : tensor<1x3x1x2x2xf32>) outs(%{{.+}} : tensor<1x1x3x2x2xf16>)
// CHECK-NEXT:    ^bb0(%[[V:.+]]: f32, %{{.+}}: f16):
// CHECK-NEXT:      %[[H:.+]] = arith.truncf %[[V]] : f32 to f16
// CHECK-NEXT:      linalg.yield %[[H]] : f16
func.func @conv2d_f16(%x: tensor<1x2x4x4xf16>, %w: tensor<3x2x3x3xf16>) -> tensor<1x3x2x2xf16> {
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 1 : i64} : (tensor<1x2x4x4xf16>, tensor<3x2x3x3xf16>) -> tensor<1x3x2x2xf16>
  return %0 : tensor<1x3x2x2xf16>
}

// -----

// The gradient of a stride-2 convolution (pad_lo 1) of a 1x3x8x8 input: the weight copied as
// a convolution's (C, O, K) flipped (one group: no group dim, the windows product is then the
// forward convolution's loop nest), wt[c, o, kh, kw] = w[o, c, 2 - kh, 2 - kw]; dy placed
// every second row and column (steps [1, 1, 2, 2]) at (K-1)*d - pad_lo = 1 into zeros of 8 + 2
// rows; their stride-1 windows (n, g*4 + c, oh + kh, ow + kw) times the weight's matrix.
// CHECK-DAG:   #[[$WIN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d0 * 4 + d1, d2 + d5, d3 + d6)>
// CHECK-LABEL: func.func @conv_input_grad(
// CHECK-SAME:    %[[DY:.+]]: tensor<1x4x4x4xf32>, %[[W:.+]]: tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
// CHECK:         linalg.generic {{.*}} outs(%{{.+}} : tensor<3x4x3x3xf32>)
// CHECK-DAG:       %[[C:.+]] = linalg.index 0 : index
// CHECK-DAG:       %[[O:.+]] = linalg.index 1 : index
// CHECK-DAG:       %[[KH:.+]] = linalg.index 2 : index
// CHECK-DAG:       %[[KW:.+]] = linalg.index 3 : index
// CHECK-NOT:       arith.muli
// CHECK:           %[[FH:.+]] = arith.subi %{{.+}}, %[[KH]] : index
// CHECK:           %[[FW:.+]] = arith.subi %{{.+}}, %[[KW]] : index
// CHECK:           tensor.extract %[[W]][%[[O]], %[[C]], %[[FH]], %[[FW]]] : tensor<4x3x3x3xf32>
// CHECK:         %[[ZEROS:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x4x10x10xf32>)
// CHECK:         %[[Z:.+]] = tensor.insert_slice %[[DY]] into %[[ZEROS]][0, 0, 1, 1] [1, 4, 4, 4] [1, 1, 2, 2] : tensor<1x4x4x4xf32> into tensor<1x4x10x10xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[$WIN]], #{{.+}}], {{.*}} ins(%[[Z]] : tensor<1x4x10x10xf32>) outs(%{{.+}} : tensor<1x4x3x3x1x8x8xf32>)
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<3x36xf32>, tensor<36x64xf32>) outs(%{{.+}} : tensor<3x64xf32>)
// CHECK:         return %{{.+}} : tensor<1x3x8x8xf32>
func.func @conv_input_grad(%dy: tensor<1x4x4x4xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32> {
  %0 = "ms.conv_input_grad"(%dy, %w) {stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 1, 1>, pad_hi = array<i64: 0, 0>, groups = 1 : i64, input_shape = array<i64: 1, 3, 8, 8>} : (tensor<1x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
  return %0 : tensor<1x3x8x8xf32>
}

// -----

// Two groups (depthwise, 5 outputs per channel, so 5 dy channels per group, more than
// DIRECT_MAX_CHANNELS: not a direct nest): the weight copied as (g, C, O, K) flipped,
// wt[g, c, o, kh, kw] = w[g*5 + o, c, 2 - kh, 2 - kw]; per group, the flipped weight (1 x 45) @ the
// windows of dy (45 x 25), a
// linalg.matmul in an scf.for over the groups.
// CHECK-DAG:   #[[$WIN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d0 * 5 + d1, d2 + d5, d3 + d6)>
// CHECK-LABEL: func.func @conv_input_grad_grouped(
// CHECK-SAME:    %[[DY:.+]]: tensor<1x10x3x3xf32>, %[[W:.+]]: tensor<10x1x3x3xf32>) -> tensor<1x2x5x5xf32>
// CHECK:         linalg.generic {{.*}} outs(%{{.+}} : tensor<2x1x5x3x3xf32>)
// CHECK-DAG:       %[[G:.+]] = linalg.index 0 : index
// CHECK-DAG:       %[[C:.+]] = linalg.index 1 : index
// CHECK-DAG:       %[[O:.+]] = linalg.index 2 : index
// CHECK-DAG:       %[[KH:.+]] = linalg.index 3 : index
// CHECK-DAG:       %[[KW:.+]] = linalg.index 4 : index
// CHECK-DAG:       %[[C5:.+]] = arith.constant 5 : index
// CHECK:           %[[GO:.+]] = arith.muli %[[G]], %[[C5]] : index
// CHECK:           %[[ROW:.+]] = arith.addi %[[GO]], %[[O]] : index
// CHECK:           %[[FH:.+]] = arith.subi %{{.+}}, %[[KH]] : index
// CHECK:           %[[FW:.+]] = arith.subi %{{.+}}, %[[KW]] : index
// CHECK:           tensor.extract %[[W]][%[[ROW]], %[[C]], %[[FH]], %[[FW]]] : tensor<10x1x3x3xf32>
// CHECK:         %[[Z:.+]] = tensor.insert_slice %[[DY]] into %{{.+}}[0, 0, 2, 2] [1, 10, 3, 3] [1, 1, 1, 1] : tensor<1x10x3x3xf32> into tensor<1x10x7x7xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[$WIN]], #{{.+}}], {{.*}} ins(%[[Z]] : tensor<1x10x7x7xf32>) outs(%{{.+}} : tensor<2x5x3x3x1x5x5xf32>)
// CHECK:         scf.for
// CHECK:           linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<1x45xf32>, tensor<45x25xf32>) outs(%{{.+}} : tensor<1x25xf32>)
// CHECK:         return %{{.+}} : tensor<1x2x5x5xf32>
func.func @conv_input_grad_grouped(%dy: tensor<1x10x3x3xf32>, %w: tensor<10x1x3x3xf32>) -> tensor<1x2x5x5xf32> {
  %0 = "ms.conv_input_grad"(%dy, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 2 : i64, input_shape = array<i64: 1, 2, 5, 5>} : (tensor<1x10x3x3xf32>, tensor<10x1x3x3xf32>) -> tensor<1x2x5x5xf32>
  return %0 : tensor<1x2x5x5xf32>
}

// -----

// The weight gradient of a padded stride-2 convolution: the gather's loops are
// (g, n, oh, ow, c, kh, kw) = (d0 .. d6), reading xpad at (n, g*2 + c, oh*2 + kh, ow*2 + kw);
// dy (one image) is already the (O, P) matrix: dy (4 x 16) @ windows (16 x 18).
// CHECK-DAG:   #[[$WIN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d0 * 2 + d4, d2 * 2 + d5, d3 * 2 + d6)>
// CHECK-LABEL: func.func @conv_filter_grad_strided(
// CHECK-SAME:    %[[X:.+]]: tensor<1x2x7x7xf32>, %[[DY:.+]]: tensor<1x4x4x4xf32>) -> tensor<4x2x3x3xf32>
// CHECK:         %[[XP:.+]] = tensor.insert_slice %[[X]] into %{{.+}}[0, 0, 1, 1] [1, 2, 7, 7] [1, 1, 1, 1] : tensor<1x2x7x7xf32> into tensor<1x2x9x9xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[$WIN]], #{{.+}}], {{.*}} ins(%[[XP]] : tensor<1x2x9x9xf32>) outs(%{{.+}} : tensor<1x1x4x4x2x3x3xf32>)
// CHECK:         tensor.collapse_shape %[[DY]] {{.*}} : tensor<1x4x4x4xf32> into tensor<64xf32>
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x16xf32>, tensor<16x18xf32>) outs(%{{.+}} : tensor<4x18xf32>)
// CHECK:         return %{{.+}} : tensor<4x2x3x3xf32>
func.func @conv_filter_grad_strided(%x: tensor<1x2x7x7xf32>, %dy: tensor<1x4x4x4xf32>) -> tensor<4x2x3x3xf32> {
  %0 = "ms.conv_filter_grad"(%x, %dy) {stride = array<i64: 2, 2>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 1, 1>, pad_hi = array<i64: 1, 1>, groups = 1 : i64, kernel_shape = array<i64: 4, 2, 3, 3>} : (tensor<1x2x7x7xf32>, tensor<1x4x4x4xf32>) -> tensor<4x2x3x3xf32>
  return %0 : tensor<4x2x3x3xf32>
}

// -----

// Two images, per image (the default; O = 4 output channels against P = 16 positions):
// an scf.forall computes each image's product into a slice of a (N, O, C*K) tensor, and one
// reduction over the images adds them. With 27 < 32 columns the product is dot products of
// rows, dy (4 x 16) against the windows laid out (C*K x P) (27 x 16), the reduction innermost.
// CHECK-DAG:   #[[$IMAGES:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG:   #[[$SUMMED:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG:   #[[$ROW_A:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG:   #[[$DOT:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @conv_filter_grad_batch(
// CHECK-SAME:    %[[X:.+]]: tensor<2x3x6x6xf32>, %[[DY:.+]]: tensor<2x4x4x4xf32>) -> tensor<4x3x3x3xf32>
// CHECK:         %[[PARTS:.+]] = scf.forall (%[[I:.+]]) in (2) shared_outs(%[[ALL:.+]] = %{{.+}}) -> (tensor<2x4x27xf32>)
// CHECK:           %[[XI:.+]] = tensor.extract_slice %[[X]][%[[I]], 0, 0, 0] [1, 3, 6, 6] [1, 1, 1, 1]
// CHECK:           linalg.generic {{.*}} ins(%[[XI]] : tensor<1x3x6x6xf32>) outs(%{{.+}} : tensor<1x3x3x3x1x4x4xf32>)
// CHECK:           tensor.extract_slice %[[DY]][%[[I]], 0, 0, 0] [1, 4, 4, 4] [1, 1, 1, 1]
// CHECK:           %[[P:.+]] = linalg.generic {indexing_maps = [#[[$ROW_A]], #[[$SUMMED]], #[[$DOT]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.+}}, %{{.+}} : tensor<4x16xf32>, tensor<27x16xf32>) outs(%{{.+}} : tensor<4x27xf32>)
// CHECK:           tensor.parallel_insert_slice %{{.+}} into %[[ALL]][%[[I]], 0, 0] [1, 4, 27] [1, 1, 1]
// CHECK:         linalg.generic {indexing_maps = [#[[$IMAGES]], #[[$SUMMED]]], iterator_types = ["reduction", "parallel", "parallel"]} ins(%[[PARTS]] : tensor<2x4x27xf32>)
// CHECK:         return %{{.+}} : tensor<4x3x3x3xf32>
// Batched (conv=batched, CUDA's choice): dy is copied channels first, (g, O, N, P), so that
// its matrix is (O, N*P), times the batch's windows (N*P x C*K).
// BATCHED-DAG:   #[[$CF:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d0 * 4 + d1, d3, d4)>
// BATCHED-LABEL: func.func @conv_filter_grad_batch(
// BATCHED-SAME:    %[[X:.+]]: tensor<2x3x6x6xf32>, %[[DY:.+]]: tensor<2x4x4x4xf32>) -> tensor<4x3x3x3xf32>
// BATCHED:         linalg.generic {{.*}} ins(%[[X]] : tensor<2x3x6x6xf32>) outs(%{{.+}} : tensor<1x2x4x4x3x3x3xf32>)
// BATCHED:         linalg.generic {indexing_maps = [#[[$CF]], #{{.+}}], {{.*}} ins(%[[DY]] : tensor<2x4x4x4xf32>) outs(%{{.+}} : tensor<1x4x2x4x4xf32>)
// BATCHED:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x32xf32>, tensor<32x27xf32>) outs(%{{.+}} : tensor<4x27xf32>)
// BATCHED:         return %{{.+}} : tensor<4x3x3x3xf32>
func.func @conv_filter_grad_batch(%x: tensor<2x3x6x6xf32>, %dy: tensor<2x4x4x4xf32>) -> tensor<4x3x3x3xf32> {
  %0 = "ms.conv_filter_grad"(%x, %dy) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 1 : i64, kernel_shape = array<i64: 4, 3, 3, 3>} : (tensor<2x3x6x6xf32>, tensor<2x4x4x4xf32>) -> tensor<4x3x3x3xf32>
  return %0 : tensor<4x3x3x3xf32>
}

// -----

// Per image with 36 columns (C*K of 4 x 3 x 3), transposed: each image's windows, rows of
// the input (36 x 16), @ its dy transposed (16 x 4), a linalg.matmul for the tuned schedule;
// the images' sum (36 x 4) is transposed once.
// CHECK-LABEL: func.func @conv_filter_grad_wide(
// CHECK:         scf.forall (%{{.+}}) in (2) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<2x36x4xf32>)
// CHECK:           linalg.generic {{.*}} ins(%{{.+}} : tensor<1x4x6x6xf32>) outs(%{{.+}} : tensor<1x4x3x3x1x4x4xf32>)
// CHECK:           linalg.transpose ins(%{{.+}} : tensor<4x16xf32>) outs(%{{.+}} : tensor<16x4xf32>) permutation = [1, 0]
// CHECK:           linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<36x16xf32>, tensor<16x4xf32>) outs(%{{.+}} : tensor<36x4xf32>)
// CHECK:         %[[SUM:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<2x36x4xf32>) outs(%{{.+}} : tensor<36x4xf32>)
// CHECK:         linalg.transpose ins(%[[SUM]] : tensor<36x4xf32>) outs(%{{.+}} : tensor<4x36xf32>) permutation = [1, 0]
// BATCHED-LABEL: func.func @conv_filter_grad_wide(
// BATCHED:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x32xf32>, tensor<32x36xf32>) outs(%{{.+}} : tensor<4x36xf32>)
func.func @conv_filter_grad_wide(%x: tensor<2x4x6x6xf32>, %dy: tensor<2x4x4x4xf32>) -> tensor<4x4x3x3xf32> {
  %0 = "ms.conv_filter_grad"(%x, %dy) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 1 : i64, kernel_shape = array<i64: 4, 4, 3, 3>} : (tensor<2x4x6x6xf32>, tensor<2x4x4x4xf32>) -> tensor<4x4x3x3xf32>
  return %0 : tensor<4x4x3x3xf32>
}

// -----

// Per image in blocks of output rows (conv-block-bytes=3500: 3 rows of 36 x 8 float32 window
// columns, 3,456 bytes): an scf.for over the 3 blocks of each image gathers the block's
// windows from 5 rows of the padded image, multiplies them (6 x 36 @ 36 x 24) and writes the
// block's rows of the image's result. Without the option the budget is 3/4 of the host's
// L2, far above this image's 10 KB matrix: one product per image.
// BLOCKED-LABEL: func.func @conv_blocks(
// BLOCKED:         scf.forall (%[[I:.+]]) in (3) shared_outs(%[[ALL:.+]] = %{{.+}})
// BLOCKED:           %[[TILE:.+]] = tensor.extract_slice %[[ALL]][%[[I]], 0, 0, 0] [1, 6, 9, 8]
// BLOCKED:           %[[PADDED:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 1, 1] [1, 4, 9, 8]
// BLOCKED:           %[[IMAGE:.+]] = scf.for %[[B:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[CUR:.+]] = %[[TILE]]) -> (tensor<1x6x9x8xf32>)
// BLOCKED:             %[[ROW:.+]] = arith.muli %[[B]], %{{.+}} : index
// BLOCKED:             tensor.extract_slice %[[PADDED]][0, 0, %{{.+}}, 0] [1, 4, 5, 10] [1, 1, 1, 1]
// BLOCKED:             linalg.generic {{.*}} outs(%{{.+}} : tensor<1x4x3x3x1x3x8xf32>)
// BLOCKED:             linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<6x36xf32>, tensor<36x24xf32>) outs(%{{.+}} : tensor<6x24xf32>)
// BLOCKED:             %[[DEST:.+]] = tensor.extract_slice %[[CUR]][0, 0, %[[ROW]], 0] [1, 6, 3, 8]
// BLOCKED:             %[[ROWS:.+]] = linalg.generic {{.*}} outs(%[[DEST]] : tensor<1x6x3x8xf32>)
// BLOCKED:             %[[NEXT:.+]] = tensor.insert_slice %[[ROWS]] into %[[CUR]][0, 0, %[[ROW]], 0] [1, 6, 3, 8]
// BLOCKED:             scf.yield %[[NEXT]]
// BLOCKED:           tensor.parallel_insert_slice %[[IMAGE]] into %[[ALL]][%[[I]], 0, 0, 0] [1, 6, 9, 8]
// CHECK-LABEL: func.func @conv_blocks(
// CHECK-NOT:     scf.for %
// CHECK:         linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<6x36xf32>, tensor<36x72xf32>)
func.func @conv_blocks(%x: tensor<3x4x9x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<3x6x9x8xf32> {
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 1, 1>, pad_hi = array<i64: 1, 1>, groups = 1 : i64} : (tensor<3x4x9x8xf32>, tensor<6x4x3x3xf32>) -> tensor<3x6x9x8xf32>
  return %0 : tensor<3x6x9x8xf32>
}

// -----

// The transposed weight gradient per image in blocks of rows: the block's windows
// (36 x 24) @ its 3 rows of dy transposed (24 x 6), accumulated over the blocks in one
// (36 x 6) product; the images' sum transposed once.
// BLOCKED-LABEL: func.func @conv_filter_grad_blocks(
// BLOCKED:         scf.forall (%{{.+}}) in (3) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<3x36x6xf32>)
// BLOCKED:           scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[SUM:.+]] = %{{.+}}) -> (tensor<36x6xf32>)
// BLOCKED:             tensor.extract_slice %{{.+}}[%{{.+}}, 0, %{{.+}}, 0] [1, 6, 3, 8] [1, 1, 1, 1]
// BLOCKED:             linalg.transpose ins(%{{.+}} : tensor<6x24xf32>) outs(%{{.+}} : tensor<24x6xf32>) permutation = [1, 0]
// BLOCKED:             %[[NEXT:.+]] = linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<36x24xf32>, tensor<24x6xf32>) outs(%[[SUM]] : tensor<36x6xf32>)
// BLOCKED:             scf.yield %[[NEXT]]
// BLOCKED:         linalg.transpose ins(%{{.+}} : tensor<36x6xf32>) outs(%{{.+}} : tensor<6x36xf32>) permutation = [1, 0]
func.func @conv_filter_grad_blocks(%x: tensor<3x4x9x8xf32>, %dy: tensor<3x6x9x8xf32>) -> tensor<6x4x3x3xf32> {
  %0 = "ms.conv_filter_grad"(%x, %dy) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 1, 1>, pad_hi = array<i64: 1, 1>, groups = 1 : i64, kernel_shape = array<i64: 6, 4, 3, 3>} : (tensor<3x4x9x8xf32>, tensor<3x6x9x8xf32>) -> tensor<6x4x3x3xf32>
  return %0 : tensor<6x4x3x3xf32>
}

// -----

// Depthwise (one input channel per group), one image: no im2col matrix and no product, one
// generic parallel over the output whose six terms read views of the padded input, one per
// kernel offset (kh, kw), and the weight at (g, 0, 0, kh, kw).
// CHECK-DAG:   #[[$ID:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG:   #[[$W00:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0, 0, 0)>
// CHECK-DAG:   #[[$W12:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0, 1, 2)>
// CHECK-LABEL: func.func @conv2d_depthwise(
// CHECK-SAME:    %[[X:.+]]: tensor<1x2x6x6xf32>, %[[W:.+]]: tensor<2x1x2x3xf32>) -> tensor<1x2x6x6xf32>
// CHECK:         %[[XP:.+]] = tensor.insert_slice %[[X]] into %{{.+}}[0, 0, 1, 1] [1, 2, 6, 6] [1, 1, 1, 1] : tensor<1x2x6x6xf32> into tensor<1x2x7x8xf32>
// CHECK:         %[[V00:.+]] = tensor.extract_slice %[[XP]][0, 0, 0, 0] [1, 2, 6, 6] [1, 1, 1, 1]
// CHECK:         %[[V12:.+]] = tensor.extract_slice %[[XP]][0, 0, 1, 2] [1, 2, 6, 6] [1, 1, 1, 1]
// CHECK-NOT:     linalg.matmul
// CHECK:         %[[Y:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]], #[[$ID]], #[[$ID]], #[[$ID]], #[[$ID]], #[[$W00]], {{.+}}, #[[$W12]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[V00]], {{.+}}, %[[V12]], %[[WG:.+]], {{.+}} : tensor<1x2x6x6xf32>, {{.+}}, tensor<2x1x1x2x3xf32>) outs(%{{.+}} : tensor<1x2x6x6xf32>)
// CHECK-NEXT:    ^bb0(%[[A:[a-z0-9_]+]]: f32, %{{[a-z0-9_]+}}: f32, %{{[a-z0-9_]+}}: f32, %{{[a-z0-9_]+}}: f32, %{{[a-z0-9_]+}}: f32, %{{[a-z0-9_]+}}: f32, %[[B:[a-z0-9_]+]]: f32,
// CHECK-NEXT:      arith.mulf %[[A]], %[[B]] fastmath<contract> : f32
// CHECK-NOT:     linalg.matmul
// CHECK:         return %[[Y]] : tensor<1x2x6x6xf32>
// Batched (conv=batched): the im2col matrix and a product per group instead.
// BATCHED-LABEL: func.func @conv2d_depthwise(
// BATCHED:         scf.for
// BATCHED:           linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<1x6xf32>, tensor<6x36xf32>) outs(%{{.+}} : tensor<1x36xf32>)
func.func @conv2d_depthwise(%x: tensor<1x2x6x6xf32>, %w: tensor<2x1x2x3xf32>) -> tensor<1x2x6x6xf32> {
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 1, 1>, pad_hi = array<i64: 0, 1>, groups = 2 : i64} : (tensor<1x2x6x6xf32>, tensor<2x1x2x3xf32>) -> tensor<1x2x6x6xf32>
  return %0 : tensor<1x2x6x6xf32>
}

// -----

// Two groups of two input channels, 2x2 kernel: eight terms per output element, summed in
// two interleaved chains (conv_direct._sum_in_chains: terms 0, 2, 4, 6 and 1, 3, 5, 7),
// then added, without `reassoc` (LLVM would make the chains one again).
// CHECK-LABEL: func.func @conv2d_grouped_chains(
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(
// CHECK-NEXT:      %[[P0:.+]] = arith.mulf {{.+}} fastmath<contract> : f32
// CHECK-NEXT:      %[[P1:.+]] = arith.mulf
// CHECK-NEXT:      %[[P2:.+]] = arith.mulf
// CHECK-NEXT:      %[[P3:.+]] = arith.mulf
// CHECK-NEXT:      %[[P4:.+]] = arith.mulf
// CHECK-NEXT:      %[[P5:.+]] = arith.mulf
// CHECK-NEXT:      %[[P6:.+]] = arith.mulf
// CHECK-NEXT:      %[[P7:.+]] = arith.mulf
// CHECK-NEXT:      %[[A0:.+]] = arith.addf %[[P0]], %[[P2]] fastmath<contract> : f32
// CHECK-NEXT:      %[[B0:.+]] = arith.addf %[[P1]], %[[P3]]
// CHECK-NEXT:      %[[A1:.+]] = arith.addf %[[A0]], %[[P4]]
// CHECK-NEXT:      %[[B1:.+]] = arith.addf %[[B0]], %[[P5]]
// CHECK-NEXT:      %[[A2:.+]] = arith.addf %[[A1]], %[[P6]]
// CHECK-NEXT:      %[[B2:.+]] = arith.addf %[[B1]], %[[P7]]
// CHECK-NEXT:      %[[SUM:.+]] = arith.addf %[[A2]], %[[B2]]
// CHECK-NEXT:      linalg.yield %[[SUM]] : f32
// CHECK-NOT:     linalg.matmul
func.func @conv2d_grouped_chains(%x: tensor<1x4x3x3xf32>, %w: tensor<4x2x2x2xf32>) -> tensor<1x4x2x2xf32> {
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad_lo = array<i64: 0, 0>, pad_hi = array<i64: 0, 0>, groups = 2 : i64} : (tensor<1x4x3x3xf32>, tensor<4x2x2x2xf32>) -> tensor<1x4x2x2xf32>
  return %0 : tensor<1x4x2x2xf32>
}

// -----

// Depthwise, stride 2, multiplier 2, two images: per image (an scf.forall), the image padded
// high to 10 (5 positions per phase) and split into its two phases, xph[n, c, a, q] =
// xp[n, c, q*2 + a], whose unit-stride views the three terms read: offset k at phase k % 2,
// position p + k / 2. The result is (1, g, m, p): the multiplier is a loop of its own.
// CHECK-DAG:   #[[$PHASE_IN:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 * 2 + d3)>
// CHECK-DAG:   #[[$PHASE_OUT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
// CHECK-LABEL: func.func @conv1d_depthwise_strided(
// CHECK:         scf.forall (%[[I:.+]]) in (2)
// CHECK:           %[[XP:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 0] [1, 2, 9] [1, 1, 1] : tensor<1x2x9xf64> into tensor<1x2x10xf64>
// CHECK:           %[[XPH:.+]] = linalg.generic {indexing_maps = [#[[$PHASE_IN]], #[[$PHASE_OUT]]], {{.+}} ins(%[[XP]] : tensor<1x2x10xf64>) outs(%{{.+}} : tensor<1x2x2x5xf64>)
// CHECK:           tensor.extract_slice %[[XPH]][0, 0, 0, 0] [1, 2, 1, 4] [1, 1, 1, 1] : tensor<1x2x2x5xf64> to tensor<1x2x4xf64>
// CHECK:           tensor.extract_slice %[[XPH]][0, 0, 1, 0] [1, 2, 1, 4] [1, 1, 1, 1] : tensor<1x2x2x5xf64> to tensor<1x2x4xf64>
// CHECK:           tensor.extract_slice %[[XPH]][0, 0, 0, 1] [1, 2, 1, 4] [1, 1, 1, 1] : tensor<1x2x2x5xf64> to tensor<1x2x4xf64>
// CHECK:           linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]} {{.+}} outs(%{{.+}} : tensor<1x2x2x4xf64>)
// CHECK-NOT:       linalg.matmul
// CHECK:           tensor.parallel_insert_slice
func.func @conv1d_depthwise_strided(%x: tensor<2x2x9xf64>, %w: tensor<4x1x3xf64>) -> tensor<2x4x4xf64> {
  %0 = "ms.conv"(%x, %w) {stride = array<i64: 2>, dilation = array<i64: 1>, pad_lo = array<i64: 0>, pad_hi = array<i64: 0>, groups = 2 : i64} : (tensor<2x2x9xf64>, tensor<4x1x3xf64>) -> tensor<2x4x4xf64>
  return %0 : tensor<2x4x4xf64>
}

// -----

// A depthwise weight gradient of stride 1, two images: per image (an scf.forall), the image
// shifted by each kernel offset into rows of the output's width, xw[n, c, k, q] = x[n, c,
// q + k], then long dot products: loops (g, o, c, k, n, j), n and j reduced, dy read at
// (n, g + o, j), xw at (n, g + c, k, j); the images' sums added after.
// CHECK-DAG:   #[[$SHIFT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 + d3)>
// CHECK-DAG:   #[[$DY:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d0 + d1, d5)>
// CHECK-DAG:   #[[$XW:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d0 + d2, d3, d5)>
// CHECK-DAG:   #[[$W:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @conv_filter_grad_depthwise(
// CHECK-SAME:    %[[X:.+]]: tensor<2x2x6xf32>, %[[DY:.+]]: tensor<2x2x4xf32>) -> tensor<2x1x3xf32>
// CHECK:         %[[PARTS:.+]] = scf.forall (%[[I:.+]]) in (2) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<2x2x1x3xf32>)
// CHECK:           %[[XI:.+]] = tensor.extract_slice %[[X]][%[[I]], 0, 0] [1, 2, 6] [1, 1, 1]
// CHECK:           %[[DYI:.+]] = tensor.extract_slice %[[DY]][%[[I]], 0, 0] [1, 2, 4] [1, 1, 1]
// CHECK:           %[[XW:.+]] = linalg.generic {indexing_maps = [#[[$SHIFT]], #{{.+}}], {{.+}} ins(%[[XI]] : tensor<1x2x6xf32>) outs(%{{.+}} : tensor<1x2x3x4xf32>)
// CHECK:           linalg.generic {indexing_maps = [#[[$DY]], #[[$XW]], #[[$W]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[DYI]], %[[XW]] : tensor<1x2x4xf32>, tensor<1x2x3x4xf32>) outs(%{{.+}} : tensor<2x1x1x3xf32>)
// CHECK:         linalg.generic {{.+}} iterator_types = ["reduction", "parallel", "parallel", "parallel"]} ins(%[[PARTS]] : tensor<2x2x1x3xf32>)
// CHECK-NOT:     linalg.matmul
// CHECK:         return
func.func @conv_filter_grad_depthwise(%x: tensor<2x2x6xf32>, %dy: tensor<2x2x4xf32>) -> tensor<2x1x3xf32> {
  %0 = "ms.conv_filter_grad"(%x, %dy) {stride = array<i64: 1>, dilation = array<i64: 1>, pad_lo = array<i64: 0>, pad_hi = array<i64: 0>, groups = 2 : i64, kernel_shape = array<i64: 2, 1, 3>} : (tensor<2x2x6xf32>, tensor<2x2x4xf32>) -> tensor<2x1x3xf32>
  return %0 : tensor<2x1x3xf32>
}

// -----

// Strided (2), two images: per image, every window gathered, col[n, c, k, q] =
// x[n, c, q*2 + k] (the image's im2col matrix per channel), then the same long dot products
// (n and j reduced); the images' sums added after. (3-D ones keep partial rows per position
// over the stride phases: the numeric tests in test_conv_lowering.py.)
// CHECK-DAG:   #[[$COL:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3 * 2 + d2)>
// CHECK-DAG:   #[[$DY:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d0 + d1, d5)>
// CHECK-DAG:   #[[$WIN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d0 + d2, d3, d5)>
// CHECK-LABEL: func.func @conv_filter_grad_depthwise_strided(
// CHECK-SAME:    %[[X:.+]]: tensor<2x2x9xf32>, %[[DY:.+]]: tensor<2x2x4xf32>) -> tensor<2x1x3xf32>
// CHECK:         %[[PARTS:.+]] = scf.forall (%[[I:.+]]) in (2)
// CHECK:           %[[XI:.+]] = tensor.extract_slice %[[X]][%[[I]], 0, 0] [1, 2, 9] [1, 1, 1]
// CHECK:           %[[DYI:.+]] = tensor.extract_slice %[[DY]][%[[I]], 0, 0] [1, 2, 4] [1, 1, 1]
// CHECK:           %[[C:.+]] = linalg.generic {indexing_maps = [#[[$COL]], #{{.+}}], {{.+}} ins(%[[XI]] : tensor<1x2x9xf32>) outs(%{{.+}} : tensor<1x2x3x4xf32>)
// CHECK:           linalg.generic {indexing_maps = [#[[$DY]], #[[$WIN]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[DYI]], %[[C]] : tensor<1x2x4xf32>, tensor<1x2x3x4xf32>) outs(%{{.+}} : tensor<2x1x1x3xf32>)
// CHECK:         linalg.generic {{.+}} iterator_types = ["reduction", "parallel", "parallel", "parallel"]} ins(%[[PARTS]] : tensor<2x2x1x3xf32>)
// CHECK-NOT:     linalg.matmul
// CHECK:         return
func.func @conv_filter_grad_depthwise_strided(%x: tensor<2x2x9xf32>, %dy: tensor<2x2x4xf32>) -> tensor<2x1x3xf32> {
  %0 = "ms.conv_filter_grad"(%x, %dy) {stride = array<i64: 2>, dilation = array<i64: 1>, pad_lo = array<i64: 0>, pad_hi = array<i64: 0>, groups = 2 : i64, kernel_shape = array<i64: 2, 1, 3>} : (tensor<2x2x9xf32>, tensor<2x2x4xf32>) -> tensor<2x1x3xf32>
  return %0 : tensor<2x1x3xf32>
}
