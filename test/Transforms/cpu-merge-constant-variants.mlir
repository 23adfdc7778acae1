// ms-cpu-merge-constant-variants: private llvm.funcs that are the same but for index/i32/i64
// constants become the first of them, taking the differing constants as trailing arguments;
// each call passes its callee's values. Constants LLVM needs as constants (divisors, alloca
// sizes, an innermost loop's bound, step or stride) split the group instead.
// RUN: ms-opt %s --ms-cpu-merge-constant-variants --split-input-file | FileCheck %s

// Two loop nests that differ in the outer loop's bound (4, 6) and the row stride (12, 16):
// one function with both as arguments; the innermost loop's bound (8) stays a constant.
// CHECK-LABEL: llvm.func internal @rows_a
// CHECK-SAME:    (%[[DST:.+]]: !llvm.ptr, %[[V:.+]]: f32, %[[ROWS:.+]]: i64, %[[STRIDE:.+]]: i64)
// CHECK:         %[[COLS:.+]] = llvm.mlir.constant(8 : index) : i64
// CHECK:       ^bb1(%[[I:.+]]: i64):
// CHECK:         llvm.icmp "slt" %[[I]], %[[ROWS]] : i64
// CHECK:       ^bb2(%[[J:.+]]: i64):
// CHECK:         llvm.icmp "slt" %[[J]], %[[COLS]] : i64
// CHECK:         %[[ROW:.+]] = llvm.mul %[[I]], %[[STRIDE]] : i64
// CHECK:         llvm.add %[[ROW]], %[[J]] : i64
// CHECK-NOT:   llvm.func internal @rows_b
// CHECK-LABEL: llvm.func @caller
// CHECK:         %[[R1:.+]] = llvm.mlir.constant(4 : i64) : i64
// CHECK:         %[[S1:.+]] = llvm.mlir.constant(12 : i64) : i64
// CHECK:         llvm.call @rows_a(%{{.+}}, %{{.+}}, %[[R1]], %[[S1]]) : (!llvm.ptr, f32, i64, i64) -> ()
// CHECK:         %[[R2:.+]] = llvm.mlir.constant(6 : i64) : i64
// CHECK:         %[[S2:.+]] = llvm.mlir.constant(16 : i64) : i64
// CHECK:         llvm.call @rows_a(%{{.+}}, %{{.+}}, %[[R2]], %[[S2]]) : (!llvm.ptr, f32, i64, i64) -> ()
// CHECK:         %[[R3:.+]] = llvm.mlir.constant(4 : i64) : i64
// CHECK:         llvm.call @rows_a(%{{.+}}, %{{.+}}, %[[R3]], %{{.+}})

llvm.func internal @rows_a(%dst: !llvm.ptr, %v: f32) attributes {sym_visibility = "private"} {
  %c0 = llvm.mlir.constant(0 : index) : i64
  %c1 = llvm.mlir.constant(1 : index) : i64
  %rows = llvm.mlir.constant(4 : index) : i64
  %cols = llvm.mlir.constant(8 : index) : i64
  %stride = llvm.mlir.constant(12 : index) : i64
  llvm.br ^outer(%c0 : i64)
^outer(%i: i64):
  %more_i = llvm.icmp "slt" %i, %rows : i64
  llvm.cond_br %more_i, ^inner(%c0 : i64), ^done
^inner(%j: i64):
  %more_j = llvm.icmp "slt" %j, %cols : i64
  llvm.cond_br %more_j, ^inner_body, ^inner_done
^inner_body:
  %row = llvm.mul %i, %stride : i64
  %k = llvm.add %row, %j : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %p : f32, !llvm.ptr
  %j1 = llvm.add %j, %c1 : i64
  llvm.br ^inner(%j1 : i64)
^inner_done:
  %i1 = llvm.add %i, %c1 : i64
  llvm.br ^outer(%i1 : i64)
^done:
  llvm.return
}
llvm.func internal @rows_b(%dst: !llvm.ptr, %v: f32) attributes {sym_visibility = "private"} {
  %c0 = llvm.mlir.constant(0 : index) : i64
  %c1 = llvm.mlir.constant(1 : index) : i64
  %rows = llvm.mlir.constant(6 : index) : i64
  %cols = llvm.mlir.constant(8 : index) : i64
  %stride = llvm.mlir.constant(16 : index) : i64
  llvm.br ^outer(%c0 : i64)
^outer(%i: i64):
  %more_i = llvm.icmp "slt" %i, %rows : i64
  llvm.cond_br %more_i, ^inner(%c0 : i64), ^done
^inner(%j: i64):
  %more_j = llvm.icmp "slt" %j, %cols : i64
  llvm.cond_br %more_j, ^inner_body, ^inner_done
^inner_body:
  %row = llvm.mul %i, %stride : i64
  %k = llvm.add %row, %j : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %p : f32, !llvm.ptr
  %j1 = llvm.add %j, %c1 : i64
  llvm.br ^inner(%j1 : i64)
^inner_done:
  %i1 = llvm.add %i, %c1 : i64
  llvm.br ^outer(%i1 : i64)
^done:
  llvm.return
}
llvm.func @caller(%dst: !llvm.ptr, %v: f32) {
  llvm.call @rows_a(%dst, %v) : (!llvm.ptr, f32) -> ()
  llvm.call @rows_b(%dst, %v) : (!llvm.ptr, f32) -> ()
  llvm.call @rows_a(%dst, %v) : (!llvm.ptr, f32) -> ()
  llvm.return
}

// -----

// A remainder's modulus (7, 9) stays a constant: LLVM divides by a constant with a multiply.
// Of three functions the same but for constants, the two with the same modulus merge.
// CHECK-LABEL: llvm.func internal @wrap_a
// CHECK-SAME:    %[[OFFSET:[^:]+]]: i64)
// CHECK:         %[[MOD:.+]] = llvm.mlir.constant(7 : index) : i64
// CHECK:         llvm.urem %{{.+}}, %[[MOD]] : i64
// CHECK:         llvm.add %{{.+}}, %[[OFFSET]] : i64
// CHECK-NOT:   llvm.func internal @wrap_b
// CHECK-LABEL: llvm.func internal @wrap_c
// CHECK-SAME:    (%{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: i64)
// CHECK:         llvm.mlir.constant(9 : index) : i64
// CHECK-LABEL: llvm.func @caller
// CHECK:         %[[THREE:.+]] = llvm.mlir.constant(3 : i64) : i64
// CHECK:         llvm.call @wrap_a(%{{.+}}, %{{.+}}, %[[THREE]])
// CHECK:         %[[FIVE:.+]] = llvm.mlir.constant(5 : i64) : i64
// CHECK:         llvm.call @wrap_a(%{{.+}}, %{{.+}}, %[[FIVE]])
// CHECK:         llvm.call @wrap_c(%{{.+}}, %{{.+}}) :
llvm.func internal @wrap_a(%dst: !llvm.ptr, %i: i64) attributes {sym_visibility = "private"} {
  %mod = llvm.mlir.constant(7 : index) : i64
  %offset = llvm.mlir.constant(3 : index) : i64
  %w = llvm.urem %i, %mod : i64
  %k = llvm.add %w, %offset : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %p : i64, !llvm.ptr
  llvm.return
}
llvm.func internal @wrap_b(%dst: !llvm.ptr, %i: i64) attributes {sym_visibility = "private"} {
  %mod = llvm.mlir.constant(7 : index) : i64
  %offset = llvm.mlir.constant(5 : index) : i64
  %w = llvm.urem %i, %mod : i64
  %k = llvm.add %w, %offset : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %p : i64, !llvm.ptr
  llvm.return
}
llvm.func internal @wrap_c(%dst: !llvm.ptr, %i: i64) attributes {sym_visibility = "private"} {
  %mod = llvm.mlir.constant(9 : index) : i64
  %offset = llvm.mlir.constant(3 : index) : i64
  %w = llvm.urem %i, %mod : i64
  %k = llvm.add %w, %offset : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %p : i64, !llvm.ptr
  llvm.return
}
llvm.func @caller(%dst: !llvm.ptr, %i: i64) {
  llvm.call @wrap_a(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.call @wrap_b(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.call @wrap_c(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.return
}

// -----

// An alloca's size stays a constant (a variable one is a dynamic stack allocation).
// CHECK-LABEL: llvm.func internal @scratch_a
// CHECK-LABEL: llvm.func internal @scratch_b
// CHECK-LABEL: llvm.func @caller
// CHECK:         llvm.call @scratch_a(%{{.+}}, %{{.+}}) :
// CHECK:         llvm.call @scratch_b(%{{.+}}, %{{.+}}) :
llvm.func internal @scratch_a(%dst: !llvm.ptr, %i: i64) attributes {sym_visibility = "private"} {
  %size = llvm.mlir.constant(4 : index) : i64
  %buf = llvm.alloca %size x i64 : (i64) -> !llvm.ptr
  llvm.store %i, %buf : i64, !llvm.ptr
  llvm.return
}
llvm.func internal @scratch_b(%dst: !llvm.ptr, %i: i64) attributes {sym_visibility = "private"} {
  %size = llvm.mlir.constant(8 : index) : i64
  %buf = llvm.alloca %size x i64 : (i64) -> !llvm.ptr
  llvm.store %i, %buf : i64, !llvm.ptr
  llvm.return
}
llvm.func @caller(%dst: !llvm.ptr, %i: i64) {
  llvm.call @scratch_a(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.call @scratch_b(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.return
}

// -----

// An innermost loop's trip count (10, 12) stays a constant: the loop vectorizer picks its
// width and interleaving by it.
// CHECK-LABEL: llvm.func internal @count_a
// CHECK-SAME:    (%{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: i64)
// CHECK-LABEL: llvm.func internal @count_b
// CHECK-SAME:    (%{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: i64)
llvm.func internal @count_a(%dst: !llvm.ptr, %i: i64) attributes {sym_visibility = "private"} {
  %c0 = llvm.mlir.constant(0 : index) : i64
  %c1 = llvm.mlir.constant(1 : index) : i64
  %n = llvm.mlir.constant(10 : index) : i64
  llvm.br ^loop(%c0 : i64)
^loop(%j: i64):
  %more = llvm.icmp "slt" %j, %n : i64
  llvm.cond_br %more, ^body, ^done
^body:
  %k = llvm.add %j, %c1 : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %p : i64, !llvm.ptr
  %next = llvm.add %j, %c1 : i64
  llvm.br ^loop(%next : i64)
^done:
  llvm.return
}
llvm.func internal @count_b(%dst: !llvm.ptr, %i: i64) attributes {sym_visibility = "private"} {
  %c0 = llvm.mlir.constant(0 : index) : i64
  %c1 = llvm.mlir.constant(1 : index) : i64
  %n = llvm.mlir.constant(12 : index) : i64
  llvm.br ^loop(%c0 : i64)
^loop(%j: i64):
  %more = llvm.icmp "slt" %j, %n : i64
  llvm.cond_br %more, ^body, ^done
^body:
  %k = llvm.add %j, %c1 : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %p : i64, !llvm.ptr
  %next = llvm.add %j, %c1 : i64
  llvm.br ^loop(%next : i64)
^done:
  llvm.return
}
llvm.func @caller(%dst: !llvm.ptr, %i: i64) {
  llvm.call @count_a(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.call @count_b(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.return
}

// -----

// So does the stride of an innermost loop's accesses (3, 5): consecutive or interleaved
// accesses are what LLVM vectorizes.
// CHECK-LABEL: llvm.func internal @stride_a
// CHECK-LABEL: llvm.func internal @stride_b
llvm.func internal @stride_a(%dst: !llvm.ptr, %i: i64) attributes {sym_visibility = "private"} {
  %c0 = llvm.mlir.constant(0 : index) : i64
  %c1 = llvm.mlir.constant(1 : index) : i64
  %n = llvm.mlir.constant(10 : index) : i64
  %stride = llvm.mlir.constant(3 : index) : i64
  llvm.br ^loop(%c0 : i64)
^loop(%j: i64):
  %more = llvm.icmp "slt" %j, %n : i64
  llvm.cond_br %more, ^body, ^done
^body:
  %k = llvm.mul %j, %stride : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %p : i64, !llvm.ptr
  %next = llvm.add %j, %c1 : i64
  llvm.br ^loop(%next : i64)
^done:
  llvm.return
}
llvm.func internal @stride_b(%dst: !llvm.ptr, %i: i64) attributes {sym_visibility = "private"} {
  %c0 = llvm.mlir.constant(0 : index) : i64
  %c1 = llvm.mlir.constant(1 : index) : i64
  %n = llvm.mlir.constant(10 : index) : i64
  %stride = llvm.mlir.constant(5 : index) : i64
  llvm.br ^loop(%c0 : i64)
^loop(%j: i64):
  %more = llvm.icmp "slt" %j, %n : i64
  llvm.cond_br %more, ^body, ^done
^body:
  %k = llvm.mul %j, %stride : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %p : i64, !llvm.ptr
  %next = llvm.add %j, %c1 : i64
  llvm.br ^loop(%next : i64)
^done:
  llvm.return
}
llvm.func @caller(%dst: !llvm.ptr, %i: i64) {
  llvm.call @stride_a(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.call @stride_b(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.return
}

// -----

// A loop of one iteration (a dimension of size 1) is not a loop to LLVM: the loop around it
// is the innermost, and its stride (20, 24) stays a constant.
// CHECK-LABEL: llvm.func internal @unit_a
// CHECK-LABEL: llvm.func internal @unit_b
llvm.func internal @unit_a(%dst: !llvm.ptr, %i: i64) attributes {sym_visibility = "private"} {
  %c0 = llvm.mlir.constant(0 : index) : i64
  %c1 = llvm.mlir.constant(1 : index) : i64
  %rows = llvm.mlir.constant(16 : index) : i64
  %stride = llvm.mlir.constant(20 : index) : i64
  llvm.br ^outer(%c0 : i64)
^outer(%i2: i64):
  %more_i = llvm.icmp "slt" %i2, %rows : i64
  llvm.cond_br %more_i, ^inner(%c0 : i64), ^done
^inner(%j: i64):
  %more_j = llvm.icmp "slt" %j, %c1 : i64
  llvm.cond_br %more_j, ^body, ^inner_done
^body:
  %row = llvm.mul %i2, %stride : i64
  %k = llvm.add %row, %j : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %p : i64, !llvm.ptr
  %j1 = llvm.add %j, %c1 : i64
  llvm.br ^inner(%j1 : i64)
^inner_done:
  %i1 = llvm.add %i2, %c1 : i64
  llvm.br ^outer(%i1 : i64)
^done:
  llvm.return
}
llvm.func internal @unit_b(%dst: !llvm.ptr, %i: i64) attributes {sym_visibility = "private"} {
  %c0 = llvm.mlir.constant(0 : index) : i64
  %c1 = llvm.mlir.constant(1 : index) : i64
  %rows = llvm.mlir.constant(16 : index) : i64
  %stride = llvm.mlir.constant(24 : index) : i64
  llvm.br ^outer(%c0 : i64)
^outer(%i2: i64):
  %more_i = llvm.icmp "slt" %i2, %rows : i64
  llvm.cond_br %more_i, ^inner(%c0 : i64), ^done
^inner(%j: i64):
  %more_j = llvm.icmp "slt" %j, %c1 : i64
  llvm.cond_br %more_j, ^body, ^inner_done
^body:
  %row = llvm.mul %i2, %stride : i64
  %k = llvm.add %row, %j : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %p : i64, !llvm.ptr
  %j1 = llvm.add %j, %c1 : i64
  llvm.br ^inner(%j1 : i64)
^inner_done:
  %i1 = llvm.add %i2, %c1 : i64
  llvm.br ^outer(%i1 : i64)
^done:
  llvm.return
}
llvm.func @caller(%dst: !llvm.ptr, %i: i64) {
  llvm.call @unit_a(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.call @unit_b(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.return
}

// -----

// Public functions (entries, C interfaces), functions whose address is taken and functions
// that differ in a float constant are left alone.
// CHECK-LABEL: llvm.func @public_a
// CHECK-LABEL: llvm.func @public_b
// CHECK-LABEL: llvm.func internal @taken_a
// CHECK-LABEL: llvm.func internal @taken_b
// CHECK-LABEL: llvm.func internal @scaled_a
// CHECK-LABEL: llvm.func internal @scaled_b
// CHECK-LABEL: llvm.func @caller
// CHECK:         llvm.mlir.addressof @taken_b
// CHECK:         llvm.call @public_a(%{{.+}}, %{{.+}}) :
// CHECK:         llvm.call @public_b(%{{.+}}, %{{.+}}) :
// CHECK:         llvm.call @taken_a(%{{.+}}, %{{.+}}) :
// CHECK:         llvm.call @taken_b(%{{.+}}, %{{.+}}) :
// CHECK:         llvm.call @scaled_a(%{{.+}}, %{{.+}}) :
// CHECK:         llvm.call @scaled_b(%{{.+}}, %{{.+}}) :
llvm.func @public_a(%dst: !llvm.ptr, %i: i64) {
  %offset = llvm.mlir.constant(3 : index) : i64
  %k = llvm.add %i, %offset : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %p : i64, !llvm.ptr
  llvm.return
}
llvm.func @public_b(%dst: !llvm.ptr, %i: i64) {
  %offset = llvm.mlir.constant(5 : index) : i64
  %k = llvm.add %i, %offset : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %p : i64, !llvm.ptr
  llvm.return
}
llvm.func internal @taken_a(%dst: !llvm.ptr, %i: i64) attributes {sym_visibility = "private"} {
  %offset = llvm.mlir.constant(3 : index) : i64
  %k = llvm.add %i, %offset : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %p : i64, !llvm.ptr
  llvm.return
}
llvm.func internal @taken_b(%dst: !llvm.ptr, %i: i64) attributes {sym_visibility = "private"} {
  %offset = llvm.mlir.constant(5 : index) : i64
  %k = llvm.add %i, %offset : i64
  %p = llvm.getelementptr %dst[%k] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %p : i64, !llvm.ptr
  llvm.return
}
llvm.func internal @scaled_a(%dst: !llvm.ptr, %i: i64) attributes {sym_visibility = "private"} {
  %scale = llvm.mlir.constant(2.0 : f32) : f32
  %x = llvm.sitofp %i : i64 to f32
  %y = llvm.fmul %x, %scale : f32
  llvm.store %y, %dst : f32, !llvm.ptr
  llvm.return
}
llvm.func internal @scaled_b(%dst: !llvm.ptr, %i: i64) attributes {sym_visibility = "private"} {
  %scale = llvm.mlir.constant(3.0 : f32) : f32
  %x = llvm.sitofp %i : i64 to f32
  %y = llvm.fmul %x, %scale : f32
  llvm.store %y, %dst : f32, !llvm.ptr
  llvm.return
}
llvm.func @caller(%dst: !llvm.ptr, %i: i64) {
  %fp = llvm.mlir.addressof @taken_b : !llvm.ptr
  llvm.store %fp, %dst : !llvm.ptr, !llvm.ptr
  llvm.call @public_a(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.call @public_b(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.call @taken_a(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.call @taken_b(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.call @scaled_a(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.call @scaled_b(%dst, %i) : (!llvm.ptr, i64) -> ()
  llvm.return
}

// -----

// Functions with a result: the new call's result replaces the old one's, and the new call
// keeps the old one's attributes.
// CHECK-LABEL: llvm.func internal @plus_a
// CHECK-SAME:    (%[[X:[^:]+]]: i64, %[[OFFSET:[^:]+]]: i64) -> i64
// CHECK:         %[[SUM:.+]] = llvm.add %[[X]], %[[OFFSET]] : i64
// CHECK:         llvm.return %[[SUM]] : i64
// CHECK-NOT:   @plus_b
// CHECK-LABEL: llvm.func @caller
// CHECK:         %[[THREE:.+]] = llvm.mlir.constant(3 : i64) : i64
// CHECK:         %[[A:.+]] = llvm.call fastcc @plus_a(%{{.+}}, %[[THREE]]) {no_unwind} : (i64, i64) -> i64
// CHECK:         %[[FIVE:.+]] = llvm.mlir.constant(5 : i64) : i64
// CHECK:         %[[B:.+]] = llvm.call @plus_a(%{{.+}}, %[[FIVE]]) : (i64, i64) -> i64
// CHECK:         %[[C:.+]] = llvm.mul %[[A]], %[[B]] : i64
// CHECK:         llvm.return %[[C]] : i64
llvm.func internal @plus_a(%x: i64) -> i64 attributes {sym_visibility = "private"} {
  %offset = llvm.mlir.constant(3 : index) : i64
  %sum = llvm.add %x, %offset : i64
  llvm.return %sum : i64
}
llvm.func internal @plus_b(%x: i64) -> i64 attributes {sym_visibility = "private"} {
  %offset = llvm.mlir.constant(5 : index) : i64
  %sum = llvm.add %x, %offset : i64
  llvm.return %sum : i64
}
llvm.func @caller(%x: i64) -> i64 {
  %a = llvm.call fastcc @plus_a(%x) {no_unwind} : (i64) -> i64
  %b = llvm.call @plus_b(%x) : (i64) -> i64
  %c = llvm.mul %a, %b : i64
  llvm.return %c : i64
}
