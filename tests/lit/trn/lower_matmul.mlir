// RUN: torch-trn-opt %s -trn-lower-linalg | FileCheck %s

// Tiling of a 200x300 @ 300x640 matmul (B in a transposed layout) to TensorE's limits:
// K in 128-row tiles (128, 128, 44) over the partitions, M in 128-column stationary tiles
// (128, 72), N in 512-wide PSUM blocks (512, 128). The zero fill is dropped (the first matmul
// of each block overwrites PSUM). Stationary tiles hold A^T: partition k (stride 1), free m
// (stride 300). Operand tiles are loaded once and reused across output blocks.

// CHECK-LABEL: func.func @mm
// CHECK-NOT: trn.memset
// CHECK: trn.dma_copy %arg0, %[[A00:.*]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 128>, hbm_strides = array<i64: 1, 300>, trn.op = 3 : i64}
// CHECK: trn.dma_copy %arg1, %[[B00:.*]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 512>, hbm_strides = array<i64: 1, 300>
// CHECK: trn.dma_copy %arg0, %{{.*}} {hbm_offset = 256 : i64, hbm_sizes = array<i64: 44, 128>
// CHECK: trn.matmul %[[A00]], %[[B00]], %[[P:.*]] {trn.op = 3 : i64} : !trn.sbuf<128, [128], f32>, !trn.sbuf<128, [512], f32>, !trn.psum<128, [512], f32>
// CHECK-NEXT: trn.matmul {{.*}}, %[[P]] {accumulate
// CHECK-NEXT: trn.matmul {{.*}} : !trn.sbuf<44, [128], f32>, !trn.sbuf<44, [512], f32>, !trn.psum<128, [512], f32>
// CHECK: trn.tensor_copy %[[P]], %[[OUT:.*]] {trn.op = 3 : i64} : !trn.psum<128, [512], f32>, !trn.sbuf<128, [512], f32>
// CHECK-NEXT: trn.dma_copy %[[OUT]], %arg2 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 512>, hbm_strides = array<i64: 640, 1>
// The second M tile reuses the B tiles already in SBUF.
// CHECK: trn.matmul %{{.*}}, %[[B00]], %{{.*}} {trn.op = 3 : i64} : !trn.sbuf<128, [72], f32>, !trn.sbuf<128, [512], f32>, !trn.psum<72, [512], f32>
// CHECK: trn.dma_copy %{{.*}}, %arg2 {hbm_offset = 81920 : i64, hbm_sizes = array<i64: 72, 512>
// CHECK: trn.psum<128, [128], f32>
// CHECK-NOT: linalg.
func.func @mm(%a: memref<200x300xf32>, %b: memref<300x640xf32, strided<[1, 300]>>, %c: memref<200x640xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<200x640xf32>)
  linalg.matmul {trn.op = 3} ins(%a, %b : memref<200x300xf32>, memref<300x640xf32, strided<[1, 300]>>) outs(%c : memref<200x640xf32>)
  return
}

// Without a zero fill, the product is added to C: C is loaded and added to PSUM.
// CHECK-LABEL: func.func @mm_acc
// CHECK: trn.matmul
// CHECK: trn.dma_copy %arg2, %[[OLD:.*]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 16, 8>, hbm_strides = array<i64: 8, 1>
// CHECK: trn.tensor_tensor %{{.*}}, %[[OLD]], %[[SUM:.*]] {op = "add"
// CHECK: trn.dma_copy %[[SUM]], %arg2
func.func @mm_acc(%a: memref<16x4xbf16>, %b: memref<4x8xbf16>, %c: memref<16x8xbf16>) {
  linalg.matmul ins(%a, %b : memref<16x4xbf16>, memref<4x8xbf16>) outs(%c : memref<16x8xbf16>)
  return
}
