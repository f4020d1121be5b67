// GroupLowering: a run of recorded ops -> one MLIR module (linalg on tensors) whose public
// function `@group` reads the group's external buffers and returns its outputs.
//
// Data model. Device storage is concrete at record time, so the lowering tracks *buffers*:
// every tensor an op touches is a view (sizes, strides, offset, dtype) of a storage.
//  - A read of a view nobody in the group wrote is an external input: a function argument of
//    exactly that geometry (`trn.strides`), read in place by the compiled code.
//  - A write records the view's new value (a tensor value plus an affine index map: views such
//    as transpose, slice, expand or unsqueeze cost nothing, they only change the map).
//  - A later read of the same storage reuses that value when the read view is expressible as
//    an affine map of the written view (derived from strides, exact); otherwise the group is
//    cut before the op (deterministic: it depends only on recorded geometry).
//  - Finish(): a written view is an *output* when its storage is referenced outside the
//    group's records (a live tensor, or a later op); every other write is an internal
//    temporary, which the compiled code never stores to device memory. An output that
//    overlaps an input of the group is *staged*: written to a scratch buffer and copied into
//    place after the call, because the compiled code may read the input after writing.
//
// IR. An emitting lowering builds the module with MLIR's builder API through its IrEmitter
// (ir_emitter.h): Pointwise, Reduce, Extern and the ops that need more (ir()) create typed ops,
// each located at the op being lowered, and Finish verifies the module. The op files see values
// as IrValue handles and include no MLIR header. A planning lowering (emit false) builds nothing
// and hands out null values; its decisions are the same.
//
// Op lowerings (one file per family under ops/, registered in lowering_registry.h) use the
// "API for op lowerings" below. Status codes they return: kAborted (IsCut) = cut the group
// before this op and retry it in a new group; kUnimplemented = this op, with these arguments,
// has no lowering (it runs op by op). After an error the GroupLowering must be discarded.
//
// Thread-safety: a GroupLowering is used by one thread. It holds the records' tensors only by
// reference: the records must outlive it.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mlir_lowering/ir_builder.h"
#include "mlir_lowering/ir_emitter.h"
#include "mlir_lowering/ir_module.h"
#include "mlir_lowering/ir_value.h"
#include "mlir_lowering/target.h"
#include "base/op_error.h"
#include "runtime/op_record.h"

namespace trn::mlir_lowering {

// Whether a group's write to `storage` is read after the group (a user's tensor, autograd, a
// later op): then the write is an output, else an internal temporary. The stream decides it for
// each flush from the references at the flush (scheduler/segment_refs.h), so the answer, and the
// group key, never depends on when the group is planned or how far the executor has got.
using LiveAfter = std::function<bool(const c10::StorageImpl* storage)>;

struct TensorGeometry {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  c10::ScalarType dtype = c10::kFloat;

  static TensorGeometry Of(const at::Tensor& t);
  bool operator==(const TensorGeometry& o) const {
    return sizes == o.sizes && strides == o.strides && offset == o.offset && dtype == o.dtype;
  }
  // Elements [begin, end) of the storage the view can touch (in units of its own dtype).
  int64_t Begin() const { return offset; }
  int64_t End() const;
  bool Overlaps(const TensorGeometry& o) const;
};

// A logical tensor of `sizes` whose element at index d is base[map(d)].
// Its base index j is map[j] (an AffineTerm: ir_emitter.h) of the view's index.
struct View {
  IrValue base;                     // a tensor<base_shape x dtype> (null when planning)
  std::vector<int64_t> base_shape;
  c10::ScalarType dtype = c10::kFloat;
  std::vector<int64_t> sizes;
  std::vector<AffineTerm> map;      // one term per base dimension

  static View Whole(IrValue value, std::vector<int64_t> shape, c10::ScalarType dtype);
  bool IsWhole() const;  // map is the identity and sizes == base_shape
  // Whether the view is its whole base with the dimensions reordered (a transpose, permute):
  // then `perm[d]` is the base dimension that view dimension d walks, as in Tensor::permute.
  bool IsPermutation(std::vector<int64_t>* perm) const;
  // Whether element d depends on d[0] only (a column expanded along the other dimensions).
  bool VariesAlongFirstOnly() const;
  int64_t rank() const { return static_cast<int64_t>(sizes.size()); }
};

// An input of a pointwise op: a tensor view, a constant, or a runtime scalar (an f64 value
// loaded from the group's parameter buffer: see GroupLowering::ReadOperand).
struct Operand {
  std::optional<View> view;
  c10::Scalar constant;
  c10::ScalarType dtype = c10::kFloat;
  bool is_param = false;  // a runtime scalar (dtype kDouble): `param` (null when planning)
  IrValue param;

  static Operand Of(View v) {
    Operand o;
    o.dtype = v.dtype;
    o.view = std::move(v);
    return o;
  }
  static Operand Param(IrValue value) {
    Operand o;
    o.dtype = c10::kDouble;
    o.is_param = true;
    o.param = value;
    return o;
  }
  static Operand Const(c10::Scalar s, c10::ScalarType t) {
    Operand o;
    o.constant = s;
    o.dtype = t;
    return o;
  }
};

// Builds a pointwise body: gets one element per operand (in the operand's dtype), returns the
// result element (any dtype: it is cast to the output's).
using BodyFn = std::function<Scalar(ScalarBuilder&, const std::vector<Scalar>&)>;
// Reduction step: acc (accumulator dtype) and x (input dtype) -> new acc.
using CombineFn = std::function<Scalar(ScalarBuilder&, const Scalar& acc, const Scalar& x)>;
// Reduction step of ReduceMulti: the accumulators (in order) and x -> the new accumulators.
using MultiCombineFn =
    std::function<std::vector<Scalar>(ScalarBuilder&, const std::vector<Scalar>& accs, const Scalar& x)>;

absl::Status CutHere(absl::string_view why);
inline bool IsCut(const absl::Status& s) { return s.code() == absl::StatusCode::kAborted; }

struct GroupOutput {
  at::Tensor tensor;    // the device view the compiled code writes
  bool staged = false;  // through a scratch buffer (overlaps an input)
};

// A check the compiled code evaluates (a device-side assert): after the call, a non-zero count
// fails the run with an IndexError naming the op.
struct GroupCheck {
  int64_t op_index = 0;  // the op (in the group) the check belongs to
  std::string message;
  base::ErrorKind kind = base::ErrorKind::kIndex;  // the exception the failure raises
};

struct LoweredGroup {
  std::shared_ptr<IrModule> module;  // null when planned only (GroupLowering emit false)
  std::string func = "group";
  // Runtime scalars (f64, 1-D, on the host), the first argument after %ctx when defined.
  at::Tensor params;
  // (op index, argument index) of each runtime scalar: the key records their type, not value.
  std::vector<std::pair<int64_t, int64_t>> param_args;
  std::vector<at::Tensor> inputs;  // device views, in argument order (after %ctx and params)
  std::vector<GroupOutput> outputs;
  // One rank-0 int64 result per check, returned after the outputs.
  std::vector<GroupCheck> checks;
  int64_t externs = 0;             // runtime calls in the group
  int64_t bytes_written = 0;       // bytes the compiled code stores into device buffers
  int64_t temporaries = 0;         // written views kept out of device memory
  // (op index, argument index) of every argument a lowering read through GroupLowering::Arg that
  // is not a runtime scalar, sorted: the non-tensor values the group's code (and its cuts) may
  // depend on. A cached plan guards these (scheduler/plan_cache.h).
  std::vector<std::pair<int64_t, int64_t>> value_args;
  // Per buffer (in order of first appearance in the records): whether it was live at Finish,
  // i.e. its writes are outputs. An emitting replay of the same records takes these instead of
  // reading use counts (GroupLowering::Finish), so plan and IR agree.
  std::vector<bool> live_buffers;
};

class GroupLowering {
 public:
  // Bounds that keep an entry point within runtime::kMaxCompiledArgs: ctx + params + inputs
  // + results (written views and check counters) = 1 + 1 + 140 + 114 = 256. Sized for an
  // optimizer step: AdamW over P parameters reads 4P tensors and writes 3P, one foreach op over
  // all P after the other, so a parameter's chain (lerp_, mul_, addcmul_, sqrt, div_, addcdiv_)
  // fuses into one loop only when the group holds all of it. With 62 inputs and 32 writes, 32
  // parameters gave groups of one op kind each: bench AdamW step over 32 x 256x256, compile mode
  // 5.15 -> 4.41 ms (eager 5.2-5.4); bench/steady.py mlp 11.6-11.9 -> 9.9 ms (loop of 300 steps).
  static constexpr int64_t kMaxInputs = 140;
  static constexpr int64_t kMaxWrites = 114;

  // Plan or plan + emit. A planning lowering makes every decision an emitting one makes (cuts,
  // refusals, buffers, views, inputs, outputs, temporaries, staging, runtime scalars, checks)
  // and writes no IR: the flush plans, and the IR is emitted only when a group is built
  // (replaying its records into an emitting lowering, on the compile thread).
  explicit GroupLowering(const Target& target, bool emit = true);
  ~GroupLowering();
  GroupLowering(const GroupLowering&) = delete;
  GroupLowering& operator=(const GroupLowering&) = delete;

  // The arguments of op `op_index` read through Arg that are not runtime scalars (sorted): what
  // the lowering's decisions about that op may depend on besides tensor geometry (LoweredGroup::
  // value_args; also valid after Add failed, for the op that failed).
  std::vector<int64_t> ValueArgsOf(int64_t op_index) const;

  // The target the group is lowered for (some ops take another form on a trn target).
  const Target& target() const { return target_; }

  // Lowers `record` as the next op of the group (its index is size() before the call).
  absl::Status Add(const runtime::OpRecord& record);
  int64_t size() const { return static_cast<int64_t>(ops_.size()); }
  // Whether the group has used half of kMaxInputs or of kMaxWrites: the grouper then ends it at
  // the next content-defined anchor rather than let the limit cut it at an arbitrary op.
  bool HalfFull() const {
    return 2 * static_cast<int64_t>(input_tensors_.size()) >= kMaxInputs || 2 * writes_ >= kMaxWrites;
  }
  // Decides outputs and temporaries (see the file comment) and returns the module (emitting) or
  // the plan alone. `live_after`: see LiveAfter; null: a buffer is live when its use count
  // exceeds the group's own tensors of it (no other queued work). `live`: the liveness of each
  // buffer decided by an earlier plan of the same records (LoweredGroup::live_buffers), used
  // instead; its size must match.
  absl::StatusOr<LoweredGroup> Finish(const LiveAfter* live_after = nullptr, const std::vector<bool>* live = nullptr);

  // ---- API for op lowerings ----
  const runtime::OpRecord& current() const { return *ops_.back(); }
  int64_t current_index() const { return size() - 1; }
  // The current op's argument by schema name (throws nothing: kUnimplemented if absent).
  absl::StatusOr<c10::IValue> Arg(absl::string_view name) const;
  // Index of the current op's argument `name`, or -1.
  int64_t ArgIndex(absl::string_view name) const;
  // The device tensor receiving return `ret`: the written argument (in-place, out=) or the
  // fresh output. Undefined for a masked-out optional output.
  at::Tensor Destination(size_t ret) const;
  absl::StatusOr<View> Read(const at::Tensor& t);
  // A device tensor -> view; a 0-dim host tensor or a Scalar -> constant; else kUnimplemented.
  // With `arg_index` (the current op's argument it came from), a float or integer scalar (not a
  // bool; integers below 2^53) becomes a *runtime* scalar instead: its value is passed at each run, so a value that changes every
  // step (Adam's bias corrections, a learning-rate schedule) does not change the group key.
  // Lowerings that decide code by a scalar's value read it with ScalarArg (op_helpers.h),
  // which keeps it a compile-time constant (and in the key).
  absl::StatusOr<Operand> ReadOperand(const c10::IValue& v, int64_t arg_index = -1);
  // `value` becomes the content of `dst` (cast to dst's dtype if needed).
  absl::Status Write(const at::Tensor& dst, const View& value);
  // Writes return `ret` of the current op.
  absl::Status WriteResult(size_t ret, const View& value) { return Write(Destination(ret), value); }

  // out[i] = body(ins[i] broadcast to `shape`), as one linalg.generic.
  View Pointwise(const std::vector<Operand>& ins, const std::vector<int64_t>& shape,
                 c10::ScalarType out_dtype, const BodyFn& body);
  // Folds `dims` of `in` (sorted, distinct, non-negative) into an accumulator of dtype `acc`
  // starting at `init`. keepdim keeps them as size-1 dims (a view: no copy).
  View Reduce(const View& in, const std::vector<int64_t>& dims, bool keepdim, c10::ScalarType acc,
              const c10::Scalar& init, const CombineFn& combine);
  // As Reduce, with several accumulators folded together by one linalg.generic with one output
  // per entry of `accs` (dtype, init), e.g. a running max and its index. `combine` may use
  // ScalarBuilder::LoopIndex (loop d = dim d of `in`). Returns one result per accumulator.
  std::vector<View> ReduceMulti(const View& in, const std::vector<int64_t>& dims, bool keepdim,
                                const std::vector<std::pair<c10::ScalarType, c10::Scalar>>& accs,
                                const MultiCombineFn& combine);
  // A tensor value holding exactly `v` (a copy only when v is not whole).
  IrValue Materialize(const View& v);
  // Makes the run fail (IndexError "<message>", or another `kind`, blamed on the current op)
  // when any element of `bad` (a bool view) is true. Compiled code cannot raise; the runtime
  // checks the count after the call, so the error surfaces like the eager kernel's.
  absl::Status Check(const View& bad, std::string message, base::ErrorKind kind = base::ErrorKind::kIndex);
  // Lowers the current op as a call into the runtime (ATen's CPU kernel on the buffers).
  // Only for ops that write nothing but their returns (functional or out=), and the scatters into
  // self (index_add_, scatter_add_, _index_put_impl_). The tensors of an optional-tensor list
  // (advanced indexing's indices) are inputs too, in list order. `pass`, when given, maps the
  // view of each input read from argument `arg` (an index list's tensors: its index) to the view
  // passed (e.g. broadcast to the other indices' shape, or a contiguous copy).
  absl::Status Extern(const std::function<View(int64_t arg, const View&)>& pass = nullptr);

  // Whether this lowering builds IR. Lowerings that build ops themselves (ir()) skip them when
  // not: decisions must never depend on it.
  bool emitting() const { return ir_ != nullptr; }
  // The module's builder (ir_emitter.h); only while emitting().
  IrEmitter& ir() { return *ir_; }

 private:
  struct Write_ {
    TensorGeometry geo;
    View value;
    at::Tensor tensor;
    int64_t op = -1;  // the op that wrote it (last)
    int64_t first_op = -1;  // the first of a chain of in-place pointwise writes of this view
    // Every write of this view so far was an in-place pointwise op reading the view's previous
    // value (the first: the group's input): the output may skip staging (NeedsStaging).
    bool in_place_chain = false;
    absl::flat_hash_set<int64_t> value_readers;  // ops that read this value (exact view)
  };
  struct Input {
    TensorGeometry geo;
    int64_t index = 0;  // among the group's inputs (argument order)
    IrValue value;
    absl::flat_hash_set<int64_t> readers;  // the ops that read it
  };
  struct Buffer {
    int id = 0;
    std::vector<Write_> writes;
    std::vector<Input> inputs;
    absl::flat_hash_set<const c10::TensorImpl*> impls;  // distinct snapshots in the records
    c10::StorageImpl* storage = nullptr;
  };

  Buffer& BufferOf(const at::Tensor& t);
  // Whether write `w` of `b`, which overlaps an input of the group, must go through a scratch
  // buffer (see Finish).
  bool NeedsStaging(const Buffer& b, const Write_& w) const;
  // For an unstaged write of `b` over its input's very view (an in-place chain, NeedsStaging):
  // the function argument index of that input, which the runtime binds to the same memory;
  // else -1. Emitted as `trn.tied_input` so the compiled loops know the two are one buffer.
  int64_t TiedArgument(const Buffer& b, const Write_& w) const;
  void NoteTensors(const runtime::OpRecord& record);
  // (op, argument) read through Arg and not runtime scalars, of op `only_op` (-1: every op).
  std::vector<std::pair<int64_t, int64_t>> ValueArgs(int64_t only_op) const;
  // The IR of the runtime call Extern planned: `reads` (inputs), `dests` (results), call `k`.
  std::vector<IrValue> EmitExtern(const std::vector<View>& reads, const std::vector<at::Tensor>& dests, int64_t k);

  const Target& target_;
  std::unique_ptr<IrEmitter> ir_;  // null when planning
  std::vector<const runtime::OpRecord*> ops_;
  absl::flat_hash_map<const c10::StorageImpl*, int> buffer_index_;
  std::vector<Buffer> buffers_;  // by first appearance: deterministic order
  std::vector<at::Tensor> input_tensors_;
  std::vector<TensorGeometry> input_geos_;
  std::vector<double> params_;
  std::vector<std::pair<int64_t, int64_t>> param_args_;
  int64_t externs_ = 0;
  int64_t writes_ = 0;
  mutable std::vector<std::pair<int64_t, int64_t>> touched_;  // (op, argument) read through Arg
  std::vector<std::pair<IrValue, GroupCheck>> checks_;  // (count, check)
};

}  // namespace trn::mlir_lowering
