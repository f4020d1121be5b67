// RUN: torch-trn-opt %s -trn-host-pipeline | FileCheck %s --check-prefix=LLVM
// RUN: torch-trn-opt %s -trn-host-pipeline -mlir-disable-threading -mlir-print-ir-after=buffer-deallocation -o /dev/null 2>&1 | FileCheck %s --check-prefix=BUF

// A module shaped like the group lowering's output (group_lowering.cpp): %ctx first, inputs and
// the result with trn.strides, an extern placeholder (a matmul done by the runtime) with the
// op index as a second scalar, a scale before it and a bias add + relu after it.
// llvm.emit_c_interface is what CompileToObject adds before running the pipeline.

// After bufferization, extern calls, static strides and canonicalization (the pipeline's IR
// once buffer-deallocation has run):
// - the extern is a call with fully dynamic layouts, declared private with a C interface;
// - arguments have the static strides of trn.strides (no cast left except the one the call needs);
// - the result is written straight into the out argument by one fused generic (add + relu);
// - the scale before the extern is not fused into it and writes into a temporary.
// BUF: IR Dump After BufferDeallocation
// BUF-NEXT: func.func private @trn_ext3_0(i64, i64, memref<4x8xf32, strided<[?, ?], offset: ?>>, memref<8x4xf32, strided<[?, ?], offset: ?>>, memref<4x4xf32, strided<[?, ?], offset: ?>>) attributes {llvm.emit_c_interface}
// BUF: IR Dump After BufferDeallocation
// BUF-NEXT: func.func @group(
// BUF-SAME: %[[CTX:[a-z0-9]+]]: i64,
// BUF-SAME: %[[IN0:[a-z0-9]+]]: memref<4x8xf32, strided<[8, 1], offset: ?>>,
// BUF-SAME: %[[IN1:[a-z0-9]+]]: memref<8x4xf32, strided<[1, 8], offset: ?>>,
// BUF-SAME: %[[IN2:[a-z0-9]+]]: memref<4xf32, strided<[1], offset: ?>>,
// BUF-SAME: %[[OUT:[a-z0-9]+]]: memref<4x4xf32, strided<[4, 1], offset: ?>>)
// BUF-NOT: trn.strides
// BUF-DAG: %[[IDX:.*]] = arith.constant 3 : i64
// BUF-DAG: %[[C1:.*]] = memref.cast %[[IN1]] : memref<8x4xf32, strided<[1, 8], offset: ?>> to memref<8x4xf32, strided<[?, ?], offset: ?>>
// BUF: %[[T0:.*]] = memref.alloc() {{.*}}: memref<4x8xf32>
// BUF: linalg.generic
// BUF-SAME: ins(%[[IN0]] : memref<4x8xf32, strided<[8, 1], offset: ?>>) outs(%[[T0]] : memref<4x8xf32>)
// BUF-NEXT: ^bb0
// BUF-NEXT: arith.mulf
// BUF-NEXT: linalg.yield
// BUF: %[[T1:.*]] = memref.alloc() {{.*}}: memref<4x4xf32>
// BUF-DAG: %[[C0:.*]] = memref.cast %[[T0]] : memref<4x8xf32> to memref<4x8xf32, strided<[?, ?], offset: ?>>
// BUF-DAG: %[[C2:.*]] = memref.cast %[[T1]] : memref<4x4xf32> to memref<4x4xf32, strided<[?, ?], offset: ?>>
// BUF: call @trn_ext3_0(%[[CTX]], %[[IDX]], %[[C0]], %[[C1]], %[[C2]])
// BUF: linalg.generic
// BUF-SAME: ins(%[[T1]], %[[IN2]] : memref<4x4xf32>, memref<4xf32, strided<[1], offset: ?>>) outs(%[[OUT]] : memref<4x4xf32, strided<[4, 1], offset: ?>>)
// BUF-NEXT: ^bb0
// BUF-NEXT: arith.addf
// BUF-NEXT: arith.maxf
// BUF-NEXT: linalg.yield
// BUF-NOT: linalg.generic
// BUF-NOT: memref.copy
// BUF: return

// In the LLVM dialect: one call of the runtime's _mlir_ciface_trn_ext3_0 (through the wrapper
// that convert-func-to-llvm generates for the declaration), the scale before it as one loop
// (trn-collapse-loops: its 4x8 buffers are contiguous) and one loop nest of two loops for
// add + relu after it (the bias is broadcast along the rows), indexing with constant strides (no stride is read from
// a memref descriptor inside the loops).
// LLVM-LABEL: llvm.func @trn_ext3_0(
// LLVM: llvm.call @_mlir_ciface_trn_ext3_0(
// LLVM-SAME: (i64, i64, !llvm.ptr<struct<(ptr<f32>, ptr<f32>, i64, array<2 x i64>, array<2 x i64>)>>, !llvm.ptr<struct<(ptr<f32>, ptr<f32>, i64, array<2 x i64>, array<2 x i64>)>>, !llvm.ptr<struct<(ptr<f32>, ptr<f32>, i64, array<2 x i64>, array<2 x i64>)>>) -> ()
// LLVM-NOT: llvm.call @_mlir_ciface_trn_ext3_0
// LLVM: llvm.func @_mlir_ciface_trn_ext3_0(i64, i64,
// LLVM-NOT: llvm.call @_mlir_ciface_trn_ext3_0
// LLVM-LABEL: llvm.func @group(
// LLVM: llvm.cond_br
// LLVM-NOT: llvm.cond_br
// LLVM-NOT: {{\[4, [01]\]}}
// LLVM-NOT: llvm.fadd
// LLVM: llvm.fmul
// LLVM-NOT: llvm.fadd
// LLVM: llvm.call @trn_ext3_0(
// LLVM-NOT: llvm.call @trn_ext3_0(
// LLVM: llvm.cond_br
// LLVM: llvm.cond_br
// LLVM-NOT: llvm.cond_br
// LLVM-NOT: {{\[4, [01]\]}}
// LLVM: llvm.fadd
// LLVM-NEXT: llvm.intr.maxnum
// LLVM-NOT: llvm.cond_br
// LLVM-NOT: llvm.fadd
// LLVM-NOT: {{\[4, [01]\]}}
// LLVM-NOT: llvm.call @trn_ext3_0(
// LLVM: llvm.return
// LLVM-LABEL: llvm.func @_mlir_ciface_group(
// LLVM-NOT: llvm.call @_mlir_ciface_trn_ext3_0
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @group(%ctx: i64, %in0: tensor<4x8xf32> {trn.strides = array<i64: 8, 1>},
                 %in1: tensor<8x4xf32> {trn.strides = array<i64: 1, 8>},
                 %in2: tensor<4xf32> {trn.strides = array<i64: 1>})
    -> (tensor<4x4xf32> {trn.strides = array<i64: 4, 1>}) attributes {llvm.emit_c_interface} {
  %half = arith.constant 0.5 : f32
  %e0 = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%in0 : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %v = arith.mulf %x, %half : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %c3 = arith.constant 3 : i64
  %e1 = tensor.empty() : tensor<4x4xf32>
  %ext:1 = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>,
                                           affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>],
                           iterator_types = [], library_call = "trn_ext3_0"}
      ins(%ctx, %c3, %s, %in1 : i64, i64, tensor<4x8xf32>, tensor<8x4xf32>) outs(%e1 : tensor<4x4xf32>) {
  ^bb0(%x0: i64, %x1: i64, %x2: f32, %x3: f32, %o: f32):
    linalg.yield %o : f32
  } -> (tensor<4x4xf32>)
  %e2 = tensor.empty() : tensor<4x4xf32>
  %b = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ext#0, %in2 : tensor<4x4xf32>, tensor<4xf32>) outs(%e2 : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %v = arith.addf %x, %y : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %e3 = tensor.empty() : tensor<4x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<4x4xf32>) outs(%e3 : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %m = arith.maxf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
