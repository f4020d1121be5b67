// RUN: torch-trn-opt %s -split-input-file -trn-lower-linalg | FileCheck %s

// Integer elementwise: torch's int64 tensors are i64 HBM buffers read into i32 tiles (the DMA
// narrows and widens); arithmetic writes i32 tiles, comparisons i1 tiles. (The 16 columns go on
// the partitions, the 8 rows on the free axis.)
// CHECK-LABEL: func.func @int_ops
// CHECK: trn.dma_copy %arg0, %[[X:[^ ]*]] {{{.*}}hbm_sizes = array<i64: 16, 8>{{.*}} : memref<8x16xi64>, !trn.sbuf<16, [8], i32>
// CHECK: trn.dma_copy %arg1, %[[Y:[^ ]*]] {{{.*}} : memref<8x16xi64>, !trn.sbuf<16, [8], i32>
// CHECK: trn.tensor_tensor %[[X]], %[[Y]], %[[S:[^ ]*]] {op = "add"{{.*}} : !trn.sbuf<16, [8], i32>, !trn.sbuf<16, [8], i32>, !trn.sbuf<16, [8], i32>
// CHECK: trn.tensor_scalar %[[S]], %[[M:[^ ]*]] {imm = 3.000000e+00 : f32, op = "multiply"{{.*}} : !trn.sbuf<16, [8], i32>, !trn.sbuf<16, [8], i32>
// CHECK: trn.tensor_tensor %[[M]], %[[Y]], %[[C:[^ ]*]] {op = "is_gt"{{.*}} !trn.sbuf<16, [8], i1>
// CHECK: trn.dma_copy %[[M]], %arg2 {{.*}} : !trn.sbuf<16, [8], i32>, memref<8x16xi64>
// CHECK: trn.dma_copy %[[C]], %arg3 {{.*}} : !trn.sbuf<16, [8], i1>, memref<8x16xi1>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @int_ops(%x: memref<8x16xi64>, %y: memref<8x16xi64>, %z: memref<8x16xi64>, %c: memref<8x16xi1>) {
  linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<8x16xi64>, memref<8x16xi64>) outs(%z, %c : memref<8x16xi64>, memref<8x16xi1>) {
  ^bb0(%a: i64, %b: i64, %o: i64, %p: i1):
    %s = arith.addi %a, %b : i64
    %three = arith.constant 3 : i64
    %m = arith.muli %s, %three : i64
    %g = arith.cmpi sgt, %m, %b : i64
    linalg.yield %m, %g : i64, i1
  }
  return
}

// -----

// arange: linalg.index is one GpSimd iota per tile. A 1-D space of 1000 folds into [125, 8]:
// element = 8 * partition + free index.
// CHECK-LABEL: func.func @arange
// CHECK: trn.iota %[[I:[^ ]*]] {base = 0 : i64, partition_step = 8 : i64, step = 1 : i64{{.*}} : !trn.sbuf<125, [8], i32>
// CHECK: trn.dma_copy %[[I]], %arg0 {{.*}}hbm_sizes = array<i64: 125, 8>, hbm_strides = array<i64: 8, 1>{{.*}} memref<1000xi64>
func.func @arange(%y: memref<1000xi64>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      outs(%y : memref<1000xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %v = arith.index_cast %i : index to i64
    linalg.yield %v : i64
  }
  return
}

// -----

// A causal mask, col <= row, over [4, 64, 64]: the tile keeps one free axis (the outer one
// advances per tile) so each loop index is an iota: rows on the partitions, columns free.
// CHECK-LABEL: func.func @causal
// CHECK: trn.iota %[[R:[^ ]*]] {base = 0 : i64, partition_step = 1 : i64, step = 0 : i64{{.*}} !trn.sbuf<64, [64], i32>
// CHECK: trn.iota %[[C:[^ ]*]] {base = 0 : i64, partition_step = 0 : i64, step = 1 : i64{{.*}} !trn.sbuf<64, [64], i32>
// CHECK: trn.tensor_tensor %[[C]], %[[R]], %{{.*}} {op = "is_le"
// CHECK: trn.dma_copy %{{.*}}, %arg0 {hbm_offset = 0 : i64, hbm_sizes = array<i64: 64, 64>, hbm_strides = array<i64: 64, 1>
// CHECK: trn.dma_copy %{{.*}}, %arg0 {hbm_offset = 4096 : i64
// CHECK: trn.dma_copy %{{.*}}, %arg0 {hbm_offset = 8192 : i64
// CHECK: trn.dma_copy %{{.*}}, %arg0 {hbm_offset = 12288 : i64
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @causal(%m: memref<4x64x64xi1>) {
  linalg.generic {indexing_maps = [#map3], iterator_types = ["parallel", "parallel", "parallel"]}
      outs(%m : memref<4x64x64xi1>) {
  ^bb0(%o: i1):
    %r = linalg.index 1 : index
    %c = linalg.index 2 : index
    %ri = arith.index_cast %r : index to i64
    %ci = arith.index_cast %c : index to i64
    %le = arith.cmpi sle, %ci, %ri : i64
    linalg.yield %le : i1
  }
  return
}

// -----

// An integer sum: the partial sums stay i32 (exact on the engines), combined through the output.
// CHECK-LABEL: func.func @int_sum
// CHECK: trn.tensor_reduce %{{.*}}, %[[P:[^ ]*]] {op = "add"{{.*}} !trn.sbuf<4, [32], i32>, !trn.sbuf<4, [1], i32>
// CHECK: trn.tensor_tensor %[[P]], %{{.*}}, %{{.*}} {op = "add"
func.func @int_sum(%x: memref<4x32xi64>, %y: memref<4xi64>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x32xi64>) outs(%y : memref<4xi64>) {
  ^bb0(%a: i64, %acc: i64):
    %s = arith.addi %a, %acc : i64
    linalg.yield %s : i64
  }
  return
}

// -----

// Signed integer division (no engine divides integers): the fp32 quotient (divide into an f32
// tile) rounded into an i32 tile, refined by the rounded quotient of the remainder a - q b, then
// corrected where the remainder's sign differs from the divisor's (floor) and from the
// dividend's (truncation). The remainder is a - q b with the corrected q.
// CHECK-LABEL: func.func @int_div
// CHECK: trn.dma_copy %arg0, %[[A:[^ ]*]] {{{.*}} : memref<64xi64>, !trn.sbuf<64, [1], i32>
// CHECK: trn.dma_copy %arg1, %[[B:[^ ]*]] {{{.*}} : memref<64xi64>, !trn.sbuf<64, [1], i32>
// CHECK: trn.tensor_tensor %[[A]], %[[B]], %[[QF:[^ ]*]] {op = "divide"{{.*}} : !trn.sbuf<64, [1], i32>, !trn.sbuf<64, [1], i32>, !trn.sbuf<64, [1], f32>
// CHECK: trn.tensor_copy %[[QF]], %[[Q0:[^ ]*]] {{.*}} : !trn.sbuf<64, [1], f32>, !trn.sbuf<64, [1], i32>
// CHECK: trn.tensor_tensor %[[Q0]], %[[B]], %[[QB:[^ ]*]] {op = "multiply"
// CHECK: trn.tensor_tensor %[[A]], %[[QB]], %[[R0:[^ ]*]] {op = "subtract"
// CHECK: trn.tensor_tensor %[[R0]], %[[B]], %{{[^ ]*}} {op = "divide"
// CHECK: trn.tensor_copy
// CHECK: trn.tensor_tensor %[[Q0]], %{{[^ ]*}}, %{{[^ ]*}} {op = "add"
// CHECK: trn.tensor_scalar %[[B]], %{{[^ ]*}} {imm = 0.000000e+00 : f32, op = "is_lt"
// CHECK: op = "logical_and"
// CHECK: trn.tensor_scalar %[[A]], %{{[^ ]*}} {imm = 0.000000e+00 : f32, op = "is_lt"
// CHECK: op = "logical_and"
// CHECK: trn.dma_copy %{{.*}}, %arg2 {{.*}} : !trn.sbuf<64, [1], i32>, memref<64xi64>
// CHECK: trn.dma_copy %{{.*}}, %arg3 {{.*}} : !trn.sbuf<64, [1], i32>, memref<64xi64>
// CHECK-NOT: linalg.generic
#id1 = affine_map<(d0) -> (d0)>
func.func @int_div(%x: memref<64xi64>, %y: memref<64xi64>, %q: memref<64xi64>, %r: memref<64xi64>) {
  linalg.generic {indexing_maps = [#id1, #id1, #id1, #id1], iterator_types = ["parallel"]}
      ins(%x, %y : memref<64xi64>, memref<64xi64>) outs(%q, %r : memref<64xi64>, memref<64xi64>) {
  ^bb0(%a: i64, %b: i64, %o: i64, %p: i64):
    %d = arith.divsi %a, %b : i64
    %m = arith.remsi %a, %b : i64
    linalg.yield %d, %m : i64, i64
  }
  return
}

// -----

// Float -> integer truncates toward zero: r = x rounded to nearest (a copy into an i32 tile),
// then r - (r > x and x > 0) + (r < x and x < 0). Integer abs is max(n, -n) in i32 tiles.
// CHECK-LABEL: func.func @to_int
// CHECK: trn.dma_copy %arg0, %[[X:[^ ]*]] {{.*}} : memref<8x16xf32>, !trn.sbuf<16, [8], f32>
// CHECK: trn.dma_copy %arg1, %[[N:[^ ]*]] {{.*}} : memref<8x16xi64>, !trn.sbuf<16, [8], i32>
// CHECK: trn.tensor_copy %[[X]], %[[R:[^ ]*]] {{.*}} : !trn.sbuf<16, [8], f32>, !trn.sbuf<16, [8], i32>
// CHECK: trn.tensor_scalar %[[X]], %[[POS:[^ ]*]] {imm = 0.000000e+00 : f32, op = "is_gt"
// CHECK: trn.tensor_tensor %[[R]], %[[X]], %[[ABOVE:[^ ]*]] {op = "is_gt"
// CHECK: trn.tensor_tensor %[[ABOVE]], %[[POS]], %[[DOWN:[^ ]*]] {op = "logical_and"
// CHECK: trn.tensor_scalar %[[X]], %[[NEG:[^ ]*]] {imm = 0.000000e+00 : f32, op = "is_lt"
// CHECK: trn.tensor_tensor %[[R]], %[[X]], %[[BELOW:[^ ]*]] {op = "is_lt"
// CHECK: trn.tensor_tensor %[[BELOW]], %[[NEG]], %[[UP:[^ ]*]] {op = "logical_and"
// CHECK: trn.tensor_tensor %[[R]], %[[DOWN]], %[[T0:[^ ]*]] {op = "subtract"{{.*}}, !trn.sbuf<16, [8], i32>
// CHECK: trn.tensor_tensor %[[T0]], %[[UP]], %[[T:[^ ]*]] {op = "add"{{.*}}, !trn.sbuf<16, [8], i32>
// CHECK: trn.tensor_scalar %[[N]], %[[MINUS:[^ ]*]] {imm = -1.000000e+00 : f32, op = "multiply"{{.*}}, !trn.sbuf<16, [8], i32>
// CHECK: trn.tensor_tensor %[[N]], %[[MINUS]], %[[ABS:[^ ]*]] {op = "maximum"{{.*}}, !trn.sbuf<16, [8], i32>
// CHECK: trn.dma_copy %[[T]], %arg2
// CHECK: trn.dma_copy %[[ABS]], %arg3
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @to_int(%x: memref<8x16xf32>, %n: memref<8x16xi64>, %y: memref<8x16xi64>, %a: memref<8x16xi64>) {
  linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %n : memref<8x16xf32>, memref<8x16xi64>) outs(%y, %a : memref<8x16xi64>, memref<8x16xi64>) {
  ^bb0(%v: f32, %i: i64, %o: i64, %p: i64):
    %t = arith.fptosi %v : f32 to i64
    %b = math.absi %i : i64
    linalg.yield %t, %b : i64, i64
  }
  return
}

// -----

// affine.apply of loop indices (a fused view of arange: index 4 i + j + 7) is one iota whose
// steps combine the indices' own: j on the partitions (step 1 each), i on the free axis (4 each).
// CHECK-LABEL: func.func @view_of_arange
// CHECK: trn.iota %[[V:[^ ]*]] {base = 7 : i64, partition_step = 1 : i64, step = 4 : i64{{.*}} : !trn.sbuf<4, [3], i32>
// CHECK: trn.dma_copy %[[V]], %arg0
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @view_of_arange(%y: memref<3x4xi64>) {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%y : memref<3x4xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %a = affine.apply affine_map<(d0, d1) -> (d0 * 4 + d1 + 7)>(%i, %j)
    %v = arith.index_cast %a : index to i64
    linalg.yield %v : i64
  }
  return
}

// -----

// Bitwise and / or / xor of int64 tensors: the ALU's bitwise ops on the i32 tiles. A constant
// becomes tensor_scalar's f32 immediate when it holds it exactly (bitwise_not is xor with -1);
// one it cannot (2^30 + 1) is memset into an i32 tile, memset's value being exact.
// CHECK-LABEL: func.func @bitwise
// CHECK: trn.tensor_tensor %[[X:[^ ]*]], %[[Y:[^ ]*]], %[[AND:[^ ]*]] {op = "bitwise_and"{{.*}} : !trn.sbuf<16, [8], i32>, !trn.sbuf<16, [8], i32>, !trn.sbuf<16, [8], i32>
// CHECK: trn.tensor_scalar %[[AND]], %[[OR:[^ ]*]] {imm = 2.550000e+02 : f32, op = "bitwise_or"{{.*}} : !trn.sbuf<16, [8], i32>, !trn.sbuf<16, [8], i32>
// CHECK: trn.tensor_scalar %[[OR]], %[[NOT:[^ ]*]] {imm = -1.000000e+00 : f32, op = "bitwise_xor"{{.*}} : !trn.sbuf<16, [8], i32>, !trn.sbuf<16, [8], i32>
// CHECK: trn.memset %[[BIG:[^ ]*]], 0x41D0000000400000 {{.*}} : !trn.sbuf<16, [8], i32>
// CHECK: trn.tensor_tensor %[[NOT]], %[[BIG]], %[[R:[^ ]*]] {op = "bitwise_xor"{{.*}} : !trn.sbuf<16, [8], i32>, !trn.sbuf<16, [8], i32>, !trn.sbuf<16, [8], i32>
// CHECK: trn.dma_copy %[[R]], %arg2 {{.*}} : !trn.sbuf<16, [8], i32>, memref<8x16xi64>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @bitwise(%x: memref<8x16xi64>, %y: memref<8x16xi64>, %z: memref<8x16xi64>) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<8x16xi64>, memref<8x16xi64>) outs(%z : memref<8x16xi64>) {
  ^bb0(%a: i64, %b: i64, %o: i64):
    %and = arith.andi %a, %b : i64
    %mask = arith.constant 255 : i64
    %or = arith.ori %mask, %and : i64
    %ones = arith.constant -1 : i64
    %not = arith.xori %or, %ones : i64
    %big = arith.constant 1073741825 : i64
    %xor = arith.xori %not, %big : i64
    linalg.yield %xor : i64
  }
  return
}


// -----

// Signed shifts: the ALU's logical_shift_left and arith_shift_right on the i32 tiles (an
// immediate count, or a tile of counts; a shifted constant is materialized). Unsigned right
// shifts (shrui) are refused by name (lower_errors.mlir).
// CHECK-LABEL: func.func @shifts
// CHECK: trn.tensor_scalar %[[X:[^ ]*]], %[[L:[^ ]*]] {imm = 3.000000e+00 : f32, op = "logical_shift_left"{{.*}} : !trn.sbuf<16, [8], i32>, !trn.sbuf<16, [8], i32>
// CHECK: trn.tensor_tensor %[[L]], %[[Y:[^ ]*]], %[[R:[^ ]*]] {op = "arith_shift_right"{{.*}} : !trn.sbuf<16, [8], i32>, !trn.sbuf<16, [8], i32>, !trn.sbuf<16, [8], i32>
// CHECK: trn.memset %[[FIVE:[^ ]*]], 5.000000e+00
// CHECK: trn.tensor_tensor %[[FIVE]], %[[Y]], %[[C:[^ ]*]] {op = "logical_shift_left"
// CHECK: trn.tensor_tensor %[[R]], %[[C]], %{{[^ ]*}} {op = "add"
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @shifts(%x: memref<8x16xi64>, %y: memref<8x16xi64>, %z: memref<8x16xi64>) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<8x16xi64>, memref<8x16xi64>) outs(%z : memref<8x16xi64>) {
  ^bb0(%a: i64, %b: i64, %o: i64):
    %three = arith.constant 3 : i64
    %l = arith.shli %a, %three : i64
    %r = arith.shrsi %l, %b : i64
    %five = arith.constant 5 : i64
    %c = arith.shli %five, %b : i64
    %s = arith.addi %r, %c : i64
    linalg.yield %s : i64
  }
  return
}

// -----

// The same ops on booleans (0 / 1 in i1 tiles) are the logical ones; xor is not_equal.
// CHECK-LABEL: func.func @bool_bitwise
// CHECK: trn.tensor_tensor %[[A:[^ ]*]], %[[B:[^ ]*]], %[[OR:[^ ]*]] {op = "logical_or"{{.*}} !trn.sbuf<16, [8], i1>
// CHECK: trn.tensor_tensor %[[OR]], %[[B]], %[[X:[^ ]*]] {op = "not_equal"{{.*}} !trn.sbuf<16, [8], i1>
// CHECK: trn.tensor_tensor %[[X]], %[[A]], %{{[^ ]*}} {op = "logical_and"{{.*}} !trn.sbuf<16, [8], i1>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @bool_bitwise(%x: memref<8x16xi1>, %y: memref<8x16xi1>, %z: memref<8x16xi1>) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<8x16xi1>, memref<8x16xi1>) outs(%z : memref<8x16xi1>) {
  ^bb0(%a: i1, %b: i1, %o: i1):
    %or = arith.ori %a, %b : i1
    %xor = arith.xori %or, %b : i1
    %and = arith.andi %xor, %a : i1
    linalg.yield %and : i1
  }
  return
}

// -----

// linspace(start, end, 7) as the front writes it (ops/shape.cpp): start and end are runtime
// scalars (columns), the index one iota; start + step * i below the halfway index 3 and
// end - step * (6 - i) from it (a subtraction from a column: negate, then add), one select.
// CHECK-LABEL: func.func @linspace
// CHECK: trn.dma_copy %arg0, %[[LO:[^ ]*]] {hbm_offset = 0 : i64{{.*}} !trn.sbuf<7, [1], f32>
// CHECK: trn.dma_copy %arg0, %[[HI:[^ ]*]] {hbm_offset = 1 : i64{{.*}} !trn.sbuf<7, [1], f32>
// CHECK: trn.tensor_tensor %[[HI]], %[[LO]], %[[D:[^ ]*]] {op = "subtract"
// CHECK: trn.tensor_scalar %[[D]], %[[STEP:[^ ]*]] {imm = 6.000000e+00 : f32, op = "divide"
// CHECK: trn.iota %[[I:[^ ]*]] {base = 0 : i64, partition_step = 1 : i64, step = 0 : i64{{.*}} : !trn.sbuf<7, [1], i32>
// CHECK: trn.tensor_scalar %[[I]], %[[UP:[^ ]*]] column %[[STEP]] {op = "multiply"
// CHECK: trn.tensor_scalar %[[UP]], %[[FIRST:[^ ]*]] column %[[LO]] {op = "add"
// CHECK: trn.tensor_scalar %[[I]], %[[NI:[^ ]*]] {imm = -1.000000e+00 : f32, op = "multiply"
// CHECK: trn.tensor_scalar %[[NI]], %[[BACK:[^ ]*]] {imm = 6.000000e+00 : f32, op = "add"
// CHECK: trn.tensor_scalar %[[BACK]], %[[DOWN:[^ ]*]] column %[[STEP]] {op = "multiply"
// CHECK: trn.tensor_scalar %[[DOWN]], %[[NDOWN:[^ ]*]] {imm = -1.000000e+00 : f32, op = "multiply"
// CHECK: trn.tensor_scalar %[[NDOWN]], %[[SECOND:[^ ]*]] column %[[HI]] {op = "add"
// CHECK: trn.tensor_scalar %[[I]], %[[LOW:[^ ]*]] {imm = 3.000000e+00 : f32, op = "is_lt"
// CHECK: trn.tensor_copy %[[SECOND]], %[[R:[^ ]*]] {
// CHECK: trn.copy_predicated %[[FIRST]], %[[LOW]], %[[R]]
// CHECK: trn.dma_copy %[[R]], %arg1
func.func @linspace(%params: memref<2xf64>, %y: memref<7xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p0 = memref.load %params[%c0] : memref<2xf64>
  %p1 = memref.load %params[%c1] : memref<2xf64>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      outs(%y : memref<7xf32>) {
  ^bb0(%o: f32):
    %lo = arith.truncf %p0 : f64 to f32
    %hi = arith.truncf %p1 : f64 to f32
    %n = arith.constant 6.0 : f32
    %d = arith.subf %hi, %lo : f32
    %step = arith.divf %d, %n : f32
    %ix = linalg.index 0 : index
    %i = arith.index_cast %ix : index to i64
    %fi = arith.sitofp %i : i64 to f32
    %up = arith.mulf %step, %fi : f32
    %first = arith.addf %lo, %up : f32
    %six = arith.constant 6 : i64
    %back = arith.subi %six, %i : i64
    %fb = arith.sitofp %back : i64 to f32
    %down = arith.mulf %step, %fb : f32
    %second = arith.subf %hi, %down : f32
    %three = arith.constant 3 : i64
    %low = arith.cmpi slt, %i, %three : i64
    %r = arith.select %low, %first, %second : f32
    linalg.yield %r : f32
  }
  return
}
