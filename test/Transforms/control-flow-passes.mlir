// The ms-level passes inside the regions of loops and conditionals: fusion groups ops of one
// block, never across a region's boundary; canonicalization merges twins only within a
// block and removes dead ops, dead index glue and dead loops.
// RUN: ms-opt %s --ms-fuse --split-input-file | FileCheck %s --check-prefix=FUSE
// RUN: ms-opt %s --ms-canonicalize --split-input-file | FileCheck %s --check-prefix=CANON
// RUN: ms-opt %s --ms-inline --split-input-file | FileCheck %s --check-prefix=INLINE

// The exponential is read by the body (from above) and after the loop: it stays outside,
// on its own (it is not cheap enough to be copied into both). The body's chain is one
// region in the body; the ops after the loop one region after it.
// FUSE-LABEL: func.func @fuse_in_body
// FUSE: %[[E:.+]] = "ms.exp"(%arg0)
// FUSE-NEXT: arith.constant
// FUSE-NEXT: arith.constant
// FUSE-NEXT: arith.constant
// FUSE-NEXT: %[[R:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[A:.+]] = %arg0)
// FUSE-NEXT: %[[F:.+]] = "ms.fused"() ({
// FUSE-NEXT: "ms.mul"(%[[A]], %[[E]])
// FUSE-NEXT: "ms.add"
// FUSE-NEXT: "ms.tanh"
// FUSE-NEXT: gpu.yield
// FUSE-NEXT: }) {kind = "elementwise"}
// FUSE-NEXT: scf.yield %[[F]]
// FUSE-NEXT: }
// FUSE-NEXT: "ms.fused"() ({
// FUSE-NEXT: "ms.neg"(%[[R]])
// FUSE-NEXT: "ms.mul"(%{{.+}}, %[[E]])
// FUSE-NEXT: gpu.yield
func.func @fuse_in_body(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = "ms.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %iv = %c0 to %c3 step %c1 iter_args(%a = %x) -> (tensor<4x8xf32>) {
    %0 = "ms.mul"(%a, %e) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = "ms.add"(%0, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %2 = "ms.tanh"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    scf.yield %2 : tensor<4x8xf32>
  }
  %y = "ms.neg"(%r) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %z = "ms.mul"(%y, %e) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %z : tensor<4x8xf32>
}

// -----

// A reduction and its producer fuse within a branch; the branches stay apart.
// FUSE-LABEL: func.func @fuse_in_branches
// FUSE: scf.if
// FUSE-NEXT: "ms.fused"() ({
// FUSE-NEXT: "ms.exp"
// FUSE-NEXT: "ms.reduce_sum"
// FUSE-NEXT: gpu.yield
// FUSE-NEXT: }) {kind = "reduction"}
// FUSE: } else {
// FUSE-NEXT: "ms.fused"() ({
// FUSE-NEXT: "ms.mul"
// FUSE-NEXT: "ms.reduce_max"
// FUSE-NEXT: gpu.yield
// FUSE-NEXT: }) {kind = "reduction"}
func.func @fuse_in_branches(%p: i1, %x: tensor<4x8xf32>) -> tensor<4xf32> {
  %r = scf.if %p -> (tensor<4xf32>) {
    %0 = "ms.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = "ms.reduce_sum"(%0) {axis = array<i64: 1>, keep_dims = false} : (tensor<4x8xf32>) -> tensor<4xf32>
    scf.yield %1 : tensor<4xf32>
  } else {
    %0 = "ms.mul"(%x, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = "ms.reduce_max"(%0) {axis = array<i64: 1>, keep_dims = false} : (tensor<4x8xf32>) -> tensor<4xf32>
    scf.yield %1 : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// CANON-LABEL: func.func @per_block
// CANON: %[[OUT:.+]] = "ms.exp"(%arg0)
// CANON: scf.for
// CANON-NEXT: %[[IN:.+]] = "ms.exp"(%arg0)
// CANON-NEXT: %[[S:.+]] = "ms.add"(%[[IN]], %[[IN]])
// CANON-NEXT: scf.yield %[[S]]
// CANON-NOT: scf.for
// CANON-NOT: ms.neg
// CANON: return %[[OUT]]
func.func @per_block(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "ms.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %iv = %c0 to %c3 step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %i = arith.index_cast %iv : index to i64
    %t = tensor.from_elements %i : tensor<i64>
    %1 = "ms.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %2 = "ms.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %3 = "ms.add"(%1, %2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %dead = "ms.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %3 : tensor<4xf32>
  }
  %unused = scf.for %iv = %c0 to %c3 step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %1 = "ms.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %1 : tensor<4xf32>
  }
  return %0, %r : tensor<4xf32>, tensor<4xf32>
}

// -----

// A call in a loop body (a gradient taken inside the body becomes one) is inlined there.
// INLINE-LABEL: func.func @call_in_body
// INLINE: scf.for
// INLINE-NEXT: %[[E:.+]] = "ms.exp"
// INLINE-NEXT: scf.yield %[[E]]
// INLINE-NOT: func.func private @body
func.func private @body(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "ms.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @call_in_body(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %iv = %c0 to %c3 step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %0 = func.call @body(%a) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %0 : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
