// RUN: torch-trn-opt %s -trn-lower-linalg -trn-assign-engines -trn-allocate | FileCheck %s

// Four 128-row tiles of y = 2x. The operands of tile i + 1 are loaded before tile i is computed
// (the DMA queue runs in order), every tile gets its own address while its neighbours are in
// flight (double buffering: a freed block is not reused at once), and the multiplies alternate
// between GpSimd and VectorE, whichever has less modeled work (GpSimd first: its clock is
// faster on Trn2).
// CHECK-LABEL: func.func @scale
// CHECK: %[[X0:.*]] = trn.alloc {offset = 0 : i64
// CHECK-NEXT: trn.dma_copy %arg0, %[[X0]] {engine = "dma", hbm_offset = 0 : i64
// CHECK-NEXT: %[[X1:.*]] = trn.alloc {offset = 256 : i64
// CHECK-NEXT: trn.dma_copy %arg0, %[[X1]] {engine = "dma", hbm_offset = 8192 : i64
// CHECK-NEXT: %[[Y0:.*]] = trn.alloc {offset = 512 : i64
// CHECK-NEXT: trn.tensor_scalar %[[X0]], %[[Y0]] {engine = "gpsimd"
// CHECK-NEXT: trn.dma_copy %[[Y0]], %arg1 {engine = "dma", hbm_offset = 0 : i64
// CHECK-NEXT: %[[X2:.*]] = trn.alloc {offset = 768 : i64
// CHECK-NEXT: trn.dma_copy %arg0, %[[X2]] {engine = "dma", hbm_offset = 16384 : i64
// CHECK-NEXT: %[[Y1:.*]] = trn.alloc {offset = 1024 : i64
// CHECK-NEXT: trn.tensor_scalar %[[X1]], %[[Y1]] {engine = "vector"
// CHECK: trn.dma_copy %{{.*}}, %arg1 {engine = "dma", hbm_offset = 8192 : i64
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @scale(%x: memref<512x64xf32>, %y: memref<512x64xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<512x64xf32>) outs(%y : memref<512x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 2.0 : f32
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  }
  return
}
