// RUN: torch-trn-opt %s -split-input-file -trn-collapse-loops | FileCheck %s

// Every buffer contiguous, identity maps: the four loops become one (a batch norm's relu over
// [64, 8, 8, 8]: 8-iteration inner loops, which LLVM does not vectorise, become one of 32768).
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @flat(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<64x8x8x8xf32, strided<[512, 64, 8, 1], offset: ?>>,
// CHECK-SAME: %[[Y:[a-z0-9]+]]: memref<64x8x8x8xf32>)
// CHECK-DAG: %[[CX:.*]] = memref.collapse_shape %[[X]] {{\[}}[0, 1, 2, 3]] : memref<64x8x8x8xf32, strided<[512, 64, 8, 1], offset: ?>> into memref<32768xf32, strided<[1], offset: ?>>
// CHECK-DAG: %[[CY:.*]] = memref.collapse_shape %[[Y]] {{\[}}[0, 1, 2, 3]] : memref<64x8x8x8xf32> into memref<32768xf32>
// CHECK: linalg.generic {indexing_maps = [#[[M:.*]], #[[M]]], iterator_types = ["parallel"]}
// CHECK-SAME: ins(%[[CX]] : {{.*}}) outs(%[[CY]] : {{.*}})
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.negf %[[A]]
// CHECK-NOT: linalg.generic
func.func @flat(%x: memref<64x8x8x8xf32, strided<[512, 64, 8, 1], offset: ?>>, %y: memref<64x8x8x8xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<64x8x8x8xf32, strided<[512, 64, 8, 1], offset: ?>>) outs(%y : memref<64x8x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  }
  return
}

// -----

// A per-channel operand (d1) keeps d0 and d1 apart; d2 and d3 merge. A size-1 broadcast result
// (the constant 0 of a [1, 8, 1, 1] statistic) is kept as it is.
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
#st = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
// CHECK-DAG: #[[ID:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[CH:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-DAG: #[[ST:map[0-9]*]] = affine_map<(d0, d1, d2) -> (0, d1, 0, 0)>
// CHECK-LABEL: func.func @per_channel(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<64x8x8x8xf32, strided<[512, 64, 8, 1], offset: ?>>, %[[W:[a-z0-9]+]]: memref<8xf32>, %[[S:[a-z0-9]+]]: memref<1x8x1x1xf32>, %[[Y:[a-z0-9]+]]: memref<64x8x8x8xf32>)
// CHECK-DAG: %[[CX:.*]] = memref.collapse_shape %[[X]] {{\[}}[0], [1], [2, 3]] : {{.*}} into memref<64x8x64xf32, strided<[512, 64, 1], offset: ?>>
// CHECK-DAG: %[[CY:.*]] = memref.collapse_shape %[[Y]] {{\[}}[0], [1], [2, 3]] : memref<64x8x8x8xf32> into memref<64x8x64xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[CH]], #[[ST]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[CX]], %[[W]], %[[S]] : {{.*}}) outs(%[[CY]] : {{.*}})
func.func @per_channel(%x: memref<64x8x8x8xf32, strided<[512, 64, 8, 1], offset: ?>>, %w: memref<8xf32>,
                       %s: memref<1x8x1x1xf32>, %y: memref<64x8x8x8xf32>) {
  linalg.generic {indexing_maps = [#id, #ch, #st, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %w, %s : memref<64x8x8x8xf32, strided<[512, 64, 8, 1], offset: ?>>, memref<8xf32>, memref<1x8x1x1xf32>)
      outs(%y : memref<64x8x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.subf %m, %c : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A per-channel sum over (N, H, W): the two inner reduction loops merge, the outer reduction and
// the parallel channel loop stay (different iterator types are never merged).
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-DAG: #[[ID:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[CH:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @channel_sum(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<64x8x8x8xf32, strided<[512, 64, 8, 1], offset: ?>>, %[[ACC:[a-z0-9]+]]: memref<8xf64>)
// CHECK: %[[CX:.*]] = memref.collapse_shape %[[X]] {{\[}}[0], [1], [2, 3]]
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[CH]]], iterator_types = ["reduction", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[CX]] : {{.*}}) outs(%[[ACC]] : memref<8xf64>)
func.func @channel_sum(%x: memref<64x8x8x8xf32, strided<[512, 64, 8, 1], offset: ?>>, %acc: memref<8xf64>) {
  linalg.generic {indexing_maps = [#id, #ch], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x : memref<64x8x8x8xf32, strided<[512, 64, 8, 1], offset: ?>>) outs(%acc : memref<8xf64>) {
  ^bb0(%a: f32, %s: f64):
    %e = arith.extf %a : f32 to f64
    %t = arith.addf %s, %e : f64
    linalg.yield %t : f64
  }
  return
}

// -----

// A padded row (stride 16 for 8 elements) keeps d2 and d3 apart; d0, d1 and d2 merge. A
// transposed operand (d3 before d2) keeps d1, d2 and d3 apart; d0 and d1 merge.
// CHECK-DAG: #[[ID2:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ID3:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[TR:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
// CHECK-LABEL: func.func @padded(
// CHECK: memref.collapse_shape %{{.*}} {{\[}}[0, 1, 2], [3]] : memref<4x8x8x8xf32, strided<[1024, 128, 16, 1], offset: ?>> into memref<256x8xf32, strided<[16, 1], offset: ?>>
// CHECK: linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-LABEL: func.func @transposed(
// CHECK: memref.collapse_shape %{{.*}} {{\[}}[0, 1], [2], [3]] : memref<4x8x8x8xf32> into memref<32x8x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[TR]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#tr = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
func.func @padded(%x: memref<4x8x8x8xf32, strided<[1024, 128, 16, 1], offset: ?>>, %y: memref<4x8x8x8xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<4x8x8x8xf32, strided<[1024, 128, 16, 1], offset: ?>>) outs(%y : memref<4x8x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}
func.func @transposed(%x: memref<4x8x8x8xf32>, %y: memref<4x8x8x8xf32>) {
  linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<4x8x8x8xf32>) outs(%y : memref<4x8x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

// Left alone: a body that reads its loop indices, a buffer with a dynamic stride, and a
// buffer of dynamic shape.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @indexed(
// CHECK-NOT: memref.collapse_shape
// CHECK: iterator_types = ["parallel", "parallel"]
// CHECK-LABEL: func.func @dynamic_stride(
// CHECK-NOT: memref.collapse_shape
// CHECK: iterator_types = ["parallel", "parallel"]
// CHECK-LABEL: func.func @dynamic_shape(
// CHECK-NOT: memref.collapse_shape
// CHECK: iterator_types = ["parallel", "parallel"]
func.func @indexed(%y: memref<8x8xi64>) {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%y : memref<8x8xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %v = arith.index_cast %i : index to i64
    linalg.yield %v : i64
  }
  return
}
func.func @dynamic_stride(%x: memref<8x8xf32, strided<[?, 1], offset: ?>>, %y: memref<8x8xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32, strided<[?, 1], offset: ?>>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}
func.func @dynamic_shape(%x: memref<?x8xf32>, %y: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x8xf32>) outs(%y : memref<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

// An in-place update (trn-tie-in-place reads the input through the out argument): one view of
// the buffer for both operands, so the loop keeps a single pointer.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @in_place(
// CHECK-SAME: %[[G:[a-z0-9]+]]: memref<16x32xf32>, %[[P:[a-z0-9]+]]: memref<16x32xf32>)
// CHECK-DAG: %[[CG:.*]] = memref.collapse_shape %[[G]] {{\[}}[0, 1]]
// CHECK-DAG: %[[CP:.*]] = memref.collapse_shape %[[P]] {{\[}}[0, 1]]
// CHECK-NOT: memref.collapse_shape
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[CG]], %[[CP]] : {{.*}}) outs(%[[CP]] : {{.*}})
func.func @in_place(%g: memref<16x32xf32>, %p: memref<16x32xf32>) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %p : memref<16x32xf32>, memref<16x32xf32>) outs(%p : memref<16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %b, %a : f32
    linalg.yield %s : f32
  }
  return
}
