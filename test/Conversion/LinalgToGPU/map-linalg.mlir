// ms-gpu-map-linalg: each linalg.generic (and strided memref.copy) of a host function becomes
// one gpu.launch with constant grid and block sizes.
// RUN: ms-opt %s --ms-gpu-map-linalg --canonicalize --split-input-file | FileCheck %s

// A thread per 4 consecutive elements of the flattened 4x100 space (100 threads, rounded up to
// a block of 128, the rest guarded), with aligned vector loads and stores: the rows are
// contiguous and the bias is read along them too.
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[X:.+]]: memref<4x100xf32>, %[[B:.+]]: memref<100xf32>, %[[Y:.+]]: memref<4x100xf32>)
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[C100:.+]] = arith.constant 100 : index
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK: gpu.launch blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C1]], %{{.+}} = %[[C1]], %{{.+}} = %[[C1]]) threads(%[[TX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C128]], %{{.+}} = %[[C1]], %{{.+}} = %[[C1]])
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[TX]], %[[C100]] : index
// CHECK: scf.if %[[IN]] {
// CHECK: %[[FIRST:.+]] = arith.muli %[[TX]], %[[C4]] : index
// CHECK: %[[J:.+]] = arith.remui %[[FIRST]], %[[C100]] : index
// CHECK: %[[I:.+]] = arith.divui %[[FIRST]], %[[C100]] : index
// CHECK: %[[XV:.+]] = vector.load %[[X]][%[[I]], %[[J]]] {alignment = 16 : i64} : memref<4x100xf32>, vector<4xf32>
// CHECK: %[[X0:.+]] = vector.extract %[[XV]][0]
// CHECK: %[[BV:.+]] = vector.load %[[B]][%[[J]]] {alignment = 16 : i64} : memref<100xf32>, vector<4xf32>
// CHECK: %[[B0:.+]] = vector.extract %[[BV]][0]
// CHECK: %[[S0:.+]] = arith.addf %[[X0]], %[[B0]] fastmath<contract> : f32
// CHECK-COUNT-3: arith.addf
// CHECK: %[[SV:.+]] = vector.from_elements %[[S0]], %{{.+}}, %{{.+}}, %{{.+}} : vector<4xf32>
// CHECK: vector.store %[[SV]], %[[Y]][%[[I]], %[[J]]] {alignment = 16 : i64}
// CHECK-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @elementwise(%x: memref<4x100xf32>, %b: memref<100xf32>, %y: memref<4x100xf32>) {
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<4x100xf32>, memref<100xf32>) outs(%y : memref<4x100xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c fastmath<contract> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Rows of 37 elements cannot be read as vectors: a thread per element.
// CHECK-LABEL: func.func @odd_rows
// CHECK-NOT: vector.
// CHECK: %[[A:.+]] = memref.load
// CHECK: %[[N:.+]] = arith.negf %[[A]]
// CHECK: memref.store %[[N]]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @odd_rows(%x: memref<10x37xf32>, %y: memref<10x37xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<10x37xf32>) outs(%y : memref<10x37xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  }
  return
}

// -----

// Innermost dimension reduced: a block per row; threads fold strided parts with the body,
// gpu.all_reduce combines them, thread 0 folds the result into the output.
// CHECK-LABEL: func.func @row_sum
// CHECK-SAME: (%[[X:.+]]: memref<64x1000xf32>, %[[Y:.+]]: memref<64xf32>)
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[C256:.+]] = arith.constant 256 : index
// CHECK: gpu.launch blocks(%[[BX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C64]], %{{.+}}) threads(%[[TX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C256]],
// CHECK: %[[P:.+]] = scf.for %[[K:.+]] = %[[TX]] to %{{.+}} step %[[C256]] iter_args(%[[ACC:.+]] = %{{.+}}) -> (f32) {
// CHECK-NEXT: %[[E:.+]] = memref.load %[[X]][%[[BX]], %[[K]]]
// CHECK-NEXT: %[[N:.+]] = arith.addf %[[ACC]], %[[E]]
// CHECK-NEXT: scf.yield %[[N]]
// CHECK: %[[T:.+]] = gpu.all_reduce add %[[P]] uniform
// CHECK: scf.if
// CHECK: %[[OLD:.+]] = memref.load %[[Y]][%[[BX]]]
// CHECK: %[[NEW:.+]] = arith.addf %[[OLD]], %[[T]]
// CHECK: memref.store %[[NEW]], %[[Y]][%[[BX]]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
func.func @row_sum(%x: memref<64x1000xf32>, %y: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x1000xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Outer dimension reduced: a thread per column looping over the rows (coalesced); 64
// threads cover the 64 columns exactly, so there is no guard.
// CHECK-LABEL: func.func @column_max
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK: gpu.launch blocks({{.+}}) in (%{{.+}} = %[[C1]], {{.+}}) threads({{.+}}) in (%{{.+}} = %[[C64]],
// CHECK-NOT: gpu.all_reduce
// CHECK-NOT: scf.if
// CHECK: %[[INIT:.+]] = memref.load
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[INIT]]) -> (i32)
// CHECK: arith.maxsi
#id = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (d1)>
func.func @column_max(%x: memref<1000x64xi32>, %y: memref<64xi32>) {
  linalg.generic {indexing_maps = [#id, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<1000x64xi32>) outs(%y : memref<64xi32>) {
  ^bb0(%a: i32, %o: i32):
    %s = arith.maxsi %o, %a : i32
    linalg.yield %s : i32
  }
  return
}

// -----

// A copy into a strided view is a kernel; a copy between whole buffers stays for the launch
// plan (a device-to-device copy); a self copy goes away.
// CHECK-LABEL: func.func @copies
// CHECK-SAME: (%[[A:.+]]: memref<2x3xf32>, %[[B:.+]]: memref<2x3xf32>, %[[C:.+]]: memref<2x8xf32>)
// CHECK: %[[V:.+]] = memref.subview %[[C]]
// CHECK: gpu.launch
// CHECK: memref.load %[[A]]
// CHECK: memref.store %{{.+}}, %[[V]]
// CHECK: memref.copy %[[A]], %[[B]] : memref<2x3xf32> to memref<2x3xf32>
// CHECK-NEXT: return
func.func @copies(%a: memref<2x3xf32>, %b: memref<2x3xf32>, %c: memref<2x8xf32>) {
  %v = memref.subview %c[0, 5] [2, 3] [1, 1] : memref<2x8xf32> to memref<2x3xf32, strided<[8, 1], offset: 5>>
  memref.copy %a, %v : memref<2x3xf32> to memref<2x3xf32, strided<[8, 1], offset: 5>>
  memref.copy %a, %b : memref<2x3xf32> to memref<2x3xf32>
  memref.copy %b, %b : memref<2x3xf32> to memref<2x3xf32>
  return
}


// -----

// A scatter-add reduction tagged by unsorted_segment_sum's lowering: one thread per element of
// the 6x4 rows (24 threads in a block of 32), each adding its element atomically to the row
// its id names when the id is in [0, 3); not a thread per output scanning all rows.
#rows = affine_map<(d0, d1, d2) -> (d2, d1)>
#ids = affine_map<(d0, d1, d2) -> (d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @scatter_add
// CHECK-SAME: (%[[ROWS:.+]]: memref<6x4xf32>, %[[IDS:.+]]: memref<6xi32>, %[[OUT:.+]]: memref<3x4xf32>)
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C1:.+]], {{.*}} = %[[C1]], {{.*}} = %[[C1]]) threads({{.*}}) in ({{.*}} = %[[C32:.+]], {{.*}} = %[[C1]], {{.*}} = %[[C1]])
// CHECK: arith.cmpi ult, %[[GID:.+]], %{{.+}} : index
// CHECK: %[[P:.+]] = arith.remui %[[GID]]
// CHECK: %[[K:.+]] = arith.divui %[[GID]]
// CHECK: %[[ID:.+]] = memref.load %[[IDS]][%[[K]]] : memref<6xi32>
// CHECK: arith.cmpi sge, %[[ID]]
// CHECK: arith.cmpi slt, %[[ID]]
// CHECK: scf.if
// CHECK: %[[AT:.+]] = arith.index_cast %[[ID]] : i32 to index
// CHECK: %[[X:.+]] = memref.load %[[ROWS]][%[[K]], %[[P]]] : memref<6x4xf32>
// CHECK: memref.atomic_rmw addf %[[X]], %[[OUT]][%[[AT]], %[[P]]] : (f32, memref<3x4xf32>) -> f32
// CHECK-NOT: linalg.generic
func.func @scatter_add(%rows: memref<6x4xf32>, %ids: memref<6xi32>, %out: memref<3x4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#rows, #ids, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%rows, %ids : memref<6x4xf32>, memref<6xi32>) outs(%out : memref<3x4xf32>) attrs = {ms.scatter_add} {
  ^bb0(%x: f32, %i: i32, %acc: f32):
    %seg = linalg.index 0 : index
    %seg64 = arith.index_cast %seg : index to i64
    %i64 = arith.extsi %i : i32 to i64
    %hit = arith.cmpi eq, %i64, %seg64 : i64
    %pick = arith.select %hit, %x, %zero : f32
    %sum = arith.addf %acc, %pick : f32
    linalg.yield %sum : f32
  }
  return
}
