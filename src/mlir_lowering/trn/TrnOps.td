// The `trn` dialect: AWS Trainium NeuronCore instructions, modelled on the public nki.isa API
// (docs/trn_target.md lists every constant with its source page). Buffer semantics, like the
// hardware: instructions read and write tiles (SBUF / PSUM) and HBM memrefs; only `trn.alloc`
// produces a value. Verifiers reject what the engines cannot do.
#ifndef TRN_OPS_TD
#define TRN_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Trn_Dialect : Dialect {
  let name = "trn";
  let cppNamespace = "::trn::ir";
  let summary = "AWS Trainium NeuronCore instructions (after the public nki.isa API)";
  let description = [{
    On-chip memory is two scratchpads with a partition dimension: the state buffer (SBUF) and
    the matmul accumulator (PSUM). A tile lives in one of them: `!trn.sbuf<P, [F...], T>` /
    `!trn.psum<P, [F...], T>` with P <= 128 partitions and a free shape F. Device memory (HBM)
    is a memref. Engines: TensorE (matmul, transpose), VectorE (tensor_tensor, tensor_scalar,
    tensor_reduce, tensor_copy), ScalarE (activation), GpSimd (iota, memset), DMA (dma_copy,
    dma_gather, dma_scatter_add).
  }];
  let useDefaultTypePrinterParser = 1;
  let useFoldAPI = kEmitFoldAdaptorFolder;
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

class Trn_TileType<string name, string typeMnemonic, string memory> : TypeDef<Trn_Dialect, name> {
  let mnemonic = typeMnemonic;
  let summary = "a tile in " # memory;
  let description = "A tile with `partitions` partitions (at most 128) and a free shape, in " # memory # ".";
  let parameters = (ins "int64_t":$partitions, ArrayRefParameter<"int64_t">:$freeShape, "::mlir::Type":$elementType);
  let assemblyFormat = "`<` $partitions `,` `[` $freeShape `]` `,` $elementType `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    // Elements per partition (the product of the free shape).
    int64_t freeElements() const;
    // Bytes per partition.
    int64_t bytesPerPartition() const;
  }];
}

def Trn_SbufTile : Trn_TileType<"SbufTile", "sbuf", "the state buffer (SBUF)">;
def Trn_PsumTile : Trn_TileType<"PsumTile", "psum", "the matmul accumulation buffer (PSUM); one tile fits one bank">;

def Trn_AnyTile : AnyTypeOf<[Trn_SbufTile, Trn_PsumTile]>;
def Trn_DmaEnd : AnyTypeOf<[Trn_SbufTile, AnyMemRef]>;

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

class Trn_Op<string mnemonic, list<Trait> traits = []> : Op<Trn_Dialect, mnemonic, traits>;

def Trn_AllocOp : Trn_Op<"alloc", [MemoryEffects<[MemAlloc]>]> {
  let summary = "allocate a tile in SBUF or PSUM";
  let description = [{
    `%t = trn.alloc : !trn.sbuf<128, [512], f32>`. Placement (which partitions' addresses, which
    PSUM bank) is decided later by the allocation pass.
  }];
  let results = (outs Trn_AnyTile:$tile);
  let assemblyFormat = "attr-dict `:` qualified(type($tile))";
}

def Trn_DmaCopyOp : Trn_Op<"dma_copy"> {
  let summary = "copy between device memory (HBM) and SBUF, or within SBUF (DMA engines)";
  let description = [{
    `trn.dma_copy %src, %dst : memref<128x512xf32, strided<[1024, 1]>>, !trn.sbuf<128, [512], f32>`.
    Moves the elements in row-major order of both sides; strided memrefs describe strided HBM
    access. PSUM is not a DMA endpoint (copy it to SBUF with trn.tensor_copy first). With
    `tile_offset`, `tile_sizes`, `tile_strides` the tile side is a strided part of every
    partition of the tile (a zero-padded convolution input: memset, then the part inside).
  }];
  let arguments = (ins Arg<Trn_DmaEnd, "", [MemRead]>:$src, Arg<Trn_DmaEnd, "", [MemWrite]>:$dst);
  let assemblyFormat = "$src `,` $dst attr-dict `:` qualified(type($src)) `,` qualified(type($dst))";
  let hasVerifier = 1;
}

def Trn_DmaGatherOp : Trn_Op<"dma_gather"> {
  let summary = "indirect DMA: gather one HBM row per partition, chosen by an index tile";
  let description = [{
    `trn.dma_gather %table, %indices, %dst {hbm_offset, hbm_sizes, hbm_strides} : memref<..>,
    !trn.sbuf<P, [1], i32>, !trn.sbuf<P, [F...], T>`, after NKI's indirect DMA (a load whose
    partition index is a tile of indices, descriptors generated on the device: [DGE] in
    docs/trn_target.md). The window's first
    size is the number of rows of the table (indices must lie in [0, rows)), its first stride
    the elements between rows; the other sizes and strides select the row's elements, which land
    in order in the partition `p` of `dst` for row `indices[p]`. An index out of range is an error
    of the instruction, as ATen's IndexError is.
  }];
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$table, Arg<Trn_SbufTile, "", [MemRead]>:$indices,
                       Arg<Trn_SbufTile, "", [MemWrite]>:$dst);
  let assemblyFormat = "$table `,` $indices `,` $dst attr-dict `:` qualified(type($table)) `,` qualified(type($indices)) `,` qualified(type($dst))";
  let hasVerifier = 1;
}

def Trn_DmaScatterAddOp : Trn_Op<"dma_scatter_add"> {
  let summary = "indirect DMA with accumulation: add each partition of a tile to the HBM row an index tile names";
  let description = [{
    `trn.dma_scatter_add %src, %indices, %table {hbm_offset, hbm_sizes, hbm_strides} :
    !trn.sbuf<P, [F...], T>, !trn.sbuf<P, [1], i32>, memref<..>`: for p = 0, 1, ... in order, table
    row `indices[p]` += partition p of `src` (read-modify-write in fp32, as NKI's DMA with an add
    as `dst_rmw_op` and a dynamic destination; [DGE] in docs/trn_target.md). Repeated indices
    accumulate in partition order. The window is dma_gather's: rows, then the row's elements;
    an index outside [0, rows) is an error of the instruction.
  }];
  let arguments = (ins Arg<Trn_SbufTile, "", [MemRead]>:$src, Arg<Trn_SbufTile, "", [MemRead]>:$indices,
                       Arg<AnyMemRef, "", [MemRead, MemWrite]>:$table);
  let assemblyFormat = "$src `,` $indices `,` $table attr-dict `:` qualified(type($src)) `,` qualified(type($indices)) `,` qualified(type($table))";
  let hasVerifier = 1;
}

def Trn_MatmulOp : Trn_Op<"matmul"> {
  let summary = "TensorE matrix multiply into a PSUM bank";
  let description = [{
    `trn.matmul %stationary, %moving, %dst {accumulate} : !trn.sbuf<K, [M], T>, !trn.sbuf<K, [N], T>, !trn.psum<M, [N], f32>`
    computes dst[m, n] (+)= sum_k stationary[k, m] * moving[k, n]: the contraction runs over the
    partition dimension K <= 128; M <= 128 (the stationary free size) and N <= 512 (the moving
    free size). PSUM accumulates in fp32; `accumulate` adds to dst instead of overwriting it.
  }];
  let arguments = (ins Arg<Trn_SbufTile, "", [MemRead]>:$stationary, Arg<Trn_SbufTile, "", [MemRead]>:$moving,
                       Arg<Trn_PsumTile, "", [MemWrite, MemRead]>:$dst, UnitAttr:$accumulate);
  let assemblyFormat = "$stationary `,` $moving `,` $dst attr-dict `:` qualified(type($stationary)) `,` qualified(type($moving)) `,` qualified(type($dst))";
  let hasVerifier = 1;
}

def Trn_ActivationOp : Trn_Op<"activation"> {
  let summary = "ScalarE: dst = func(src * scale + bias)";
  let description = [{
    `trn.activation %src, %dst {func = "gelu", scale = 1.0 : f32} : !trn.sbuf<..>, !trn.sbuf<..>`.
    `func` names an entry of ScalarE's table (kActFuncNames in runtime/neuroncore/
    instruction_stream.h, the encoding the model shares); the optional `bias` is a
    per-partition column tile [P, [1]].
  }];
  let arguments = (ins Arg<Trn_AnyTile, "", [MemRead]>:$src, Arg<Trn_SbufTile, "", [MemWrite]>:$dst,
                       StrAttr:$func, DefaultValuedAttr<F32Attr, "1.0">:$scale,
                       Optional<Trn_SbufTile>:$bias);
  let assemblyFormat = "$src `,` $dst (`bias` $bias^)? attr-dict `:` qualified(type($src)) `,` qualified(type($dst)) (`,` qualified(type($bias))^)?";
  let hasVerifier = 1;
}

def Trn_TensorCopyOp : Trn_Op<"tensor_copy"> {
  let summary = "VectorE copy with cast (e.g. PSUM -> SBUF)";
  let arguments = (ins Arg<Trn_AnyTile, "", [MemRead]>:$src, Arg<Trn_SbufTile, "", [MemWrite]>:$dst);
  let assemblyFormat = "$src `,` $dst attr-dict `:` qualified(type($src)) `,` qualified(type($dst))";
  let hasVerifier = 1;
}

def Trn_MemsetOp : Trn_Op<"memset"> {
  let summary = "GpSimd: fill a tile with a constant";
  let arguments = (ins Arg<Trn_AnyTile, "", [MemWrite]>:$dst, F64Attr:$value);
  let assemblyFormat = "$dst `,` $value attr-dict `:` qualified(type($dst))";
}

def Trn_TransposeOp : Trn_Op<"transpose"> {
  let summary = "TensorE transpose of a [P, [F]] SBUF tile into a [F, [P]] PSUM tile";
  let description = [{
    Done on the systolic array (a matmul with the identity), so F <= 128 (the result's
    partitions) and the result lands in PSUM like any matmul result.
  }];
  let arguments = (ins Arg<Trn_SbufTile, "", [MemRead]>:$src, Arg<Trn_PsumTile, "", [MemWrite]>:$dst);
  let assemblyFormat = "$src `,` $dst attr-dict `:` qualified(type($src)) `,` qualified(type($dst))";
  let hasVerifier = 1;
}

def Trn_TensorTensorOp : Trn_Op<"tensor_tensor"> {
  let summary = "VectorE elementwise: dst = lhs <op> rhs";
  let description = [{
    `op` is one of add, subtract, multiply, divide, maximum, minimum, power, is_equal,
    not_equal, is_ge, is_gt, is_le, is_lt, logical_and, logical_or (comparisons give 1 / 0),
    bitwise_and, bitwise_or, bitwise_xor, logical_shift_left, arith_shift_right (on the
    two's-complement integer values, shift counts outside [0, 31] shifting everything out; the
    result is an integer tile). The three tiles have the same partitions and free shape; the result
    may be cast.
  }];
  let arguments = (ins Arg<Trn_AnyTile, "", [MemRead]>:$lhs, Arg<Trn_AnyTile, "", [MemRead]>:$rhs,
                       Arg<Trn_SbufTile, "", [MemWrite]>:$dst, StrAttr:$op);
  let assemblyFormat = "$lhs `,` $rhs `,` $dst attr-dict `:` qualified(type($lhs)) `,` qualified(type($rhs)) `,` qualified(type($dst))";
  let hasVerifier = 1;
}

def Trn_TensorScalarOp : Trn_Op<"tensor_scalar"> {
  let summary = "VectorE: dst = src <op> scalar (an immediate, or one value per partition)";
  let description = [{
    `op` as tensor_tensor's, less not_equal, logical_and and logical_or. A bitwise op or shift
    writes an integer tile and takes an integral immediate:
    `trn.tensor_scalar %x, %y {imm = -1.0 : f32, op = "bitwise_xor"} : ...` is bitwise not.
  }];
  let arguments = (ins Arg<Trn_AnyTile, "", [MemRead]>:$src, Arg<Trn_SbufTile, "", [MemWrite]>:$dst,
                       StrAttr:$op, OptionalAttr<F32Attr>:$imm, Optional<Trn_SbufTile>:$column);
  let assemblyFormat = "$src `,` $dst (`column` $column^)? attr-dict `:` qualified(type($src)) `,` qualified(type($dst)) (`,` qualified(type($column))^)?";
  let hasVerifier = 1;
}

def Trn_CopyPredicatedOp : Trn_Op<"copy_predicated"> {
  let summary = "VectorE: dst = predicate ? src : dst, element by element";
  let description = [{
    `trn.copy_predicated %src, %predicate, %dst` after nki.isa.tensor_copy_predicated ([TCP] in
    docs/trn_target.md): where the predicate (an integer tile, i1 here: one byte per element)
    is non-zero the element of `src` is copied, elsewhere `dst` keeps its value. The three tiles
    have the same shape; src and dst the same element type. How `select` lowers, exactly
    (no arithmetic on the unselected value, so inf and NaN stay where they were).
  }];
  let arguments = (ins Arg<Trn_AnyTile, "", [MemRead]>:$src, Arg<Trn_AnyTile, "", [MemRead]>:$predicate,
                       Arg<Trn_SbufTile, "", [MemRead, MemWrite]>:$dst);
  let assemblyFormat = "$src `,` $predicate `,` $dst attr-dict `:` qualified(type($src)) `,` qualified(type($predicate)) `,` qualified(type($dst))";
  let hasVerifier = 1;
}

def Trn_TensorReduceOp : Trn_Op<"tensor_reduce"> {
  let summary = "VectorE: reduce the free axes of each partition (add, maximum, minimum)";
  let arguments = (ins Arg<Trn_AnyTile, "", [MemRead]>:$src, Arg<Trn_SbufTile, "", [MemWrite]>:$dst, StrAttr:$op);
  let assemblyFormat = "$src `,` $dst attr-dict `:` qualified(type($src)) `,` qualified(type($dst))";
  let hasVerifier = 1;
}

def Trn_IotaOp : Trn_Op<"iota"> {
  let summary = "GpSimd: dst[p, f] = base + p * partition_step + f * step (row-major free index f)";
  let arguments = (ins Arg<Trn_SbufTile, "", [MemWrite]>:$dst, I64Attr:$base, I64Attr:$partition_step,
                       I64Attr:$step);
  let assemblyFormat = "$dst attr-dict `:` qualified(type($dst))";
}

def Trn_SignalOp : Trn_Op<"signal"> {
  let summary = "increment a semaphore when this engine's earlier instructions are done";
  let description = [{
    Engines run their instruction queues concurrently; `signal` on one engine and `wait` on
    another order them (e.g. the DMA queue signals "tile loaded", TensorE waits for it). Not an
    nki.isa instruction: the Neuron compiler inserts synchronisation below that API
    (docs/trn_target.md §2.5); here it is explicit so the model can schedule engines.
  }];
  let arguments = (ins StrAttr:$engine, I32Attr:$semaphore);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def Trn_WaitOp : Trn_Op<"wait"> {
  let summary = "block this engine's queue until a semaphore reaches a value";
  let arguments = (ins StrAttr:$engine, I32Attr:$semaphore, I32Attr:$value);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

#endif  // TRN_OPS_TD
