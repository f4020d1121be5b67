// RUN: torch-trn-opt %s -split-input-file -trn-fuse-elementwise | FileCheck %s

// Two elementwise generics (a broadcast bias add, then relu) fuse into one generic whose body
// computes both.
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @bias_relu(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4x8xf32>, %[[B:[a-z0-9]+]]: tensor<8xf32>
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: ins(%[[A]], %[[B]] : tensor<4x8xf32>, tensor<8xf32>)
// CHECK: arith.addf
// CHECK: arith.maxf
// CHECK: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @bias_relu(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %v = arith.addf %x, %y : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %m = arith.maxf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// An extern placeholder (library_call = "trn_ext3_0") between two elementwise ops: nothing is
// fused into or out of it, it keeps all three operands although its stand-in body reads none
// of its inputs, and it keeps its library_call. (MLIR's linalg-fuse-elementwise-ops drops the
// unused operands and then the whole placeholder.)
#map = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @around_extern(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4x8xf32>, %[[B:[a-z0-9]+]]: tensor<4x8xf32>
// CHECK: %[[S:.*]] = linalg.generic
// CHECK-SAME: ins(%[[A]], %[[B]] :
// CHECK: arith.addf
// CHECK-NOT: arith.maxf
// CHECK: linalg.yield
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[C:.*]] = linalg.generic
// CHECK-SAME: library_call = "trn_ext3_0"
// CHECK-SAME: ins(%[[S]], %[[B]] : tensor<4x8xf32>, tensor<4x8xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %[[O:.*]]: f32):
// CHECK-NEXT: linalg.yield %[[O]] : f32
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[C]] :
// CHECK-NOT: arith.addf
// CHECK: arith.maxf
// CHECK: return
func.func @around_extern(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %v = arith.addf %x, %y : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %c = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"],
                       library_call = "trn_ext3_0"}
      ins(%s, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    linalg.yield %o : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%c : tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %m = arith.maxf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// A producer with two users (here: returned and consumed) is not fused.
#map = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @two_users(
// CHECK: %[[P:.*]] = linalg.generic
// CHECK: math.exp
// CHECK-NOT: arith.negf
// CHECK: %[[Q:.*]] = linalg.generic
// CHECK-SAME: ins(%[[P]] :
// CHECK-NOT: math.exp
// CHECK: arith.negf
// CHECK: return %[[P]], %[[Q]]
func.func @two_users(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %v = math.exp %x : f32
    linalg.yield %v : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%s : tensor<4xf32>) outs(%e2 : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.negf %x : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %s, %r : tensor<4xf32>, tensor<4xf32>
}

// -----

// A producer that reads its init (a sum over a size-1 dim: `out + x`, all loops parallel) read
// through a broadcast (its one element under every iteration of the consumer) does not fuse:
// MLIR 16 keeps the init as an output of the fused op indexed by the broadcast, so every
// iteration accumulated into that one element (nanquantile's count of non-NaN values was 2 for
// a 1-element input in compile mode).
#id = affine_map<(d0) -> (d0)>
#first = affine_map<(d0) -> (0)>
// CHECK-LABEL: func.func @init_reader_under_broadcast(
// CHECK: %[[COUNT:.*]] = linalg.generic
// CHECK: arith.addi
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %[[COUNT]] : tensor<2xf64>, tensor<1xi64>)
// CHECK-NOT: arith.addi
// CHECK: return
func.func @init_reader_under_broadcast(%x: tensor<1xi64>, %q: tensor<2xf64>) -> tensor<2xf64> {
  %zero = arith.constant 0 : i64
  %e = tensor.empty() : tensor<1xi64>
  %f = linalg.fill ins(%zero : i64) outs(%e : tensor<1xi64>) -> tensor<1xi64>
  %count = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<1xi64>) outs(%f : tensor<1xi64>) {
  ^bb0(%v: i64, %acc: i64):
    %s = arith.addi %acc, %v : i64
    linalg.yield %s : i64
  } -> tensor<1xi64>
  %e2 = tensor.empty() : tensor<2xf64>
  %r = linalg.generic {indexing_maps = [#id, #first, #id], iterator_types = ["parallel"]}
      ins(%q, %count : tensor<2xf64>, tensor<1xi64>) outs(%e2 : tensor<2xf64>) {
  ^bb0(%a: f64, %c: i64, %o: f64):
    %cf = arith.sitofp %c : i64 to f64
    %m = arith.mulf %a, %cf : f64
    linalg.yield %m : f64
  } -> tensor<2xf64>
  return %r : tensor<2xf64>
}
