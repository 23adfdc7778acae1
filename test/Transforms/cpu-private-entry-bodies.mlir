// RUN: ms-opt %s --split-input-file --ms-cpu-private-entry-bodies | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-cpu-private-entry-bodies --inline="default-pipeline=" | FileCheck %s --check-prefix=INLINED

// The entry's body, called only from its C interface with the memref's fields as
// arguments, becomes private and internal; a function LLVM must not inline (passthrough
// noinline: a kernel, an outlined loop) gets the no_inline MLIR's inliner reads. The inliner
// then merges the body into the C interface and keeps the kernel a call.
// CHECK-LABEL: llvm.func internal @mscc.step(
// CHECK-SAME:    sym_visibility = "private"
// CHECK-LABEL: llvm.func @_mlir_ciface_step(
// CHECK:         llvm.call @mscc.step(
// CHECK-LABEL: llvm.func internal @mscc.step__matmul0(
// CHECK-SAME:    no_inline
// INLINED-NOT:   llvm.func internal @mscc.step(
// INLINED-LABEL: llvm.func @_mlir_ciface_step(
// INLINED:         %[[D:.+]] = llvm.load %arg0
// INLINED:         %[[P:.+]] = llvm.extractvalue %[[D]][1]
// INLINED:         llvm.call @mscc.step__matmul0(%[[P]])
// INLINED-NEXT:    llvm.return
// INLINED-LABEL: llvm.func internal @mscc.step__matmul0(
llvm.func @mscc.step(%base: !llvm.ptr, %data: !llvm.ptr, %offset: i64) {
  llvm.call @mscc.step__matmul0(%data) : (!llvm.ptr) -> ()
  llvm.return
}
llvm.func @_mlir_ciface_step(%desc: !llvm.ptr) {
  %d = llvm.load %desc : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64)>
  %base = llvm.extractvalue %d[0] : !llvm.struct<(ptr, ptr, i64)>
  %data = llvm.extractvalue %d[1] : !llvm.struct<(ptr, ptr, i64)>
  %offset = llvm.extractvalue %d[2] : !llvm.struct<(ptr, ptr, i64)>
  llvm.call @mscc.step(%base, %data, %offset) : (!llvm.ptr, !llvm.ptr, i64) -> ()
  llvm.return
}
llvm.func internal @mscc.step__matmul0(%p: !llvm.ptr) attributes {passthrough = ["noinline"], sym_visibility = "private"} {
  llvm.return
}

// -----

// A body that another function calls too stays public, a function of its own (the inliner
// copies it into its callers and keeps it).
// CHECK-LABEL: llvm.func @mscc.shared(
// CHECK-LABEL: llvm.func @_mlir_ciface_shared(
// CHECK:         llvm.call @mscc.shared(
// INLINED-LABEL: llvm.func @mscc.shared(
// INLINED-LABEL: llvm.func @_mlir_ciface_shared(
llvm.func @mscc.shared(%x: i64) {
  llvm.return
}
llvm.func @_mlir_ciface_shared(%x: i64) {
  llvm.call @mscc.shared(%x) : (i64) -> ()
  llvm.return
}
llvm.func @mscc.other(%x: i64) {
  llvm.call @mscc.shared(%x) : (i64) -> ()
  llvm.return
}
