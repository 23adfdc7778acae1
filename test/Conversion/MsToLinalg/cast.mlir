// ms.cast between dtypes: one parallel linalg.generic whose body converts a scalar with numpy's
// semantics. bool and uint8 are stored as i8 (LLVM cannot load i1; arith is signless), so bool
// is truncated to i1 on load, extended back on store, and uint8 uses the unsigned conversions.
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | FileCheck %s
// The output is valid IR (re-parsed and verified, ms ops included).
// RUN: ms-opt %s --convert-ms-to-linalg --split-input-file | ms-opt --split-input-file > /dev/null

// CHECK-DAG:   #[[$ID:.+]] = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @f32_to_f16(
// CHECK-SAME:    %[[A:.+]]: tensor<4xf32>) -> tensor<4xf16>
// CHECK:         %[[INIT:.+]] = tensor.empty() : tensor<4xf16>
// CHECK:         %[[R:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$ID]]], iterator_types = ["parallel"]}
// CHECK-SAME:      ins(%[[A]] : tensor<4xf32>) outs(%[[INIT]] : tensor<4xf16>)
// CHECK-NEXT:    ^bb0(%[[X:.+]]: f32, %{{.+}}: f16):
// CHECK-NEXT:      %[[Y:.+]] = arith.truncf %[[X]] : f32 to f16
// CHECK-NEXT:      linalg.yield %[[Y]] : f16
// CHECK:         return %[[R]] : tensor<4xf16>
func.func @f32_to_f16(%a: tensor<4xf32>) -> tensor<4xf16> {
  %0 = "ms.cast"(%a) {dtype = f16} : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// CHECK-LABEL: func.func @f16_to_f64(
// CHECK:         ^bb0(%[[X:.+]]: f16, %{{.+}}: f64):
// CHECK-NEXT:      %[[Y:.+]] = arith.extf %[[X]] : f16 to f64
// CHECK-NEXT:      linalg.yield %[[Y]] : f64
func.func @f16_to_f64(%a: tensor<4xf16>) -> tensor<4xf64> {
  %0 = "ms.cast"(%a) {dtype = f64} : (tensor<4xf16>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// CHECK-LABEL: func.func @i32_to_f32(
// CHECK:         ^bb0(%[[X:.+]]: i32, %{{.+}}: f32):
// CHECK-NEXT:      %[[Y:.+]] = arith.sitofp %[[X]] : i32 to f32
// CHECK-NEXT:      linalg.yield %[[Y]] : f32
func.func @i32_to_f32(%a: tensor<4xi32>) -> tensor<4xf32> {
  %0 = "ms.cast"(%a) {dtype = f32} : (tensor<4xi32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @uint8_to_f32(
// CHECK-SAME:    %[[A:.+]]: tensor<4xi8>) -> tensor<4xf32>
// CHECK:         ^bb0(%[[X:.+]]: i8, %{{.+}}: f32):
// CHECK-NEXT:      %[[Y:.+]] = arith.uitofp %[[X]] : i8 to f32
// CHECK-NEXT:      linalg.yield %[[Y]] : f32
func.func @uint8_to_f32(%a: tensor<4xui8>) -> tensor<4xf32> {
  %0 = "ms.cast"(%a) {dtype = f32} : (tensor<4xui8>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @bool_to_f32(
// CHECK-SAME:    %[[A:.+]]: tensor<4xi8>) -> tensor<4xf32>
// CHECK:         ^bb0(%[[X:.+]]: i8, %{{.+}}: f32):
// CHECK-NEXT:      %[[B:.+]] = arith.trunci %[[X]] : i8 to i1
// CHECK-NEXT:      %[[Y:.+]] = arith.uitofp %[[B]] : i1 to f32
// CHECK-NEXT:      linalg.yield %[[Y]] : f32
func.func @bool_to_f32(%a: tensor<4xi1>) -> tensor<4xf32> {
  %0 = "ms.cast"(%a) {dtype = f32} : (tensor<4xi1>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// float to int: fptosi only where it is defined (inside the 32-bit range; LLVM makes nan,
// the infinities and the rest poison); elsewhere x86's and numpy's integer indefinite value.
// CHECK-LABEL: func.func @f32_to_i32(
// CHECK:         ^bb0(%[[X:.+]]: f32, %{{.+}}: i32):
// CHECK:           %[[LO:.+]] = arith.constant -2.14748365E+9 : f32
// CHECK:           %[[GE:.+]] = arith.cmpf oge, %[[X]], %[[LO]] : f32
// CHECK:           %[[HI:.+]] = arith.constant 2.14748365E+9 : f32
// CHECK:           %[[LT:.+]] = arith.cmpf olt, %[[X]], %[[HI]] : f32
// CHECK:           %[[FITS:.+]] = arith.andi %[[GE]], %[[LT]] : i1
// CHECK:           %[[SAFE:.+]] = arith.select %[[FITS]], %[[X]], %{{.+}} : f32
// CHECK:           %[[I:.+]] = arith.fptosi %[[SAFE]] : f32 to i32
// CHECK:           %[[MIN:.+]] = arith.constant -2147483648 : i32
// CHECK:           %[[Y:.+]] = arith.select %[[FITS]], %[[I]], %[[MIN]] : i32
// CHECK-NEXT:      linalg.yield %[[Y]] : i32
func.func @f32_to_i32(%a: tensor<4xf32>) -> tensor<4xi32> {
  %0 = "ms.cast"(%a) {dtype = i32} : (tensor<4xf32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// An unsigned or narrower result wraps from the 64-bit conversion, as numpy's does on x86.
// CHECK-LABEL: func.func @f64_to_uint8(
// CHECK-SAME:    -> tensor<4xi8>
// CHECK:         ^bb0(%[[X:.+]]: f64, %{{.+}}: i8):
// CHECK-NOT:       arith.fptoui
// CHECK:           %[[I:.+]] = arith.fptosi %{{.+}} : f64 to i64
// CHECK:           %[[W:.+]] = arith.select %{{.+}}, %[[I]], %{{.+}} : i64
// CHECK-NEXT:      %[[Y:.+]] = arith.trunci %[[W]] : i64 to i8
// CHECK-NEXT:      linalg.yield %[[Y]] : i8
func.func @f64_to_uint8(%a: tensor<4xf64>) -> tensor<4xui8> {
  %0 = "ms.cast"(%a) {dtype = ui8} : (tensor<4xf64>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// CHECK-LABEL: func.func @int_widen_narrow(
// CHECK:         ^bb0(%[[X:.+]]: i8, %{{.+}}: i32):
// CHECK-NEXT:      %[[Y:.+]] = arith.extsi %[[X]] : i8 to i32
// CHECK-NEXT:      linalg.yield %[[Y]] : i32
// CHECK:         ^bb0(%[[U:.+]]: i8, %{{.+}}: i64):
// CHECK-NEXT:      %[[V:.+]] = arith.extui %[[U]] : i8 to i64
// CHECK-NEXT:      linalg.yield %[[V]] : i64
// CHECK:         ^bb0(%[[W:.+]]: i64, %{{.+}}: i16):
// CHECK-NEXT:      %[[T:.+]] = arith.trunci %[[W]] : i64 to i16
// CHECK-NEXT:      linalg.yield %[[T]] : i16
func.func @int_widen_narrow(%a: tensor<4xi8>, %b: tensor<4xui8>, %c: tensor<4xi64>)
    -> (tensor<4xi32>, tensor<4xi64>, tensor<4xi16>) {
  %0 = "ms.cast"(%a) {dtype = i32} : (tensor<4xi8>) -> tensor<4xi32>
  %1 = "ms.cast"(%b) {dtype = i64} : (tensor<4xui8>) -> tensor<4xi64>
  %2 = "ms.cast"(%c) {dtype = i16} : (tensor<4xi64>) -> tensor<4xi16>
  return %0, %1, %2 : tensor<4xi32>, tensor<4xi64>, tensor<4xi16>
}

// -----

// bool widens as 0/1 (zero extension), never sign extension.
// CHECK-LABEL: func.func @bool_to_i32(
// CHECK:         ^bb0(%[[X:.+]]: i8, %{{.+}}: i32):
// CHECK-NEXT:      %[[B:.+]] = arith.trunci %[[X]] : i8 to i1
// CHECK-NEXT:      %[[Y:.+]] = arith.extui %[[B]] : i1 to i32
// CHECK-NEXT:      linalg.yield %[[Y]] : i32
func.func @bool_to_i32(%a: tensor<4xi1>) -> tensor<4xi32> {
  %0 = "ms.cast"(%a) {dtype = i32} : (tensor<4xi1>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// To bool: != 0, then stored as i8.
// CHECK-LABEL: func.func @to_bool(
// CHECK-SAME:    %[[A:.+]]: tensor<4xf32>, %[[B:.+]]: tensor<4xi8>) -> (tensor<4xi8>, tensor<4xi8>)
// CHECK:         ^bb0(%[[X:.+]]: f32, %{{.+}}: i8):
// CHECK:           %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[NZ:.+]] = arith.cmpf une, %[[X]], %[[Z]] : f32
// CHECK-NEXT:      %[[E:.+]] = arith.extui %[[NZ]] : i1 to i8
// CHECK-NEXT:      linalg.yield %[[E]] : i8
// CHECK:         ^bb0(%[[U:.+]]: i8, %{{.+}}: i8):
// CHECK:           %[[Z8:.+]] = arith.constant 0 : i8
// CHECK-NEXT:      %[[NZ8:.+]] = arith.cmpi ne, %[[U]], %[[Z8]] : i8
// CHECK-NEXT:      %[[E8:.+]] = arith.extui %[[NZ8]] : i1 to i8
// CHECK-NEXT:      linalg.yield %[[E8]] : i8
func.func @to_bool(%a: tensor<4xf32>, %b: tensor<4xui8>) -> (tensor<4xi1>, tensor<4xi1>) {
  %0 = "ms.cast"(%a) {dtype = i1} : (tensor<4xf32>) -> tensor<4xi1>
  %1 = "ms.cast"(%b) {dtype = i1} : (tensor<4xui8>) -> tensor<4xi1>
  return %0, %1 : tensor<4xi1>, tensor<4xi1>
}

// -----

// int8 <-> uint8 and a cast to the same dtype keep the bits.
// CHECK-LABEL: func.func @same_bits(
// CHECK:         ^bb0(%[[X:.+]]: i8, %{{.+}}: i8):
// CHECK-NEXT:      linalg.yield %[[X]] : i8
// CHECK:         ^bb0(%[[Y:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:      linalg.yield %[[Y]] : f32
func.func @same_bits(%a: tensor<4xi8>, %b: tensor<4xf32>) -> (tensor<4xui8>, tensor<4xf32>) {
  %0 = "ms.cast"(%a) {dtype = ui8} : (tensor<4xi8>) -> tensor<4xui8>
  %1 = "ms.cast"(%b) {dtype = f32} : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xui8>, tensor<4xf32>
}
