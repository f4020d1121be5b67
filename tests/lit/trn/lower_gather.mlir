// RUN: torch-trn-opt %s -split-input-file -trn-lower-linalg | FileCheck %s

// An embedding left as a runtime call by the group lowering (trn.extern_op names it) becomes
// indirect DMA: 300 indices in blocks of 128, 128, 44; each block loads its indices (i64 -> i32),
// gathers one 64-wide table row per partition and stores the block.
// CHECK-LABEL: func.func @embedding
// CHECK: trn.dma_copy %arg1, %[[I:.*]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 1>, hbm_strides = array<i64: 1, 1>{{.*}} : memref<3x100xi64>, !trn.sbuf<128, [1], i32>
// CHECK: trn.dma_gather %arg0, %[[I]], %[[R:.*]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 1000, 64>, hbm_strides = array<i64: 64, 1>{{.*}} : memref<1000x64xf32>, !trn.sbuf<128, [1], i32>, !trn.sbuf<128, [64], f32>
// CHECK: trn.dma_copy %[[R]], %arg2 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 64>, hbm_strides = array<i64: 64, 1>
// CHECK: trn.dma_copy %arg1, %{{.*}} {hbm_offset = 128 : i64
// CHECK: trn.dma_copy %arg1, %{{.*}} {hbm_offset = 256 : i64, hbm_sizes = array<i64: 44, 1>
// CHECK: trn.dma_copy %{{.*}}, %arg2 {hbm_offset = 16384 : i64, hbm_sizes = array<i64: 44, 64>
// CHECK-NOT: linalg.generic
func.func @embedding(%w: memref<1000x64xf32>, %ids: memref<3x100xi64>, %out: memref<3x100x64xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0, 0)>],
                  iterator_types = [], library_call = "trn_ext3_0", trn.extern_op = "aten::embedding", trn.extern_ints = array<i64: -1>}
      ins(%ctx, %k, %w, %ids : i64, i64, memref<1000x64xf32>, memref<3x100xi64>) outs(%out : memref<3x100x64xf32>) {
  ^bb0(%c: i64, %i: i64, %a: f32, %b: i64, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

// index_select along dim 0 of a strided (transposed-row) 2-D tensor: the window's row stride is
// the tensor's, a 3000-wide row is gathered in chunks of 2048 and 952.
// CHECK-LABEL: func.func @index_select
// CHECK: trn.dma_gather %arg0, %{{.*}}, %{{.*}} {hbm_offset = 0 : i64, hbm_sizes = array<i64: 10, 2048>, hbm_strides = array<i64: 4000, 1>
// CHECK: trn.dma_gather %arg0, %{{.*}}, %{{.*}} {hbm_offset = 2048 : i64, hbm_sizes = array<i64: 10, 952>, hbm_strides = array<i64: 4000, 1>
func.func @index_select(%x: memref<10x3000xf32, strided<[4000, 1]>>, %ids: memref<5xi32>, %out: memref<5x3000xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>, affine_map<() -> (0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext3_0", trn.extern_op = "aten::index_select", trn.extern_ints = array<i64: 0>}
      ins(%ctx, %k, %x, %ids : i64, i64, memref<10x3000xf32, strided<[4000, 1]>>, memref<5xi32>) outs(%out : memref<5x3000xf32>) {
  ^bb0(%c: i64, %i: i64, %a: f32, %b: i32, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

// Embedding backward (scale_grad_by_freq off, padding_idx 7): the 300 x 64 result is zeroed
// (blocks of 128, 128, 44 rows), then per block of <= 128 indices the gradient rows whose index
// is 7 are zeroed (the index column spread over the row, compared, a predicated copy of zeros)
// and every row is added to the result row its index names (dma_scatter_add, in index order).
// CHECK-LABEL: func.func @embedding_backward
// CHECK: trn.memset %[[Z:[0-9]+]], 0.0{{.*}} : !trn.sbuf<128, [64], f32>
// CHECK: trn.dma_copy %[[Z]], %arg2 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 64>
// CHECK: trn.dma_copy %[[Z]], %arg2 {hbm_offset = 8192 : i64, hbm_sizes = array<i64: 128, 64>
// CHECK: trn.dma_copy %{{.*}}, %arg2 {hbm_offset = 16384 : i64, hbm_sizes = array<i64: 44, 64>
// CHECK: trn.dma_copy %arg1, %[[I:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 1>{{.*}} : memref<2x100xi64>, !trn.sbuf<128, [1], i32>
// CHECK: trn.dma_copy %arg0, %[[G:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 64>, hbm_strides = array<i64: 64, 1>
// CHECK: trn.tensor_scalar %[[S:[0-9]+]], %[[S]] column %[[I]] {op = "add"
// CHECK: trn.tensor_scalar %[[S]], %[[P:[0-9]+]] {imm = 7.000000e+00 : f32, op = "is_equal"{{.*}} : !trn.sbuf<128, [64], i32>, !trn.sbuf<128, [64], i1>
// CHECK: trn.copy_predicated %{{.*}}, %[[P]], %[[G]]
// CHECK: trn.dma_scatter_add %[[G]], %[[I]], %arg2 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 300, 64>, hbm_strides = array<i64: 64, 1>{{.*}} : !trn.sbuf<128, [64], f32>, !trn.sbuf<128, [1], i32>, memref<300x64xf32>
// CHECK: trn.dma_copy %arg1, %{{.*}} {hbm_offset = 128 : i64
// CHECK: trn.dma_scatter_add
// CHECK-NOT: linalg.generic
func.func @embedding_backward(%g: memref<2x100x64xf32>, %ids: memref<2x100xi64>, %out: memref<300x64xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0, 0)>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext3_0", trn.extern_op = "aten::embedding_dense_backward", trn.extern_ints = array<i64: 300, 7, 0>}
      ins(%ctx, %k, %g, %ids : i64, i64, memref<2x100x64xf32>, memref<2x100xi64>) outs(%out : memref<300x64xf32>) {
  ^bb0(%c: i64, %i: i64, %a: f32, %b: i64, %o: f32):
    linalg.yield %o : f32
  }
  return
}


// -----

// index_add_ along dim 0 (alpha 1): self (200 x 16) is copied to the result (blocks of 128 and 72
// rows), then per block of <= 128 indices the source rows are added to the rows their indices
// name (dma_scatter_add, in index order).
// CHECK-LABEL: func.func @index_add
// CHECK: trn.dma_copy %arg0, %[[T:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 16>
// CHECK: trn.dma_copy %[[T]], %arg3 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 16>
// CHECK: trn.dma_copy %arg0, %{{.*}} {hbm_offset = 2048 : i64, hbm_sizes = array<i64: 72, 16>
// CHECK: trn.dma_copy %arg1, %[[I:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 1>{{.*}} : memref<130xi64>, !trn.sbuf<128, [1], i32>
// CHECK: trn.dma_copy %arg2, %[[S:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 16>, hbm_strides = array<i64: 16, 1>
// CHECK: trn.dma_scatter_add %[[S]], %[[I]], %arg3 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 200, 16>, hbm_strides = array<i64: 16, 1>{{.*}} : !trn.sbuf<128, [16], f32>, !trn.sbuf<128, [1], i32>, memref<200x16xf32>
// CHECK: trn.dma_copy %arg1, %{{.*}} {hbm_offset = 128 : i64, hbm_sizes = array<i64: 2, 1>
// CHECK: trn.dma_copy %arg2, %{{.*}} {hbm_offset = 2048 : i64, hbm_sizes = array<i64: 2, 16>
// CHECK: trn.dma_scatter_add
// CHECK-NOT: linalg.generic
func.func @index_add(%x: memref<200x16xf32>, %ids: memref<130xi64>, %src: memref<130x16xf32>, %out: memref<200x16xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>, affine_map<() -> (0)>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::index_add_", trn.extern_ints = array<i64: 0, 1>}
      ins(%ctx, %k, %x, %ids, %src : i64, i64, memref<200x16xf32>, memref<130xi64>, memref<130x16xf32>) outs(%out : memref<200x16xf32>) {
  ^bb0(%c: i64, %i: i64, %a: f32, %b: i64, %s: f32, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

// index_add whose result is self's buffer (in place after bufferization): no copy, the scatter
// alone; a 1-D self is a table of one-element rows.
// CHECK-LABEL: func.func @index_add_1d_in_place
// CHECK-NOT: trn.dma_copy %arg0
// CHECK: trn.dma_copy %arg1, %[[I:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 9, 1>
// CHECK: trn.dma_copy %arg2, %[[S:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 9, 1>
// CHECK: trn.dma_scatter_add %[[S]], %[[I]], %arg0 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 7, 1>
func.func @index_add_1d_in_place(%x: memref<7xf32>, %ids: memref<9xi32>, %src: memref<9xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0)>, affine_map<() -> (0)>, affine_map<() -> (0)>, affine_map<() -> (0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::index_add", trn.extern_ints = array<i64: 0, 1>}
      ins(%ctx, %k, %x, %ids, %src : i64, i64, memref<7xf32>, memref<9xi32>, memref<9xf32>) outs(%x : memref<7xf32>) {
  ^bb0(%c: i64, %i: i64, %a: f32, %b: i32, %s: f32, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

// scatter_add_ along dim 0 with a row index (trn.extern_rows; an input's index expanded along
// dim 1 arrives with stride 0 instead, test_trn_scatter_intdiv.py), 5 of self's 16 columns: index
// n is element n * 5 of the index buffer, src rows are 20 wide; self is copied, then only the
// first 5 columns of the rows are added to.
// CHECK-LABEL: func.func @scatter_add_expanded_input
// CHECK: trn.dma_copy %arg0, %{{.*}} {hbm_offset = 0 : i64, hbm_sizes = array<i64: 50, 16>
// CHECK: trn.dma_copy %arg1, %[[I:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 30, 1>, hbm_strides = array<i64: 5, 1>
// CHECK: trn.dma_copy %arg2, %[[S:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 30, 5>, hbm_strides = array<i64: 20, 1>
// CHECK: trn.dma_scatter_add %[[S]], %[[I]], %arg3 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 50, 5>, hbm_strides = array<i64: 16, 1>{{.*}} : !trn.sbuf<30, [5], f32>, !trn.sbuf<30, [1], i32>, memref<50x16xf32>
// CHECK-NOT: linalg.generic
func.func @scatter_add_expanded_input(%x: memref<50x16xf32>, %ids: memref<30x5xi64>, %src: memref<40x20xf32>, %out: memref<50x16xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::scatter_add_", trn.extern_ints = array<i64: 0>, trn.extern_rows = array<i64: 1>}
      ins(%ctx, %k, %x, %ids, %src : i64, i64, memref<50x16xf32>, memref<30x5xi64>, memref<40x20xf32>) outs(%out : memref<50x16xf32>) {
  ^bb0(%c: i64, %i: i64, %a: f32, %b: i64, %s: f32, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

// scatter_add with an index the group expanded itself (materialised row-major, named by
// trn.extern_rows): index n is element n * 16, the first column of its row.
// CHECK-LABEL: func.func @scatter_add_row_index
// CHECK: trn.dma_copy %arg1, %{{.*}} {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 1>, hbm_strides = array<i64: 16, 1>
// CHECK: trn.dma_scatter_add
// CHECK: trn.dma_copy %arg1, %{{.*}} {hbm_offset = 2048 : i64, hbm_sizes = array<i64: 22, 1>, hbm_strides = array<i64: 16, 1>
// CHECK: trn.dma_scatter_add %{{.*}}, %{{.*}}, %arg3 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 50, 16>
func.func @scatter_add_row_index(%x: memref<50x16xf32>, %ids: memref<150x16xi64>, %src: memref<150x16xf32>, %out: memref<50x16xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::scatter_add", trn.extern_ints = array<i64: 0>, trn.extern_rows = array<i64: 1>}
      ins(%ctx, %k, %x, %ids, %src : i64, i64, memref<50x16xf32>, memref<150x16xi64>, memref<150x16xf32>) outs(%out : memref<50x16xf32>) {
  ^bb0(%c: i64, %i: i64, %a: f32, %b: i64, %s: f32, %o: f32):
    linalg.yield %o : f32
  }
  return
}
