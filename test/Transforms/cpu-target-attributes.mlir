// RUN: ms-opt %s --split-input-file --ms-cpu-target-attributes="cpu=haswell vector-bits=256" | FileCheck %s
// RUN: ms-opt %s --split-input-file --ms-cpu-target-attributes="vector-bits=512" | FileCheck %s --check-prefix=HOST
// RUN: not ms-opt %s --ms-cpu-target-attributes="vector-bits=100" 2>&1 | FileCheck %s --check-prefix=BAD

// Every defined function asks for the target's vector width; a named CPU also replaces the
// host's CPU and feature list. Declarations are left alone. An attribute the function had
// already is kept, an old width replaced.
// CHECK-LABEL: llvm.func @kernel(
// CHECK-SAME:    passthrough = {{\[\[}}"prefer-vector-width", "256"]]
// CHECK-SAME:    target_cpu = "haswell"
// CHECK-SAME:    target_features = #llvm.target_features<["+sse2"]>
// CHECK-LABEL: llvm.func @declared(
// CHECK-NOT:     passthrough
// HOST-LABEL: llvm.func @kernel(
// HOST-SAME:    passthrough = {{\[\[}}"prefer-vector-width", "512"]]
// HOST-NOT:     target_cpu
// HOST-LABEL: llvm.func @declared(
// BAD: error: bad option {{.*}}option 'vector-bits' of pass 'ms-cpu-target-attributes' is one of 0, 128, 256, 512, not '100'
llvm.func @kernel(%x: f32) -> f32 {
  %y = llvm.fmul %x, %x : f32
  llvm.return %y : f32
}
llvm.func @declared(f32) -> f32

// -----

// CHECK-LABEL: llvm.func @tuned(
// CHECK-SAME:    passthrough = ["nounwind", ["prefer-vector-width", "256"]]
// HOST-LABEL: llvm.func @tuned(
// HOST-SAME:    passthrough = ["nounwind", ["prefer-vector-width", "512"]]
llvm.func @tuned() attributes {passthrough = ["nounwind", ["prefer-vector-width", "128"]]} {
  llvm.return
}

// -----

// A matmul kernel (ms.kernel = "matmul") asks cpu_codegen for LLVM's loop strength
// reduction, which code generation leaves out of every other function; an elementwise
// kernel does not, and a marker the function had already is not repeated.
// CHECK-LABEL: llvm.func @product(
// CHECK-SAME:    passthrough = {{\[\[}}"prefer-vector-width", "256"], "mscc-loop-strength-reduction"]
// CHECK-LABEL: llvm.func @twice(
// CHECK-SAME:    passthrough = {{\[\[}}"prefer-vector-width", "256"], "mscc-loop-strength-reduction"]
// CHECK-LABEL: llvm.func @scale(
// CHECK-SAME:    ms.kernel = "elementwise", passthrough = {{\[\[}}"prefer-vector-width", "256"]], target_cpu
// HOST-LABEL: llvm.func @product(
// HOST-SAME:    "mscc-loop-strength-reduction"
llvm.func @product() attributes {ms.kernel = "matmul"} {
  llvm.return
}
llvm.func @twice() attributes {ms.kernel = "matmul", passthrough = ["mscc-loop-strength-reduction"]} {
  llvm.return
}
llvm.func @scale() attributes {ms.kernel = "elementwise"} {
  llvm.return
}
