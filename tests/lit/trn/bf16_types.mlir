// RUN: torch-trn-opt %s -split-input-file -trn-bf16-types -verify-diagnostics | FileCheck %s

// bfloat16 as the group lowering writes it (ir_builder.h: i16 elements, widened by a shift and
// rounded to nearest even with integer ops) becomes bf16 with extf / truncf; the rounding's
// integer ops are gone, the function and its values are retyped.
// CHECK-LABEL: func.func @add_bf16
// CHECK-SAME: (%{{.*}}: tensor<4x8xbf16>, %{{.*}}: tensor<4x8xbf16>) -> tensor<4x8xbf16>
// CHECK: tensor.empty() : tensor<4x8xbf16>
// CHECK: ^bb0(%[[A:.*]]: bf16, %[[B:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[X:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK-NEXT: %[[Y:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.truncf %[[S]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[R]] : bf16
// CHECK-NOT: arith.shrui
// CHECK: return %{{.*}} : tensor<4x8xbf16>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @add_bf16(%in0: tensor<4x8xi16>, %in1: tensor<4x8xi16>) -> tensor<4x8xi16> {
  %e = tensor.empty() : tensor<4x8xi16>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%in0, %in1 : tensor<4x8xi16>, tensor<4x8xi16>) outs(%e : tensor<4x8xi16>) {
  ^bb0(%a: i16, %b: i16, %o: i16):
    %a32 = arith.extui %a : i16 to i32
    %c16 = arith.constant 16 : i32
    %ah = arith.shli %a32, %c16 : i32
    %x = arith.bitcast %ah : i32 to f32
    %b32 = arith.extui %b : i16 to i32
    %c16b = arith.constant 16 : i32
    %bh = arith.shli %b32, %c16b : i32
    %y = arith.bitcast %bh : i32 to f32
    %s = arith.addf %x, %y : f32
    %bits = arith.bitcast %s : f32 to i32
    %c16c = arith.constant 16 : i32
    %hi = arith.shrui %bits, %c16c : i32
    %c1 = arith.constant 1 : i32
    %lsb = arith.andi %hi, %c1 : i32
    %c7fff = arith.constant 32767 : i32
    %bias = arith.addi %lsb, %c7fff : i32
    %sum = arith.addi %bits, %bias : i32
    %rounded = arith.shrui %sum, %c16c : i32
    %nan = arith.cmpf uno, %s, %s : f32
    %qnan = arith.constant 32704 : i32
    %sel = arith.select %nan, %qnan, %rounded : i32
    %h = arith.trunci %sel : i32 to i16
    linalg.yield %h : i16
  } -> tensor<4x8xi16>
  return %r : tensor<4x8xi16>
}

// -----

// A bf16 constant keeps its bits (16256 = 0x3F80 = 1.0); a cast to float32 is a widening.
// CHECK-LABEL: func.func @fill_and_widen
// CHECK: arith.constant 1.000000e+00 : bf16
// CHECK: linalg.fill ins(%{{.*}} : bf16) outs(%{{.*}} : tensor<16xbf16>)
// CHECK: ^bb0(%[[A:.*]]: bf16, %{{.*}}: f32):
// CHECK-NEXT: %[[X:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK-NEXT: linalg.yield %[[X]] : f32
func.func @fill_and_widen() -> (tensor<16xi16>, tensor<16xf32>) {
  %one = arith.constant 16256 : i16
  %e = tensor.empty() : tensor<16xi16>
  %f = linalg.fill ins(%one : i16) outs(%e : tensor<16xi16>) -> tensor<16xi16>
  %e2 = tensor.empty() : tensor<16xf32>
  %w = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%f : tensor<16xi16>) outs(%e2 : tensor<16xf32>) {
  ^bb0(%a: i16, %o: f32):
    %a32 = arith.extui %a : i16 to i32
    %c16 = arith.constant 16 : i32
    %ah = arith.shli %a32, %c16 : i32
    %x = arith.bitcast %ah : i32 to f32
    linalg.yield %x : f32
  } -> tensor<16xf32>
  return %f, %w : tensor<16xi16>, tensor<16xf32>
}

// -----

// An i16 read as an integer is not a bfloat16 move: refused (the group is built as host code).
func.func @int16_arith(%in0: tensor<16xi16>) -> tensor<16xi16> {
  %e = tensor.empty() : tensor<16xi16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%in0 : tensor<16xi16>) outs(%e : tensor<16xi16>) {
  ^bb0(%a: i16, %o: i16):
    // expected-error @+1 {{'arith.addi' op reads a bfloat16 element (i16) in a form the trn lowering does not recognise}}
    %s = arith.addi %a, %a : i16
    linalg.yield %s : i16
  } -> tensor<16xi16>
  return %r : tensor<16xi16>
}
