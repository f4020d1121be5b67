// RUN: torch-trn-opt %s -trn-pipeline="target=trn2" | FileCheck %s
// RUN: not torch-trn-opt %s -trn-lower-linalg -trn-allocate="target=trn9" 2>&1 | FileCheck %s --check-prefix=BADTARGET

// The whole pipeline on a matmul + bias + GELU group: tiles, engines, placement.
// Matmul operands and results move on the DMA queue, products on TensorE into a PSUM bank
// (bank-aligned offsets: multiples of 2048 bytes), the epilogue on ScalarE (tanh) and
// VectorE/GpSimd (arithmetic).

// CHECK-LABEL: func.func @group
// CHECK: %[[A:.*]] = trn.alloc {offset = 0 : i64, trn.op = 0 : i64} : !trn.sbuf<128, [128], f32>
// CHECK: trn.dma_copy %arg0, %[[A]] {engine = "dma"
// CHECK: %[[P:.*]] = trn.alloc {offset = 0 : i64, trn.op = 0 : i64} : !trn.psum<128, [512], f32>
// CHECK: trn.matmul %[[A]], %{{.*}}, %[[P]] {engine = "tensor"
// CHECK: trn.tensor_copy %[[P]], %{{.*}} {engine = "{{vector|scalar}}"
// CHECK: trn.alloc {offset = 2048 : i64, trn.op = 0 : i64} : !trn.psum<128, [512], f32>
// CHECK: trn.activation %{{.*}}, %{{.*}} {engine = "scalar", func = "tanh"
// CHECK: trn.tensor_tensor {{.*}} {engine = "vector", op = "multiply", trn.op = 1 : i64}
// CHECK: trn.dma_copy %{{.*}}, %arg3 {engine = "dma"
// BADTARGET: unknown trn target 'trn9'
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @group(%x: memref<256x192xf32>, %w: memref<192x640xf32>, %bias: memref<640xf32>, %out: memref<256x640xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<256x640xf32>
  linalg.fill {trn.op = 0} ins(%zero : f32) outs(%t : memref<256x640xf32>)
  linalg.matmul {trn.op = 0} ins(%x, %w : memref<256x192xf32>, memref<192x640xf32>) outs(%t : memref<256x640xf32>)
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"], trn.op = 1}
      ins(%t, %bias : memref<256x640xf32>, memref<640xf32>) outs(%out : memref<256x640xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %c05 = arith.constant 0.5 : f32
    %c1 = arith.constant 1.0 : f32
    %k = arith.constant 0.7978845608 : f32
    %k2 = arith.constant 0.044715 : f32
    %x2 = arith.mulf %s, %s : f32
    %x3 = arith.mulf %x2, %s : f32
    %i = arith.mulf %x3, %k2 : f32
    %j = arith.addf %s, %i : f32
    %u = arith.mulf %j, %k : f32
    %th = math.tanh %u : f32
    %p = arith.addf %th, %c1 : f32
    %h = arith.mulf %s, %c05 : f32
    %g = arith.mulf %h, %p : f32
    linalg.yield %g : f32
  }
  return
}
