// Dynamic sizes: ms-gpu-map-linalg reads a loop's size with memref.dim on the host, computes
// the grid there (full blocks of 256 threads, the last one guarded by the size), and maps a
// host store (a run-time size as a 0-d tensor) to a one-thread kernel;
// ms-gpu-dynamic-kernel-params then hands each dynamically shaped memref to the launch as its
// 0-d base buffer and index scalars, from which the kernel rebuilds it. (No canonicalize in
// between: it would fold the rebuilt memref back into the original before outlining.)
// RUN: ms-opt %s --ms-gpu-map-linalg --split-input-file | FileCheck %s --check-prefix=MAP
// RUN: ms-opt %s --ms-gpu-map-linalg --ms-gpu-dynamic-kernel-params --split-input-file | FileCheck %s

// MAP-LABEL: func.func @dynamic_rows
// MAP-SAME: (%[[A:.+]]: memref<?x8xf32>, %[[B:.+]]: memref<?xf32>)
// MAP: %[[ROWS:.+]] = memref.dim %[[A]], %{{.+}} : memref<?x8xf32>
// MAP: %[[GRID:.+]] = arith.ceildivui %[[ROWS]], %{{.+}} : index
// MAP: gpu.launch blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %[[GRID]],
// MAP: arith.cmpi ult, %{{.+}}, %[[ROWS]] : index
// MAP: memref.load %[[A]][%{{.+}}, %{{.+}}] : memref<?x8xf32>

// CHECK-LABEL: func.func @dynamic_rows
// CHECK-SAME: (%[[A:.+]]: memref<?x8xf32>, %[[B:.+]]: memref<?xf32>)
// CHECK: %[[BB:[a-z_0-9]+]], %{{[a-z_0-9]+}}, %[[BN:[a-z_0-9]+]], %{{[a-z_0-9]+}} = memref.extract_strided_metadata %[[B]] : memref<?xf32> -> memref<f32>, index, index, index
// CHECK: %[[AB:[a-z_0-9]+]], %{{[a-z_0-9]+}}, %[[AN:[a-z_0-9]+]]:2, %{{[a-z_0-9]+}}:2 = memref.extract_strided_metadata %[[A]] : memref<?x8xf32> -> memref<f32>, index, index, index, index, index
// CHECK: gpu.launch
// CHECK-DAG: %[[AV:.+]] = memref.reinterpret_cast %[[AB]] to offset: [0], sizes: [%[[AN]]#0, 8], strides: [8, 1] : memref<f32> to memref<?x8xf32>
// CHECK-DAG: %[[BV:.+]] = memref.reinterpret_cast %[[BB]] to offset: [0], sizes: [%[[BN]]], strides: [1] : memref<f32> to memref<?xf32>
// CHECK: memref.load %[[BV]][%{{.+}}] : memref<?xf32>
// CHECK: memref.load %[[AV]][%{{.+}}, %{{.+}}] : memref<?x8xf32>
// CHECK: memref.store %{{.+}}, %[[BV]][%{{.+}}] : memref<?xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @dynamic_rows(%a: memref<?x8xf32>, %b: memref<?xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<?x8xf32>) outs(%b : memref<?xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// MAP-LABEL: func.func @host_store
// MAP-SAME: (%[[N:.+]]: index, %[[OUT:.+]]: memref<f32>)
// MAP: %[[F:.+]] = arith.sitofp
// MAP: gpu.launch
// MAP: memref.store %[[F]], %[[OUT]][] : memref<f32>
// MAP: gpu.terminator
// MAP-NEXT: }
// MAP-NEXT: return
func.func @host_store(%n: index, %b: memref<f32>) {
  %i = arith.index_cast %n : index to i64
  %f = arith.sitofp %i : i64 to f32
  memref.store %f, %b[] : memref<f32>
  return
}
