func.func @f(%a: !llvm.ptr@) {
  return
}
