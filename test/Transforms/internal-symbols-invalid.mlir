// ms-cpu-internal-symbols names every defined function mscc.<name>. A module that already
// has the new name of one of them gets a located error at the function renamed (two
// definitions of one name before).
// RUN: ms-opt %s --ms-cpu-internal-symbols --split-input-file --verify-diagnostics

// expected-error@+1 {{function 'f' becomes 'mscc.f' in the machine code, a name this module already has}}
func.func @f(%x: f32) -> f32 {
  return %x : f32
}
func.func private @"mscc.f"(%x: f32) -> f32 {
  return %x : f32
}
