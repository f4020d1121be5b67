// RUN: torch-trn-opt %s -split-input-file -verify-diagnostics

// Each verifier rejects what the engines cannot do (limits: docs/trn_target.md).

// expected-error @+1 {{SBUF tiles have 1..128 partitions, got 256}}
func.func @too_many_partitions(%t: !trn.sbuf<256, [4], f32>) { return }

// -----

// expected-error @+1 {{a PSUM tile must fit one bank (2048 bytes per partition), this one needs 4096}}
func.func @psum_bank_overflow(%t: !trn.psum<128, [1024], f32>) { return }

// -----

func.func @moving_too_wide(%st: !trn.sbuf<128, [128], bf16>, %mv: !trn.sbuf<128, [1024], bf16>,
                           %acc: !trn.psum<128, [512], f32>) {
  // expected-error @+1 {{moving free size 1024 exceeds TensorE's 512}}
  trn.matmul %st, %mv, %acc : !trn.sbuf<128, [128], bf16>, !trn.sbuf<128, [1024], bf16>, !trn.psum<128, [512], f32>
  return
}

// -----

func.func @stationary_too_wide(%st: !trn.sbuf<128, [256], bf16>, %mv: !trn.sbuf<128, [64], bf16>,
                               %acc: !trn.psum<128, [64], f32>) {
  // expected-error @+1 {{stationary free size 256 exceeds TensorE's 128}}
  trn.matmul %st, %mv, %acc : !trn.sbuf<128, [256], bf16>, !trn.sbuf<128, [64], bf16>, !trn.psum<128, [64], f32>
  return
}

// -----

func.func @contraction_mismatch(%st: !trn.sbuf<64, [128], bf16>, %mv: !trn.sbuf<128, [64], bf16>,
                                %acc: !trn.psum<128, [64], f32>) {
  // expected-error @+1 {{contracts over the partitions: stationary has 64, moving has 128}}
  trn.matmul %st, %mv, %acc : !trn.sbuf<64, [128], bf16>, !trn.sbuf<128, [64], bf16>, !trn.psum<128, [64], f32>
  return
}

// -----

func.func @psum_not_f32(%st: !trn.sbuf<128, [128], bf16>, %mv: !trn.sbuf<128, [64], bf16>,
                        %acc: !trn.psum<128, [64], bf16>) {
  // expected-error @+1 {{PSUM accumulates in f32}}
  trn.matmul %st, %mv, %acc : !trn.sbuf<128, [128], bf16>, !trn.sbuf<128, [64], bf16>, !trn.psum<128, [64], bf16>
  return
}

// -----

func.func @integer_matmul(%st: !trn.sbuf<128, [128], i32>, %mv: !trn.sbuf<128, [64], i32>,
                          %acc: !trn.psum<128, [64], f32>) {
  // expected-error @+1 {{inputs must both be bf16, f16 or f32}}
  trn.matmul %st, %mv, %acc : !trn.sbuf<128, [128], i32>, !trn.sbuf<128, [64], i32>, !trn.psum<128, [64], f32>
  return
}

// -----

func.func @hbm_to_hbm(%a: memref<4xf32>, %b: memref<4xf32>) {
  // expected-error @+1 {{copies to or from SBUF}}
  trn.dma_copy %a, %b : memref<4xf32>, memref<4xf32>
  return
}

// -----

func.func @dma_converts(%a: memref<128x4xf32>, %t: !trn.sbuf<128, [4], bf16>) {
  // expected-error @+1 {{element types differ}}
  trn.dma_copy %a, %t : memref<128x4xf32>, !trn.sbuf<128, [4], bf16>
  return
}

// -----

func.func @dma_size(%a: memref<128x8xf32>, %t: !trn.sbuf<128, [4], f32>) {
  // expected-error @+1 {{moves 1024 elements into 512}}
  trn.dma_copy %a, %t : memref<128x8xf32>, !trn.sbuf<128, [4], f32>
  return
}

// -----

func.func @unknown_function(%a: !trn.sbuf<128, [4], f32>, %b: !trn.sbuf<128, [4], f32>) {
  // expected-error @+1 {{unknown function 'erfinv'}}
  trn.activation %a, %b {func = "erfinv"} : !trn.sbuf<128, [4], f32>, !trn.sbuf<128, [4], f32>
  return
}

// -----

func.func @bias_shape(%a: !trn.sbuf<128, [4], f32>, %b: !trn.sbuf<128, [4], f32>, %bias: !trn.sbuf<128, [2], f32>) {
  // expected-error @+1 {{bias is one value per partition: a [128, [1]] tile}}
  trn.activation %a, %b bias %bias {func = "exp"} : !trn.sbuf<128, [4], f32>, !trn.sbuf<128, [4], f32>, !trn.sbuf<128, [2], f32>
  return
}

// -----

func.func @copy_shape(%a: !trn.psum<128, [4], f32>, %b: !trn.sbuf<64, [4], f32>) {
  // expected-error @+1 {{source and destination tiles differ in shape}}
  trn.tensor_copy %a, %b : !trn.psum<128, [4], f32>, !trn.sbuf<64, [4], f32>
  return
}

// -----

func.func @transpose_shape(%a: !trn.sbuf<128, [64], f32>, %t: !trn.psum<128, [64], f32>) {
  // expected-error @+1 {{result must be [64, [128]]}}
  trn.transpose %a, %t : !trn.sbuf<128, [64], f32>, !trn.psum<128, [64], f32>
  return
}

// -----

func.func @unknown_vector_op(%a: !trn.sbuf<128, [4], f32>) {
  // expected-error @+1 {{unknown op 'atan2'}}
  trn.tensor_tensor %a, %a, %a {op = "atan2"} : !trn.sbuf<128, [4], f32>, !trn.sbuf<128, [4], f32>, !trn.sbuf<128, [4], f32>
  return
}

// -----

func.func @two_scalars(%a: !trn.sbuf<128, [4], f32>, %c: !trn.sbuf<128, [1], f32>) {
  // expected-error @+1 {{takes exactly one scalar}}
  trn.tensor_scalar %a, %a column %c {op = "add", imm = 1.0 : f32} : !trn.sbuf<128, [4], f32>, !trn.sbuf<128, [4], f32>, !trn.sbuf<128, [1], f32>
  return
}

// -----

func.func @reduce_result(%a: !trn.sbuf<128, [4], f32>, %b: !trn.sbuf<128, [2], f32>) {
  // expected-error @+1 {{reduces each partition to one value: the result is a [128, [1]] tile}}
  trn.tensor_reduce %a, %b {op = "add"} : !trn.sbuf<128, [4], f32>, !trn.sbuf<128, [2], f32>
  return
}

// -----

func.func @bad_engine() {
  // expected-error @+1 {{unknown engine 'gpu'}}
  trn.signal {engine = "gpu", semaphore = 0 : i32}
  return
}

// -----

func.func @bad_semaphore() {
  // expected-error @+1 {{semaphore 99 out of range 0..31}}
  trn.wait {engine = "vector", semaphore = 99 : i32, value = 1 : i32}
  return
}

// -----

func.func @predicate_not_integer(%s: !trn.sbuf<8, [16], f32>, %p: !trn.sbuf<8, [16], f32>, %d: !trn.sbuf<8, [16], f32>) {
  // expected-error @+1 {{the predicate must be an integer tile}}
  trn.copy_predicated %s, %p, %d : !trn.sbuf<8, [16], f32>, !trn.sbuf<8, [16], f32>, !trn.sbuf<8, [16], f32>
  return
}

// -----

func.func @predicate_shape(%s: !trn.sbuf<8, [16], f32>, %p: !trn.sbuf<8, [8], i1>, %d: !trn.sbuf<8, [16], f32>) {
  // expected-error @+1 {{source, predicate and destination tiles differ in shape}}
  trn.copy_predicated %s, %p, %d : !trn.sbuf<8, [16], f32>, !trn.sbuf<8, [8], i1>, !trn.sbuf<8, [16], f32>
  return
}

// -----

func.func @dma_window_count(%m: memref<64x64xf32>, %t: !trn.sbuf<128, [16], f32>) {
  // expected-error @+1 {{moves 256 elements into 2048}}
  trn.dma_copy %m, %t {hbm_offset = 0 : i64, hbm_sizes = array<i64: 16, 16>, hbm_strides = array<i64: 64, 1>} : memref<64x64xf32>, !trn.sbuf<128, [16], f32>
  return
}

// -----

// The engines have no 64-bit types: torch's int64 tensors live in HBM and become i32 tiles.
// expected-error @+1 {{SBUF tiles hold no 64-bit types (the engines have none), got 'i64'}}
func.func @i64_tile(%t: !trn.sbuf<128, [4], i64>) { return }

// -----

func.func @dma_i64_to_f32(%a: memref<128x4xi64>, %t: !trn.sbuf<128, [4], f32>) {
  // expected-error @+1 {{element types differ}}
  trn.dma_copy %a, %t : memref<128x4xi64>, !trn.sbuf<128, [4], f32>
  return
}

// -----

// bf16 / f16 HBM elements move as they are or widen to f32 tiles; nothing else.
func.func @dma_bf16_to_f16(%a: memref<128x4xbf16>, %t: !trn.sbuf<128, [4], f16>) {
  // expected-error @+1 {{element types differ}}
  trn.dma_copy %a, %t : memref<128x4xbf16>, !trn.sbuf<128, [4], f16>
  return
}

// -----

func.func @dma_bf16_tile_to_f16(%t: !trn.sbuf<128, [4], bf16>, %a: memref<128x4xf16>) {
  // expected-error @+1 {{element types differ}}
  trn.dma_copy %t, %a : !trn.sbuf<128, [4], bf16>, memref<128x4xf16>
  return
}

// -----

func.func @gather_float_indices(%t: memref<100x8xf32>, %i: !trn.sbuf<4, [1], f32>, %d: !trn.sbuf<4, [8], f32>) {
  // expected-error @+1 {{indices are one i32 per partition}}
  trn.dma_gather %t, %i, %d {hbm_offset = 0 : i64, hbm_sizes = array<i64: 100, 8>, hbm_strides = array<i64: 8, 1>} : memref<100x8xf32>, !trn.sbuf<4, [1], f32>, !trn.sbuf<4, [8], f32>
  return
}

// -----

func.func @gather_partitions(%t: memref<100x8xf32>, %i: !trn.sbuf<4, [1], i32>, %d: !trn.sbuf<8, [8], f32>) {
  // expected-error @+1 {{moves one row per partition: 4 indices for 8 partitions}}
  trn.dma_gather %t, %i, %d {hbm_offset = 0 : i64, hbm_sizes = array<i64: 100, 8>, hbm_strides = array<i64: 8, 1>} : memref<100x8xf32>, !trn.sbuf<4, [1], i32>, !trn.sbuf<8, [8], f32>
  return
}

// -----

func.func @gather_row(%t: memref<100x8xf32>, %i: !trn.sbuf<4, [1], i32>, %d: !trn.sbuf<4, [16], f32>) {
  // expected-error @+1 {{a row of the window has 8 elements, the tile 16 per partition}}
  trn.dma_gather %t, %i, %d {hbm_offset = 0 : i64, hbm_sizes = array<i64: 100, 8>, hbm_strides = array<i64: 8, 1>} : memref<100x8xf32>, !trn.sbuf<4, [1], i32>, !trn.sbuf<4, [16], f32>
  return
}

// -----

func.func @scatter_add_i32(%t: memref<100x8xi32>, %i: !trn.sbuf<4, [1], i32>, %s: !trn.sbuf<4, [8], i32>) {
  // expected-error @+1 {{accumulates fp32 rows only}}
  trn.dma_scatter_add %s, %i, %t {hbm_offset = 0 : i64, hbm_sizes = array<i64: 100, 8>, hbm_strides = array<i64: 8, 1>} : !trn.sbuf<4, [8], i32>, !trn.sbuf<4, [1], i32>, memref<100x8xi32>
  return
}

// -----

func.func @scatter_add_partitions(%t: memref<100x8xf32>, %i: !trn.sbuf<4, [1], i32>, %s: !trn.sbuf<8, [8], f32>) {
  // expected-error @+1 {{moves one row per partition: 4 indices for 8 partitions}}
  trn.dma_scatter_add %s, %i, %t {hbm_offset = 0 : i64, hbm_sizes = array<i64: 100, 8>, hbm_strides = array<i64: 8, 1>} : !trn.sbuf<8, [8], f32>, !trn.sbuf<4, [1], i32>, memref<100x8xf32>
  return
}

// -----

func.func @scatter_add_row(%t: memref<100x8xf32>, %i: !trn.sbuf<4, [1], i32>, %s: !trn.sbuf<4, [4], f32>) {
  // expected-error @+1 {{a row of the window has 8 elements, the tile 4 per partition}}
  trn.dma_scatter_add %s, %i, %t {hbm_offset = 0 : i64, hbm_sizes = array<i64: 100, 8>, hbm_strides = array<i64: 8, 1>} : !trn.sbuf<4, [4], f32>, !trn.sbuf<4, [1], i32>, memref<100x8xf32>
  return
}

// -----

func.func @gather_no_window(%t: memref<100x8xf32>, %i: !trn.sbuf<4, [1], i32>, %d: !trn.sbuf<4, [8], f32>) {
  // expected-error @+1 {{needs a table window}}
  trn.dma_gather %t, %i, %d : memref<100x8xf32>, !trn.sbuf<4, [1], i32>, !trn.sbuf<4, [8], f32>
  return
}

// -----

func.func @tile_window_outside(%m: memref<4x8xf32>, %t: !trn.sbuf<4, [10], f32>) {
  // expected-error @+1 {{tile window reaches outside the tile's 10 free elements}}
  trn.dma_copy %m, %t {hbm_offset = 0 : i64, hbm_sizes = array<i64: 4, 8>, hbm_strides = array<i64: 8, 1>, tile_offset = 3 : i64, tile_sizes = array<i64: 8>, tile_strides = array<i64: 1>} : memref<4x8xf32>, !trn.sbuf<4, [10], f32>
  return
}

// -----

func.func @tile_window_incomplete(%m: memref<4x8xf32>, %t: !trn.sbuf<4, [10], f32>) {
  // expected-error @+1 {{a tile window needs tile_offset, tile_sizes and tile_strides}}
  trn.dma_copy %m, %t {hbm_offset = 0 : i64, hbm_sizes = array<i64: 4, 8>, hbm_strides = array<i64: 8, 1>, tile_offset = 1 : i64} : memref<4x8xf32>, !trn.sbuf<4, [10], f32>
  return
}

// -----

func.func @tile_window_size(%m: memref<4x8xf32>, %t: !trn.sbuf<4, [10], f32>) {
  // expected-error @+1 {{moves 32 elements into 36}}
  trn.dma_copy %m, %t {hbm_offset = 0 : i64, hbm_sizes = array<i64: 4, 8>, hbm_strides = array<i64: 8, 1>, tile_offset = 1 : i64, tile_sizes = array<i64: 9>, tile_strides = array<i64: 1>} : memref<4x8xf32>, !trn.sbuf<4, [10], f32>
  return
}

// -----

// The ALU's bitwise ops act on integers: their result is an integer tile.
func.func @bitwise_float(%a: !trn.sbuf<128, [4], i32>, %f: !trn.sbuf<128, [4], f32>) {
  // expected-error @+1 {{'bitwise_and' writes an integer tile, got 'f32'}}
  trn.tensor_tensor %a, %a, %f {op = "bitwise_and"} : !trn.sbuf<128, [4], i32>, !trn.sbuf<128, [4], i32>, !trn.sbuf<128, [4], f32>
  return
}

// -----

func.func @bitwise_fraction(%a: !trn.sbuf<128, [4], i32>, %b: !trn.sbuf<128, [4], i32>) {
  // expected-error @+1 {{'bitwise_xor' takes an integral immediate, got 1.5}}
  trn.tensor_scalar %a, %b {imm = 1.5 : f32, op = "bitwise_xor"} : !trn.sbuf<128, [4], i32>, !trn.sbuf<128, [4], i32>
  return
}
