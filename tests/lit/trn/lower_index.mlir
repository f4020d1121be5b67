// RUN: torch-trn-opt %s -split-input-file -trn-lower-linalg | FileCheck %s

// x[:, i, j] of a 4 x 5 x 6 x 3 tensor (index.Tensor left as a runtime call; trn.extern_lists
// names the entries present: [None, i, j]): self is seen as [pre 4, rows 30, post 3]. Per block
// of <= 128 indices (200: 128 and 72) both index tiles are loaded, each wrapped
// (w = i + 5 * (i < 0), w = j + 6 * (j < 0)), checked against its size (an out-of-range index
// marks the row -1, which the indirect DMA refuses) and combined (row = w_i * 6 + w_j); then
// dma_gather reads the [30 rows, 4, 3] window and the block is stored into [4, 200, 3].
// CHECK-LABEL: func.func @index_two
// CHECK: trn.dma_copy %arg1, %[[I:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 1>{{.*}} : memref<200xi64>, !trn.sbuf<128, [1], i32>
// CHECK: trn.dma_copy %arg2, %[[J:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 1>
// CHECK: trn.tensor_scalar %[[I]], %[[N:[0-9]+]] {imm = 0.000000e+00 : f32, op = "is_lt"
// CHECK: trn.tensor_scalar %[[N]], %[[S:[0-9]+]] {imm = 5.000000e+00 : f32, op = "multiply"
// CHECK: trn.tensor_tensor %[[I]], %[[S]], %[[W:[0-9]+]] {op = "add"
// CHECK: trn.tensor_scalar %[[W]], %{{.*}} {imm = 5.000000e+00 : f32, op = "is_ge"
// CHECK: trn.tensor_scalar %[[J]], %{{.*}} {imm = 0.000000e+00 : f32, op = "is_lt"
// CHECK: trn.tensor_scalar %[[W]], %{{.*}} {imm = 6.000000e+00 : f32, op = "multiply"
// CHECK: trn.memset %[[M:[0-9]+]], -1.0
// CHECK: trn.copy_predicated %[[M]], %{{.*}}, %[[L:[0-9]+]]
// CHECK: trn.dma_gather %arg0, %[[L]], %[[B:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 30, 4, 3>, hbm_strides = array<i64: 3, 90, 1>{{.*}} : memref<4x5x6x3xf32>, !trn.sbuf<128, [1], i32>, !trn.sbuf<128, [12], f32>
// CHECK: trn.dma_copy %[[B]], %arg3 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 4, 3>, hbm_strides = array<i64: 3, 600, 1>
// CHECK: trn.dma_copy %arg1, %{{.*}} {hbm_offset = 128 : i64, hbm_sizes = array<i64: 72, 1>
// CHECK: trn.dma_copy %{{.*}}, %arg3 {hbm_offset = 384 : i64, hbm_sizes = array<i64: 72, 4, 3>
// CHECK-NOT: linalg.generic
func.func @index_two(%x: memref<4x5x6x3xf32>, %i: memref<200xi64>, %j: memref<200xi64>, %out: memref<4x200x3xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0, 0, 0)>, affine_map<() -> (0)>, affine_map<() -> (0)>, affine_map<() -> (0, 0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::index", trn.extern_ints = array<i64>,
                  trn.extern_lists = [array<i64: 0, 1, 1>]}
      ins(%ctx, %k, %x, %i, %j : i64, i64, memref<4x5x6x3xf32>, memref<200xi64>, memref<200xi64>) outs(%out : memref<4x200x3xf32>) {
  ^bb0(%c: i64, %o0: i64, %a: f32, %b: i64, %d: i64, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

// index_put(x, [i], v, accumulate=True) into a new result (index.Tensor's backward writes a
// fresh one): self is copied to the result through SBUF (40 elements: one [1, 40] block); one
// index tensor needs no range check (the wrapped row is outside the table when the index is);
// the values' rows are added to the rows the indices name by dma_scatter_add, in index order.
// CHECK-LABEL: func.func @index_put_accumulate
// CHECK: trn.dma_copy %arg0, %[[T:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 1, 40>
// CHECK: trn.dma_copy %[[T]], %arg3 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 1, 40>
// CHECK: trn.dma_copy %arg1, %[[I:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 6, 1>
// CHECK: trn.tensor_tensor %[[I]], %{{.*}}, %[[W:[0-9]+]] {op = "add"
// CHECK-NOT: copy_predicated
// CHECK: trn.dma_copy %arg2, %[[V:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 6, 1, 4>, hbm_strides = array<i64: 4, 1, 1>
// CHECK: trn.dma_scatter_add %[[V]], %[[W]], %arg3 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 10, 1, 4>, hbm_strides = array<i64: 4, 1, 1>
func.func @index_put_accumulate(%x: memref<10x4xf32>, %i: memref<6xi64>, %v: memref<6x4xf32>, %out: memref<10x4xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>, affine_map<() -> (0)>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::index_put", trn.extern_ints = array<i64: 1>,
                  trn.extern_lists = [array<i64: 1>]}
      ins(%ctx, %k, %x, %i, %v : i64, i64, memref<10x4xf32>, memref<6xi64>, memref<6x4xf32>) outs(%out : memref<10x4xf32>) {
  ^bb0(%c: i64, %o0: i64, %a: f32, %b: i64, %d: f32, %o: f32):
    linalg.yield %o : f32
  }
  return
}
