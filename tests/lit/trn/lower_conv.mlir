// RUN: torch-trn-opt %s -split-input-file -trn-lower-linalg | FileCheck %s

// A 3x3 convolution with padding 1 and a bias: per output block (4 channels x 30 positions) one
// PSUM tile accumulates 9 TensorE matmuls, one per tap: the stationary tile is the tap's weight
// [in channel, out channel] (a transposing window), the moving tile the input shifted by the
// tap; where the shifted window leaves the input, the tile is zeroed and the DMA fills the part
// inside (tile_offset / tile_sizes / tile_strides). The bias is added leaving PSUM.
// CHECK-LABEL: func.func @conv2d
// CHECK: trn.dma_copy %arg2, %[[B:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 4, 1>
// CHECK: %[[ACC:[0-9]+]] = trn.alloc {{.*}} : !trn.psum<4, [30], f32>
// CHECK: trn.memset %[[X0:[0-9]+]], 0.000000e+00
// CHECK-NEXT: trn.dma_copy %arg0, %[[X0]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 3, 4, 5>, hbm_strides = array<i64: 30, 6, 1>, tile_offset = 7 : i64, tile_sizes = array<i64: 4, 5>, tile_strides = array<i64: 6, 1>
// CHECK: trn.dma_copy %arg1, %[[W0:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 3, 4>, hbm_strides = array<i64: 9, 27>
// CHECK: trn.matmul %[[W0]], %[[X0]], %[[ACC]] {trn.op
// The centre tap reads the whole input: no zero fill, no tile window.
// CHECK: trn.dma_copy %arg0, %[[X4:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 3, 5, 6>, hbm_strides = array<i64: 30, 6, 1>, trn.op
// CHECK: trn.matmul %{{.*}}, %[[X4]], %[[ACC]] {accumulate
// CHECK-COUNT-4: trn.matmul %{{.*}}, %{{.*}}, %[[ACC]] {accumulate
// CHECK-NOT: trn.matmul
// CHECK: trn.tensor_scalar %[[ACC]], %[[Y:[0-9]+]] column %[[B]] {op = "add"
// CHECK: trn.dma_copy %[[Y]], %arg3 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 4, 5, 6>, hbm_strides = array<i64: 30, 6, 1>
// CHECK-NOT: linalg.generic
func.func @conv2d(%x: memref<1x3x5x6xf32>, %w: memref<4x3x3x3xf32>, %b: memref<4xf32>, %y: memref<1x4x5x6xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0)>, affine_map<() -> (0)>, affine_map<() -> (0, 0, 0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::convolution", trn.extern_ints = array<i64: 0, 1>,
                  trn.extern_lists = [array<i64: 1, 1>, array<i64: 1, 1>, array<i64: 1, 1>, array<i64: 0, 0>]}
      ins(%ctx, %k, %x, %w, %b : i64, i64, memref<1x3x5x6xf32>, memref<4x3x3x3xf32>, memref<4xf32>) outs(%y : memref<1x4x5x6xf32>) {
  ^bb0(%c: i64, %i: i64, %a0: f32, %a1: f32, %a2: f32, %o0: f32):
    linalg.yield %o0 : f32
  }
  return
}

// -----

// Depthwise (groups == channels), stride 2: on VectorE, channels on partitions: per tap the
// shifted tile times the tap's weight column (tensor_scalar multiply), added to the sum.
// CHECK-LABEL: func.func @depthwise
// CHECK-NOT: trn.matmul
// CHECK: trn.dma_copy %arg1, %[[C:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 5, 1>, hbm_strides = array<i64: 9, 1>
// CHECK: trn.tensor_scalar %{{.*}}, %[[S:[0-9]+]] column %[[C]] {op = "multiply"
// CHECK: trn.tensor_scalar %{{.*}}, %[[P:[0-9]+]] column %{{.*}} {op = "multiply"
// CHECK-NEXT: trn.tensor_tensor %[[S]], %[[P]], %[[S]] {op = "add"
// CHECK: trn.dma_copy %{{.*}}, %arg2 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 5, 4, 4>, hbm_strides = array<i64: 16, 4, 1>
func.func @depthwise(%x: memref<1x5x8x8xf32>, %w: memref<5x1x3x3xf32>, %y: memref<1x5x4x4xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0)>],
                  iterator_types = [], library_call = "trn_ext3_0", trn.extern_op = "aten::convolution", trn.extern_ints = array<i64: 0, 5>,
                  trn.extern_lists = [array<i64: 2, 2>, array<i64: 1, 1>, array<i64: 1, 1>, array<i64: 0, 0>]}
      ins(%ctx, %k, %x, %w : i64, i64, memref<1x5x8x8xf32>, memref<5x1x3x3xf32>) outs(%y : memref<1x5x4x4xf32>) {
  ^bb0(%c: i64, %i: i64, %a0: f32, %a1: f32, %o0: f32):
    linalg.yield %o0 : f32
  }
  return
}

// -----

// Backward of a stride-2 1-D convolution (kernel 3, padding 1): grad input by output phase
// (even positions from taps 1, odd from taps 0 and 2: the transposed weight [out ch, in ch] as
// stationary, stored with stride 2); grad weight per tap over the positions inside the input
// (grad_output^T [pos, out ch] x input [pos, in ch] into PSUM [out ch, in ch]); grad bias as
// VectorE sums.
// CHECK-LABEL: func.func @backward1d
// CHECK: trn.dma_copy %arg2, %{{.*}} {hbm_offset = 1 : i64, hbm_sizes = array<i64: 6, 4>, hbm_strides = array<i64: 12, 3>
// CHECK: trn.matmul
// CHECK-NOT: accumulate
// CHECK: trn.dma_copy %{{.*}}, %arg3 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 4, 1, 5>, hbm_strides = array<i64: 10, 0, 2>
// CHECK: trn.matmul {{.*}} {accumulate
// CHECK: trn.dma_copy %{{.*}}, %arg3 {hbm_offset = 1 : i64, hbm_sizes = array<i64: 4, 1, 5>, hbm_strides = array<i64: 10, 0, 2>
// Tap 0 reads input position 2 p - 1: output positions 1..4 only.
// CHECK: trn.dma_copy %arg0, %[[G:[0-9]+]] {hbm_offset = 1 : i64, hbm_sizes = array<i64: 4, 6>, hbm_strides = array<i64: 1, 5>
// CHECK: trn.dma_copy %arg1, %{{.*}} {hbm_offset = 1 : i64, hbm_sizes = array<i64: 4, 4>, hbm_strides = array<i64: 2, 10>
// CHECK: trn.matmul %[[G]], %{{.*}}, %{{.*}} : !trn.sbuf<4, [6], f32>, !trn.sbuf<4, [4], f32>, !trn.psum<6, [4], f32>
// CHECK: trn.dma_copy %{{.*}}, %arg4 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 6, 4>, hbm_strides = array<i64: 12, 3>
// CHECK: trn.tensor_reduce %{{.*}}, %[[GB:[0-9]+]] {op = "add"
// CHECK: trn.dma_copy %[[GB]], %arg5 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 6, 1>, hbm_strides = array<i64: 1, 1>
func.func @backward1d(%go: memref<1x6x5xf32>, %x: memref<1x4x10xf32>, %w: memref<6x4x3xf32>, %gi: memref<1x4x10xf32>, %gw: memref<6x4x3xf32>, %gb: memref<6xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0, 0)>, affine_map<() -> (0, 0, 0)>, affine_map<() -> (0, 0, 0)>, affine_map<() -> (0, 0, 0)>, affine_map<() -> (0, 0, 0)>, affine_map<() -> (0)>],
                  iterator_types = [], library_call = "trn_ext6_0", trn.extern_op = "aten::convolution_backward", trn.extern_ints = array<i64: 0, 1>,
                  trn.extern_lists = [array<i64: 6>, array<i64: 2>, array<i64: 1>, array<i64: 1>, array<i64: 0>, array<i64: 1, 1, 1>]}
      ins(%ctx, %k, %go, %x, %w : i64, i64, memref<1x6x5xf32>, memref<1x4x10xf32>, memref<6x4x3xf32>) outs(%gi, %gw, %gb : memref<1x4x10xf32>, memref<6x4x3xf32>, memref<6xf32>) {
  ^bb0(%c: i64, %i: i64, %a0: f32, %a1: f32, %a2: f32, %o0: f32, %o1: f32, %o2: f32):
    linalg.yield %o0, %o1, %o2 : f32, f32, f32
  }
  return
}

// -----

// A transposed convolution (conv_transpose2d: 4 -> 3 channels, kernel 3, stride 2, padding 1,
// output_padding 1, bias): the grad input of the regular convolution, by output phase. Phase
// (0, 0) takes tap (1, 1) only; phase (1, 1) taps (0, 0), (0, 2), (2, 0), (2, 2). The weight
// (in 4, out 3, 3, 3) is the stationary tile [in ch, out ch] as is; the bias is added per phase
// block as it leaves PSUM, stored with stride 2.
// CHECK-LABEL: func.func @conv_transpose2d
// CHECK: %[[ACC:[0-9]+]] = trn.alloc {{.*}} : !trn.psum<3, [25], f32>
// CHECK: trn.matmul %{{.*}}, %{{.*}}, %[[ACC]] {trn.op
// CHECK-NOT: trn.matmul
// CHECK: trn.tensor_scalar %[[ACC]], %[[Y0:[0-9]+]] column %{{[0-9]+}} {op = "add"
// CHECK: trn.dma_copy %[[Y0]], %arg3 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 3, 5, 5>, hbm_strides = array<i64: 100, 20, 2>
// CHECK: trn.dma_copy %{{[0-9]+}}, %arg3 {hbm_offset = 1 : i64
// CHECK: trn.dma_copy %{{[0-9]+}}, %arg3 {hbm_offset = 10 : i64
// CHECK: %[[ACC3:[0-9]+]] = trn.alloc {{.*}} : !trn.psum<3, [25], f32>
// CHECK: trn.matmul %{{.*}}, %{{.*}}, %[[ACC3]] {trn.op
// CHECK-COUNT-3: trn.matmul %{{.*}}, %{{.*}}, %[[ACC3]] {accumulate
// CHECK: trn.dma_copy %{{[0-9]+}}, %arg3 {hbm_offset = 11 : i64, hbm_sizes = array<i64: 3, 5, 5>, hbm_strides = array<i64: 100, 20, 2>
// CHECK-NOT: linalg.generic
func.func @conv_transpose2d(%x: memref<1x4x5x5xf32>, %w: memref<4x3x3x3xf32>, %b: memref<3xf32>, %y: memref<1x3x10x10xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0)>, affine_map<() -> (0)>, affine_map<() -> (0, 0, 0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::convolution", trn.extern_ints = array<i64: 1, 1>,
                  trn.extern_lists = [array<i64: 2, 2>, array<i64: 1, 1>, array<i64: 1, 1>, array<i64: 1, 1>]}
      ins(%ctx, %k, %x, %w, %b : i64, i64, memref<1x4x5x5xf32>, memref<4x3x3x3xf32>, memref<3xf32>) outs(%y : memref<1x3x10x10xf32>) {
  ^bb0(%c: i64, %i: i64, %a0: f32, %a1: f32, %a2: f32, %o0: f32):
    linalg.yield %o0 : f32
  }
  return
}

// -----

// 3-D: the 2-D sum of shifted products with one more tap loop, over the kernel's depth. Depth
// stride 2, padding 1: output slice 0 reads input slices 0 and 1 (depth taps 1 and 2; tap 0 is
// padding and left out): 18 matmuls into one PSUM tile, the first with the weight of depth tap
// 1 (offset 9); output slice 1 reads slices 1 and 2 (depth taps 0 and 1: the input from offset
// 16, the weight from 0).
// CHECK-LABEL: func.func @conv3d
// CHECK: %[[ACC:[0-9]+]] = trn.alloc {{.*}} : !trn.psum<3, [16], f32>
// CHECK: trn.dma_copy %arg0, %[[X0:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 2, 3, 3>, hbm_strides = array<i64: 48, 4, 1>, tile_offset = 5
// CHECK: trn.dma_copy %arg1, %[[W0:[0-9]+]] {hbm_offset = 9 : i64, hbm_sizes = array<i64: 2, 3>, hbm_strides = array<i64: 27, 54>
// CHECK: trn.matmul %[[W0]], %[[X0]], %[[ACC]] {trn.op
// CHECK-COUNT-17: trn.matmul %{{.*}}, %{{.*}}, %[[ACC]] {accumulate
// CHECK-NOT: trn.matmul
// CHECK: trn.tensor_scalar %[[ACC]], %[[Y:[0-9]+]] column %{{[0-9]+}} {op = "add"
// CHECK: trn.dma_copy %[[Y]], %arg3 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 3, 4, 4>, hbm_strides = array<i64: 32, 4, 1>
// CHECK: %[[ACC1:[0-9]+]] = trn.alloc {{.*}} : !trn.psum<3, [16], f32>
// CHECK: trn.dma_copy %arg0, %[[X1:[0-9]+]] {hbm_offset = 16 : i64, hbm_sizes = array<i64: 2, 3, 3>
// CHECK: trn.dma_copy %arg1, %[[W1:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 2, 3>
// CHECK: trn.matmul %[[W1]], %[[X1]], %[[ACC1]] {trn.op
// CHECK-COUNT-17: trn.matmul %{{.*}}, %{{.*}}, %[[ACC1]] {accumulate
// CHECK-NOT: trn.matmul
// CHECK: trn.dma_copy %{{[0-9]+}}, %arg3 {hbm_offset = 16 : i64, hbm_sizes = array<i64: 3, 4, 4>
// CHECK-NOT: linalg.generic
func.func @conv3d(%x: memref<1x2x3x4x4xf32>, %w: memref<3x2x3x3x3xf32>, %b: memref<3xf32>, %y: memref<1x3x2x4x4xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0, 0)>, affine_map<() -> (0)>, affine_map<() -> (0, 0, 0, 0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::convolution", trn.extern_ints = array<i64: 0, 1>,
                  trn.extern_lists = [array<i64: 2, 1, 1>, array<i64: 1, 1, 1>, array<i64: 1, 1, 1>, array<i64: 0, 0, 0>]}
      ins(%ctx, %k, %x, %w, %b : i64, i64, memref<1x2x3x4x4xf32>, memref<3x2x3x3x3xf32>, memref<3xf32>) outs(%y : memref<1x3x2x4x4xf32>) {
  ^bb0(%c: i64, %i: i64, %a0: f32, %a1: f32, %a2: f32, %o0: f32):
    linalg.yield %o0 : f32
  }
  return
}

// -----

// Its backward. Grad input per input depth slice: slice 0 from grad_output slice 0 (depth tap
// 1: 9 taps), slice 1 from grad_output slices 1 (tap 0) and 0 (tap 2: 18 taps). Grad weight of
// tap (0, 0, 0): only output slice 1 reads inside the input (slice 1), rows 1..3 of columns
// 1..3: grad_output from offset 16 + 5, the input from slice 1 (offset 16). Grad bias: sums over
// both output slices.
// CHECK-LABEL: func.func @conv3d_backward
// CHECK-COUNT-9: trn.matmul
// CHECK-NOT: trn.matmul
// CHECK: trn.dma_copy %{{[0-9]+}}, %arg3 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 2, 4, 4>, hbm_strides = array<i64: 48, 4, 1>
// CHECK-COUNT-18: trn.matmul
// CHECK-NOT: trn.matmul
// CHECK: trn.dma_copy %{{[0-9]+}}, %arg3 {hbm_offset = 16 : i64, hbm_sizes = array<i64: 2, 4, 4>
// CHECK-COUNT-9: trn.matmul
// CHECK: trn.dma_copy %{{[0-9]+}}, %arg3 {hbm_offset = 32 : i64, hbm_sizes = array<i64: 2, 4, 4>
// CHECK: %[[DW:[0-9]+]] = trn.alloc {{.*}} : !trn.psum<3, [2], f32>
// CHECK: trn.dma_copy %arg0, %[[G0:[0-9]+]] {hbm_offset = 21 : i64, hbm_sizes = array<i64: 3, 3>, hbm_strides = array<i64: 1, 32>
// CHECK: trn.dma_copy %arg1, %[[X0:[0-9]+]] {hbm_offset = 16 : i64, hbm_sizes = array<i64: 3, 2>, hbm_strides = array<i64: 1, 48>
// CHECK: trn.matmul %[[G0]], %[[X0]], %[[DW]] {trn.op
// CHECK-COUNT-2: trn.matmul %{{[0-9]+}}, %{{[0-9]+}}, %[[DW]] {accumulate
// CHECK-NOT: trn.matmul
// CHECK: trn.tensor_copy %[[DW]], %[[DWS:[0-9]+]]
// CHECK: trn.dma_copy %[[DWS]], %arg4 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 3, 2>, hbm_strides = array<i64: 54, 27>
// CHECK: trn.dma_copy %arg0, %[[B0:[0-9]+]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 3, 4, 4>, hbm_strides = array<i64: 32, 4, 1>
// CHECK: trn.dma_copy %arg0, %[[B1:[0-9]+]] {hbm_offset = 16 : i64, hbm_sizes = array<i64: 3, 4, 4>
// CHECK: trn.dma_copy %{{[0-9]+}}, %arg5

func.func @conv3d_backward(%go: memref<1x3x2x4x4xf32>, %x: memref<1x2x3x4x4xf32>, %w: memref<3x2x3x3x3xf32>, %gi: memref<1x2x3x4x4xf32>, %gw: memref<3x2x3x3x3xf32>, %gb: memref<3xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0, 0)>, affine_map<() -> (0)>],
                  iterator_types = [], library_call = "trn_ext6_0", trn.extern_op = "aten::convolution_backward", trn.extern_ints = array<i64: 0, 1>,
                  trn.extern_lists = [array<i64: 3>, array<i64: 2, 1, 1>, array<i64: 1, 1, 1>, array<i64: 1, 1, 1>, array<i64: 0, 0, 0>, array<i64: 1, 1, 1>]}
      ins(%ctx, %k, %go, %x, %w : i64, i64, memref<1x3x2x4x4xf32>, memref<1x2x3x4x4xf32>, memref<3x2x3x3x3xf32>) outs(%gi, %gw, %gb : memref<1x2x3x4x4xf32>, memref<3x2x3x3x3xf32>, memref<3xf32>) {
  ^bb0(%c: i64, %i: i64, %a0: f32, %a1: f32, %a2: f32, %o0: f32, %o1: f32, %o2: f32):
    linalg.yield %o0, %o1, %o2 : f32, f32, f32
  }
  return
}
