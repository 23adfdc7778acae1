// RUN: ms-opt %s --split-input-file --ms-cpu-private-entry-bodies | FileCheck %s

// The entry's body, called from its C interface with the memref's fields as arguments,
// becomes private, internal and always inlined: LLVM merges it into the C interface (and
// drops it). A kernel keeps its noinline; the C interface itself is left as it is.
// CHECK-LABEL: llvm.func internal @mscc.step(
// CHECK-SAME:    passthrough = ["alwaysinline"]
// CHECK-SAME:    sym_visibility = "private"
// CHECK-LABEL: llvm.func @_mlir_ciface_step(
// CHECK-NOT:     alwaysinline
// CHECK:         llvm.call @mscc.step(
// CHECK-LABEL: llvm.func internal @mscc.step__matmul0(
// CHECK-SAME:    passthrough = ["noinline"]
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

// A body another function calls too is inlined there as well (internal: nothing outside
// the module calls it); its other attributes stay.
// CHECK-LABEL: llvm.func internal @mscc.shared(
// CHECK-SAME:    passthrough = ["nounwind", "alwaysinline"]
// CHECK-LABEL: llvm.func @_mlir_ciface_shared(
// CHECK:         llvm.call @mscc.shared(
// CHECK-LABEL: llvm.func @mscc.other(
// CHECK:         llvm.call @mscc.shared(
llvm.func @mscc.shared(%x: i64) attributes {passthrough = ["nounwind"]} {
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

// -----

// A C interface whose body is not in the module (declared elsewhere) is left alone.
// CHECK-LABEL: llvm.func @mscc.gone(
// CHECK-NOT:     alwaysinline
llvm.func @mscc.gone(i64)
llvm.func @_mlir_ciface_gone(%x: i64) {
  llvm.call @mscc.gone(%x) : (i64) -> ()
  llvm.return
}
