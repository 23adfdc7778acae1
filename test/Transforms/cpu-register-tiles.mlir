// RUN: ms-opt %s --split-input-file --ms-cpu-matmul-schedule="vector-bits=512 l1d-bytes=49152 l1d-ways=12" | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-cpu-matmul-schedule="vector-bits=512 l1d-bytes=49152 l1d-ways=12" | ms-opt --split-input-file > /dev/null

// The register tiles ms-cpu-matmul-schedule builds as vector code itself
// (passes/cpu_register_tiles.py): C's 8 rows of 32 loaded before the loop over k and carried
// by it, one row of B and 8 broadcast elements of A per k, the rows stored after it; loads
// and stores index the kernel's arguments (the tiles' subviews folded away), only k's offset
// added inside the loop.
// CHECK-LABEL: func.func private @small__matmul0(
// CHECK-SAME:    %[[A:[^:]+]]: memref<16x24xf32>, %[[B:[^:]+]]: memref<24x64xf32>, %[[C:[^:]+]]: memref<16x64xf32>)
// CHECK-NOT:     memref.subview
// CHECK:         %[[C0:.+]] = vector.load %[[C]][%[[R0:.+]], %[[COL:.+]]] : memref<16x64xf32>, vector<32xf32>
// CHECK-COUNT-7: vector.load %[[C]][%{{.+}}, %[[COL]]] : memref<16x64xf32>, vector<32xf32>
// CHECK:         %[[ROWS:.+]]:8 = scf.for %[[K:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC0:[^ ]+]] = %[[C0]], {{.+}}) -> (vector<32xf32>, {{.+}}) {
// CHECK:           %[[BK:.+]] = arith.addi %{{.+}}, %[[K]] : index
// CHECK:           %[[BROW:.+]] = vector.load %[[B]][%[[BK]], %{{.+}}] : memref<24x64xf32>, vector<32xf32>
// CHECK:           %[[AK:.+]] = arith.addi %{{.+}}, %[[K]] : index
// CHECK:           %[[A0:.+]] = memref.load %[[A]][%{{.+}}, %[[AK]]] : memref<16x24xf32>
// CHECK:           %[[A0V:.+]] = vector.broadcast %[[A0]] : f32 to vector<32xf32>
// CHECK:           %[[S0:.+]] = vector.fma %[[BROW]], %[[A0V]], %[[ACC0]] : vector<32xf32>
// CHECK-COUNT-7:   vector.fma %[[BROW]], %{{.+}}, %{{.+}} : vector<32xf32>
// CHECK:           scf.yield %[[S0]],
// CHECK:         vector.store %[[ROWS]]#0, %[[C]][%[[R0]], %[[COL]]] : memref<16x64xf32>, vector<32xf32>
// CHECK-COUNT-7: vector.store %[[ROWS]]#{{[1-7]}}, %[[C]]
// CHECK-NOT:     linalg.
// CHECK:         return
func.func @small(%a: memref<16x24xf32>, %b: memref<24x64xf32>, %c: memref<16x64xf32>) {
  call @small__matmul0(%a, %b, %c) : (memref<16x24xf32>, memref<24x64xf32>, memref<16x64xf32>) -> ()
  return
}
func.func private @small__matmul0(%a: memref<16x24xf32>, %b: memref<24x64xf32>, %c: memref<16x64xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<16x24xf32>, memref<24x64xf32>) outs(%c : memref<16x64xf32>)
  return
}

// -----

// An epilogue tile (one row, 32 columns) is its body on vectors: the row's input loaded, an
// input of one element per row and a scalar from outside broadcast, every op on vector<32>.
// Loops of one iteration (here all but the epilogue's rows and the product's k) are gone,
// as the generic vectorizer's canonicalization left them. (This epilogue writes another
// buffer than C, D, so it is a loop of its own, not computed on the tiles as below.)
// CHECK-LABEL: func.func private @epilogue__matmul0(
// CHECK-SAME:    %[[S:[^:]+]]: memref<8xf32>, %[[C:[^:]+]]: memref<8x32xf32>, %[[D:[^:]+]]: memref<8x32xf32>, %[[T:[^:]+]]: f32)
// CHECK-NOT:     scf.for
// CHECK:         scf.for {{.+}} iter_args
// CHECK:           vector.fma
// CHECK-NOT:     scf.for
// CHECK:         scf.for %[[I:[^ ]+]] =
// CHECK-NEXT:      %[[SI:.+]] = memref.load %[[S]][%[[I]]] : memref<8xf32>
// CHECK-NEXT:      %[[SV:.+]] = vector.broadcast %[[SI]] : f32 to vector<32xf32>
// CHECK-NEXT:      %[[OUT:.+]] = vector.load %[[C]][%[[I]], %[[J:.+]]] : memref<8x32xf32>, vector<32xf32>
// CHECK-NEXT:      %[[TWO:.+]] = arith.constant 2.0{{0*}}e+00 : f32
// CHECK-NEXT:      %[[TWOV:.+]] = vector.broadcast %[[TWO]] : f32 to vector<32xf32>
// CHECK-NEXT:      %[[M:.+]] = arith.mulf %[[OUT]], %[[SV]] : vector<32xf32>
// CHECK-NEXT:      %[[P:.+]] = arith.addf %[[M]], %[[TWOV]] : vector<32xf32>
// CHECK-NEXT:      %[[TV:.+]] = vector.broadcast %[[T]] : f32 to vector<32xf32>
// CHECK-NEXT:      %[[Q:.+]] = arith.subf %[[P]], %[[TV]] fastmath<contract> : vector<32xf32>
// CHECK-NEXT:      vector.store %[[Q]], %[[D]][%[[I]], %[[J]]] : memref<8x32xf32>, vector<32xf32>
// CHECK-NOT:     linalg.generic
func.func @epilogue(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %s: memref<8xf32>, %c: memref<8x32xf32>, %d: memref<8x32xf32>, %t: f32) {
  call @epilogue__matmul0(%a, %b, %s, %c, %d, %t) : (memref<8x16xf32>, memref<16x32xf32>, memref<8xf32>, memref<8x32xf32>, memref<8x32xf32>, f32) -> ()
  return
}
func.func private @epilogue__matmul0(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %s: memref<8xf32>, %c: memref<8x32xf32>, %d: memref<8x32xf32>, %t: f32) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%s, %c : memref<8xf32>, memref<8x32xf32>) outs(%d : memref<8x32xf32>) {
  ^bb0(%in: f32, %cin: f32, %out: f32):
    %two = arith.constant 2.0 : f32
    %m = arith.mulf %cin, %in : f32
    %p = arith.addf %m, %two : f32
    %q = arith.subf %p, %t fastmath<contract> : f32
    linalg.yield %q : f32
  }
  return
}

// -----

// Where the epilogue writes C, it is computed on the register tile's rows before they are
// stored (passes/cpu_fused_epilogues.py): per row, the per-row input loaded and broadcast,
// the body on the row's accumulator, the result stored into C; no loop of its own, no load
// of C.
// CHECK-LABEL: func.func private @fused__matmul0(
// CHECK-SAME:    %[[S:[^:]+]]: memref<8xf32>, %[[C:[^:]+]]: memref<8x32xf32>, %[[T:[^:]+]]: f32)
// CHECK:         %[[ROWS:.+]]:8 = scf.for {{.+}} iter_args
// CHECK:           vector.fma
// CHECK:         }
// CHECK-NEXT:    %[[S0:.+]] = memref.load %[[S]][%[[I0:[a-z0-9_]+]]] : memref<8xf32>
// CHECK-NEXT:    %[[S0V:.+]] = vector.broadcast %[[S0]] : f32 to vector<32xf32>
// CHECK-NEXT:    %[[TWO:.+]] = arith.constant 2.0{{0*}}e+00 : f32
// CHECK-NEXT:    %[[TWOV:.+]] = vector.broadcast %[[TWO]] : f32 to vector<32xf32>
// CHECK-NEXT:    %[[M:.+]] = arith.mulf %[[ROWS]]#0, %[[S0V]] : vector<32xf32>
// CHECK-NEXT:    %[[P:.+]] = arith.addf %[[M]], %[[TWOV]] : vector<32xf32>
// CHECK-NEXT:    %[[TV:.+]] = vector.broadcast %[[T]] : f32 to vector<32xf32>
// CHECK-NEXT:    %[[Q:.+]] = arith.subf %[[P]], %[[TV]] fastmath<contract> : vector<32xf32>
// CHECK-NEXT:    vector.store %[[Q]], %[[C]][%[[I0]], %{{.+}}] : memref<8x32xf32>, vector<32xf32>
// CHECK-COUNT-7: arith.subf {{.+}} : vector<32xf32>
// CHECK-NOT:     vector.load %[[C]]
// CHECK-NOT:     scf.for
// CHECK-NOT:     linalg.
// CHECK:         return
func.func @fused(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %s: memref<8xf32>, %c: memref<8x32xf32>, %t: f32) {
  call @fused__matmul0(%a, %b, %s, %c, %t) : (memref<8x16xf32>, memref<16x32xf32>, memref<8xf32>, memref<8x32xf32>, f32) -> ()
  return
}
func.func private @fused__matmul0(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %s: memref<8xf32>, %c: memref<8x32xf32>, %t: f32) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%c : memref<8x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%s : memref<8xf32>) outs(%c : memref<8x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %two = arith.constant 2.0 : f32
    %m = arith.mulf %out, %in : f32
    %p = arith.addf %m, %two : f32
    %q = arith.subf %p, %t fastmath<contract> : f32
    linalg.yield %q : f32
  }
  return
}

// -----

// Two K panels: the tiles of the first panel store C's rows, those of the last (their k
// ending at K, tested on the panel's start) compute the epilogue on them.
// CHECK-LABEL: func.func private @fused_panels__matmul0(
// CHECK-SAME:    %[[S:[^:]+]]: memref<8xf32>, %[[C:[^:]+]]: memref<8x32xf32>)
// CHECK:         scf.for %[[P:[^ ]+]] = {{.+}} {
// CHECK:           %[[ROWS:.+]]:8 = scf.for {{.+}} iter_args
// CHECK:             scf.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[END:.+]] = arith.addi %[[P]], %{{.+}} : index
// CHECK:           %[[LAST:.+]] = arith.cmpi eq, %[[END]], %{{.+}} : index
// CHECK:           scf.if %[[LAST]] {
// CHECK:             memref.load %[[S]]
// CHECK:             arith.mulf %[[ROWS]]#0, %{{.+}} : vector<32xf32>
// CHECK:             vector.store %{{.+}}, %[[C]]
// CHECK:           } else {
// CHECK-NEXT:        vector.store %[[ROWS]]#0, %[[C]]
// CHECK-NOT:     linalg.
// CHECK:         return
func.func @fused_panels(%a: memref<8x512xf32>, %b: memref<512x32xf32>, %s: memref<8xf32>, %c: memref<8x32xf32>) {
  call @fused_panels__matmul0(%a, %b, %s, %c) : (memref<8x512xf32>, memref<512x32xf32>, memref<8xf32>, memref<8x32xf32>) -> ()
  return
}
func.func private @fused_panels__matmul0(%a: memref<8x512xf32>, %b: memref<512x32xf32>, %s: memref<8xf32>, %c: memref<8x32xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<8x512xf32>, memref<512x32xf32>) outs(%c : memref<8x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%s : memref<8xf32>) outs(%c : memref<8x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %out, %in : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// A product the builder does not take (bfloat16 operands, a float32 result) is vectorized
// by the generic vectorizer: its register tile is one vector<8x32> carried across k.
// CHECK-LABEL: func.func private @mixed__matmul0(
// CHECK:         scf.for {{.+}} iter_args({{.+}}) -> (vector<8x32xf32>) {
// CHECK:           arith.extf {{.+}} : vector<8x1xbf16> to vector<8x1xf32>
// CHECK:           vector.fma {{.+}} : vector<32xf32>
// CHECK-NOT:     linalg.matmul
func.func @mixed(%a: memref<16x24xbf16>, %b: memref<24x64xbf16>, %c: memref<16x64xf32>) {
  call @mixed__matmul0(%a, %b, %c) : (memref<16x24xbf16>, memref<24x64xbf16>, memref<16x64xf32>) -> ()
  return
}
func.func private @mixed__matmul0(%a: memref<16x24xbf16>, %b: memref<24x64xbf16>, %c: memref<16x64xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<16x24xbf16>, memref<24x64xbf16>) outs(%c : memref<16x64xf32>)
  return
}

// -----

// C zeroed at the kernel's entry (ms-cpu-kernel-zero-init): with one K panel every tile
// starts from zero registers instead of loading C, and the fill is gone.
// CHECK-LABEL: func.func private @zeroed__matmul0(
// CHECK-SAME:    %{{[^:]+}}: memref<16x24xf32>, %{{[^:]+}}: memref<24x64xf32>, %[[C:[^:]+]]: memref<16x64xf32>)
// CHECK-NOT:     linalg.fill
// CHECK-NOT:     vector.load %[[C]]
// CHECK:         %[[Z:.+]] = arith.constant dense<0.0{{0*}}e+00> : vector<32xf32>
// CHECK-NOT:     vector.load %[[C]]
// CHECK:         scf.for {{.+}} iter_args(%{{[^ ]+}} = %[[Z]], %{{[^ ]+}} = %[[Z]],
// CHECK:         vector.store %{{.+}}, %[[C]]
// CHECK-NOT:     linalg.
// CHECK:         return
func.func @zeroed(%a: memref<16x24xf32>, %b: memref<24x64xf32>, %c: memref<16x64xf32>) {
  call @zeroed__matmul0(%a, %b, %c) : (memref<16x24xf32>, memref<24x64xf32>, memref<16x64xf32>) -> ()
  return
}
func.func private @zeroed__matmul0(%a: memref<16x24xf32>, %b: memref<24x64xf32>, %c: memref<16x64xf32>) attributes {ms.kernel = "matmul"} {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<16x64xf32>)
  linalg.matmul ins(%a, %b : memref<16x24xf32>, memref<24x64xf32>) outs(%c : memref<16x64xf32>)
  return
}

// -----

// Two K panels (K = 512, panels of 256): a tile starts from zeros in the first panel and
// from C's rows in the second, chosen by the panel's start.
// CHECK-LABEL: func.func private @panels__matmul0(
// CHECK-SAME:    %{{[^:]+}}: memref<16x512xf32>, %{{[^:]+}}: memref<512x64xf32>, %[[C:[^:]+]]: memref<16x64xf32>)
// CHECK-NOT:     linalg.fill
// CHECK:         scf.for %[[P:[^ ]+]] = {{.+}} step %{{.+}} {
// CHECK:           %[[FIRST:.+]] = arith.cmpi eq, %[[P]], %{{.+}} : index
// CHECK:           %[[ROWS:.+]]:8 = scf.if %[[FIRST]] -> (vector<32xf32>,
// CHECK:             %[[Z:.+]] = arith.constant dense<0.0{{0*}}e+00> : vector<32xf32>
// CHECK:             scf.yield %[[Z]], %[[Z]],
// CHECK:           } else {
// CHECK-COUNT-8:     vector.load %[[C]]
// CHECK:             scf.yield
// CHECK:           scf.for {{.+}} iter_args(%{{[^ ]+}} = %[[ROWS]]#0,
// CHECK-NOT:     linalg.
// CHECK:         return
func.func @panels(%a: memref<16x512xf32>, %b: memref<512x64xf32>, %c: memref<16x64xf32>) {
  call @panels__matmul0(%a, %b, %c) : (memref<16x512xf32>, memref<512x64xf32>, memref<16x64xf32>) -> ()
  return
}
func.func private @panels__matmul0(%a: memref<16x512xf32>, %b: memref<512x64xf32>, %c: memref<16x64xf32>) attributes {ms.kernel = "matmul"} {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<16x64xf32>)
  linalg.matmul ins(%a, %b : memref<16x512xf32>, memref<512x64xf32>) outs(%c : memref<16x64xf32>)
  return
}

// -----

// A ragged edge of columns wider than one vector register and not a whole number of them is
// one tile of whole registers with its loads and stores masked: 56 columns are a tile of 32
// and a tile of 24 as masked vector<32>, never a vector<24> (which LLVM legalizes by
// widening to 32 and splitting: 3-5x the code generation time) nor a piece per register.
// CHECK-LABEL: func.func private @ragged__matmul0(
// CHECK-COUNT-8: vector.load %{{.+}} : memref<8x56xf32>, vector<32xf32>
// CHECK:         scf.for
// CHECK-COUNT-8: vector.store %{{.+}} : memref<8x56xf32>, vector<32xf32>
// CHECK:         %[[MASK:.+]] = vector.constant_mask [24] : vector<32xi1>
// CHECK-COUNT-8: vector.maskedload %[[C:[a-z0-9_]+]][%{{.+}}], %[[MASK]], %{{.+}} : memref<8x56xf32>, vector<32xi1>, vector<32xf32> into vector<32xf32>
// CHECK:         scf.for
// CHECK:           vector.maskedload %{{[a-z0-9_]+}}[%{{.+}}], %[[MASK]], %{{.+}} : memref<4x56xf32>, vector<32xi1>, vector<32xf32> into vector<32xf32>
// CHECK:           vector.fma
// CHECK-COUNT-8: vector.maskedstore %[[C]][%{{.+}}], %[[MASK]], %{{.+}} : memref<8x56xf32>, vector<32xi1>, vector<32xf32>
// CHECK-NOT:     vector<24xf32>
// CHECK-NOT:     vector<16xf32>
// CHECK:         return
func.func @ragged(%a: memref<8x4xf32>, %b: memref<4x56xf32>, %c: memref<8x56xf32>) {
  call @ragged__matmul0(%a, %b, %c) : (memref<8x4xf32>, memref<4x56xf32>, memref<8x56xf32>) -> ()
  return
}
func.func private @ragged__matmul0(%a: memref<8x4xf32>, %b: memref<4x56xf32>, %c: memref<8x56xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x56xf32>) outs(%c : memref<8x56xf32>)
  return
}

// -----

// Rows that no register tile of 8 divides are tiles of the largest height from 8 down to 6
// that divides them, not tiles of 8 and a piece of the rest: 84 rows are 12 tiles of 7.
// CHECK-LABEL: func.func private @rows__matmul0(
// CHECK:         %[[SEVEN:.+]] = arith.constant 7 : index
// CHECK:         scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[SEVEN]]
// CHECK-COUNT-7: vector.load %{{.+}} : memref<84x32xf32>, vector<32xf32>
// CHECK-NOT:     vector.load %{{.+}} : memref<84x32xf32>, vector<32xf32>
// CHECK:         scf.for
// CHECK-COUNT-7: vector.store %{{.+}} : memref<84x32xf32>, vector<32xf32>
// CHECK-NOT:     scf.for
// CHECK:         return
func.func @rows(%a: memref<84x4xf32>, %b: memref<4x32xf32>, %c: memref<84x32xf32>) {
  call @rows__matmul0(%a, %b, %c) : (memref<84x4xf32>, memref<4x32xf32>, memref<84x32xf32>) -> ()
  return
}
func.func private @rows__matmul0(%a: memref<84x4xf32>, %b: memref<4x32xf32>, %c: memref<84x32xf32>) attributes {ms.kernel = "matmul"} {
  linalg.matmul ins(%a, %b : memref<84x4xf32>, memref<4x32xf32>) outs(%c : memref<84x32xf32>)
  return
}
