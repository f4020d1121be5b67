// RUN: torch-trn-opt %s -split-input-file -trn-lower-linalg | FileCheck %s

// Elementwise: the partition axis is the largest outer dimension (300 rows: 128, 128, 44); a
// broadcast operand is read through a window with stride 0; each body op is one instruction.
// CHECK-LABEL: func.func @bias_relu
// CHECK: trn.dma_copy %arg0, %[[X:.*]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 64>, hbm_strides = array<i64: 64, 1>
// CHECK: trn.dma_copy %arg1, %[[B:.*]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 64>, hbm_strides = array<i64: 0, 1>
// CHECK: trn.tensor_tensor %[[X]], %[[B]], %[[S:.*]] {op = "add"
// CHECK: trn.tensor_scalar %[[S]], %[[R:.*]] {imm = 0.000000e+00 : f32, op = "maximum"
// CHECK: trn.dma_copy %[[R]], %arg2 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 64>, hbm_strides = array<i64: 64, 1>
// CHECK: hbm_offset = 16384 : i64, hbm_sizes = array<i64: 44, 64>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @bias_relu(%x: memref<300x64xf32>, %b: memref<64xf32>, %y: memref<300x64xf32>) {
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<300x64xf32>, memref<64xf32>) outs(%y : memref<300x64xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %z = arith.constant 0.0 : f32
    %r = arith.maxf %s, %z : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// select becomes the false value (here a memset) and a predicated copy of the true value under
// an i1 predicate tile; a runtime scalar is a column tile loaded once per tile (partition
// stride 0). The 16 columns go on the partitions (more lanes), the 8 rows on the free axis.
// CHECK-LABEL: func.func @select_scalar
// CHECK: trn.dma_copy %arg1, %{{.*}} {hbm_offset = 0 : i64, hbm_sizes = array<i64: 16, 8>, hbm_strides = array<i64: 1, 16>
// CHECK: trn.dma_copy %arg0, %[[P:.*]] {hbm_offset = 1 : i64, hbm_sizes = array<i64: 16, 1>, hbm_strides = array<i64: 0, 1>
// CHECK-SAME: memref<?xf64>, !trn.sbuf<16, [1], f32>
// CHECK: trn.tensor_scalar %{{.*}}, %[[C:.*]] {imm = 0.000000e+00 : f32, op = "is_gt"{{.*}} : !trn.sbuf<16, [8], f32>, !trn.sbuf<16, [8], i1>
// CHECK: trn.tensor_scalar %{{.*}}, %[[M:.*]] column %[[P]] {op = "multiply"
// CHECK: trn.memset %[[D:.*]], 0.000000e+00
// CHECK: trn.copy_predicated %[[M]], %[[C]], %[[D]] {{.*}} : !trn.sbuf<16, [8], f32>, !trn.sbuf<16, [8], i1>, !trn.sbuf<16, [8], f32>
// CHECK: trn.dma_copy %[[D]], %arg2
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @select_scalar(%params: memref<?xf64>, %x: memref<8x16xf32>, %y: memref<8x16xf32>) {
  %c1 = arith.constant 1 : index
  %s64 = memref.load %params[%c1] : memref<?xf64>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x16xf32>) outs(%y : memref<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.truncf %s64 : f64 to f32
    %z = arith.constant 0.0 : f32
    %pos = arith.cmpf ogt, %a, %z : f32
    %m = arith.mulf %a, %s : f32
    %r = arith.select %pos, %m, %z : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A reduction over the rows of a [300, 5000] input: 300 rows on the partitions (128, 128, 44),
// the reduced axis in chunks of 2048 per tile, each chunk combined into the output.
// CHECK-LABEL: func.func @row_sum
// CHECK: trn.dma_copy %arg0, %[[T:.*]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 2048>, hbm_strides = array<i64: 5000, 1>
// CHECK: trn.tensor_reduce %[[T]], %[[PART:.*]] {op = "add"{{.*}} : !trn.sbuf<128, [2048], f32>, !trn.sbuf<128, [1], f32>
// CHECK: trn.dma_copy %arg1, %[[OLD:.*]] {hbm_offset = 0 : i64, hbm_sizes = array<i64: 128, 1>, hbm_strides = array<i64: 1, 1>
// CHECK: trn.tensor_tensor %[[PART]], %[[OLD]], %[[NEW:.*]] {op = "add"
// CHECK: trn.dma_copy %[[NEW]], %arg1
// CHECK: hbm_sizes = array<i64: 128, 904>
func.func @row_sum(%x: memref<300x5000xf32>, %s: memref<300xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<300x5000xf32>) outs(%s : memref<300xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// sin and cos: ScalarE's sin takes [-pi, pi] only, so the argument is reduced on VectorE first
// (twice: k = round(x / 2pi) through an i32 tile, then x - k c1 - k c2 - k c3); cos(x) is
// sin(pi/2 - |r|).
// CHECK-LABEL: func.func @sin_cos
// CHECK: trn.tensor_scalar %[[X:[0-9]+]], %[[Q:[0-9]+]] {imm = 0.159154937 : f32, op = "multiply"
// CHECK: trn.tensor_copy %[[Q]], %[[K:[0-9]+]] {{.*}}: !trn.sbuf<64, [16], f32>, !trn.sbuf<64, [16], i32>
// CHECK: trn.tensor_scalar %[[K]], %[[KC1:[0-9]+]] {imm = 6.281250e+00 : f32, op = "multiply"
// CHECK: trn.tensor_tensor %[[X]], %[[KC1]], %{{.*}} {op = "subtract"
// CHECK: trn.tensor_copy %{{.*}} : !trn.sbuf<64, [16], f32>, !trn.sbuf<64, [16], i32>
// CHECK: trn.activation %{{.*}}, %{{.*}} {func = "sin"
// CHECK-COUNT-2: trn.tensor_copy %{{.*}} : !trn.sbuf<64, [16], f32>, !trn.sbuf<64, [16], i32>
// CHECK: trn.tensor_scalar %{{.*}} {imm = -1.000000e+00 : f32, op = "multiply"
// CHECK: trn.tensor_tensor %{{.*}} {op = "maximum"
// CHECK: trn.activation %{{.*}} {func = "sin"
// CHECK-NOT: math.sin
// CHECK-NOT: math.cos
#sc = affine_map<(d0, d1) -> (d0, d1)>
func.func @sin_cos(%x: memref<64x16xf32>, %s: memref<64x16xf32>, %c: memref<64x16xf32>) {
  linalg.generic {indexing_maps = [#sc, #sc, #sc], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x16xf32>) outs(%s, %c : memref<64x16xf32>, memref<64x16xf32>) {
  ^bb0(%a: f32, %o: f32, %p: f32):
    %y = math.sin %a : f32
    %z = math.cos %a : f32
    linalg.yield %y, %z : f32, f32
  }
  return
}
