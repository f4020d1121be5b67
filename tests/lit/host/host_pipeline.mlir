// RUN: torch-trn-opt %s -trn-host-pipeline | FileCheck %s

// The whole host pipeline: two elementwise ops fuse into one loop nest, the result is written
// into a caller-provided buffer, and everything ends in the LLVM dialect with a C interface.
#map = affine_map<(d0) -> (d0)>
// CHECK-NOT: linalg.
// CHECK-NOT: tensor.
// Bufferization uses fully dynamic layouts at the function boundary (the caller's buffers are
// views), so inside the loop each access reads its buffer's offset ([2]) and stride ([4, 0])
// from the memref descriptor; the result is stored into the third (out) argument.
// CHECK-LABEL: llvm.func @add_relu(
// CHECK: llvm.cond_br
// CHECK: llvm.extractvalue %{{.*}}[2]
// CHECK: llvm.extractvalue %{{.*}}[4, 0]
// CHECK: llvm.load
// CHECK: llvm.extractvalue %{{.*}}[2]
// CHECK: llvm.extractvalue %{{.*}}[4, 0]
// CHECK: llvm.load
// CHECK: llvm.fadd
// CHECK: llvm.intr.maxnum
// CHECK: llvm.extractvalue %{{.*}}[2]
// CHECK: llvm.extractvalue %{{.*}}[4, 0]
// CHECK: llvm.store
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
