// RUN: torch-trn-opt %s -split-input-file -trn-lower-linalg -verify-diagnostics | FileCheck %s

// bf16 / f16 elementwise: the DMA widens the 2-byte HBM elements into f32 tiles, the engines
// compute in f32, and the store's DMA rounds to nearest even (a value only yielded is not
// rounded on an engine). A rounding inside the body (an op's result that the next op of a
// fused chain reads) is a copy into a bf16 tile, which the next instruction reads as fp32.
// CHECK-LABEL: func.func @chain_bf16
// (The 8 columns go on the partitions, the 4 rows on the free axis.)
// CHECK: trn.dma_copy %arg0, %[[X:[^ ]*]] {{.*}} : memref<4x8xbf16>, !trn.sbuf<8, [4], f32>
// CHECK: trn.dma_copy %arg1, %[[Y:[^ ]*]] {{.*}} : memref<4x8xf16>, !trn.sbuf<8, [4], f32>
// CHECK: trn.tensor_tensor %[[X]], %[[Y]], %[[S:[^ ]*]] {op = "add"{{.*}} : !trn.sbuf<8, [4], f32>, !trn.sbuf<8, [4], f32>, !trn.sbuf<8, [4], f32>
// CHECK: trn.tensor_copy %[[S]], %[[R:[^ ]*]] {{.*}} : !trn.sbuf<8, [4], f32>, !trn.sbuf<8, [4], bf16>
// CHECK: trn.tensor_scalar %[[R]], %[[M:[^ ]*]] {imm = 3.000000e+00 : f32, op = "multiply"{{.*}} : !trn.sbuf<8, [4], bf16>, !trn.sbuf<8, [4], f32>
// CHECK-NOT: trn.tensor_copy
// CHECK: trn.dma_copy %[[M]], %arg2 {{.*}} : !trn.sbuf<8, [4], f32>, memref<4x8xbf16>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @chain_bf16(%x: memref<4x8xbf16>, %y: memref<4x8xf16>, %z: memref<4x8xbf16>) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<4x8xbf16>, memref<4x8xf16>) outs(%z : memref<4x8xbf16>) {
  ^bb0(%a: bf16, %b: f16, %o: bf16):
    %af = arith.extf %a : bf16 to f32
    %bf = arith.extf %b : f16 to f32
    %s = arith.addf %af, %bf : f32
    %sr = arith.truncf %s : f32 to bf16
    %sw = arith.extf %sr : bf16 to f32
    %three = arith.constant 3.0 : f32
    %m = arith.mulf %sw, %three : f32
    %r = arith.truncf %m : f32 to bf16
    linalg.yield %r : bf16
  }
  return
}

// -----

// A sum of f16 values accumulates in f32 (the f32 output), the tile widened by its DMA.
// CHECK-LABEL: func.func @sum_f16
// CHECK: trn.dma_copy %arg0, %[[X:[^ ]*]] {{.*}} : memref<8x64xf16>, !trn.sbuf<8, [64], f32>
// CHECK: trn.tensor_reduce %[[X]], %{{.*}} {op = "add"
func.func @sum_f16(%x: memref<8x64xf16>, %y: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf16>) outs(%y : memref<8xf32>) {
  ^bb0(%a: f16, %acc: f32):
    %af = arith.extf %a : f16 to f32
    %s = arith.addf %af, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A matmul of bf16 tensors as the group lowering writes it for trn (ops/contractions.cpp): both
// operands widened to f32 scratch buffers (so the host pipeline could compile the module too),
// the product f32. TensorE reads the bf16 buffers themselves (through the widenings' windows: B
// is a transposed view), and the widenings, which nothing else reads, are not lowered.
// CHECK-LABEL: func.func @mm_bf16
// CHECK: trn.dma_copy %arg0, %[[A:[^ ]*]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 32, 16>, hbm_strides = array<i64: 1, 32>{{.*}} : memref<16x32xbf16>, !trn.sbuf<32, [16], bf16>
// CHECK: trn.dma_copy %arg1, %[[B:[^ ]*]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 32, 8>, hbm_strides = array<i64: 1, 32>{{.*}} : memref<8x32xbf16>, !trn.sbuf<32, [8], bf16>
// CHECK: trn.matmul %[[A]], %[[B]], %[[P:[^ ]*]] {{.*}} : !trn.sbuf<32, [16], bf16>, !trn.sbuf<32, [8], bf16>, !trn.psum<16, [8], f32>
// CHECK: trn.tensor_copy %[[P]], %[[OUT:[^ ]*]]
// CHECK: trn.dma_copy %[[OUT]], %arg2
// CHECK-NOT: trn.dma_copy
func.func @mm_bf16(%a: memref<16x32xbf16>, %bt: memref<8x32xbf16>, %c: memref<16x8xf32>) {
  %wa = memref.alloc() : memref<16x32xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<16x32xbf16>) outs(%wa : memref<16x32xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %w = arith.extf %x : bf16 to f32
    linalg.yield %w : f32
  }
  %wb = memref.alloc() : memref<32x8xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%bt : memref<8x32xbf16>) outs(%wb : memref<32x8xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %w = arith.extf %x : bf16 to f32
    linalg.yield %w : f32
  }
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<16x8xf32>)
  linalg.matmul ins(%wa, %wb : memref<16x32xf32>, memref<32x8xf32>) outs(%c : memref<16x8xf32>)
  memref.dealloc %wa : memref<16x32xf32>
  memref.dealloc %wb : memref<32x8xf32>
  return
}

// -----

// amax of bf16 accumulates in bf16 (yield truncf(max(x, extf(acc)))): exact, so it is the f32
// max of the widened values, reduced on VectorE; the output's DMA widens it and the store rounds.
// CHECK-LABEL: func.func @amax_bf16
// CHECK: trn.dma_copy %arg0, %[[X:[^ ]*]] {{.*}} : memref<8x64xbf16>, !trn.sbuf<8, [64], f32>
// CHECK: trn.tensor_reduce %[[X]], %[[P:[^ ]*]] {op = "maximum"
// CHECK: trn.dma_copy %arg1, %[[OLD:[^ ]*]] {{.*}} : memref<8xbf16>, !trn.sbuf<8, [1], f32>
// CHECK: trn.tensor_tensor %[[P]], %[[OLD]], %[[M:[^ ]*]] {op = "maximum"
// CHECK: trn.dma_copy %[[M]], %arg1 {{.*}} : !trn.sbuf<8, [1], f32>, memref<8xbf16>
func.func @amax_bf16(%x: memref<8x64xbf16>, %y: memref<8xbf16>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xbf16>) outs(%y : memref<8xbf16>) {
  ^bb0(%a: bf16, %acc: bf16):
    %af = arith.extf %a : bf16 to f32
    %accf = arith.extf %acc : bf16 to f32
    %gt = arith.cmpf ogt, %accf, %af : f32
    %m = arith.select %gt, %accf, %af : f32
    %nan = arith.cmpf uno, %accf, %accf : f32
    %r = arith.select %nan, %accf, %m : f32
    %rt = arith.truncf %r : f32 to bf16
    linalg.yield %rt : bf16
  }
  return
}

// -----

// A bf16 sum accumulating in bf16 would round at every step: refused (the group lowering
// accumulates half sums in f32).
func.func @sum_in_bf16(%x: memref<8x64xbf16>, %y: memref<8xbf16>) {
  // expected-error @+1 {{reduction body is not `combine(f(inputs), accumulator)`}}
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xbf16>) outs(%y : memref<8xbf16>) {
  ^bb0(%a: bf16, %acc: bf16):
    %af = arith.extf %a : bf16 to f32
    %accf = arith.extf %acc : bf16 to f32
    %s = arith.addf %af, %accf : f32
    %st = arith.truncf %s : f32 to bf16
    linalg.yield %st : bf16
  }
  return
}

// -----

// A bf16 convolution: TensorE takes the bf16 input and weight tiles themselves (same-type DMA,
// products exact in fp32, PSUM fp32); the bias column is widened to f32 by its DMA, and the
// output's store rounds to bf16.
// CHECK-LABEL: func.func @conv2d_bf16
// CHECK: trn.dma_copy %arg2, %[[B:[0-9]+]] {{.*}} : memref<4xbf16>, !trn.sbuf<4, [1], f32>
// CHECK: trn.dma_copy %arg0, %[[X:[0-9]+]] {{.*}} : memref<1x3x5x6xbf16>, !trn.sbuf<3, [30], bf16>
// CHECK: trn.dma_copy %arg1, %[[W:[0-9]+]] {{.*}} : memref<4x3x1x1xbf16>, !trn.sbuf<3, [4], bf16>
// CHECK: trn.matmul %[[W]], %[[X]], %[[ACC:[0-9]+]] {{.*}} : !trn.sbuf<3, [4], bf16>, !trn.sbuf<3, [30], bf16>, !trn.psum<4, [30], f32>
// CHECK: trn.tensor_scalar %[[ACC]], %[[Y:[0-9]+]] column %[[B]] {op = "add"
// CHECK: trn.dma_copy %[[Y]], %arg3 {{.*}} : !trn.sbuf<4, [30], f32>, memref<1x4x5x6xbf16>
func.func @conv2d_bf16(%x: memref<1x3x5x6xbf16>, %w: memref<4x3x1x1xbf16>, %b: memref<4xbf16>, %y: memref<1x4x5x6xbf16>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0, 0, 0)>, affine_map<() -> (0, 0, 0, 0)>, affine_map<() -> (0)>, affine_map<() -> (0, 0, 0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::convolution", trn.extern_ints = array<i64: 0, 1>,
                  trn.extern_lists = [array<i64: 1, 1>, array<i64: 0, 0>, array<i64: 1, 1>, array<i64: 0, 0>]}
      ins(%ctx, %k, %x, %w, %b : i64, i64, memref<1x3x5x6xbf16>, memref<4x3x1x1xbf16>, memref<4xbf16>) outs(%y : memref<1x4x5x6xbf16>) {
  ^bb0(%c: i64, %i: i64, %a0: bf16, %a1: bf16, %a2: bf16, %o0: bf16):
    linalg.yield %o0 : bf16
  }
  return
}
