// RUN: torch-trn-opt %s -split-input-file -trn-lower-linalg -verify-diagnostics

// What the NeuronCore has no instruction for is refused with the op named; the runtime then
// builds the group as host code (docs/trn_target.md).
func.func @sin(%x: memref<8xf32>, %y: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    // expected-error @+1 {{'math.sin' op has no trn lowering}}
    %e = math.sin %a : f32
    linalg.yield %e : f32
  }
  return
}

// -----

func.func @int64(%x: memref<8xi64>, %y: memref<8xi64>) {
  // expected-error @+1 {{operand 0 has element type 'i64', which has no trn lowering}}
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<8xi64>) outs(%y : memref<8xi64>) {
  ^bb0(%a: i64, %b: i64):
    linalg.yield %a : i64
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
