// RUN: torch-trn-opt %s -split-input-file -verify-diagnostics -trn-extern-calls | FileCheck %s

// An extern placeholder as the group lowering emits it, after bufferization: scalars (%ctx and
// the op index) first, then the inputs, then the output. It becomes a call of its
// library_call, memrefs cast to fully dynamic strided layouts (an operand that already has that
// type is passed as it is), and a private declaration with a C interface is added.
// CHECK-LABEL: func.func private @trn_ext3_0(
// CHECK-SAME: i64, i64, memref<4x8xf32, strided<[?, ?], offset: ?>>, memref<8x4xf32, strided<[?, ?], offset: ?>>, memref<4x4xf32, strided<[?, ?], offset: ?>>)
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @mm(
// CHECK-SAME: %[[CTX:[a-z0-9]+]]: i64, %[[A:[a-z0-9]+]]: memref<4x8xf32, strided<[?, ?], offset: ?>>, %[[B:[a-z0-9]+]]: memref<8x4xf32>, %[[OUT:[a-z0-9]+]]: memref<4x4xf32, strided<[4, 1], offset: ?>>)
// CHECK: %[[IDX:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[CB:.*]] = memref.cast %[[B]] : memref<8x4xf32> to memref<8x4xf32, strided<[?, ?], offset: ?>>
// CHECK-DAG: %[[CO:.*]] = memref.cast %[[OUT]] : memref<4x4xf32, strided<[4, 1], offset: ?>> to memref<4x4xf32, strided<[?, ?], offset: ?>>
// CHECK-NOT: linalg.generic
// CHECK: call @trn_ext3_0(%[[CTX]], %[[IDX]], %[[A]], %[[CB]], %[[CO]])
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @mm(%ctx: i64, %a: memref<4x8xf32, strided<[?, ?], offset: ?>>, %b: memref<8x4xf32>,
              %out: memref<4x4xf32, strided<[4, 1], offset: ?>>) {
  %c3 = arith.constant 3 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>,
                                   affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext3_0"}
      ins(%ctx, %c3, %a, %b : i64, i64, memref<4x8xf32, strided<[?, ?], offset: ?>>, memref<8x4xf32>)
      outs(%out : memref<4x4xf32, strided<[4, 1], offset: ?>>) {
  ^bb0(%x0: i64, %x1: i64, %x2: f32, %x3: f32, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

// Two call sites of the same extern with the same signature share one declaration; a
// different extern gets its own; a generic whose library_call is not "trn_ext..." is left alone.
// CHECK-DAG: func.func private @trn_ext1_0(i64, memref<4xf32, strided<[?], offset: ?>>) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @trn_ext1_1(i64, memref<2xf32, strided<[?], offset: ?>>) attributes {llvm.emit_c_interface}
// CHECK-NOT: func.func private
// CHECK-LABEL: func.func @reuse(
// CHECK: call @trn_ext1_0(
// CHECK: call @trn_ext1_0(
// CHECK: call @trn_ext1_1(
// CHECK: linalg.generic
// CHECK-SAME: library_call = "other_fn"
// CHECK: return
func.func @reuse(%ctx: i64, %a: memref<4xf32>, %b: memref<4xf32>, %c: memref<2xf32>) {
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> (0)>], iterator_types = [],
                  library_call = "trn_ext1_0"}
      ins(%ctx : i64) outs(%a : memref<4xf32>) {
  ^bb0(%x0: i64, %o: f32):
    linalg.yield %o : f32
  }
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> (0)>], iterator_types = [],
                  library_call = "trn_ext1_0"}
      ins(%ctx : i64) outs(%b : memref<4xf32>) {
  ^bb0(%x0: i64, %o: f32):
    linalg.yield %o : f32
  }
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> (0)>], iterator_types = [],
                  library_call = "trn_ext1_1"}
      ins(%ctx : i64) outs(%c : memref<2xf32>) {
  ^bb0(%x0: i64, %o: f32):
    linalg.yield %o : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"],
                  library_call = "other_fn"}
      outs(%c : memref<2xf32>) {
  ^bb0(%o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

// A second call site of the same name with another signature is an error.
func.func @two_signatures(%ctx: i64, %a: memref<4xf32>, %b: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> (0)>], iterator_types = [],
                  library_call = "trn_ext1_0"}
      ins(%ctx : i64) outs(%a : memref<4xf32>) {
  ^bb0(%x0: i64, %o: f32):
    linalg.yield %o : f32
  }
  // expected-error @+1 {{extern trn_ext1_0 called with two different signatures}}
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> (0)>], iterator_types = [],
                  library_call = "trn_ext1_0"}
      ins(%ctx : i64) outs(%b : memref<8xf32>) {
  ^bb0(%x0: i64, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

// Before bufferization (tensor results) the pass refuses to run.
func.func @on_tensors(%ctx: i64, %a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{extern call "trn_ext1_0" still has tensor results: run after bufferization}}
  %r = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> (0)>], iterator_types = [],
                       library_call = "trn_ext1_0"}
      ins(%ctx : i64) outs(%a : tensor<4xf32>) {
  ^bb0(%x0: i64, %o: f32):
    linalg.yield %o : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// trn.extern_perms: operand i is passed with its dimensions reordered (result dimension d is
// operand dimension perm[d]), as a strided view of the same buffer (its base, offset and
// strides, reordered); an empty entry passes the operand as it is. The 3-d order checks the
// direction: 2x3x4 read as [2, 0, 1] is 4x2x3 with strides (s2, s0, s1).
// CHECK-LABEL: func.func private @trn_ext3_0(
// CHECK-SAME: i64, i64, memref<8x4xf32, strided<[?, ?], offset: ?>>, memref<4x2x3xf32, strided<[?, ?, ?], offset: ?>>, memref<8x4xf32, strided<[?, ?], offset: ?>>)
// CHECK-LABEL: func.func @transposed(
// CHECK-SAME: %[[A:[a-z0-9]+]]: memref<4x8xf32>, %[[B:[a-z0-9]+]]: memref<2x3x4xf32>, %[[OUT:[a-z0-9]+]]: memref<8x4xf32>)
// CHECK: %[[BA:.*]], %[[OA:.*]], %{{.*}}:2, %[[SA:.*]]:2 = memref.extract_strided_metadata %[[A]]
// CHECK: %[[CA:.*]] = memref.reinterpret_cast %[[BA]] to offset: [%[[OA]]], sizes: [8, 4], strides: [%[[SA]]#1, %[[SA]]#0] : memref<f32> to memref<8x4xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[BB:.*]], %[[OB:.*]], %{{.*}}:3, %[[SB:.*]]:3 = memref.extract_strided_metadata %[[B]]
// CHECK: %[[CB:.*]] = memref.reinterpret_cast %[[BB]] to offset: [%[[OB]]], sizes: [4, 2, 3], strides: [%[[SB]]#2, %[[SB]]#0, %[[SB]]#1] : memref<f32> to memref<4x2x3xf32, strided<[?, ?, ?], offset: ?>>
// CHECK: %[[CO:.*]] = memref.cast %[[OUT]]
// CHECK: call @trn_ext3_0(%{{.*}}, %{{.*}}, %[[CA]], %[[CB]], %[[CO]])
func.func @transposed(%ctx: i64, %a: memref<4x8xf32>, %b: memref<2x3x4xf32>, %out: memref<8x4xf32>) {
  %c0 = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>,
                                   affine_map<() -> (0, 0, 0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext3_0",
                  trn.extern_perms = [array<i64: 1, 0>, array<i64: 2, 0, 1>, array<i64>]}
      ins(%ctx, %c0, %a, %b : i64, i64, memref<4x8xf32>, memref<2x3x4xf32>) outs(%out : memref<8x4xf32>) {
  ^bb0(%x0: i64, %x1: i64, %x2: f32, %x3: f32, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

func.func @bad_perm(%ctx: i64, %a: memref<4x8xf32>, %out: memref<8x4xf32>) {
  // expected-error @+1 {{operand 0's order is not a permutation}}
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext2_0", trn.extern_perms = [array<i64: 1, 1>, array<i64>]}
      ins(%ctx, %a : i64, memref<4x8xf32>) outs(%out : memref<8x4xf32>) {
  ^bb0(%x0: i64, %x2: f32, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

func.func @short_perms(%ctx: i64, %a: memref<4x8xf32>, %out: memref<8x4xf32>) {
  // expected-error @+1 {{trn.extern_perms has no permutation of rank 2 for operand 1}}
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext2_0", trn.extern_perms = [array<i64: 1, 0>]}
      ins(%ctx, %a : i64, memref<4x8xf32>) outs(%out : memref<8x4xf32>) {
  ^bb0(%x0: i64, %x2: f32, %o: f32):
    linalg.yield %o : f32
  }
  return
}
