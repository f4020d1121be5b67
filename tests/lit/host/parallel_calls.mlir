// RUN: torch-trn-opt %s -split-input-file -verify-diagnostics -trn-parallel-calls | FileCheck %s

// A call of an outlined nest (marked trn.parallel_for) becomes trn_parallel_for(wrapper, slots, lo, hi):
// the arguments after (lo, hi) go into 8-byte slots in order, whatever their type, and the
// generated internal wrapper loads them back, in the callee's parameter types, for each chunk.
// The outlined function becomes internal (it is reached through its wrapper only); calls of
// unmarked calls, even of a function with a similar name, are left alone.
// CHECK: llvm.func @trn_parallel_for(!llvm.ptr<i8>, !llvm.ptr<i64>, i64, i64)
// CHECK-LABEL: llvm.func @group(
// CHECK-SAME: %[[P:[a-z0-9]+]]: !llvm.ptr<f32>, %[[N:[a-z0-9]+]]: i64, %[[S:[a-z0-9]+]]: f32)
// CHECK: %[[SLOTS:.*]] = llvm.alloca %{{.*}} x i64 {alignment = 8 : i64} : (i64) -> !llvm.ptr<i64>
// CHECK: %[[G0:.*]] = llvm.getelementptr %[[SLOTS]][%{{.*}}]
// CHECK: %[[B0:.*]] = llvm.bitcast %[[G0]] : !llvm.ptr<i64> to !llvm.ptr<ptr<f32>>
// CHECK: llvm.store %[[P]], %[[B0]]
// CHECK: %[[B1:.*]] = llvm.bitcast %{{.*}} : !llvm.ptr<i64> to !llvm.ptr<i64>
// CHECK: llvm.store %[[N]], %[[B1]]
// CHECK: %[[B2:.*]] = llvm.bitcast %{{.*}} : !llvm.ptr<i64> to !llvm.ptr<f32>
// CHECK: llvm.store %[[S]], %[[B2]]
// CHECK: %[[FN:.*]] = llvm.mlir.addressof @trn_par0_group_packed
// CHECK: %[[FP:.*]] = llvm.bitcast %[[FN]] {{.*}} to !llvm.ptr<i8>
// CHECK: llvm.call @trn_parallel_for(%[[FP]], %[[SLOTS]], %{{.*}}, %{{.*}})
// CHECK-NOT: llvm.call @trn_par0_group(
// CHECK: llvm.call @trn_parallel_forever()
// CHECK: llvm.return
// CHECK: llvm.func internal @trn_par0_group(
// CHECK-LABEL: llvm.func internal @trn_par0_group_packed(
// CHECK-SAME: %[[LO:[a-z0-9]+]]: i64, %[[HI:[a-z0-9]+]]: i64, %[[IN:[a-z0-9]+]]: !llvm.ptr<i64>)
// CHECK: %[[L0:.*]] = llvm.load %{{.*}} : !llvm.ptr<ptr<f32>>
// CHECK: %[[L1:.*]] = llvm.load %{{.*}} : !llvm.ptr<i64>
// CHECK: %[[L2:.*]] = llvm.load %{{.*}} : !llvm.ptr<f32>
// CHECK: llvm.call @trn_par0_group(%[[LO]], %[[HI]], %[[L0]], %[[L1]], %[[L2]])
llvm.func @trn_parallel_forever()
llvm.func @group(%p: !llvm.ptr<f32>, %n: i64, %s: f32) {
  %lo = llvm.mlir.constant(0 : i64) : i64
  %hi = llvm.mlir.constant(64 : i64) : i64
  llvm.call @trn_par0_group(%lo, %hi, %p, %n, %s) {trn.parallel_for} : (i64, i64, !llvm.ptr<f32>, i64, f32) -> ()
  llvm.call @trn_parallel_forever() : () -> ()
  llvm.return
}
llvm.func @trn_par0_group(%lo: i64, %hi: i64, %p: !llvm.ptr<f32>, %n: i64, %s: f32) {
  llvm.return
}

// -----

llvm.func @group(%v: vector<4xf32>) {
  %lo = llvm.mlir.constant(0 : i64) : i64
  // expected-error @+1 {{an outlined loop nest's argument of type 'vector<4xf32>' is wider than a slot}}
  llvm.call @trn_par0_group(%lo, %lo, %v) {trn.parallel_for} : (i64, i64, vector<4xf32>) -> ()
  llvm.return
}
llvm.func @trn_par0_group(%lo: i64, %hi: i64, %v: vector<4xf32>) {
  llvm.return
}
