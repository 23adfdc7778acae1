llvm.func @arrays(%s: !llvm.struct<(ptr, array<2 x i64>)>, %a: !llvm.array<4 x i32>) attributes {ms.ok = array<i32: 1, 2>, ms.none = array<i64>} {
  llvm.return
}
