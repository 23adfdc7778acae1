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
