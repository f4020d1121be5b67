// RUN: torch-trn-opt %s -split-input-file -trn-math-approximation | FileCheck %s

// f32 transcendental ops become inline polynomial arithmetic (arith ops plus math.fma/absf/
// floor, which LLVM has intrinsics for): no math.tanh/exp/erf is left for libm.
// CHECK-LABEL: func.func @tanh_f32(
// CHECK-NOT: math.tanh
// CHECK: math.fma
// CHECK: arith.divf
// CHECK-NOT: math.tanh
// CHECK: return
func.func @tanh_f32(%x: f32) -> f32 {
  %r = math.tanh %x : f32
  return %r : f32
}

// -----

// exp: range reduction with math.floor, then 2^n built by integer ops and a bitcast.
// CHECK-LABEL: func.func @exp_f32(
// CHECK-NOT: math.exp
// CHECK: math.floor
// CHECK: arith.fptosi
// CHECK: arith.bitcast
// CHECK-NOT: math.exp
// CHECK: return
func.func @exp_f32(%x: f32) -> f32 {
  %r = math.exp %x : f32
  return %r : f32
}

// -----

// CHECK-LABEL: func.func @erf_f32(
// CHECK-NOT: math.erf
// CHECK: math.fma
// CHECK: arith.divf
// CHECK: arith.select
// CHECK-NOT: math.erf
// CHECK: return
func.func @erf_f32(%x: f32) -> f32 {
  %r = math.erf %x : f32
  return %r : f32
}

// -----

// Inside a linalg body (where the group lowering puts them) and with several ops at once.
#map = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @gelu_like(
// CHECK: linalg.generic
// CHECK-NOT: math.tanh
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK-NOT: math.log
// CHECK: linalg.yield
func.func @gelu_like(%a: tensor<16xf32>, %o: tensor<16xf32>) -> tensor<16xf32> {
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%a : tensor<16xf32>) outs(%o : tensor<16xf32>) {
  ^bb0(%x: f32, %out: f32):
    %t = math.tanh %x : f32
    %e = math.exp %t : f32
    %f = math.erf %e : f32
    %l = math.log %f : f32
    linalg.yield %l : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

// f64 (and f16) ops have no approximation here: they are left as they are (the pipeline turns
// them into LLVM intrinsics or libm calls).
// CHECK-LABEL: func.func @f64(
// CHECK-SAME: %[[X:[a-z0-9]+]]: f64
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[X]] : f64
// CHECK-NEXT: %[[E:.*]] = math.exp %[[X]] : f64
// CHECK-NEXT: %[[F:.*]] = math.erf %[[X]] : f64
// CHECK-NEXT: return %[[T]], %[[E]], %[[F]]
func.func @f64(%x: f64) -> (f64, f64, f64) {
  %t = math.tanh %x : f64
  %e = math.exp %x : f64
  %f = math.erf %x : f64
  return %t, %e, %f : f64, f64, f64
}
// CHECK-LABEL: func.func @f16(
// CHECK-NEXT: math.tanh %{{.*}} : f16
func.func @f16(%x: f16) -> f16 {
  %t = math.tanh %x : f16
  return %t : f16
}
