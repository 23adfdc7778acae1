// RUN: ms-opt %s --split-input-file --ms-cpu-tile-rows=threads=2 | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-cpu-tile-rows=threads=1 | FileCheck %s --check-prefix=SEQ

// softmax as bufferized: row max, sum of exponentials, reciprocal, normalization. Every op is
// computed once per tile of 4 rows (16 KB of the 1024-wide rows), the tiles on the threads;
// the per-row buffers are freed after the loop.
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:    %[[X:.+]]: memref<64x1024xf32>, %[[Y:.+]]: memref<64x1024xf32>)
// CHECK:         %[[R:.+]] = memref.alloc() {{.*}} : memref<64xf32>
// CHECK:         %[[M:.+]] = memref.alloc() {{.*}} : memref<64xf32>
// CHECK:         %[[S:.+]] = memref.alloc() {{.*}} : memref<64xf32>
// CHECK:         scf.forall (%[[T:.+]]) = (0) to (64) step (4) {
// CHECK-NEXT:      %[[MT:.+]] = memref.subview %[[M]][%[[T]]] [4] [1]
// CHECK-NEXT:      linalg.fill ins(%{{.+}} : f32) outs(%[[MT]] :
// CHECK-NEXT:      %[[XT:.+]] = memref.subview %[[X]][%[[T]], 0] [4, 1024] [1, 1]
// CHECK-NEXT:      linalg.generic {{.*}} ins(%[[XT]] : {{.*}}) outs(%[[MT]] :
// CHECK:           %[[ST:.+]] = memref.subview %[[S]][%[[T]]] [4] [1]
// CHECK-NEXT:      linalg.fill ins(%{{.+}} : f32) outs(%[[ST]] :
// CHECK-NEXT:      linalg.generic {{.*}} ins(%[[XT]], %[[MT]] : {{.*}}) outs(%[[ST]] :
// CHECK:           %[[RT:.+]] = memref.subview %[[R]][%[[T]]] [4] [1]
// CHECK-NEXT:      linalg.generic {{.*}} ins(%[[ST]] : {{.*}}) outs(%[[RT]] :
// CHECK:           %[[YT:.+]] = memref.subview %[[Y]][%[[T]], 0] [4, 1024] [1, 1]
// CHECK-NEXT:      linalg.generic {{.*}} ins(%[[XT]], %[[MT]], %[[RT]] : {{.*}}) outs(%[[YT]] :
// CHECK:             linalg.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.dealloc
// CHECK-NOT:     linalg.
// CHECK:         return
// SEQ-LABEL: func.func @softmax(
// SEQ:         scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
// SEQ-NOT:     scf.forall
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#vec = affine_map<(d0) -> (d0)>
func.func @softmax(%x: memref<64x1024xf32>, %y: memref<64x1024xf32>) {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %r = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  %m = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  linalg.fill ins(%ninf : f32) outs(%m : memref<64xf32>)
  linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<64x1024xf32>) outs(%m : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %s = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<64xf32>)
  linalg.generic {indexing_maps = [#map, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %m : memref<64x1024xf32>, memref<64xf32>) outs(%s : memref<64xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]} ins(%s : memref<64xf32>) outs(%r : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.divf %one, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map, #row, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %m, %r : memref<64x1024xf32>, memref<64xf32>, memref<64xf32>) outs(%y : memref<64x1024xf32>) {
  ^bb0(%in: f32, %mx: f32, %rc: f32, %out: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.mulf %1, %rc : f32
    linalg.yield %2 : f32
  }
  memref.dealloc %r : memref<64xf32>
  memref.dealloc %m : memref<64xf32>
  memref.dealloc %s : memref<64xf32>
  return
}

// -----

// A layernorm-like run with a broadcast operand (gamma) and a row vector seen through an
// expand_shape: gamma is read whole, the view is sliced by rows. A buffer freed between ops
// of the run (%k) is freed after the loop.
// CHECK-LABEL: func.func @broadcast_and_view(
// CHECK-SAME:    %[[X:.+]]: memref<16x512xf32>, %[[G:.+]]: memref<512xf32>, %[[Y:.+]]: memref<16x512xf32>)
// CHECK:         %[[K:.+]] = memref.alloc() {{.*}} : memref<16xf32>
// CHECK:         %[[V:.+]] = memref.expand_shape
// CHECK-NOT:     memref.dealloc
// CHECK:         scf.for %[[T:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK:           %[[VT:.+]] = memref.subview %[[V]][%[[T]], 0] [8, 1] [1, 1]
// CHECK:           linalg.generic {{.*}} ins(%{{.+}}, %[[VT]], %[[G]] : {{.*}}memref<512xf32>)
// CHECK:             linalg.yield
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-DAG:     memref.dealloc %[[K]]
// CHECK-DAG:     memref.dealloc
// CHECK:         return
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#row1 = affine_map<(d0, d1) -> (d0, 0)>
func.func @broadcast_and_view(%x: memref<16x512xf32>, %g: memref<512xf32>, %y: memref<16x512xf32>) {
  %zero = arith.constant 0.0 : f32
  %k = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%k : memref<16xf32>)
  %s = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  linalg.generic {indexing_maps = [#map, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %k : memref<16x512xf32>, memref<16xf32>) outs(%s : memref<16xf32>) {
  ^bb0(%in: f32, %init: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %k : memref<16xf32>
  %v = memref.expand_shape %s [[0, 1]] output_shape [16, 1] : memref<16xf32> into memref<16x1xf32>
  linalg.generic {indexing_maps = [#map, #row1, #col, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %v, %g : memref<16x512xf32>, memref<16x1xf32>, memref<512xf32>) outs(%y : memref<16x512xf32>) {
  ^bb0(%in: f32, %mean: f32, %gamma: f32, %out: f32):
    %0 = arith.subf %in, %mean : f32
    %1 = arith.mulf %0, %gamma : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %s : memref<16xf32>
  return
}

// -----

// Not tiled: an op that needs every row of a buffer the run wrote (a sum over the rows)
// ends the run, and a run of one op has nothing to share.
// CHECK-LABEL: func.func @column_sum_needs_all_rows(
// CHECK-NOT:     scf.for
// CHECK-NOT:     scf.forall
// CHECK:         return
#map = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#id = affine_map<(d0) -> (d0)>
func.func @column_sum_needs_all_rows(%x: memref<64x1024xf32>, %y: memref<64x1024xf32>, %c: memref<1024xf32>) {
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : memref<64x1024xf32>) outs(%y : memref<64x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map, #col], iterator_types = ["reduction", "parallel"]} ins(%y : memref<64x1024xf32>) outs(%c : memref<1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Not tiled: ops whose body loads from a buffer (a gather at computed rows: pooling
// gradients, ms.gather) or reads the row loop's index (random counters, one_hot) would see
// row indices relative to the tile in a tile's copy, and the run cannot see the loaded buffer.
// CHECK-LABEL: func.func @gather_and_row_index_are_not_row_ops(
// CHECK-NOT:     scf.for
// CHECK-NOT:     scf.forall
// CHECK:         return
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @gather_and_row_index_are_not_row_ops(%x: memref<64x1024xf32>, %t: memref<64x1024xf32>, %y: memref<64x1024xf32>, %z: memref<64x1024xf32>) {
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : memref<64x1024xf32>) outs(%y : memref<64x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = linalg.index 0 : index
    %c = linalg.index 1 : index
    %v = memref.load %t[%r, %c] : memref<64x1024xf32>
    %0 = arith.mulf %in, %v : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%y, %x : memref<64x1024xf32>, memref<64x1024xf32>) outs(%z : memref<64x1024xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %r = linalg.index 0 : index
    %i = arith.index_cast %r : index to i32
    %f = arith.sitofp %i : i32 to f32
    %0 = arith.mulf %in, %f : f32
    %1 = arith.addf %0, %in2 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%z : memref<64x1024xf32>) outs(%y : memref<64x1024xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    linalg.yield %0 : f32
  }
  return
}


// -----

// A dynamic row count: full tiles of 4 rows over the threads, then the remaining rows one at a
// time (every tile static: the loops inside vectorize); the per-row buffer freed after both.
// CHECK-LABEL: func.func @dynamic_rows(
// CHECK-SAME:    %[[X:.+]]: memref<?x1024xf32>, %[[Y:.+]]: memref<?x1024xf32>)
// CHECK:         %[[S:.+]] = memref.alloc(%{{.+}}) : memref<?xf32>
// CHECK:         %[[N:.+]] = memref.dim %[[S]], %{{.+}} : memref<?xf32>
// CHECK:         %[[FULL:.+]] = arith.divui %[[N]], %{{.+}} : index
// CHECK:         scf.forall (%{{.+}}) in (%[[FULL]]) {
// CHECK:           memref.subview %[[X]][%{{.+}}, 0] [4, 1024] [1, 1] : memref<?x1024xf32> to memref<4x1024xf32, strided<[1024, 1], offset: ?>>
// CHECK:           linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]
// CHECK:           linalg.generic {{.+}} outs(%{{.+}} : memref<4x1024xf32, strided<[1024, 1], offset: ?>>)
// CHECK:         scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK:           memref.subview %[[X]][%{{.+}}, 0] [1, 1024] [1, 1] : memref<?x1024xf32> to memref<1x1024xf32, strided<[1024, 1], offset: ?>>
// CHECK:         memref.dealloc %[[S]] : memref<?xf32>
// CHECK-NEXT:    return
// SEQ-LABEL:   func.func @dynamic_rows(
// SEQ-NOT:       scf.forall
// SEQ:           scf.for
// SEQ:           scf.for
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @dynamic_rows(%x: memref<?x1024xf32>, %y: memref<?x1024xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x1024xf32>
  %s = memref.alloc(%n) : memref<?xf32>
  %cst = arith.constant 0.0 : f32
  linalg.fill ins(%cst : f32) outs(%s : memref<?xf32>)
  linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x1024xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %s : memref<?x1024xf32>, memref<?xf32>) outs(%y : memref<?x1024xf32>) {
  ^bb0(%in: f32, %t: f32, %out: f32):
    %0 = arith.divf %in, %t : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %s : memref<?xf32>
  return
}

// -----

// Two per-row buffers allocated with the rows of x (memref.alloc(dim(x, 0))), each first
// filled: a fill of a fresh buffer of the same run-time row count joins the run, so the
// whole softmax-like chain is one tiled loop (before, the second fill started a new run and
// the first reduction read x once more from memory).
// CHECK-LABEL: func.func @dynamic_rows_two_buffers(
// CHECK-SAME:    %[[X:.+]]: memref<?x1024xf32>, %[[Y:.+]]: memref<?x1024xf32>)
// CHECK:         scf.forall
// CHECK-COUNT-2:   linalg.fill
// CHECK:           linalg.generic {{.+}} outs(%{{.+}} : memref<4x1024xf32, strided<[1024, 1], offset: ?>>)
// CHECK:         }
// CHECK-NOT:     linalg.fill {{.+}} memref<?xf32>)
// CHECK:         scf.for
#map2 = affine_map<(d0, d1) -> (d0, d1)>
#row2 = affine_map<(d0, d1) -> (d0)>
func.func @dynamic_rows_two_buffers(%x: memref<?x1024xf32>, %y: memref<?x1024xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x1024xf32>
  %m = memref.alloc(%n) : memref<?xf32>
  %cst = arith.constant 0.0 : f32
  linalg.fill ins(%cst : f32) outs(%m : memref<?xf32>)
  linalg.generic {indexing_maps = [#map2, #row2], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x1024xf32>) outs(%m : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maxnumf %in, %out : f32
    linalg.yield %0 : f32
  }
  %n2 = memref.dim %x, %c0 : memref<?x1024xf32>
  %s = memref.alloc(%n2) : memref<?xf32>
  linalg.fill ins(%cst : f32) outs(%s : memref<?xf32>)
  linalg.generic {indexing_maps = [#map2, #row2, #row2], iterator_types = ["parallel", "reduction"]} ins(%x, %m : memref<?x1024xf32>, memref<?xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = arith.addf %0, %out : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#map2, #row2, #map2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : memref<?x1024xf32>, memref<?xf32>) outs(%y : memref<?x1024xf32>) {
  ^bb0(%in: f32, %t: f32, %out: f32):
    %0 = arith.divf %in, %t : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %s : memref<?xf32>
  memref.dealloc %m : memref<?xf32>
  return
}
