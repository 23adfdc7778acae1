// RUN: ms-opt %s --ms-cpu-math-approx --split-input-file | FileCheck %s

// exp on float32: range reduction, a polynomial, 2^k from exponent bits; no libm call left;
// a nan input is the result (fptosi of nan would be LLVM poison in 2^k).
// CHECK-LABEL: func.func @exp_f32
// CHECK-SAME: (%[[X:.+]]: f32)
// CHECK-NOT: math.exp
// CHECK: %[[NAN:.+]] = arith.cmpf uno, %[[X]], %[[X]] : f32
// Multiply-adds may become FMAs (contract) where the CPU has them.
// CHECK: %[[T:.+]] = arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.addf %[[T]], %{{.*}} fastmath<contract> : f32
// CHECK: math.floor
// CHECK: arith.fptosi
// CHECK: arith.shli
// CHECK: arith.bitcast {{.*}} : i32 to f32
// CHECK: %[[Y:.+]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK: %[[R:.+]] = arith.select %[[NAN]], %[[X]], %[[Y]] : f32
// CHECK: return %[[R]]
func.func @exp_f32(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  return %0 : f32
}

// -----

// Vectors are rewritten too, with splat constants. Beyond 9.02, where float32's tanh is +-1,
// the result is exactly +-1 (the clamped polynomial stops at 0.99999976).
// CHECK-LABEL: func.func @tanh_vector
// CHECK-SAME: (%[[X:.+]]: vector<8xf32>)
// CHECK-NOT: math.tanh
// CHECK: arith.constant dense<7.90531111> : vector<8xf32>
// CHECK: %[[ONE:.+]] = math.copysign %{{.+}}, %[[X]] : vector<8xf32>
// CHECK: %[[ABS:.+]] = math.absf %[[X]] : vector<8xf32>
// CHECK: %[[BIG:.+]] = arith.cmpf oge, %[[ABS]], %{{.+}} : vector<8xf32>
// CHECK: %[[Q:.+]] = arith.divf {{.*}} : vector<8xf32>
// CHECK: %[[SMALL:.+]] = arith.select %{{.+}}, %[[X]], %[[Q]] : vector<8xi1>, vector<8xf32>
// CHECK: arith.select %[[BIG]], %[[ONE]], %[[SMALL]] : vector<8xi1>, vector<8xf32>
func.func @tanh_vector(%x: vector<8xf32>) -> vector<8xf32> {
  %0 = math.tanh %x : vector<8xf32>
  return %0 : vector<8xf32>
}

// -----

// float16 computes in float32.
// CHECK-LABEL: func.func @log_f16
// CHECK: %[[W:.+]] = arith.extf %{{.*}} : f16 to f32
// CHECK-NOT: math.log
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @log_f16(%x: f16) -> f16 {
  %0 = math.log %x : f16
  return %0 : f16
}

// -----

// float64 keeps the math op (libm is accurate and there is no float64 approximation here).
// CHECK-LABEL: func.func @exp_f64
// CHECK: math.exp %{{.*}} : f64
func.func @exp_f64(%x: f64) -> f64 {
  %0 = math.exp %x : f64
  return %0 : f64
}

// -----

// erf on float32: x P(x^2) / Q(x^2) with x clamped to [-4, 4].
// CHECK-LABEL: func.func @erf_f32
// CHECK-NOT: math.erf
// CHECK: %[[LO:.+]] = arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK: %[[X:.+]] = arith.minimumf %[[LO]], %{{.*}} : f32
// CHECK: %[[X2:.+]] = arith.mulf %[[X]], %[[X]] fastmath<contract> : f32
// CHECK: arith.divf
// CHECK-NOT: call
// CHECK: return
func.func @erf_f32(%x: f32) -> f32 {
  %0 = math.erf %x : f32
  return %0 : f32
}

// -----

// erf on float64 has no LLVM intrinsic: libm's erf, declared once, called per lane.
// CHECK-LABEL: func.func private @erf(f64) -> f64
// CHECK-NOT: func.func private @erf
// CHECK-LABEL: func.func @erf_f64
// CHECK: %[[Y:.+]] = call @erf(%{{.+}}) : (f64) -> f64
// CHECK: %[[A:.+]] = vector.extract %{{.+}}[0] : f64 from vector<2xf64>
// CHECK: %[[B:.+]] = call @erf(%[[A]]) : (f64) -> f64
// CHECK: vector.insert %[[B]], %{{.+}} [0] : f64 into vector<2xf64>
// CHECK: call @erf
// CHECK: vector.insert %{{.+}}, %{{.+}} [1] : f64 into vector<2xf64>
// CHECK-NOT: math.erf
func.func @erf_f64(%x: f64, %v: vector<2xf64>) -> (f64, vector<2xf64>) {
  %0 = math.erf %x : f64
  %1 = math.erf %v : vector<2xf64>
  return %0, %1 : f64, vector<2xf64>
}
