// RUN: ms-opt %s --ms-cpu-internal-symbols --split-input-file | FileCheck %s
// RUN: ms-opt %s --ms-cpu-internal-symbols --convert-to-llvm --ms-cpu-c-interface-names --split-input-file | FileCheck %s --check-prefix=LLVM

// A function named like a libm function, next to the libm declaration a pass made: the
// defined function is renamed (calls follow), the declaration keeps its C name.
// CHECK-LABEL: func.func private @erf(f64) -> f64
// CHECK: func.func @mscc.exp(%[[X:.*]]: f64) -> f64 attributes {llvm.emit_c_interface}
// CHECK: %[[Y:.*]] = call @erf(%[[X]])
// CHECK: call @mscc.helper(%[[Y]])
// CHECK: func.func private @mscc.helper
// LLVM-LABEL: llvm.func @erf(f64) -> f64
// LLVM: llvm.func @mscc.exp(
// LLVM: llvm.call @mscc.helper(
// LLVM: llvm.func @_mlir_ciface_exp(
// LLVM: llvm.call @mscc.exp(
func.func private @erf(f64) -> f64
func.func @exp(%x: f64) -> f64 attributes {llvm.emit_c_interface} {
  %y = func.call @erf(%x) : (f64) -> f64
  %z = func.call @helper(%y) : (f64) -> f64
  return %z : f64
}
func.func private @helper(%x: f64) -> f64 {
  return %x : f64
}

// -----

// Already renamed functions are left alone (the pass is idempotent).
// CHECK-LABEL: func.func @mscc.step
// CHECK-NOT: mscc.mscc
func.func @mscc.step(%x: f32) -> f32 {
  return %x : f32
}
