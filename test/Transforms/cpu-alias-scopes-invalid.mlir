// ms.distinct_pointers on an llvm.func read from a file must name distinct pointer
// arguments: anything else is a located error (a position past the arguments was an
// IndexError inside the pass, found by bench/fuzz_ir.py --own-passes, seed 42).
// RUN: ms-opt %s --ms-cpu-alias-scopes --split-input-file --verify-diagnostics

// expected-error@+1 {{'ms.distinct_pointers' names argument 2147483648, which is not one of the function's 2 arguments of type !llvm.ptr}}
llvm.func @past_the_arguments(%a: !llvm.ptr, %b: !llvm.ptr) attributes {ms.distinct_pointers = array<i64: 2147483648, 1>} {
  llvm.return
}

// -----

// expected-error@+1 {{'ms.distinct_pointers' names argument 1, which is not one of the function's 2 arguments of type !llvm.ptr}}
llvm.func @not_a_pointer(%a: !llvm.ptr, %n: i64) attributes {ms.distinct_pointers = array<i64: 0, 1>} {
  llvm.return
}

// -----

// expected-error@+1 {{'ms.distinct_pointers' names argument -1, which is not one of the function's 1 arguments of type !llvm.ptr}}
llvm.func @negative(%a: !llvm.ptr) attributes {ms.distinct_pointers = array<i64: -1>} {
  llvm.return
}

// -----

// expected-error@+1 {{'ms.distinct_pointers' names an argument twice}}
llvm.func @twice(%a: !llvm.ptr, %b: !llvm.ptr) attributes {ms.distinct_pointers = array<i64: 1, 1>} {
  llvm.return
}

// -----

// expected-error@+1 {{'ms.distinct_pointers' must be an array<i64> of argument positions}}
llvm.func @not_an_array(%a: !llvm.ptr) attributes {ms.distinct_pointers = "0"} {
  llvm.return
}

// -----

// A declaration has nothing to annotate: the attribute is dropped whatever it says.
llvm.func @declared(!llvm.ptr) attributes {ms.distinct_pointers = array<i64: 7>}
