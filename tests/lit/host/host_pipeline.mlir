// RUN: torch-trn-opt %s -trn-host-pipeline | FileCheck %s

// The whole host pipeline: two elementwise ops fuse into one loop nest, the result is written
// into a caller-provided buffer, and everything ends in the LLVM dialect with a C interface.
#map = affine_map<(d0) -> (d0)>
// CHECK-NOT: linalg.
// CHECK-NOT: tensor.
// Bufferization uses fully dynamic layouts at the function boundary (the caller's buffers are
// views), so inside the loop each access reads its buffer's offset and stride: after the final
// canonicalize straight from the function's descriptor arguments (aligned pointer, offset,
// size, stride per buffer: %arg1/2/3/4 for a, 6/7/8/9 for b, 11/12/13/14 for the out buffer),
// with no descriptor struct built in between; the result is stored into the out buffer.
// CHECK-LABEL: llvm.func @add_relu(
// CHECK-NOT: llvm.insertvalue
// CHECK: llvm.cond_br
// CHECK: %[[IA:.*]] = llvm.mul %{{.*}}, %arg4
// CHECK: %[[OA:.*]] = llvm.add %arg2, %[[IA]]
// CHECK: llvm.getelementptr %arg1[%[[OA]]]
// CHECK: llvm.load
// CHECK: %[[IB:.*]] = llvm.mul %{{.*}}, %arg9
// CHECK: %[[OB:.*]] = llvm.add %arg7, %[[IB]]
// CHECK: llvm.getelementptr %arg6[%[[OB]]]
// CHECK: llvm.load
// CHECK: llvm.fadd
// CHECK: llvm.intr.maxnum
// CHECK: %[[IO:.*]] = llvm.mul %{{.*}}, %arg14
// CHECK: %[[OO:.*]] = llvm.add %arg12, %[[IO]]
// CHECK: %[[P:.*]] = llvm.getelementptr %arg11[%[[OO]]]
// CHECK: llvm.store %{{.*}}, %[[P]]
// CHECK-NOT: llvm.fadd
// CHECK-NOT: llvm.call
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @_mlir_ciface_add_relu(
// CHECK-SAME: !llvm.ptr<struct<(ptr<f32>, ptr<f32>, i64, array<1 x i64>, array<1 x i64>)>>
// CHECK-SAME: !llvm.ptr<struct<(ptr<f32>, ptr<f32>, i64, array<1 x i64>, array<1 x i64>)>>
// CHECK-SAME: !llvm.ptr<struct<(ptr<f32>, ptr<f32>, i64, array<1 x i64>, array<1 x i64>)>>
func.func @add_relu(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %s = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %v = arith.addf %x, %y : f32
    linalg.yield %v : f32
  } -> tensor<?xf32>
  %e2 = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%s : tensor<?xf32>) outs(%e2 : tensor<?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %m = arith.maxf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
