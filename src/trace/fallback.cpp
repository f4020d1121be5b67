// The recording fallback: every device op without a dedicated kernel lands here. It infers the
// outputs with the op's Meta kernel, allocates them on the device, wires views to their base's
// storage, and appends an OpRecord to the stream. Nothing executes here, except for ops whose
// outputs cannot be known without the data ("host fallbacks"): those sync the stream and run on
// the host immediately, counted per op and reason.
#include "trace/fallback.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <optional>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "runtime/host_view.h"
#include "runtime/op_error.h"
#include "runtime/op_runner.h"
#include "trace/device_state.h"
#include "trace/snapshot.h"

namespace trn::trace {
namespace {

using runtime::ForEachTensor;
using runtime::IsDeviceTensor;
using runtime::MapTensors;

// Ops whose output sizes depend on tensor values: a Meta kernel cannot size them.
bool IsDataDependent(const std::string& name) {
  static const absl::flat_hash_set<std::string> kOps = {
      "aten::nonzero",      "aten::nonzero_static", "aten::masked_select", "aten::_unique",
      "aten::_unique2",     "aten::unique_dim",     "aten::unique_consecutive", "aten::unique_dim_consecutive",
      "aten::repeat_interleave", "aten::bincount",  "aten::histc",   "aten::histogram",
      "aten::_histogramdd_bin_edges", "aten::_histogramdd_from_bin_cts", "aten::_histogramdd_from_bin_tensors",
      "aten::argwhere",     "aten::_assert_async",  "aten::_ctc_loss", "aten::_ctc_loss_backward",
      "aten::segment_reduce", "aten::_segment_reduce_backward"};
  return kOps.contains(name);
}

// Ops that return a host value: the stream must run up to here (a sync point, not a fallback).
bool IsHostRead(const std::string& name) {
  return name == "aten::_local_scalar_dense" || name == "aten::equal" || name == "aten::is_nonzero" ||
         name == "aten::allclose" || name == "aten::is_same_size";
}

// aten::convolution_overrideable is what ATen hands "other" backends; trace it as the op that
// has Meta and CPU kernels.
c10::OperatorHandle Canonical(const c10::OperatorHandle& op, std::vector<c10::IValue>* args) {
  static const c10::OperatorHandle conv = c10::Dispatcher::singleton().findSchemaOrThrow("aten::convolution", "");
  static const c10::OperatorHandle conv_bw =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::convolution_backward", "");
  const std::string& name = op.operator_name().name;
  if (name == "aten::convolution_overrideable") {
    return conv;
  }
  if (name == "aten::convolution_backward_overrideable") {
    args->insert(args->begin() + 3, c10::IValue());  // bias_sizes: SymInt[]? = None
    return conv_bw;
  }
  return op;
}

// Index of the argument whose alias set return `ret` belongs to, or -1.
int AliasedArg(const c10::FunctionSchema& schema, size_t ret) {
  const c10::AliasInfo* r = schema.returns()[ret].alias_info();
  if (r == nullptr) {
    return -1;
  }
  for (size_t j = 0; j < schema.arguments().size(); ++j) {
    const c10::AliasInfo* a = schema.arguments()[j].alias_info();
    if (a == nullptr) {
      continue;
    }
    for (const auto& set : r->beforeSets()) {
      if (a->beforeSets().count(set) != 0) {
        return static_cast<int>(j);
      }
    }
  }
  return -1;
}

bool WritesArg(const c10::FunctionSchema& schema, size_t j) {
  const c10::AliasInfo* a = schema.arguments()[j].alias_info();
  return a != nullptr && a->isWrite();
}

struct MetaResult {
  std::vector<c10::IValue> args;     // Meta twins after the call (in-place ops restride them)
  std::vector<c10::IValue> returns;  // Meta outputs
};

// Runs the op's Meta kernel; nullopt (with `reason`) when it cannot size the outputs.
std::optional<MetaResult> InferWithMeta(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                                        std::string* reason) {
  MetaResult result;
  torch::jit::Stack stack;
  stack.reserve(args.size());
  for (const c10::IValue& a : args) {
    if (a.isDevice() && a.toDevice().type() == c10::DeviceType::PrivateUse1) {
      stack.emplace_back(c10::Device(c10::kMeta));
      continue;
    }
    // Host scalars (0-dim CPU tensors, e.g. Python numbers wrapped by the arg parser) stay on the
    // host: kernels accept them next to any device, and Python meta kernels unwrap them.
    stack.push_back(MapTensors(a, [](const at::Tensor& t) {
      const bool host_scalar = t.defined() && t.device().is_cpu() && t.dim() == 0;
      return t.defined() && !host_scalar ? MetaTwin(t) : t;
    }));
  }
  result.args = stack;
  try {
    op.callBoxed(&stack);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    *reason = msg.find("'Meta' backend") != std::string::npos || msg.find("Meta") != std::string::npos
                  ? "no Meta kernel"
                  : "Meta kernel raised";
    return std::nullopt;
  }
  for (const c10::IValue& r : stack) {
    if (!r.isTensor() && !r.isTensorList() && !r.isNone()) {
      *reason = "returns a host value";
      return std::nullopt;
    }
  }
  result.returns = std::move(stack);
  return result;
}

// A device tensor for a host result: a view of `base` when the result lies in base's storage
// (the kernel returned a view), else a fresh device copy.
at::Tensor DeviceTensorFor(const at::Tensor& host, const at::Tensor* base) {
  if (base != nullptr && base->defined() && host.defined() && base->storage().data() != nullptr) {
    const char* start = static_cast<const char*>(base->storage().data());
    const char* p = static_cast<const char*>(host.data_ptr());
    if (p >= start && p < start + base->storage().nbytes()) {
      at::Tensor meta = at::empty({0}, host.options().device(c10::kMeta))
                            .as_strided(host.sizes(), host.strides(), (p - start) / host.itemsize());
      return MakeView(*base, meta);
    }
  }
  at::Tensor meta = at::empty_strided(host.sizes(), host.strides(), host.options().device(c10::kMeta));
  at::Tensor dev = FreshLike(meta);
  runtime::HostAlias(dev).copy_(host);
  return dev;
}

// Runs the op on the host now (after draining the stream) and converts results to device values.
void RunNow(const c10::OperatorHandle& op, std::vector<c10::IValue>& args, torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  SyncOrThrow(IsHostRead(schema.name()) ? "host_read" : "host_fallback");
  // out= arguments get host temporaries (host aliases cannot be resized); copied back below.
  std::vector<c10::IValue> host_args = args;
  for (size_t j = 0; j < args.size(); ++j) {
    if (schema.arguments()[j].is_out() && args[j].isTensor() && IsDeviceTensor(args[j].toTensor())) {
      host_args[j] = at::empty({0}, args[j].toTensor().options().device(c10::kCPU));
    }
  }
  std::vector<c10::IValue> results;
  absl::Status status = runtime::RunOnHost(op, host_args, &results);
  if (!status.ok()) {
    ThrowIfError(runtime::WithOpContext(status, runtime::OpName(op),
                                        runtime::GlobalSourceTable().Format(CaptureSource())));
  }
  for (size_t i = 0; i < schema.returns().size(); ++i) {
    const int j = AliasedArg(schema, i);
    if (j >= 0 && WritesArg(schema, j)) {
      if (schema.arguments()[j].is_out() && args[j].isTensor() && IsDeviceTensor(args[j].toTensor())) {
        const at::Tensor& real = args[j].toTensor();
        const at::Tensor& tmp = results[i].toTensor();
        at::native::resize_impl_cpu_(real.unsafeGetTensorImpl(), tmp.sizes(), std::nullopt);
        runtime::HostAlias(real).copy_(tmp);
      }
      stack->push_back(args[j]);
      continue;
    }
    const at::Tensor* base = j >= 0 && args[j].isTensor() ? &args[j].toTensor() : nullptr;
    stack->push_back(MapTensors(results[i], [&](const at::Tensor& t) { return DeviceTensorFor(t, base); }));
  }
}

}  // namespace

void RecordingFallback(const c10::OperatorHandle& orig_op, torch::jit::Stack* stack) {
  const size_t nargs = orig_op.schema().arguments().size();
  std::vector<c10::IValue> args(std::make_move_iterator(stack->end() - nargs), std::make_move_iterator(stack->end()));
  stack->erase(stack->end() - nargs, stack->end());
  const c10::OperatorHandle op = Canonical(orig_op, &args);
  const c10::FunctionSchema& schema = op.schema();
  DeviceState& state = State();

  // Decide whether the op can be recorded.
  std::string reason;
  if (IsHostRead(schema.name())) {
    reason = "host read";
  } else if (IsDataDependent(schema.name())) {
    reason = "data-dependent output shape";
  }
  for (size_t j = 0; reason.empty() && j < args.size(); ++j) {
    if (WritesArg(schema, j)) {
      ForEachTensor(args[j], [&](const at::Tensor& t) {
        if (t.defined() && !IsDeviceTensor(t)) {
          reason = "writes a host tensor";
        }
      });
    }
  }
  std::optional<MetaResult> meta;
  if (reason.empty()) {
    meta = InferWithMeta(op, args, &reason);
  }
  if (!meta.has_value()) {
    if (reason != "host read") {
      state.stats.CountHostFallback(schema.name(), reason);
    }
    RunNow(op, args, stack);
    return;
  }

  // Outputs: in-place/out= returns are the written argument; views share their base's storage;
  // everything else is a fresh device allocation the queued op will fill.
  const size_t nret = schema.returns().size();
  std::vector<c10::IValue> outs(nret);
  std::vector<c10::IValue> fresh(nret);
  bool executes = nret == 0;
  for (size_t j = 0; j < args.size(); ++j) {
    executes = executes || WritesArg(schema, j);
    // out= kernels resize their outputs (abs.out(x, out=empty(0))): do it now, as eager would.
    if (WritesArg(schema, j) && schema.arguments()[j].is_out() && args[j].isTensor() &&
        meta->args[j].isTensor()) {
      const at::Tensor& real = args[j].toTensor();
      const at::Tensor& m = meta->args[j].toTensor();
      if (real.sizes() != m.sizes()) {
        real.resize_(m.sizes());
      }
    }
  }
  for (size_t i = 0; i < nret; ++i) {
    const int j = AliasedArg(schema, i);
    const c10::IValue& m = meta->returns[i];
    if (j >= 0 && WritesArg(schema, j)) {
      outs[i] = args[j];
    } else if (j >= 0 && m.isTensor()) {
      outs[i] = MakeView(args[j].toTensor(), m.toTensor());
    } else if (j >= 0 && m.isTensorList()) {
      c10::List<at::Tensor> views;
      for (const at::Tensor& t : m.toTensorList()) {
        views.push_back(MakeView(args[j].toTensor(), t));
      }
      outs[i] = views;
    } else if (m.isTensor() || m.isTensorList()) {
      outs[i] = MapTensors(m, [](const at::Tensor& t) { return FreshLike(t); });
      fresh[i] = MapTensors(outs[i], [](const at::Tensor& t) { return Snapshot(t); });
      executes = true;
    }
  }

  if (executes) {
    std::vector<c10::IValue> private_args;
    private_args.reserve(args.size());
    for (const c10::IValue& a : args) {
      private_args.push_back(PrivateArg(a));
    }
    runtime::OpRecord record(op, std::move(private_args));
    record.outputs = std::move(fresh);
    record.source = SourceForOp(state, args);
    absl::Status status = state.stream.Record(std::move(record));
    if (!status.ok()) {
      ThrowIfError(status);
    }
  } else {
    state.stats.CountView();
  }

  // In-place metadata ops (squeeze_, transpose_, as_strided_) change the written tensor's
  // geometry: mirror what the Meta kernel did to its twin (after snapshotting the old one).
  for (size_t j = 0; j < args.size(); ++j) {
    if (!WritesArg(schema, j) || schema.arguments()[j].is_out() || !args[j].isTensor() ||
        !meta->args[j].isTensor()) {
      continue;
    }
    const at::Tensor& real = args[j].toTensor();
    const at::Tensor& m = meta->args[j].toTensor();
    if (real.sizes() != m.sizes() || real.strides() != m.strides() || real.storage_offset() != m.storage_offset()) {
      real.unsafeGetTensorImpl()->set_sizes_and_strides(m.sizes(), m.strides(), m.storage_offset());
    }
  }
  for (c10::IValue& o : outs) {
    stack->push_back(std::move(o));
  }
}

}  // namespace trn::trace
