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

// CHECK-LABEL: func.func @vector_gpsimd_sync
func.func @vector_gpsimd_sync(%a: !trn.sbuf<128, [64], f32>, %b: !trn.sbuf<128, [64], f32>,
                              %col: !trn.sbuf<128, [1], f32>, %t: !trn.psum<64, [128], f32>) {
  // CHECK: trn.transpose %{{.*}}, %{{.*}} : !trn.sbuf<128, [64], f32>, !trn.psum<64, [128], f32>
  trn.transpose %a, %t : !trn.sbuf<128, [64], f32>, !trn.psum<64, [128], f32>
  // CHECK: trn.tensor_tensor {{.*}} {op = "maximum"}
  trn.tensor_tensor %a, %b, %b {op = "maximum"} : !trn.sbuf<128, [64], f32>, !trn.sbuf<128, [64], f32>, !trn.sbuf<128, [64], f32>
  // CHECK: trn.tensor_scalar {{.*}} {imm = 2.000000e+00 : f32, op = "multiply"}
  trn.tensor_scalar %a, %b {op = "multiply", imm = 2.0 : f32} : !trn.sbuf<128, [64], f32>, !trn.sbuf<128, [64], f32>
  // CHECK: trn.tensor_scalar %{{.*}}, %{{.*}} column %{{.*}} {op = "subtract"}
  trn.tensor_scalar %a, %b column %col {op = "subtract"} : !trn.sbuf<128, [64], f32>, !trn.sbuf<128, [64], f32>, !trn.sbuf<128, [1], f32>
  // CHECK: trn.tensor_reduce {{.*}} {op = "add"} : !trn.sbuf<128, [64], f32>, !trn.sbuf<128, [1], f32>
  trn.tensor_reduce %a, %col {op = "add"} : !trn.sbuf<128, [64], f32>, !trn.sbuf<128, [1], f32>
  // CHECK: trn.iota %{{.*}} {base = 0 : i64, partition_step = 64 : i64, step = 1 : i64}
  trn.iota %a {base = 0, partition_step = 64, step = 1} : !trn.sbuf<128, [64], f32>
  // CHECK: trn.signal {engine = "dma", semaphore = 3 : i32}
  trn.signal {engine = "dma", semaphore = 3 : i32}
  // CHECK: trn.wait {engine = "tensor", semaphore = 3 : i32, value = 1 : i32}
  trn.wait {engine = "tensor", semaphore = 3 : i32, value = 1 : i32}
  return
}

// Integer tiles and the indirect DMA of an embedding: i64 indices narrowed to an i32 tile, one
// table row gathered per partition.
// CHECK-LABEL: func.func @gather
func.func @gather(%table: memref<1000x64xf32>, %ids: memref<32xi64>) {
  %idx = trn.alloc : !trn.sbuf<32, [1], i32>
  %rows = trn.alloc : !trn.sbuf<32, [64], f32>
  // CHECK: trn.dma_copy %{{.*}}, %{{.*}} {{.*}} : memref<32xi64>, !trn.sbuf<32, [1], i32>
  trn.dma_copy %ids, %idx {hbm_offset = 0 : i64, hbm_sizes = array<i64: 32, 1>, hbm_strides = array<i64: 1, 1>} : memref<32xi64>, !trn.sbuf<32, [1], i32>
  // CHECK: trn.dma_gather %{{.*}}, %{{.*}}, %{{.*}} {hbm_offset = 0 : i64, hbm_sizes = array<i64: 1000, 64>, hbm_strides = array<i64: 64, 1>} : memref<1000x64xf32>, !trn.sbuf<32, [1], i32>, !trn.sbuf<32, [64], f32>
  trn.dma_gather %table, %idx, %rows {hbm_offset = 0 : i64, hbm_sizes = array<i64: 1000, 64>, hbm_strides = array<i64: 64, 1>} : memref<1000x64xf32>, !trn.sbuf<32, [1], i32>, !trn.sbuf<32, [64], f32>
  // CHECK: trn.dma_scatter_add %{{.*}}, %{{.*}}, %{{.*}} {hbm_offset = 0 : i64, hbm_sizes = array<i64: 1000, 64>, hbm_strides = array<i64: 64, 1>} : !trn.sbuf<32, [64], f32>, !trn.sbuf<32, [1], i32>, memref<1000x64xf32>
  trn.dma_scatter_add %rows, %idx, %table {hbm_offset = 0 : i64, hbm_sizes = array<i64: 1000, 64>, hbm_strides = array<i64: 64, 1>} : !trn.sbuf<32, [64], f32>, !trn.sbuf<32, [1], i32>, memref<1000x64xf32>
  return
}
