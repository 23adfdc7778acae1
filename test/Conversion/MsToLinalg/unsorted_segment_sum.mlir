// unsorted_segment_sum, the scatter-add behind gather's gradient, in its two forms: the
// default `scatter=loops` (an scf.for writing each row of data into the row its id names,
// out-of-range ids skipped) and `scatter=reduction` (pure linalg: each output reduces over all
// rows, what the CUDA pipeline uses since its host code must stay straight-line).
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | FileCheck %s --check-prefix=LOOPS
// RUN: ms-opt %s '--convert-ms-to-linalg=scatter=reduction' --split-input-file | FileCheck %s --check-prefix=RED
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | ms-opt --split-input-file > /dev/null
// RUN: not ms-opt %s '--convert-ms-to-linalg=scatter=atomics' 2>&1 | FileCheck %s --check-prefix=BADOPT

// LOOPS-LABEL: func.func @segment_rows(
// LOOPS-SAME:    %[[D:.+]]: tensor<2x3x4xf32>, %[[I:.+]]: tensor<2x3xi64>) -> tensor<5x4xf32>
// LOOPS-DAG:     %[[ROWS:.+]] = tensor.expand_shape %{{.+}} {{\[\[}}0, 1]] output_shape [6, 4] : tensor<24xf32> into tensor<6x4xf32>
// LOOPS-DAG:     %[[IDS:.+]] = tensor.collapse_shape %[[I]] {{\[\[}}0, 1]] : tensor<2x3xi64> into tensor<6xi64>
// LOOPS:         %[[ZERO:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<5x4xf32>) -> tensor<5x4xf32>
// LOOPS:         %[[SUM:.+]] = scf.for %[[K:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %[[ZERO]]) -> (tensor<5x4xf32>) {
// LOOPS-NEXT:      %[[ID:.+]] = tensor.extract %[[IDS]][%[[K]]] : tensor<6xi64>
// LOOPS:           %[[OK:.+]] = arith.andi
// LOOPS-NEXT:      %[[NEW:.+]] = scf.if %[[OK]] -> (tensor<5x4xf32>) {
// LOOPS-NEXT:        %[[AT:.+]] = arith.index_cast %[[ID]] : i64 to index
// LOOPS-NEXT:        %[[SRC:.+]] = tensor.extract_slice %[[ROWS]][%[[K]], 0] [1, 4] [1, 1] : tensor<6x4xf32> to tensor<1x4xf32>
// LOOPS-NEXT:        %[[DST:.+]] = tensor.extract_slice %[[ACC]][%[[AT]], 0] [1, 4] [1, 1] : tensor<5x4xf32> to tensor<1x4xf32>
// LOOPS-NEXT:        %[[ADD:.+]] = linalg.generic {{.+}} ins(%[[SRC]] : tensor<1x4xf32>) outs(%[[DST]] : tensor<1x4xf32>)
// LOOPS:             %[[INS:.+]] = tensor.insert_slice %[[ADD]] into %[[ACC]][%[[AT]], 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<5x4xf32>
// LOOPS-NEXT:        scf.yield %[[INS]] : tensor<5x4xf32>
// LOOPS-NEXT:      } else {
// LOOPS-NEXT:        scf.yield %[[ACC]] : tensor<5x4xf32>
// LOOPS-NEXT:      }
// LOOPS-NEXT:      scf.yield %[[NEW]] : tensor<5x4xf32>
// LOOPS-NEXT:    }
// LOOPS:         return %[[SUM]]

// RED-DAG:     #[[$DATA:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// RED-DAG:     #[[$IDS:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// RED-DAG:     #[[$OUT:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// RED-LABEL: func.func @segment_rows(
// RED-NOT:       scf.for
// RED:           %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[$DATA]], #[[$IDS]], #[[$OUT]]], iterator_types = ["parallel", "parallel", "reduction"]}
// RED-SAME:        ins(%{{.+}}, %{{.+}} : tensor<6x4xf32>, tensor<6xi64>) outs(%{{.+}} : tensor<5x4xf32>)
// RED-NEXT:      ^bb0(%[[X:.+]]: f32, %[[ID:.+]]: i64, %[[ACC:.+]]: f32):
// RED-NEXT:        %[[SEG:.+]] = linalg.index 0 : index
// RED-NEXT:        %[[SEG64:.+]] = arith.index_cast %[[SEG]] : index to i64
// RED-NEXT:        %[[HIT:.+]] = arith.cmpi eq, %[[ID]], %[[SEG64]] : i64
// RED-NEXT:        %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// RED-NEXT:        %[[PICK:.+]] = arith.select %[[HIT]], %[[X]], %[[Z]] : f32
// RED-NEXT:        %[[S:.+]] = arith.addf %[[ACC]], %[[PICK]]
// RED-NEXT:        linalg.yield %[[S]] : f32
func.func @segment_rows(%d: tensor<2x3x4xf32>, %i: tensor<2x3xi64>) -> tensor<5x4xf32> {
  %0 = "ms.unsorted_segment_sum"(%d, %i) {num_segments = 5 : i64} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<5x4xf32>
  return %0 : tensor<5x4xf32>
}

// BADOPT: option 'scatter' of pass 'convert-ms-to-linalg' is one of loops, reduction, not 'atomics'
