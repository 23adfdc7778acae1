// RUN: ms-opt %s --split-input-file --ms-cpu-store-terms | FileCheck %s

// softmax: the summing loop also writes each exponential into the output, which the
// normalization then scales in place instead of computing the exponential again.
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:    %[[X:.+]]: memref<4x32xf32>, %[[M:.+]]: memref<4xf32>, %[[S:.+]]: memref<4xf32>, %[[R:.+]]: memref<4xf32>, %[[Y:.+]]: memref<4x32xf32>)
// CHECK:         linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}, #[[ID:.+]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      ins(%[[X]], %[[M]] : {{.*}}) outs(%[[S]], %[[Y]] : {{.*}})
// CHECK-NEXT:    ^bb0(%[[IN:.+]]: f32, %[[MX:.+]]: f32, %[[ACC:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      %[[D:.+]] = arith.subf %[[IN]], %[[MX]]
// CHECK-NEXT:      %[[E:.+]] = math.exp %[[D]]
// CHECK-NEXT:      %[[N:.+]] = arith.addf %[[ACC]], %[[E]]
// CHECK-NEXT:      linalg.yield %[[N]], %[[E]] : f32, f32
// CHECK:         linalg.generic {{.*}} ins(%[[S]] : {{.*}}) outs(%[[R]] :
// CHECK:         linalg.generic {{.*}} outs(%[[Y]] :
// CHECK-NEXT:    ^bb0(%{{.+}}: f32, %{{.+}}: f32, %[[RC:.+]]: f32, %[[OUT:.+]]: f32):
// CHECK-NEXT:      %[[P:.+]] = arith.mulf %[[OUT]], %[[RC]]
// CHECK-NEXT:      linalg.yield %[[P]] : f32
// CHECK-NOT:     math.exp
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#vec = affine_map<(d0) -> (d0)>
func.func @softmax(%x: memref<4x32xf32>, %m: memref<4xf32>, %s: memref<4xf32>, %r: memref<4xf32>, %y: memref<4x32xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.generic {indexing_maps = [#map, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %m : memref<4x32xf32>, memref<4xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]} ins(%s : memref<4xf32>) outs(%r : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.divf %one, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map, #row, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %m, %r : memref<4x32xf32>, memref<4xf32>, memref<4xf32>) outs(%y : memref<4x32xf32>) {
  ^bb0(%in: f32, %mx: f32, %rc: f32, %out: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.mulf %1, %rc : f32
    linalg.yield %2 : f32
  }
  return
}

// -----

// Left alone: log_softmax's last loop computes no exponential; a term computed from another
// buffer (%m2) is another term; an output used between the two loops; a float16 output
// cannot hold the float32 term.
// CHECK-LABEL: func.func @no_pair(
// CHECK-COUNT-4: linalg.generic {{.*}} outs(%{{[^,]+}} : memref<{{[^,]+}}>) {
// CHECK-NOT:     linalg.generic
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @no_pair(%x: memref<4x32xf32>, %m: memref<4xf32>, %m2: memref<4xf32>, %s: memref<4xf32>, %y: memref<4x32xf32>, %h: memref<4x32xf16>) {
  linalg.generic {indexing_maps = [#map, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %m : memref<4x32xf32>, memref<4xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %m : memref<4x32xf32>, memref<4xf32>) outs(%y : memref<4x32xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %0 = arith.subf %in, %mx : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %m2 : memref<4x32xf32>, memref<4xf32>) outs(%y : memref<4x32xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %m : memref<4x32xf32>, memref<4xf32>) outs(%h : memref<4x32xf16>) {
  ^bb0(%in: f32, %mx: f32, %out: f16):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.truncf %1 : f32 to f16
    linalg.yield %2 : f16
  }
  return
}

// -----

// Left alone: the output is written between the two loops.
// CHECK-LABEL: func.func @output_used_between(
// CHECK:         outs(%{{.+}} : memref<4xf32>) {
// CHECK-COUNT-2: math.exp
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @output_used_between(%x: memref<4x32xf32>, %m: memref<4xf32>, %s: memref<4xf32>, %y: memref<4x32xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#map, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %m : memref<4x32xf32>, memref<4xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  linalg.fill ins(%zero : f32) outs(%y : memref<4x32xf32>)
  linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %m : memref<4x32xf32>, memref<4xf32>) outs(%y : memref<4x32xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %1, %out : f32
    linalg.yield %2 : f32
  }
  return
}

// -----

// Left alone: the later loop reads its output's old values.
// CHECK-LABEL: func.func @output_read(
// CHECK:         outs(%{{.+}} : memref<4xf32>) {
// CHECK-COUNT-2: math.exp
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @output_read(%x: memref<4x32xf32>, %m: memref<4xf32>, %s: memref<4xf32>, %y: memref<4x32xf32>) {
  linalg.generic {indexing_maps = [#map, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %m : memref<4x32xf32>, memref<4xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %m : memref<4x32xf32>, memref<4xf32>) outs(%y : memref<4x32xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %0 = arith.subf %in, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %1, %out : f32
    linalg.yield %2 : f32
  }
  return
}
