// RUN: torch-trn-opt %s | FileCheck %s
// RUN: torch-trn-opt %s | torch-trn-opt | FileCheck %s

// A matmul + bias + gelu tile sequence: every type and op parses, verifies and prints back
// unchanged (twice through the printer, so the printed form is itself parseable).

// CHECK-LABEL: func.func @mm_bias_gelu
func.func @mm_bias_gelu(%a: memref<128x128xbf16>, %b: memref<128x512xbf16, strided<[1024, 1]>>,
                        %out: memref<128x512xf32>) {
  // CHECK: %[[ST:.*]] = trn.alloc : !trn.sbuf<128, [128], bf16>
  %st = trn.alloc : !trn.sbuf<128, [128], bf16>
  // CHECK: %[[MV:.*]] = trn.alloc : !trn.sbuf<128, [512], bf16>
  %mv = trn.alloc : !trn.sbuf<128, [512], bf16>
  // CHECK: %[[ACC:.*]] = trn.alloc : !trn.psum<128, [512], f32>
  %acc = trn.alloc : !trn.psum<128, [512], f32>
  %res = trn.alloc : !trn.sbuf<128, [512], f32>
  %bias = trn.alloc : !trn.sbuf<128, [1], f32>
  // CHECK: trn.dma_copy %{{.*}}, %[[ST]] : memref<128x128xbf16>, !trn.sbuf<128, [128], bf16>
  trn.dma_copy %a, %st : memref<128x128xbf16>, !trn.sbuf<128, [128], bf16>
  // CHECK: trn.dma_copy %{{.*}}, %[[MV]] : memref<128x512xbf16, strided<[1024, 1]>>, !trn.sbuf<128, [512], bf16>
  trn.dma_copy %b, %mv : memref<128x512xbf16, strided<[1024, 1]>>, !trn.sbuf<128, [512], bf16>
  // CHECK: trn.memset %{{.*}}, 0.000000e+00 : !trn.sbuf<128, [1], f32>
  trn.memset %bias, 0.0 : !trn.sbuf<128, [1], f32>
  // CHECK: trn.matmul %[[ST]], %[[MV]], %[[ACC]] : !trn.sbuf<128, [128], bf16>, !trn.sbuf<128, [512], bf16>, !trn.psum<128, [512], f32>
  trn.matmul %st, %mv, %acc : !trn.sbuf<128, [128], bf16>, !trn.sbuf<128, [512], bf16>, !trn.psum<128, [512], f32>
  // CHECK: trn.matmul {{.*}} {accumulate}
  trn.matmul %st, %mv, %acc {accumulate} : !trn.sbuf<128, [128], bf16>, !trn.sbuf<128, [512], bf16>, !trn.psum<128, [512], f32>
  // CHECK: trn.activation %[[ACC]], %{{.*}} bias %{{.*}} {func = "gelu", scale = 5.000000e-01 : f32}
  trn.activation %acc, %res bias %bias {func = "gelu", scale = 0.5 : f32} : !trn.psum<128, [512], f32>, !trn.sbuf<128, [512], f32>, !trn.sbuf<128, [1], f32>
  // CHECK: trn.tensor_copy
  trn.tensor_copy %acc, %res : !trn.psum<128, [512], f32>, !trn.sbuf<128, [512], f32>
  // CHECK: trn.dma_copy %{{.*}}, %{{.*}} : !trn.sbuf<128, [512], f32>, memref<128x512xf32>
  trn.dma_copy %res, %out : !trn.sbuf<128, [512], f32>, memref<128x512xf32>
  return
}
