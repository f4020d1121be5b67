// The instant tier: a group's first tier, which needs no code generation. Until its compiled code
// is ready, a group runs through an InstantProgram: maximal runs of consecutive elementwise
// float32 ops (add/sub/mul/div with tensor, 0-d or Scalar operands and alpha; neg, relu, sqrt,
// rsqrt, reciprocal, exp, log, tanh, sigmoid, gelu, abs, pow by a scalar; tanh_backward,
// sigmoid_backward, threshold_backward (relu's) and gelu_backward; the optimizers' in-place
// mul_/add_/addcmul_/addcdiv_/lerp_/copy_, fill_ and zero_) become *chains*, run tile by tile (kTileElems
// elements, kept in L1) through the precompiled kernels of instant_kernels.h, as numexpr does;
// every other op runs with ATen exactly as op by op. Inside a chain a value is stored to device
// memory only when something outside the chain may read it: the storage is one the group writes
// for later (an output of the compiled group: live after it) or a later op of the group touches
// it, and this is the chain's last write to it. Other values live in scratch tiles, or are not
// computed at all when nothing reads them.
//
// What a chain accepts (anything else ends the chain and runs with ATen): float32 contiguous
// device tensors of one shape (the op's result's), plus 0-d tensors (any device; float, double,
// integer or bool) and Scalar arguments broadcast as float, as ATen's CPU kernels compute them.
// Every access of a chain to one storage is the same view (same offset), and a 0-d tensor's
// storage is not otherwise used in its chain: then running op after op per tile gives what op
// after op over the whole tensors gives.
//
// A program depends only on what the group key fixes (ops, non-float arguments, geometry, which
// buffers alias, which are outputs), never on scalar values or data pointers, which it reads from
// each run's records: one program per key serves every unit of that key (kept on its CodeSlot).
//
// Thread-safety: Build is a pure function; a built program is immutable and RunChain may run on
// any thread (scratch tiles are per thread).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/instant_kernels.h"
#include "runtime/op_record.h"

namespace trn::runtime {

class InstantProgram {
 public:
  static constexpr int64_t kTileElems = 1024;

  // A step of the program: one op run with ATen (chain < 0), or a chain of ops [begin, end).
  struct Step {
    int32_t begin = 0;
    int32_t end = 0;
    int32_t chain = -1;
  };

  // The program for a group's records `ops`; `outputs` are the views the group must leave
  // written (its compiled unit's outputs: storages read after the group).
  static std::shared_ptr<const InstantProgram> Build(const std::vector<OpRecord>& ops,
                                                     const std::vector<at::Tensor>& outputs);

  const std::vector<Step>& steps() const { return steps_; }
  int64_t chained_ops() const { return chained_ops_; }
  int64_t chains() const { return static_cast<int64_t>(chains_.size()); }

  // Runs chain `chain` on this run's records `ops` (the same key's records the program was built
  // from). False when a scalar operand is not a real number this time: nothing was written, the
  // caller runs the chain's ops with ATen.
  bool RunChain(int32_t chain, const std::vector<OpRecord>& ops) const;

 private:
  // Where a chain op's input comes from, or where its result goes.
  struct Src {
    enum Kind : uint8_t { kMem, kScratch, kScalar, kZeroDim, kNone, kZero } kind = kNone;  // kZero: 0.0
    int16_t arg = -1;     // kMem / kScalar / kZeroDim: argument index in the op's record (-1: outputs[0])
    int16_t scratch = -1;  // kScratch: scratch tile
  };
  struct ChainOp {
    instant::Kernel kernel = instant::Kernel::kCopy;
    int32_t op = 0;  // index in the records
    Src in[3];
    int16_t param_arg = -1;  // the scalar parameter's argument (-1: 1.0)
    float param_sign = 1;    // sub: -alpha
    Src out;                 // kMem (stored to the op's result), kScratch, or kNone (dead)
  };
  struct Chain {
    int64_t numel = 0;
    int32_t scratch = 0;  // scratch tiles
    std::vector<ChainOp> ops;
  };

  std::vector<Step> steps_;
  std::vector<Chain> chains_;
  int64_t chained_ops_ = 0;
};

}  // namespace trn::runtime
