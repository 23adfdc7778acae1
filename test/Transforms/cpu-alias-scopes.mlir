// RUN: ms-opt %s --split-input-file --ms-cpu-alias-scopes | FileCheck %s

// Two distinct pointers (arguments 1 and 6): each load and store through them, directly
// or through getelementptrs, is in its pointer's scope and noalias with the other's; an
// access through another pointer (argument 0, the allocated one) gets no metadata. The
// attribute goes.
// CHECK-DAG:   #[[DOMAIN:.+]] = #llvm.alias_scope_domain<id = distinct[{{[0-9]+}}]<>>
// CHECK-DAG:   #[[SA:alias_scope[0-9]*]] = #llvm.alias_scope<id = distinct[{{[0-9]+}}]<>, domain = #[[DOMAIN]]>
// CHECK-DAG:   #[[SB:alias_scope[0-9]*]] = #llvm.alias_scope<id = distinct[{{[0-9]+}}]<>, domain = #[[DOMAIN]]>
// CHECK-LABEL: llvm.func @copy(
// CHECK-NOT:     ms.distinct_pointers
// CHECK:         llvm.load %{{.+}} {alias_scopes = [#[[SA]]], noalias_scopes = [#[[SB]]]}
// CHECK:         llvm.store %{{.+}}, %{{.+}} {alias_scopes = [#[[SB]]], noalias_scopes = [#[[SA]]]}
// CHECK:         llvm.load %arg0 : !llvm.ptr -> f32
// CHECK:         llvm.store %{{.+}}, %arg6 {alias_scopes = [#[[SB]]], noalias_scopes = [#[[SA]]]}
llvm.func @copy(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: i64, %arg3: i64, %arg4: i64, %arg5: !llvm.ptr, %arg6: !llvm.ptr, %arg7: i64, %arg8: i64, %arg9: i64, %i: i64) attributes {ms.distinct_pointers = array<i64: 1, 6>} {
  %0 = llvm.getelementptr %arg1[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %1 = llvm.getelementptr %0[%arg2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %2 = llvm.load %1 : !llvm.ptr -> f32
  %3 = llvm.getelementptr %arg6[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %2, %3 : f32, !llvm.ptr
  %4 = llvm.load %arg0 : !llvm.ptr -> f32
  llvm.store %4, %arg6 : f32, !llvm.ptr
  llvm.return
}

// -----

// Without the attribute nothing changes.
// CHECK-LABEL: llvm.func @plain(
// CHECK-NOT:     alias_scopes
llvm.func @plain(%arg0: !llvm.ptr, %arg1: !llvm.ptr) {
  %0 = llvm.load %arg0 : !llvm.ptr -> f32
  llvm.store %0, %arg1 : f32, !llvm.ptr
  llvm.return
}
