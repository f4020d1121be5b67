#include "runtime/compiled_run.h"

#include <cstring>

#include "runtime/device_model.h"
#include "runtime/neuroncore/instruction_stream.h"
#include "runtime/neuroncore/model.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <array>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "runtime/host_view.h"
#include "base/op_error.h"
#include "runtime/op_runner.h"
#include "runtime/schema_util.h"

namespace trn::runtime {
namespace {

struct ExternContext {
  const std::vector<OpRecord>* ops = nullptr;
  absl::Status status;
  int64_t failed_op = -1;
};

using Words = absl::InlinedVector<int64_t, 160>;

// StridedMemRefType<T, rank> as int64 words appended to `words`: allocated, aligned, offset,
// sizes..., strides...; returns where the descriptor starts.
size_t Describe(const at::Tensor& t, bool device, Words* words) {
  const size_t at = words->size();
  const int64_t base = device ? reinterpret_cast<int64_t>(t.storage().data())
                              : reinterpret_cast<int64_t>(t.data_ptr());
  words->push_back(base);
  words->push_back(base);
  words->push_back(device ? t.storage_offset() : 0);
  for (int64_t s : t.sizes()) {
    words->push_back(s);
  }
  for (int64_t s : t.strides()) {
    words->push_back(s);
  }
  return at;
}

// A host tensor over the buffer `desc` describes, with `like`'s rank and dtype.
at::Tensor FromDescriptor(const void* desc, const at::Tensor& like) {
  const int64_t* d = static_cast<const int64_t*>(desc);
  const int64_t rank = like.dim();
  char* aligned = reinterpret_cast<char*>(d[1]);
  const int64_t offset = d[2];
  std::vector<int64_t> sizes(d + 3, d + 3 + rank);
  std::vector<int64_t> strides(d + 3 + rank, d + 3 + 2 * rank);
  return at::from_blob(aligned + offset * static_cast<int64_t>(like.itemsize()), sizes, strides,
                       at::TensorOptions().dtype(like.scalar_type()));
}

bool IsDevice(const c10::IValue& v) { return v.isTensor() && IsDeviceTensor(v.toTensor()); }

void RunExtern(int64_t ctx_bits, int64_t op_index, void* const* descs, int n) {
  auto* ctx = reinterpret_cast<ExternContext*>(ctx_bits);
  if (!ctx->status.ok()) {
    return;  // an earlier extern failed: the rest of the run is garbage anyway
  }
  const OpRecord& r = (*ctx->ops)[op_index];
  const c10::FunctionSchema& schema = r.op.schema();
  std::vector<c10::IValue> args = r.args;
  int k = 0;
  for (size_t j = 0; j < args.size() && k <= n; ++j) {
    if (schema.arguments()[j].is_out()) continue;
    if (IsDevice(args[j])) {
      args[j] = k < n ? FromDescriptor(descs[k], args[j].toTensor()) : at::Tensor();
      ++k;
    } else if (args[j].isOptionalTensorList()) {
      // Advanced indexing's indices: one buffer per index tensor, None entries kept as positions
      // (GroupLowering::Extern reads them in this order).
      c10::List<std::optional<at::Tensor>> list;
      for (const std::optional<at::Tensor> t : args[j].toOptionalTensorList()) {
        if (t.has_value() && t->defined() && IsDeviceTensor(*t)) {
          list.push_back(k < n ? std::optional<at::Tensor>(FromDescriptor(descs[k], *t)) : std::nullopt);
          ++k;
        } else {
          list.push_back(t);
        }
      }
      args[j] = list;
    }
  }
  std::vector<at::Tensor> fresh(schema.returns().size());
  for (size_t i = 0; i < schema.returns().size(); ++i) {
    const int j = AliasedArg(schema, i);
    const bool out_arg = j >= 0 && WritesArg(schema, j);
    at::Tensor dest = out_arg ? r.args[j].toTensor()
                              : (i < r.outputs.size() && r.outputs[i].isTensor() ? r.outputs[i].toTensor() : at::Tensor());
    if (!dest.defined()) {
      continue;
    }
    if (k >= n) {
      ++k;
      break;
    }
    at::Tensor buffer = FromDescriptor(descs[k++], dest);
    if (out_arg && !schema.arguments()[j].is_out()) {
      // In place (index_add_, scatter_add_, _index_put_impl_: GroupLowering::Extern): the
      // result buffer starts from the value the call read for self.
      try {
        c10::impl::ExcludeDispatchKeyGuard no_autograd(c10::autograd_dispatch_keyset_with_ADInplaceOrView);
        const at::Tensor& self = args[j].toTensor();
        if (self.data_ptr() != buffer.data_ptr()) buffer.copy_(self);
      } catch (...) {
        ctx->status = StatusFromCurrentException();
        ctx->failed_op = op_index;
        return;
      }
    }
    if (out_arg) {
      args[j] = buffer;
    } else {
      fresh[i] = buffer;
    }
  }
  if (k != n) {
    ctx->status = absl::InternalError(absl::StrCat("runtime call of ", OpName(r.op), " got ", n,
                                                   " buffers for ", k, " operands"));
    ctx->failed_op = op_index;
    return;
  }
  std::vector<c10::IValue> results;
  absl::Status status = RunOnHost(r.op, args, &results);
  if (status.ok()) {
    try {
      c10::impl::ExcludeDispatchKeyGuard no_autograd(c10::autograd_dispatch_keyset_with_ADInplaceOrView);
      for (size_t i = 0; i < fresh.size() && i < results.size(); ++i) {
        if (fresh[i].defined() && results[i].isTensor() && results[i].toTensor().defined()) {
          fresh[i].copy_(results[i].toTensor());
        }
      }
    } catch (...) {
      status = StatusFromCurrentException();
    }
  }
  if (!status.ok()) {
    ctx->status = status;
    ctx->failed_op = op_index;
  }
}

template <size_t>
using VoidPtr = void*;

template <typename Seq>
struct ExternThunk;
template <size_t... I>
struct ExternThunk<std::index_sequence<I...>> {
  static void Run(int64_t ctx, int64_t op, VoidPtr<I>... d) {
    void* descs[] = {d...};
    RunExtern(ctx, op, descs, static_cast<int>(sizeof...(I)));
  }
};

template <size_t... N>
std::array<void*, sizeof...(N)> MakeExternTable(std::index_sequence<N...>) {
  return {reinterpret_cast<void*>(&ExternThunk<std::make_index_sequence<N + 1>>::Run)...};
}

// Calls `fn` with the n pointer-sized arguments `a[0..n)`.
using Caller = void (*)(void*, void* const*);
template <typename Seq>
struct Call;
template <size_t... I>
struct Call<std::index_sequence<I...>> {
  static void Run(void* fn, void* const* a) { reinterpret_cast<void (*)(VoidPtr<I>...)>(fn)(a[I]...); }
};
template <size_t... N>
constexpr std::array<Caller, sizeof...(N)> MakeCallers(std::index_sequence<N...>) {
  return {&Call<std::make_index_sequence<N>>::Run...};
}

}  // namespace

// A trn group: binding i is the entry point's argument i (ctx, inputs, outputs); the runtime
// scalars (f64 on the host) are passed as f32, the NeuronCore having no f64; staged outputs go
// through a scratch buffer, as on the host; the checks' counts (int64 results after the
// outputs) are read after the run, as on the host.
static absl::Status RunOnDevice(const neuroncore::InstructionStream& stream, const CompiledUnit& unit,
                                const std::vector<OpRecord>& ops, int64_t* failed_op) {
  DeviceModel* device = DeviceModel::Get();
  if (device == nullptr) return absl::InternalError("a trn group, but NEURON_TARGET is host");
  try {
    std::vector<neuroncore::HostBinding> bindings;
    bindings.push_back({nullptr, 0});  // ctx
    std::vector<float> params(unit.params.begin(), unit.params.end());
    if (!params.empty()) {
      bindings.push_back({params.data(), static_cast<int64_t>(params.size() * sizeof(float))});
    }
    for (const at::Tensor& t : unit.inputs) {
      bindings.push_back({HostAlias(t).data_ptr(), ViewBytes(t)});
    }
    std::vector<at::Tensor> scratch(unit.outputs.size());
    for (size_t i = 0; i < unit.outputs.size(); ++i) {
      const OutputBuffer& out = unit.outputs[i];
      if (out.staged) {
        scratch[i] = at::empty(out.tensor.sizes(), at::TensorOptions().dtype(out.tensor.scalar_type()));
        bindings.push_back({scratch[i].data_ptr(), ViewBytes(scratch[i])});
      } else {
        bindings.push_back({HostAlias(out.tensor).data_ptr(), ViewBytes(out.tensor)});
      }
    }
    std::vector<int64_t> counts(unit.num_checks(), 0);
    for (int64_t& count : counts) bindings.push_back({&count, static_cast<int64_t>(sizeof(int64_t))});
    absl::Status status = device->Run(stream, bindings, ops);
    if (!status.ok()) {
      // Blame the recorded op whose instruction failed, not the group's first op.
      if (std::optional<uint32_t> op = neuroncore::FailedSourceOp(status); op.has_value() && *op < ops.size()) {
        *failed_op = static_cast<int64_t>(*op);
      }
      // A gather's index outside its table (dma_gather) is the IndexError ATen's kernel raises.
      if (status.code() == absl::StatusCode::kOutOfRange) {
        return base::MakeOpError(base::ErrorKind::kIndex, absl::StrCat("index out of range in self (NeuronCore model: ",
                                                                       status.message(), ")"));
      }
      return absl::InternalError(absl::StrCat("NeuronCore model: ", status.message()));
    }
    for (size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] != 0) {
        *failed_op = (*unit.checks)[i].op_index;
        return base::MakeOpError((*unit.checks)[i].kind, (*unit.checks)[i].message);
      }
    }
    for (size_t i = 0; i < unit.outputs.size(); ++i) {
      if (unit.outputs[i].staged) HostAlias(unit.outputs[i].tensor).copy_(scratch[i]);
    }
  } catch (...) {
    return StatusFromCurrentException();
  }
  return absl::OkStatus();
}

// A staged output's scratch (contiguous, same dtype) into its place: a memcpy when the place
// is contiguous too, else ATen's strided copy.
static void CopyFromScratch(const at::Tensor& out, const at::Tensor& scratch) {
  if (out.is_contiguous() && out.scalar_type() == scratch.scalar_type() && out.numel() == scratch.numel() &&
      out.storage().mutable_data() != nullptr) {
    char* dst = static_cast<char*>(out.storage().mutable_data()) + out.storage_offset() * out.element_size();
    std::memcpy(dst, scratch.const_data_ptr(), static_cast<size_t>(scratch.nbytes()));
    return;
  }
  HostAlias(out).copy_(scratch);
}

void* ExternEntry(int tensors) {
  static const auto table = MakeExternTable(std::make_index_sequence<kMaxExternOperands>{});
  if (tensors < 1 || tensors > kMaxExternOperands) {
    return nullptr;
  }
  return table[tensors - 1];
}

// Host native code: the entry point called with one descriptor per buffer.
static absl::Status RunOnHost(void* entry, const CompiledUnit& unit, const std::vector<OpRecord>& ops,
                              int64_t* failed_op) {
  static constexpr auto kCallers = MakeCallers(std::make_index_sequence<kMaxCompiledArgs + 1>{});
  const size_t nargs = 1 + unit.num_in_buffers() + unit.outputs.size() + unit.num_checks();
  try {
    c10::impl::ExcludeDispatchKeyGuard no_autograd(c10::autograd_dispatch_keyset_with_ADInplaceOrView);
    ExternContext ctx;
    ctx.ops = &ops;
    // Every descriptor in one buffer of words, on the stack for a usual group (no allocation per
    // buffer): the offsets are collected first and turned into pointers once it no longer grows.
    Words words;
    absl::InlinedVector<size_t, 32> starts;
    absl::InlinedVector<at::Tensor, 8> scratch(unit.outputs.size());
    if (!unit.params.empty()) {  // a rank-1 f64 descriptor of the runtime scalars
      const int64_t base = reinterpret_cast<int64_t>(unit.params.data());
      starts.push_back(words.size());
      words.insert(words.end(), {base, base, 0, static_cast<int64_t>(unit.params.size()), 1});
    }
    for (const at::Tensor& t : unit.inputs) {
      starts.push_back(Describe(t, /*device=*/true, &words));
    }
    for (size_t i = 0; i < unit.outputs.size(); ++i) {
      const OutputBuffer& out = unit.outputs[i];
      if (out.staged) {
        scratch[i] = at::empty(out.tensor.sizes(), at::TensorOptions().dtype(out.tensor.scalar_type()));
        starts.push_back(Describe(scratch[i], /*device=*/false, &words));
      } else {
        starts.push_back(Describe(out.tensor, /*device=*/true, &words));
      }
    }
    absl::InlinedVector<int64_t, 4> counts(unit.num_checks(), 0);
    for (int64_t& count : counts) {
      const int64_t base = reinterpret_cast<int64_t>(&count);
      starts.push_back(words.size());
      words.insert(words.end(), {base, base, 0});  // rank-0 int64 descriptor
    }
    absl::InlinedVector<void*, 32> argv;
    argv.reserve(nargs);
    argv.push_back(reinterpret_cast<void*>(&ctx));
    for (size_t start : starts) {
      argv.push_back(words.data() + start);
    }
    kCallers[nargs](entry, argv.data());
    if (!ctx.status.ok()) {
      *failed_op = ctx.failed_op;
      return ctx.status;
    }
    for (size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] != 0) {
        *failed_op = (*unit.checks)[i].op_index;
        return base::MakeOpError((*unit.checks)[i].kind, (*unit.checks)[i].message);
      }
    }
    for (size_t i = 0; i < unit.outputs.size(); ++i) {
      if (unit.outputs[i].staged) {
        CopyFromScratch(unit.outputs[i].tensor, scratch[i]);
      }
    }
  } catch (...) {
    return StatusFromCurrentException();
  }
  return absl::OkStatus();
}

namespace {

class HostCode final : public CompiledCode {
 public:
  HostCode(void* entry, std::shared_ptr<const void> keep_alive, CodeInfo info)
      : CompiledCode(info), entry_(entry), keep_alive_(std::move(keep_alive)) {}
  bool on_device() const override { return false; }
  absl::Status Run(const CompiledUnit& unit, const std::vector<OpRecord>& ops, int64_t* failed_op) const override {
    if (entry_ == nullptr) return absl::InternalError("host code without an entry point");
    return RunOnHost(entry_, unit, ops, failed_op);
  }

 private:
  void* const entry_;
  const std::shared_ptr<const void> keep_alive_;  // owns the code `entry_` points into
};

class NeuronCoreCode final : public CompiledCode {
 public:
  NeuronCoreCode(std::shared_ptr<const neuroncore::InstructionStream> stream, CodeInfo info)
      : CompiledCode(info), stream_(std::move(stream)) {}
  bool on_device() const override { return true; }
  absl::Status Run(const CompiledUnit& unit, const std::vector<OpRecord>& ops, int64_t* failed_op) const override {
    return RunOnDevice(*stream_, unit, ops, failed_op);
  }

 private:
  const std::shared_ptr<const neuroncore::InstructionStream> stream_;
};

}  // namespace

std::shared_ptr<const CompiledCode> MakeHostCode(void* entry, std::shared_ptr<const void> keep_alive, CodeInfo info) {
  return std::make_shared<HostCode>(entry, std::move(keep_alive), info);
}

std::shared_ptr<const CompiledCode> MakeNeuronCoreCode(std::shared_ptr<const neuroncore::InstructionStream> stream,
                                                       CodeInfo info) {
  return std::make_shared<NeuronCoreCode>(std::move(stream), info);
}

absl::Status RunCompiledUnit(const CompiledUnit& unit, const std::vector<OpRecord>& ops, int64_t* failed_op) {
  const CodeInfo& code = unit.code->info();
  const size_t nargs = 1 + unit.num_in_buffers() + unit.outputs.size() + unit.num_checks();
  if (static_cast<int>(unit.num_in_buffers()) != code.num_inputs ||
      static_cast<int>(unit.outputs.size() + unit.num_checks()) != code.num_outputs || nargs > kMaxCompiledArgs + 0u) {
    return absl::InternalError(absl::StrCat("compiled group called with ", unit.num_in_buffers(), " inputs and ",
                                            unit.outputs.size() + unit.num_checks(), " outputs; it takes ",
                                            code.num_inputs, " and ", code.num_outputs));
  }
  return unit.code->Run(unit, ops, failed_op);
}

}  // namespace trn::runtime
