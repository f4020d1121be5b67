// RUN: torch-trn-opt %s -split-input-file -verify-diagnostics -trn-static-strides | FileCheck %s
// RUN: torch-trn-opt %s -split-input-file -verify-diagnostics -trn-static-strides -canonicalize | FileCheck %s --check-prefix=CANON

// Arguments with trn.strides get those static strides (the offset stays dynamic) and lose the
// attribute; the body sees a memref.cast back to the fully dynamic type. An argument without
// trn.strides keeps its type; other argument attributes are kept.
#map = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @add(
// CHECK-SAME: %[[CTX:[a-z0-9]+]]: i64,
// CHECK-SAME: %[[A:[a-z0-9]+]]: memref<4x8xf32, strided<[1, 4], offset: ?>>,
// CHECK-SAME: %[[B:[a-z0-9]+]]: memref<4x8xf32, strided<[?, ?], offset: ?>>,
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: memref<4x8xf32, strided<[8, 1], offset: ?>> {bufferization.writable = true})
// CHECK-NOT: trn.strides
// CHECK-DAG: %[[CA:.*]] = memref.cast %[[A]] : memref<4x8xf32, strided<[1, 4], offset: ?>> to memref<4x8xf32, strided<[?, ?], offset: ?>>
// CHECK-DAG: %[[CO:.*]] = memref.cast %[[OUT]] : memref<4x8xf32, strided<[8, 1], offset: ?>> to memref<4x8xf32, strided<[?, ?], offset: ?>>
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[CA]], %[[B]] :
// CHECK-SAME: outs(%[[CO]] :

// After canonicalization the casts fold into their users, which now see the static strides.
// CANON-LABEL: func.func @add(
// CANON-SAME: %[[A:[a-z0-9]+]]: memref<4x8xf32, strided<[1, 4], offset: ?>>,
// CANON-SAME: %[[B:[a-z0-9]+]]: memref<4x8xf32, strided<[?, ?], offset: ?>>,
// CANON-SAME: %[[OUT:[a-z0-9]+]]: memref<4x8xf32, strided<[8, 1], offset: ?>>
// CANON-NOT: memref.cast
// CANON: linalg.generic
// CANON-SAME: ins(%[[A]], %[[B]] : memref<4x8xf32, strided<[1, 4], offset: ?>>, memref<4x8xf32, strided<[?, ?], offset: ?>>)
// CANON-SAME: outs(%[[OUT]] : memref<4x8xf32, strided<[8, 1], offset: ?>>)
func.func @add(%ctx: i64,
               %a: memref<4x8xf32, strided<[?, ?], offset: ?>> {trn.strides = array<i64: 1, 4>},
               %b: memref<4x8xf32, strided<[?, ?], offset: ?>>,
               %out: memref<4x8xf32, strided<[?, ?], offset: ?>> {bufferization.writable = true, trn.strides = array<i64: 8, 1>}) {
  linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<4x8xf32, strided<[?, ?], offset: ?>>, memref<4x8xf32, strided<[?, ?], offset: ?>>)
      outs(%out : memref<4x8xf32, strided<[?, ?], offset: ?>>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %v = arith.addf %x, %y : f32
    linalg.yield %v : f32
  }
  return
}

// -----

// A rank-0 argument (trn.strides = array<i64>) keeps its type and loses the attribute; private
// functions are not touched.
// CHECK-LABEL: func.func @scalar(
// CHECK-SAME: %{{[a-z0-9]+}}: memref<f32, strided<[], offset: ?>>)
// CHECK-NOT: memref.cast
// CHECK: return
// CHECK-LABEL: func.func private @helper(
// CHECK-SAME: memref<4xf32, strided<[?], offset: ?>> {trn.strides = array<i64: 1>}
// CANON-LABEL: func.func @scalar(
// CANON-LABEL: func.func private @helper(
// CANON-SAME: memref<4xf32, strided<[?], offset: ?>> {trn.strides = array<i64: 1>}
func.func @scalar(%a: memref<f32, strided<[], offset: ?>> {trn.strides = array<i64>}) {
  return
}
func.func private @helper(%a: memref<4xf32, strided<[?], offset: ?>> {trn.strides = array<i64: 1>}) {
  return
}

// -----

// trn.strides with the wrong number of strides is an error.
// expected-error @+1 {{argument #0 of type 'memref<4x8xf32, strided<[?, ?], offset: ?>>' cannot take trn.strides array<i64: 1>}}
func.func @bad_rank(%a: memref<4x8xf32, strided<[?, ?], offset: ?>> {trn.strides = array<i64: 1>}) {
  return
}

// -----

// ... and so is trn.strides on a tensor (the pass runs after bufferization).
// expected-error @+1 {{argument #0 of type 'tensor<4xf32>' cannot take trn.strides}}
func.func @on_tensor(%a: tensor<4xf32> {trn.strides = array<i64: 1>}) {
  return
}
