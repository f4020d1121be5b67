// RUN: torch-trn-opt %s -split-input-file -trn-lower-linalg | FileCheck %s

// Max pooling 3x3, stride 2, padding 1, on VectorE, one output row per block: the first tap
// (here all padding) starts the maximum at -inf and its index (an iota; negative outside the
// input); each further tap is taken where it is greater or NaN (copy_predicated of the value and
// of the tap's flat input index, GpSimd iota with the stride as step). Padding reads -inf.
// Where the first tap is padding, the window's first tap inside the input is taken whatever its
// value (ATen starts there): in the first output row, tap (1, 0) for columns [1, 5) and tap
// (1, 1) for column 0 (a column iota compared with the run's bounds, or-ed into the predicate).
// CHECK-LABEL: func.func @maxpool
// CHECK: trn.iota %[[IDX:[0-9]+]] {base = -11 : i64, partition_step = 0 : i64, step = 2 : i64
// CHECK: trn.memset %[[BEST:[0-9]+]], 0xFFF0000000000000
// CHECK: trn.memset %[[V:[0-9]+]], 0xFFF0000000000000
// CHECK-NEXT: trn.dma_copy %arg0, %[[V]] {hbm_offset = 1 : i64, hbm_sizes = array<i64: 1, 1, 4>, hbm_strides = array<i64: 110, 20, 2>, tile_offset = 1 : i64
// CHECK: trn.iota %[[TI:[0-9]+]] {base = -1 : i64, partition_step = 0 : i64, step = 2 : i64
// CHECK: trn.tensor_tensor %[[V]], %[[BEST]], %[[GT:[0-9]+]] {op = "is_gt"
// CHECK: trn.tensor_tensor %[[V]], %[[V]], %[[NAN:[0-9]+]] {op = "not_equal"
// CHECK: trn.tensor_tensor %[[GT]], %[[NAN]], %[[T0:[0-9]+]] {op = "logical_or"
// CHECK: trn.iota %[[F:[0-9]+]] {base = 0 : i64, partition_step = 0 : i64, step = 1 : i64
// CHECK: trn.tensor_scalar %[[F]], %[[GE:[0-9]+]] {imm = 1.000000e+00 : f32, op = "is_ge"
// CHECK: trn.tensor_scalar %[[F]], %[[LT:[0-9]+]] {imm = 5.000000e+00 : f32, op = "is_lt"
// CHECK: trn.tensor_tensor %[[GE]], %[[LT]], %[[IN:[0-9]+]] {op = "logical_and"
// CHECK: trn.tensor_tensor %[[T0]], %[[IN]], %[[TAKE:[0-9]+]] {op = "logical_or"
// CHECK: trn.copy_predicated %[[V]], %[[TAKE]], %[[BEST]]
// CHECK: trn.copy_predicated %[[TI]], %[[TAKE]], %[[IDX]]
// CHECK: trn.iota %{{[0-9]+}} {base = 0 : i64, partition_step = 0 : i64, step = 1 : i64
// CHECK: trn.tensor_scalar %{{[0-9]+}}, %{{[0-9]+}} {imm = 0.000000e+00 : f32, op = "is_ge"
// CHECK: trn.tensor_scalar %{{[0-9]+}}, %{{[0-9]+}} {imm = 1.000000e+00 : f32, op = "is_lt"
// CHECK: trn.dma_copy %[[IDX]], %arg2 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 1, 5>, hbm_strides = array<i64: 30, 1>{{.*}} : !trn.sbuf<1, [5], i32>, memref<1x1x6x5xi64>
// CHECK: trn.dma_copy %[[BEST]], %arg1 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 1, 5>
func.func @maxpool(%x: memref<1x1x11x10xf32>, %out: memref<1x1x6x5xf32>, %idx: memref<1x1x6x5xi64>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0)>],
                  iterator_types = [], library_call = "trn_ext3_0", trn.extern_op = "aten::max_pool2d_with_indices", trn.extern_ints = array<i64: 0>,
                  trn.extern_lists = [array<i64: 3, 3>, array<i64: 2, 2>, array<i64: 1, 1>, array<i64: 1, 1>]}
      ins(%ctx, %k, %x : i64, i64, memref<1x1x11x10xf32>) outs(%out, %idx : memref<1x1x6x5xf32>, memref<1x1x6x5xi64>) {
  ^bb0(%c: i64, %i: i64, %a0: f32, %o0: f32, %o1: i64):
    linalg.yield %o0, %o1 : f32, i64
  }
  return
}

// -----

// Average pooling 3x3, stride 2, padding 1, count_include_pad: the taps' sum divided by 9 (the
// divisor is constant along the row's columns here).
// CHECK-LABEL: func.func @avgpool
// CHECK-NOT: trn.matmul
// CHECK: trn.tensor_tensor %{{.*}}, %{{.*}}, %{{.*}} {op = "add"
// CHECK: trn.tensor_scalar %{{.*}}, %[[M:[0-9]+]] {imm = 9.000000e+00 : f32, op = "divide"
// CHECK: trn.dma_copy %[[M]], %arg1
func.func @avgpool(%x: memref<2x3x8x8xf32>, %out: memref<2x3x4x4xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0)>],
                  iterator_types = [], library_call = "trn_ext2_0", trn.extern_op = "aten::avg_pool2d", trn.extern_ints = array<i64: 0, 1>,
                  trn.extern_lists = [array<i64: 3, 3>, array<i64: 2, 2>, array<i64: 1, 1>]}
      ins(%ctx, %k, %x : i64, i64, memref<2x3x8x8xf32>) outs(%out : memref<2x3x4x4xf32>) {
  ^bb0(%c: i64, %i: i64, %a0: f32, %o0: f32):
    linalg.yield %o0 : f32
  }
  return
}

// -----

// Max pooling backward (2x2, stride 2): per input phase and tap, the window's grad_output is
// taken where its index equals this input position (is_equal with an iota), then stored with
// the stride.
// CHECK-LABEL: func.func @maxpool_backward
// CHECK: trn.iota %[[T:[0-9]+]] {base = 0 : i64, partition_step = 0 : i64, step = 2 : i64
// CHECK: trn.dma_copy %arg2, %[[I:[0-9]+]] {{.*}} : memref<1x2x2x2xi64>, !trn.sbuf<2, [2], i32>
// CHECK: trn.tensor_tensor %[[I]], %[[T]], %[[EQ:[0-9]+]] {op = "is_equal"
// CHECK: trn.copy_predicated %{{.*}}, %[[EQ]], %[[SEL:[0-9]+]] {
// CHECK: trn.dma_copy %[[SEL]], %arg3 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 2, 1, 2>, hbm_strides = array<i64: 16, 8, 2>
func.func @maxpool_backward(%go: memref<1x2x2x2xf32>, %x: memref<1x2x4x4xf32>, %idx: memref<1x2x2x2xi64>, %gi: memref<1x2x4x4xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::max_pool2d_with_indices_backward", trn.extern_ints = array<i64: 0>,
                  trn.extern_lists = [array<i64: 2, 2>, array<i64: 2, 2>, array<i64: 0, 0>, array<i64: 1, 1>]}
      ins(%ctx, %k, %go, %x, %idx : i64, i64, memref<1x2x2x2xf32>, memref<1x2x4x4xf32>, memref<1x2x2x2xi64>) outs(%gi : memref<1x2x4x4xf32>) {
  ^bb0(%c: i64, %i: i64, %a0: f32, %a1: f32, %a2: i64, %o0: f32):
    linalg.yield %o0 : f32
  }
  return
}

// -----

// 3-D max pooling, kernel (3, 2, 2), stride 2, depth padding 1: the 2-D window with one more tap
// loop over the input depth slices the output slice's window reads (slice -1 is padding: output
// slice 0 reads slices 0 and 1, slice 0's first tap starts the maximum). Each tap's index is its
// flat input position d * H * W + h * W + w (slice 1 starts at 25).
// CHECK-LABEL: func.func @maxpool3d
// CHECK: trn.dma_copy %arg0, %[[BEST:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 2, 1, 2>, hbm_strides = array<i64: 100, 10, 2>
// CHECK: trn.iota %[[IDX:[0-9]+]] {base = 0 : i64, partition_step = 0 : i64, step = 2 : i64
// CHECK-COUNT-3: trn.copy_predicated %{{[0-9]+}}, %{{[0-9]+}}, %[[BEST]]
// CHECK: trn.dma_copy %arg0, %[[V:[0-9]+]] {hbm_offset = 25 : i64, hbm_sizes = array<i64: 2, 1, 2>, hbm_strides = array<i64: 100, 10, 2>
// CHECK: trn.iota %[[TI:[0-9]+]] {base = 25 : i64
// CHECK: trn.copy_predicated %[[V]], %[[TAKE:[0-9]+]], %[[BEST]]
// CHECK-NEXT: trn.copy_predicated %[[TI]], %[[TAKE]], %[[IDX]]
// CHECK-COUNT-3: trn.copy_predicated %{{[0-9]+}}, %{{[0-9]+}}, %[[BEST]]
// CHECK-NOT: trn.copy_predicated %{{[0-9]+}}, %{{[0-9]+}}, %[[BEST]]
// CHECK: trn.dma_copy %[[IDX]], %arg2 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 2, 2>, hbm_strides = array<i64: 8, 1>
// CHECK: trn.dma_copy %[[BEST]], %arg1 {hbm_offset = 0 : i64
// Output slice 1 (offset 4 in the result) reads slices 1, 2 and 3.
// CHECK: trn.dma_copy %arg0, %{{[0-9]+}} {hbm_offset = 25 : i64
// CHECK: trn.dma_copy %{{[0-9]+}}, %arg1 {hbm_offset = 4 : i64
// CHECK-NOT: linalg.generic
func.func @maxpool3d(%x: memref<1x2x4x5x5xf32>, %out: memref<1x2x2x2x2xf32>, %idx: memref<1x2x2x2x2xi64>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0, 0)>],
                  iterator_types = [], library_call = "trn_ext3_0", trn.extern_op = "aten::max_pool3d_with_indices", trn.extern_ints = array<i64: 0>,
                  trn.extern_lists = [array<i64: 3, 2, 2>, array<i64: 2, 2, 2>, array<i64: 1, 0, 0>, array<i64: 1, 1, 1>]}
      ins(%ctx, %k, %x : i64, i64, memref<1x2x4x5x5xf32>) outs(%out, %idx : memref<1x2x2x2x2xf32>, memref<1x2x2x2x2xi64>) {
  ^bb0(%c: i64, %i: i64, %a0: f32, %o0: f32, %o1: i64):
    linalg.yield %o0, %o1 : f32, i64
  }
  return
}

// -----

// Its backward: per input depth slice, the depth taps that reach it from a grad_output slice
// ((z + 1 - t) / 2 where that divides). Slice 0 from output slice 0 only; slice 1 from output
// slices 1 (tap 0: grad_output and indices at offset 4) and 0 (tap 2), compared with the
// positions' flat indices (an iota from 25) and summed.
// CHECK-LABEL: func.func @maxpool3d_backward
// CHECK: trn.iota %[[T0:[0-9]+]] {base = 0 : i64, partition_step = 0 : i64, step = 2 : i64
// CHECK: trn.dma_copy %arg2, %[[I0:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 2, 1, 2>, hbm_strides = array<i64: 8, 2, 1>
// CHECK: trn.tensor_tensor %[[I0]], %[[T0]], %{{[0-9]+}} {op = "is_equal"
// CHECK-NOT: is_equal
// CHECK: trn.dma_copy %{{[0-9]+}}, %arg3 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 2, 1, 3>, hbm_strides = array<i64: 100, 10, 2>
// CHECK: trn.iota %[[T1:[0-9]+]] {base = 25 : i64
// CHECK: trn.dma_copy %arg0, %{{[0-9]+}} {hbm_offset = 4 : i64
// CHECK: trn.dma_copy %arg2, %[[I1:[0-9]+]] {hbm_offset = 4 : i64
// CHECK: trn.tensor_tensor %[[I1]], %[[T1]], %{{[0-9]+}} {op = "is_equal"
// CHECK: trn.dma_copy %arg2, %[[I2:[0-9]+]] {hbm_offset = 0 : i64
// CHECK: trn.tensor_tensor %[[I2]], %[[T1]], %{{[0-9]+}} {op = "is_equal"
// CHECK: trn.tensor_tensor %{{[0-9]+}}, %{{[0-9]+}}, %[[SUM:[0-9]+]] {op = "add"
// CHECK: trn.dma_copy %[[SUM]], %arg3 {hbm_offset = 25 : i64, hbm_sizes = array<i64: 2, 1, 3>
func.func @maxpool3d_backward(%go: memref<1x2x2x2x2xf32>, %x: memref<1x2x4x5x5xf32>, %idx: memref<1x2x2x2x2xi64>, %gi: memref<1x2x4x5x5xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::max_pool3d_with_indices_backward", trn.extern_ints = array<i64: 0>,
                  trn.extern_lists = [array<i64: 3, 2, 2>, array<i64: 2, 2, 2>, array<i64: 1, 0, 0>, array<i64: 1, 1, 1>]}
      ins(%ctx, %k, %go, %x, %idx : i64, i64, memref<1x2x2x2x2xf32>, memref<1x2x4x5x5xf32>, memref<1x2x2x2x2xi64>) outs(%gi : memref<1x2x4x5x5xf32>) {
  ^bb0(%c: i64, %i: i64, %a0: f32, %a1: f32, %a2: i64, %o0: f32):
    linalg.yield %o0 : f32
  }
  return
}
