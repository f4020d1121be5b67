// RUN: torch-trn-opt %s -split-input-file -trn-outline-parallel | FileCheck %s

// A large top-level scf.parallel moves into a private function of (lo, hi, captures) that runs
// its outer indices [lo, hi), called on the whole range; constants are cloned into it (its
// loops keep constant bounds), other captured values become parameters. The small nest (16
// iterations, under kMinParallelWork) and the nest whose store does not index by the outer
// variable (every chunk would write %acc[j]) stay where they are.
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[A:[a-z0-9]+]]: memref<512x256xf32>, %[[OUT:[a-z0-9]+]]: memref<512x256xf32>
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C512:.*]] = arith.constant 512 : index
// CHECK: call @trn_par0_f(%[[C0]], %[[C512]], %[[A]], %[[OUT]]) {trn.parallel_for}
// CHECK-NEXT: scf.parallel
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<4x4xf32>
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<256xf32>
// CHECK: return
// CHECK-LABEL: func.func private @trn_par0_f(
// CHECK-SAME: %[[LO:[a-z0-9]+]]: index, %[[HI:[a-z0-9]+]]: index, %[[PA:[a-z0-9]+]]: memref<512x256xf32>, %[[PO:[a-z0-9]+]]: memref<512x256xf32>)
// CHECK-DAG: %[[Z:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%[[LO]], %[[Z]]) to (%[[HI]], %[[C256]])
// CHECK: memref.load %[[PA]][%[[I]], %[[J]]]
// CHECK: arith.mulf %{{.*}}, %[[TWO]]
// CHECK: memref.store %{{.*}}, %[[PO]][%[[I]], %[[J]]]
func.func @f(%a: memref<512x256xf32>, %out: memref<512x256xf32>, %small: memref<4x4xf32>, %acc: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c512, %c256) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<512x256xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %out[%i, %j] : memref<512x256xf32>
    scf.yield
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    memref.store %two, %small[%i, %j] : memref<4x4xf32>
    scf.yield
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c512, %c256) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<512x256xf32>
    memref.store %x, %acc[%j] : memref<256xf32>
    scf.yield
  }
  return
}

// -----

// Row-wise work (a reduction loop inside the parallel rows, as linalg-to-parallel-loops emits
// for ["parallel", "reduction"]) is split by rows; a runtime value used inside (a scalar
// argument) is passed. A nest with a call inside, or a dynamic outer bound, is not split.
// CHECK-LABEL: func.func @rows(
// CHECK: call @trn_par0_rows(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {trn.parallel_for}
// CHECK: scf.parallel
// CHECK: call @g()
// CHECK: scf.parallel
// CHECK: return
// CHECK-LABEL: func.func private @trn_par0_rows(
// CHECK-SAME: index, %{{.*}}: index, %{{.*}}: memref<1024x128xf32>, %{{.*}}: memref<1024xf32>, %{{.*}}: f32)
// CHECK: scf.parallel
// CHECK: scf.for
func.func private @g()
func.func @rows(%a: memref<1024x128xf32>, %sum: memref<1024xf32>, %scale: f32, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%i) = (%c0) to (%c1024) step (%c1) {
    scf.for %j = %c0 to %c128 step %c1 {
      %x = memref.load %a[%i, %j] : memref<1024x128xf32>
      %s = memref.load %sum[%i] : memref<1024xf32>
      %y = arith.mulf %x, %scale : f32
      %t = arith.addf %s, %y : f32
      memref.store %t, %sum[%i] : memref<1024xf32>
    }
    scf.yield
  }
  scf.parallel (%i) = (%c0) to (%c1024) step (%c1) {
    scf.for %j = %c0 to %c128 step %c1 {
      func.call @g() : () -> ()
    }
    scf.yield
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %j = %c0 to %c128 step %c1 {
      memref.store %scale, %sum[%i] : memref<1024xf32>
    }
    scf.yield
  }
  return
}
