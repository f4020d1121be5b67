// RUN: torch-trn-opt %s -split-input-file -verify-diagnostics -trn-tie-in-place | FileCheck %s

// An out argument tied to an input (the caller binds both to one view): the body reads the
// input through the out argument, so loads and stores use one pointer; the input is left
// unused and the attribute is dropped. An untied input is untouched.
#map = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @scale_in_place(
// CHECK-SAME: %[[CTX:[a-z0-9]+]]: i64,
// CHECK-SAME: %[[V:[a-z0-9]+]]: memref<16xf32, strided<[1], offset: ?>>,
// CHECK-SAME: %[[G:[a-z0-9]+]]: memref<16xf32, strided<[1], offset: ?>>,
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: memref<16xf32, strided<[1], offset: ?>> {bufferization.writable = true})
// CHECK-NOT: trn.tied_input
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[OUT]], %[[G]] :
// CHECK-SAME: outs(%[[OUT]] :
func.func @scale_in_place(%ctx: i64, %v: memref<16xf32, strided<[1], offset: ?>>,
                          %g: memref<16xf32, strided<[1], offset: ?>>,
                          %out: memref<16xf32, strided<[1], offset: ?>> {bufferization.writable = true, trn.tied_input = 1 : i64}) {
  linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%v, %g : memref<16xf32, strided<[1], offset: ?>>, memref<16xf32, strided<[1], offset: ?>>)
      outs(%out : memref<16xf32, strided<[1], offset: ?>>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.mulf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Types that differ but are cast-compatible: the input's uses see a cast of the out argument.
#map = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @cast(
// CHECK-SAME: %[[V:[a-z0-9]+]]: memref<16xf32, strided<[?], offset: ?>>,
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: memref<16xf32, strided<[1], offset: ?>>
// CHECK: %[[C:.*]] = memref.cast %[[OUT]] : memref<16xf32, strided<[1], offset: ?>> to memref<16xf32, strided<[?], offset: ?>>
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[C]] :
func.func @cast(%v: memref<16xf32, strided<[?], offset: ?>>,
                %out: memref<16xf32, strided<[1], offset: ?>> {trn.tied_input = 0 : i64}) {
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%v : memref<16xf32, strided<[?], offset: ?>>) outs(%out : memref<16xf32, strided<[1], offset: ?>>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  }
  return
}

// -----

// A tie to a later argument, or between buffers of different shapes, is a lowering bug.
// expected-error @+1 {{argument #0 is tied to argument #1, not an earlier one}}
func.func @later(%out: memref<16xf32> {trn.tied_input = 1 : i64}, %v: memref<16xf32>) {
  return
}

// -----

// expected-error @+1 {{cannot stand for the argument #0}}
func.func @shapes(%v: memref<8xf32>, %out: memref<16xf32> {trn.tied_input = 0 : i64}) {
  return
}
