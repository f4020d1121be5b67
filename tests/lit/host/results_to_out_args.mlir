// RUN: torch-trn-opt %s -split-input-file -trn-results-to-out-args | FileCheck %s

// A result produced by a destination-style op: that op writes straight into the new out
// argument, the caller's inputs are marked read-only, and the tensor.empty is gone.
#map = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @add(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4xf32> {bufferization.writable = false}
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<4xf32> {bufferization.writable = false}
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: tensor<4xf32> {bufferization.writable = true}
// CHECK-NOT: tensor.empty
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: ins(%[[A]], %[[B]] :
// CHECK-SAME: outs(%[[OUT]] :
// CHECK: return %[[R]]
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A reduction: the destination chain goes through linalg.fill to the tensor.empty root.
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @row_sum(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x3xf32> {bufferization.writable = false}
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: tensor<2xf32> {bufferization.writable = true}
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[OUT]] : tensor<2xf32>)
// CHECK: linalg.generic
// CHECK-SAME: outs(%[[Z]] :
func.func @row_sum(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  %r = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<2x3xf32>) outs(%z : tensor<2xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// A returned input has no producing op: it is copied into the out argument.
// CHECK-LABEL: func.func @passthrough(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4xf32> {bufferization.writable = false}
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: tensor<4xf32> {bufferization.writable = true}
// CHECK: %[[C:.*]] = linalg.generic
// CHECK-SAME: ins(%[[A]] :
// CHECK-SAME: outs(%[[OUT]] :
// CHECK: return %[[C]]
func.func @passthrough(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}

// -----

// Private functions keep their signature.
// CHECK-LABEL: func.func private @helper(
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<4xf32>) -> tensor<4xf32>
func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}

// -----

// Attributes of a result (trn.strides: the layout of the caller's output buffer) move to its new
// out argument, next to bufferization.writable = true; an input's trn.strides stays as it is.
// A second result without attributes gets an out argument with only the writable marker.
#map = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @strided(
// CHECK-SAME: %{{[a-z0-9]+}}: i64 {bufferization.writable = false}
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4x8xf32> {bufferization.writable = false, trn.strides = array<i64: 1, 4>}
// CHECK-SAME: %[[OUT0:[a-z0-9]+]]: tensor<4x8xf32> {bufferization.writable = true, trn.strides = array<i64: 8, 1>}
// CHECK-SAME: %[[OUT1:[a-z0-9]+]]: tensor<4x8xf32> {bufferization.writable = true})
// CHECK-NOT: tensor.empty
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: ins(%[[A]] :
// CHECK-SAME: outs(%[[OUT0]] :
// CHECK: arith.negf
// CHECK: %[[C:.*]] = linalg.generic
// CHECK-SAME: ins(%[[A]] :
// CHECK-SAME: outs(%[[OUT1]] :
// CHECK: return %[[R]], %[[C]]
func.func @strided(%ctx: i64, %a: tensor<4x8xf32> {trn.strides = array<i64: 1, 4>})
    -> (tensor<4x8xf32> {trn.strides = array<i64: 8, 1>}, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.negf %x : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %r, %a : tensor<4x8xf32>, tensor<4x8xf32>
}
