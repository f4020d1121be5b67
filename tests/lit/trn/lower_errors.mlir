// RUN: torch-trn-opt %s -split-input-file -trn-lower-linalg -verify-diagnostics

// What the NeuronCore has no instruction for is refused with the op named; the runtime then
// builds the group as host code (docs/trn_target.md).
func.func @atan(%x: memref<8xf32>, %y: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    // expected-error @+1 {{'math.atan' op has no trn lowering}}
    %e = math.atan %a : f32
    linalg.yield %e : f32
  }
  return
}

// -----

func.func @int_div(%x: memref<8xi64>, %y: memref<8xi64>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<8xi64>) outs(%y : memref<8xi64>) {
  ^bb0(%a: i64, %b: i64):
    %two = arith.constant 2 : i64
    // expected-error @+1 {{'arith.divui' op has no trn lowering}}
    %d = arith.divui %a, %two : i64
    linalg.yield %d : i64
  }
  return
}

// -----

func.func @f64(%x: memref<8xf64>, %y: memref<8xf64>) {
  // expected-error @+1 {{operand 0 has element type 'f64', which has no trn lowering}}
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<8xf64>) outs(%y : memref<8xf64>) {
  ^bb0(%a: f64, %b: f64):
    linalg.yield %a : f64
  }
  return
}

// -----

func.func @extern(%ctx: i64, %x: memref<8xf32>, %y: memref<8xf32>) {
  // expected-error @+1 {{is a runtime call (trn_ext1_0: an ATen kernel), which has no trn lowering}}
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> (0)>, affine_map<() -> (0)>], iterator_types = [], library_call = "trn_ext1_0"}
      ins(%ctx, %x : i64, memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%c: i64, %a: f32, %b: f32):
    linalg.yield %b : f32
  }
  return
}

// -----

func.func @index_select_dim1(%x: memref<10x30xf32>, %ids: memref<5xi64>, %out: memref<10x5xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  // expected-error @+1 {{index_select along a dimension other than the first of a 1-D or 2-D tensor (no trn lowering)}}
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>, affine_map<() -> (0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext3_0", trn.extern_op = "aten::index_select", trn.extern_ints = array<i64: 1>}
      ins(%ctx, %k, %x, %ids : i64, i64, memref<10x30xf32>, memref<5xi64>) outs(%out : memref<10x5xf32>) {
  ^bb0(%c: i64, %i: i64, %a: f32, %b: i64, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

// With scale_grad_by_freq the call is refused by name (the group then runs as host code).
func.func @embedding_backward_freq(%g: memref<4x8xf32>, %ids: memref<4xi64>, %out: memref<10x8xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  // expected-error @+1 {{embedding backward with scale_grad_by_freq (no trn lowering)}}
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>, affine_map<() -> (0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext3_0", trn.extern_op = "aten::embedding_dense_backward", trn.extern_ints = array<i64: 10, -1, 1>}
      ins(%ctx, %k, %g, %ids : i64, i64, memref<4x8xf32>, memref<4xi64>) outs(%out : memref<10x8xf32>) {
  ^bb0(%c: i64, %i: i64, %a: f32, %b: i64, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

// index_add is lowered along dim 0 with alpha 1 only (the group then runs as host code).
func.func @index_add_dim1(%x: memref<4x8xf32>, %ids: memref<3xi64>, %src: memref<4x3xf32>, %out: memref<4x8xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  // expected-error @+1 {{index_add along a dimension other than the first (no trn lowering)}}
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>, affine_map<() -> (0)>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::index_add", trn.extern_ints = array<i64: 1, 1>}
      ins(%ctx, %k, %x, %ids, %src : i64, i64, memref<4x8xf32>, memref<3xi64>, memref<4x3xf32>) outs(%out : memref<4x8xf32>) {
  ^bb0(%c: i64, %i: i64, %a: f32, %b: i64, %s: f32, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

func.func @index_add_alpha(%x: memref<4x8xf32>, %ids: memref<3xi64>, %src: memref<3x8xf32>, %out: memref<4x8xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  // expected-error @+1 {{index_add with alpha other than 1 (no trn lowering)}}
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>, affine_map<() -> (0)>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::index_add_", trn.extern_ints = array<i64: 0, 2>}
      ins(%ctx, %k, %x, %ids, %src : i64, i64, memref<4x8xf32>, memref<3xi64>, memref<3x8xf32>) outs(%out : memref<4x8xf32>) {
  ^bb0(%c: i64, %i: i64, %a: f32, %b: i64, %s: f32, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

func.func @index_add_f64(%x: memref<4x8xf64>, %ids: memref<3xi64>, %src: memref<3x8xf64>, %out: memref<4x8xf64>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  // expected-error @+1 {{index_add of a type other than f32 (no trn lowering)}}
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>, affine_map<() -> (0)>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::index_add_", trn.extern_ints = array<i64: 0, 1>}
      ins(%ctx, %k, %x, %ids, %src : i64, i64, memref<4x8xf64>, memref<3xi64>, memref<3x8xf64>) outs(%out : memref<4x8xf64>) {
  ^bb0(%c: i64, %i: i64, %a: f64, %b: i64, %s: f64, %o: f64):
    linalg.yield %o : f64
  }
  return
}

// -----

// scatter_add with an index that may vary along dim 1 is no row scatter: refused.
func.func @scatter_add_general_index(%x: memref<5x4xf32>, %ids: memref<3x4xi64>, %src: memref<3x4xf32>, %out: memref<5x4xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  // expected-error @+1 {{scatter_add whose index is not a row index of a 1-D or 2-D tensor (no trn lowering)}}
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::scatter_add", trn.extern_ints = array<i64: 0>}
      ins(%ctx, %k, %x, %ids, %src : i64, i64, memref<5x4xf32>, memref<3x4xi64>, memref<3x4xf32>) outs(%out : memref<5x4xf32>) {
  ^bb0(%c: i64, %i: i64, %a: f32, %b: i64, %s: f32, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

// index_put without accumulate: there is no overwriting indirect DMA (the group runs as host code).
func.func @index_put_overwrite(%x: memref<10x4xf32>, %i: memref<6xi64>, %v: memref<6x4xf32>) {
  %ctx = arith.constant 0 : i64
  %k = arith.constant 0 : i64
  // expected-error @+1 {{index_put without accumulate}}
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>, affine_map<() -> (0, 0)>, affine_map<() -> (0)>, affine_map<() -> (0, 0)>, affine_map<() -> (0, 0)>],
                  iterator_types = [], library_call = "trn_ext4_0", trn.extern_op = "aten::_index_put_impl_", trn.extern_ints = array<i64: 0, 0>,
                  trn.extern_lists = [array<i64: 1>]}
      ins(%ctx, %k, %x, %i, %v : i64, i64, memref<10x4xf32>, memref<6xi64>, memref<6x4xf32>) outs(%x : memref<10x4xf32>) {
  ^bb0(%c: i64, %o0: i64, %a: f32, %b: i64, %d: f32, %o: f32):
    linalg.yield %o : f32
  }
  return
}

// -----

// A loop index through floordiv / mod (a view the front derives by mixed-radix decomposition) is
// not one iota.
func.func @index_floordiv(%y: memref<8xi64>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%y : memref<8xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    // expected-error @+1 {{'affine.apply' op of a map other than a linear one of loop indices has no trn lowering}}
    %a = affine.apply affine_map<(d0) -> (d0 floordiv 2)>(%i)
    %v = arith.index_cast %a : index to i64
    linalg.yield %v : i64
  }
  return
}

// -----

// An unsigned right shift: the ALU here shifts right arithmetically only.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @unsigned_shift(%x: memref<8x16xi64>, %z: memref<8x16xi64>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x16xi64>) outs(%z : memref<8x16xi64>) {
  ^bb0(%a: i64, %o: i64):
    %three = arith.constant 3 : i64
    // expected-error @+1 {{'arith.shrui' op has no trn lowering}}
    %r = arith.shrui %a, %three : i64
    linalg.yield %r : i64
  }
  return
}
