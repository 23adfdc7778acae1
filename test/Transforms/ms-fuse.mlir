// ms-fuse: which ops group into ms.fused regions, and which must not.
// RUN: ms-opt %s --ms-fuse --split-input-file | FileCheck %s
// RUN: ms-opt %s --ms-fuse=max-ops=3 --split-input-file | FileCheck %s --check-prefix=BOUND

// An elementwise chain with broadcasting (a row vector and a scalar) is one region.
// CHECK-LABEL: func.func @chain
func.func @chain(%x: tensor<4x8xf32>, %a: tensor<8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[HALF:.+]] = "ms.constant"
  // CHECK-NEXT: %[[R:.+]] = "ms.fused"() ({
  // CHECK-NEXT: "ms.mul"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8xf32>)
  // CHECK-NEXT: "ms.add"
  // CHECK-NEXT: "ms.tanh"
  // CHECK-NEXT: "ms.sigmoid"
  // CHECK-NEXT: "ms.mul"
  // CHECK-NEXT: "ms.mul"(%{{.*}}, %[[HALF]])
  // CHECK-NEXT: %[[Y:.+]] = "ms.add"
  // CHECK-NEXT: gpu.yield %[[Y]] : tensor<4x8xf32>
  // CHECK-NEXT: }) {kind = "elementwise"} : () -> tensor<4x8xf32>
  // CHECK-NEXT: return %[[R]]
  %half = "ms.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %0 = "ms.mul"(%x, %a) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = "ms.add"(%0, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "ms.tanh"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "ms.sigmoid"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = "ms.mul"(%2, %3) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = "ms.mul"(%x, %half) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %6 = "ms.add"(%4, %5) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %6 : tensor<4x8xf32>
}

// -----

// layernorm: the mean stays alone (it is broadcast into both loops that read it); the
// variance loop takes x - mean and its square as its prologue and + eps, rsqrt as its
// epilogue; the output loop recomputes the cheap x - mean rather than storing it, and does
// not take rsqrt (a row value: it would be recomputed for every element of the row).
// CHECK-LABEL: func.func @layernorm
func.func @layernorm(%x: tensor<16x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<16x32xf32> {
  // CHECK: %[[EPS:.+]] = "ms.constant"
  // CHECK-NEXT: %[[MEAN:.+]] = "ms.reduce_mean"(%{{.*}}) {axis = array<i64: 1>, keep_dims = true}
  // CHECK-NEXT: %[[RSTD:.+]] = "ms.fused"() ({
  // CHECK-NEXT: %[[D:.+]] = "ms.sub"(%{{.*}}, %[[MEAN]])
  // CHECK-NEXT: %[[SQ:.+]] = "ms.mul"(%[[D]], %[[D]])
  // CHECK-NEXT: %[[VAR:.+]] = "ms.reduce_mean"(%[[SQ]])
  // CHECK-NEXT: %[[VE:.+]] = "ms.add"(%[[VAR]], %[[EPS]])
  // CHECK-NEXT: %[[RS:.+]] = "ms.rsqrt"(%[[VE]])
  // CHECK-NEXT: gpu.yield %[[RS]] : tensor<16x1xf32>
  // CHECK-NEXT: }) {kind = "reduction"} : () -> tensor<16x1xf32>
  // CHECK-NEXT: %[[Y:.+]] = "ms.fused"() ({
  // CHECK-NEXT: %[[D2:.+]] = "ms.sub"(%{{.*}}, %[[MEAN]])
  // CHECK-NEXT: "ms.mul"(%[[D2]], %[[RSTD]])
  // CHECK-NEXT: "ms.mul"
  // CHECK-NEXT: "ms.add"
  // CHECK-NEXT: gpu.yield
  // CHECK-NEXT: }) {kind = "elementwise"} : () -> tensor<16x32xf32>
  // CHECK-NEXT: return %[[Y]]
  %eps = "ms.constant"() {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %mean = "ms.reduce_mean"(%x) {axis = array<i64: 1>, keep_dims = true} : (tensor<16x32xf32>) -> tensor<16x1xf32>
  %d = "ms.sub"(%x, %mean) : (tensor<16x32xf32>, tensor<16x1xf32>) -> tensor<16x32xf32>
  %sq = "ms.mul"(%d, %d) : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
  %var = "ms.reduce_mean"(%sq) {axis = array<i64: 1>, keep_dims = true} : (tensor<16x32xf32>) -> tensor<16x1xf32>
  %ve = "ms.add"(%var, %eps) : (tensor<16x1xf32>, tensor<f32>) -> tensor<16x1xf32>
  %rstd = "ms.rsqrt"(%ve) : (tensor<16x1xf32>) -> tensor<16x1xf32>
  %n = "ms.mul"(%d, %rstd) : (tensor<16x32xf32>, tensor<16x1xf32>) -> tensor<16x32xf32>
  %s = "ms.mul"(%n, %g) : (tensor<16x32xf32>, tensor<32xf32>) -> tensor<16x32xf32>
  %y = "ms.add"(%s, %b) : (tensor<16x32xf32>, tensor<32xf32>) -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}

// -----

// A scaled softmax: the cheap scale fuses into the softmax's loops.
// CHECK-LABEL: func.func @scaled_softmax
func.func @scaled_softmax(%x: tensor<4x8xf32>, %c: tensor<f32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %[[R:.+]] = "ms.fused"() ({
  // CHECK-NEXT: "ms.mul"
  // CHECK-NEXT: "ms.softmax"
  // CHECK-NEXT: gpu.yield
  // CHECK-NEXT: }) {kind = "reduction"}
  %0 = "ms.mul"(%x, %c) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = "ms.softmax"(%0) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// softmax reads its input three times: an expensive producer would be computed three times.
// CHECK-LABEL: func.func @softmax_of_exp
func.func @softmax_of_exp(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: "ms.exp"
  // CHECK-NEXT: "ms.softmax"
  // CHECK-NOT: ms.fused
  %0 = "ms.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "ms.softmax"(%0) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A reduction of an expensive producer read once (logsumexp's core) fuses.
// CHECK-LABEL: func.func @sum_exp
func.func @sum_exp(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: "ms.fused"() ({
  // CHECK-NEXT: "ms.exp"
  // CHECK-NEXT: "ms.reduce_sum"
  // CHECK-NEXT: "ms.log"
  // CHECK-NEXT: gpu.yield
  // CHECK-NEXT: }) {kind = "reduction"} : () -> tensor<4xf32>
  %0 = "ms.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "ms.reduce_sum"(%0) {axis = array<i64: 1>, keep_dims = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  %2 = "ms.log"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// A dense layer: bias, activation and scale form the matmul's epilogue; the activation of
// the input does not fuse into the matmul (it would be recomputed for every output column).
// CHECK-LABEL: func.func @dense
func.func @dense(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %s: tensor<f32>) -> tensor<8x32xf32> {
  // CHECK-NEXT: %[[A:.+]] = "ms.relu"
  // CHECK-NEXT: "ms.fused"() ({
  // CHECK-NEXT: "ms.matmul"(%[[A]], %{{.*}})
  // CHECK-NEXT: "ms.add"
  // CHECK-NEXT: "ms.relu"
  // CHECK-NEXT: "ms.mul"
  // CHECK-NEXT: gpu.yield
  // CHECK-NEXT: }) {kind = "matmul"} : () -> tensor<8x32xf32>
  %a = "ms.relu"(%x) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %0 = "ms.matmul"(%a, %w) {transpose_a = false, transpose_b = false} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = "ms.add"(%0, %b) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = "ms.relu"(%1) : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %3 = "ms.mul"(%2, %s) : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  return %3 : tensor<8x32xf32>
}

// -----

// A batched epilogue.
// CHECK-LABEL: func.func @batched
func.func @batched(%x: tensor<2x4x8xf32>, %w: tensor<2x8x4xf32>) -> tensor<2x4x4xf32> {
  // CHECK-NEXT: "ms.fused"() ({
  // CHECK-NEXT: "ms.batch_matmul"
  // CHECK-NEXT: "ms.tanh"
  // CHECK-NEXT: gpu.yield
  // CHECK-NEXT: }) {kind = "matmul"}
  %0 = "ms.batch_matmul"(%x, %w) {transpose_a = false, transpose_b = false} : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %1 = "ms.tanh"(%0) : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %1 : tensor<2x4x4xf32>
}

// -----

// A value also used outside: an expensive one is not fused (nor recomputed) ...
// CHECK-LABEL: func.func @used_outside_expensive
func.func @used_outside_expensive(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK-NEXT: %[[E:.+]] = "ms.exp"
  // CHECK-NEXT: %[[A:.+]] = "ms.add"(%[[E]], %[[E]])
  // CHECK-NEXT: return %[[A]], %[[E]]
  %e = "ms.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %a = "ms.add"(%e, %e) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %a, %e : tensor<8xf32>, tensor<8xf32>
}

// -----

// ... a cheap one is stored once when another user needs it stored (here: returned), and
// its consumer reads it (recomputing it would read both its operands again).
// CHECK-LABEL: func.func @used_outside_cheap
func.func @used_outside_cheap(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK-NEXT: %[[M:.+]] = "ms.mul"(%arg0, %arg0)
  // CHECK-NEXT: %[[E:.+]] = "ms.exp"(%[[M]])
  // CHECK-NEXT: return %[[E]], %[[M]]
  %m = "ms.mul"(%x, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %e = "ms.exp"(%m) : (tensor<8xf32>) -> tensor<8xf32>
  return %e, %m : tensor<8xf32>, tensor<8xf32>
}

// -----

// ... unless it broadcasts a smaller operand: recomputing it reads less than reading it,
// so it is recomputed in the region and stays for its other user.
// CHECK-LABEL: func.func @used_outside_cheap_broadcast
func.func @used_outside_cheap_broadcast(%x: tensor<8xf32>, %s: tensor<1xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK-NEXT: %[[M:.+]] = "ms.mul"(%arg0, %arg1)
  // CHECK-NEXT: %[[R:.+]] = "ms.fused"() ({
  // CHECK-NEXT: %[[M2:.+]] = "ms.mul"(%arg0, %arg1)
  // CHECK-NEXT: "ms.exp"(%[[M2]])
  // CHECK-NEXT: gpu.yield
  // CHECK-NEXT: }) {kind = "elementwise"}
  // CHECK-NEXT: return %[[R]], %[[M]]
  %m = "ms.mul"(%x, %s) : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %e = "ms.exp"(%m) : (tensor<8xf32>) -> tensor<8xf32>
  return %e, %m : tensor<8xf32>, tensor<8xf32>
}

// -----

// A cycle: the matmul feeds the add directly and through a transpose, which cannot fuse.
// A region {matmul, add} would need the transpose's input from inside and its output from
// outside, so the matmul stays out.
// CHECK-LABEL: func.func @cycle
func.func @cycle(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // CHECK-NEXT: %[[MM:.+]] = "ms.matmul"
  // CHECK-NEXT: %[[T:.+]] = "ms.transpose"(%[[MM]])
  // CHECK-NEXT: "ms.add"(%[[MM]], %[[T]])
  // CHECK-NOT: ms.fused
  %0 = "ms.matmul"(%x, %w) {transpose_a = false, transpose_b = false} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = "ms.transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %2 = "ms.add"(%0, %1) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}

// -----

// Broadcast recomputation: an expensive row value is not evaluated once per element, a
// cheap one is.
// CHECK-LABEL: func.func @broadcast_producers
func.func @broadcast_producers(%x: tensor<4x8xf32>, %r: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %[[E:.+]] = "ms.exp"(%arg1)
  // CHECK-NEXT: "ms.fused"() ({
  // CHECK-NEXT: "ms.mul"(%arg0, %[[E]])
  // CHECK-NEXT: %[[C:.+]] = "ms.neg"(%arg1)
  // CHECK-NEXT: "ms.add"(%{{.*}}, %[[C]])
  // CHECK-NEXT: gpu.yield
  %e = "ms.exp"(%r) : (tensor<8xf32>) -> tensor<8xf32>
  %0 = "ms.mul"(%x, %e) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %c = "ms.neg"(%r) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = "ms.add"(%0, %c) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// broadcast_to is a free elementwise read: it joins a chain (the gradient seed times a value).
// CHECK-LABEL: func.func @broadcast_to_in_chain
func.func @broadcast_to_in_chain(%s: tensor<1xf32>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %[[R:.+]] = "ms.fused"() ({
  // CHECK-NEXT: %[[B:.+]] = "ms.broadcast_to"(%arg0) {shape = array<i64: 4, 8>}
  // CHECK-NEXT: %[[M:.+]] = "ms.mul"(%[[B]], %arg1)
  // CHECK-NEXT: gpu.yield %[[M]]
  // CHECK-NEXT: }) {kind = "elementwise"}
  // CHECK-NEXT: return %[[R]]
  %0 = "ms.broadcast_to"(%s) {shape = array<i64: 4, 8>} : (tensor<1xf32>) -> tensor<4x8xf32>
  %1 = "ms.mul"(%0, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Inside a reduction's loops a broadcast_to may not create the reduced dimension: no input
// would span that loop. It stays outside; the elementwise op joins the prologue.
// CHECK-LABEL: func.func @broadcast_to_into_reduction
func.func @broadcast_to_into_reduction(%s: tensor<4x1xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: %[[B:.+]] = "ms.broadcast_to"(%arg0) {shape = array<i64: 4, 8>}
  // CHECK-NEXT: %[[R:.+]] = "ms.fused"() ({
  // CHECK-NEXT: %[[E:.+]] = "ms.exp"(%[[B]])
  // CHECK-NEXT: %[[S:.+]] = "ms.reduce_sum"(%[[E]])
  // CHECK-NEXT: gpu.yield %[[S]]
  // CHECK-NEXT: }) {kind = "reduction"}
  %0 = "ms.broadcast_to"(%s) {shape = array<i64: 4, 8>} : (tensor<4x1xf32>) -> tensor<4x8xf32>
  %1 = "ms.exp"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "ms.reduce_sum"(%1) {axis = array<i64: 1>, keep_dims = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// A reduction result broadcast back is never an epilogue (it would be recomputed per
// element), and two reductions never share a region.
// CHECK-LABEL: func.func @two_reductions
func.func @two_reductions(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %[[S:.+]] = "ms.reduce_sum"
  // CHECK-NEXT: %[[M:.+]] = "ms.reduce_max"(%[[S]])
  // CHECK-NEXT: "ms.sub"(%arg0, %[[M]])
  // CHECK-NOT: ms.fused
  %s = "ms.reduce_sum"(%x) {axis = array<i64: 1>, keep_dims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %m = "ms.reduce_max"(%s) {axis = array<i64: 1>, keep_dims = true} : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %0 = "ms.sub"(%x, %m) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// The size bound: with max-ops=3 a chain of five ops splits into regions of 3 and 2.
// BOUND-LABEL: func.func @long_chain
// BOUND-NEXT: %[[A:.+]] = "ms.fused"() ({
// BOUND-NEXT: "ms.neg"
// BOUND-NEXT: "ms.abs"
// BOUND-NEXT: gpu.yield
// BOUND-NEXT: }) {kind = "elementwise"}
// BOUND-NEXT: %[[B:.+]] = "ms.fused"() ({
// BOUND-NEXT: "ms.exp"(%[[A]])
// BOUND-NEXT: "ms.tanh"
// BOUND-NEXT: "ms.relu"
// BOUND-NEXT: gpu.yield
// BOUND-NEXT: }) {kind = "elementwise"}
// BOUND-NEXT: return %[[B]]
// CHECK-LABEL: func.func @long_chain
// CHECK-NEXT: "ms.fused"
// CHECK-COUNT-5: "ms.
// CHECK-NEXT: gpu.yield
func.func @long_chain(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "ms.neg"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = "ms.abs"(%0) : (tensor<8xf32>) -> tensor<8xf32>
  %2 = "ms.exp"(%1) : (tensor<8xf32>) -> tensor<8xf32>
  %3 = "ms.tanh"(%2) : (tensor<8xf32>) -> tensor<8xf32>
  %4 = "ms.relu"(%3) : (tensor<8xf32>) -> tensor<8xf32>
  return %4 : tensor<8xf32>
}

// -----

// A cheap op copied into regions reads its operands from outside, so their producer stays
// outside (a region {exp, mul} would take the exp away from the copies); the original,
// with every user holding a copy, is gone.
// CHECK-LABEL: func.func @copied_operands_stay
// CHECK-NEXT: %[[E:.+]] = "ms.exp"
// CHECK-NEXT: %[[A:.+]] = "ms.fused"() ({
// CHECK-NEXT: %[[M1:.+]] = "ms.mul"(%[[E]], %arg0)
// CHECK-NEXT: "ms.add"(%[[M1]], %arg0)
// CHECK-NEXT: gpu.yield
// CHECK-NEXT: }) {kind = "elementwise"}
// CHECK-NEXT: %[[B:.+]] = "ms.fused"() ({
// CHECK-NEXT: %[[M2:.+]] = "ms.mul"(%[[E]], %arg0)
// CHECK-NEXT: "ms.sub"(%[[M2]], %arg0)
// CHECK-NEXT: gpu.yield
// CHECK-NEXT: }) {kind = "elementwise"}
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @copied_operands_stay(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = "ms.exp"(%y) : (tensor<8xf32>) -> tensor<8xf32>
  %m = "ms.mul"(%e, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %a = "ms.add"(%m, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %b = "ms.sub"(%m, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %a, %b : tensor<8xf32>, tensor<8xf32>
}

// -----

// A cheap op copied into one region (it broadcasts %y) is the root of another.
// CHECK-LABEL: func.func @copied_root
// CHECK-NEXT: %[[B:.+]] = "ms.fused"() ({
// CHECK-NEXT: "ms.neg"
// CHECK-NEXT: "ms.mul"
// CHECK-NEXT: gpu.yield
// CHECK-NEXT: }) {kind = "elementwise"}
// CHECK-NEXT: %[[A:.+]] = "ms.fused"() ({
// CHECK-NEXT: "ms.neg"
// CHECK-NEXT: "ms.mul"
// CHECK-NEXT: "ms.add"
// CHECK-NEXT: gpu.yield
// CHECK-NEXT: }) {kind = "elementwise"}
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @copied_root(%x: tensor<8xf32>, %y: tensor<1xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %n = "ms.neg"(%y) : (tensor<1xf32>) -> tensor<1xf32>
  %m = "ms.mul"(%n, %x) : (tensor<1xf32>, tensor<8xf32>) -> tensor<8xf32>
  %a = "ms.add"(%m, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %a, %m : tensor<8xf32>, tensor<8xf32>
}

// -----

// A cheap chain copied into every user (a reduction's prologue and an elementwise region)
// forms no region of its own, which nothing would read, and its originals are gone (a
// BatchNorm's xhat, recomputed in the backward, was such a region: lowered, then dropped).
// CHECK-LABEL: func.func @copied_into_every_user
// CHECK-NEXT: %[[S:.+]] = "ms.fused"() ({
// CHECK-NEXT: "ms.sub"
// CHECK-NEXT: "ms.mul"
// CHECK-NEXT: "ms.mul"
// CHECK-NEXT: "ms.reduce_sum"
// CHECK-NEXT: gpu.yield
// CHECK-NEXT: }) {kind = "reduction"}
// CHECK-NEXT: %[[A:.+]] = "ms.fused"() ({
// CHECK-NEXT: "ms.sub"
// CHECK-NEXT: "ms.mul"
// CHECK-NEXT: "ms.add"
// CHECK-NEXT: gpu.yield
// CHECK-NEXT: }) {kind = "elementwise"}
// CHECK-NEXT: return %[[S]], %[[A]]
func.func @copied_into_every_user(%x: tensor<8x4xf32>, %m: tensor<1x4xf32>, %r: tensor<1x4xf32>, %y: tensor<8x4xf32>) -> (tensor<4xf32>, tensor<8x4xf32>) {
  %c = "ms.sub"(%x, %m) : (tensor<8x4xf32>, tensor<1x4xf32>) -> tensor<8x4xf32>
  %h = "ms.mul"(%c, %r) : (tensor<8x4xf32>, tensor<1x4xf32>) -> tensor<8x4xf32>
  %p = "ms.mul"(%h, %y) : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %s = "ms.reduce_sum"(%p) {axis = array<i64: 0>, keep_dims = false} : (tensor<8x4xf32>) -> tensor<4xf32>
  %a = "ms.add"(%h, %y) : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %s, %a : tensor<4xf32>, tensor<8x4xf32>
}
