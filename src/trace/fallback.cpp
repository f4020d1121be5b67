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
#include "absl/container/inlined_vector.h"
#include "runtime/host_view.h"
#include "base/op_error.h"
#include "runtime/op_runner.h"
#include "base/profiler.h"
#include "runtime/schema_util.h"
#include "trace/device_check.h"
#include "trace/device_state.h"
#include "trace/graph_replay.h"
#include "trace/meta_cache.h"
#include "trace/shape_rules.h"
#include "trace/snapshot.h"
#include "trace/structured_ops.h"

namespace trn::trace {
namespace {

using runtime::ForEachTensor;
using runtime::IsDeviceTensor;
using runtime::AliasedArg;
using runtime::MapTensors;
using runtime::WritesArg;

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
    // bias_sizes (SymInt[]?): the bias has one entry per output channel, grad_output's dim 1.
    const at::Tensor& grad_output = (*args)[0].toTensor();
    args->insert(args->begin() + 3, c10::IValue(std::vector<int64_t>{grad_output.size(1)}));
    return conv_bw;
  }
  return op;
}

// A device tensor for a host result: a view of `base` when the result lies in base's storage
// (the kernel returned a view), else a fresh device copy.
at::Tensor DeviceTensorFor(const at::Tensor& host, const at::Tensor* base) {
  if (!host.defined()) {
    return host;  // e.g. a masked-out gradient of convolution_backward
  }
  TORCH_CHECK_NOT_IMPLEMENTED(host.layout() == at::kStrided, "neuron: the result has layout ", host.layout(),
                              "; sparse and other non-strided layouts are not supported on the neuron device");
  if (base != nullptr && base->defined() && host.defined() && base->storage().data() != nullptr) {
    const char* start = static_cast<const char*>(base->storage().data());
    const char* p = static_cast<const char*>(host.data_ptr());
    if (p >= start && p < start + base->storage().nbytes()) {
      Geometry g = Geometry::Of(host);
      g.offset = (p - start) / host.itemsize();
      return MakeView(*base, g);
    }
  }
  at::Tensor dev = FreshLike(Geometry::Of(host));
  runtime::HostAlias(dev).copy_(host);
  return dev;
}

// Runs the op on the host now (after draining the stream) and converts results to device values.
void RunNow(const c10::OperatorHandle& op, std::vector<c10::IValue>& args, torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  if (IsHostRead(schema.name())) {
    SyncReadOrThrow("host_read", args);  // (waits for what the read depends on)
  } else {
    SyncOrThrow("host_fallback");
  }
  for (const c10::IValue& a : args) {  // reads the device tensors on the host
    ForEachTensor(a, [](const at::Tensor& t) {
      if (IsDeviceTensor(t)) ThrowIfPoisoned(t);
    });
  }
  // out= arguments get host temporaries: here the final sizes come from the data, and the device
  // tensor is resized to match below (safe: the stream is drained).
  std::vector<c10::IValue> host_args = args;
  for (size_t j = 0; j < args.size(); ++j) {
    if (schema.arguments()[j].is_out() && args[j].isTensor() && IsDeviceTensor(args[j].toTensor())) {
      host_args[j] = at::empty({0}, args[j].toTensor().options().device(c10::kCPU));
    }
  }
  std::vector<c10::IValue> results;
  absl::Status status = runtime::RunOnHost(op, host_args, &results);
  if (!status.ok()) {
    ThrowIfError(base::WithOpContext(status, runtime::OpName(op),
                                     base::GlobalSourceTable().Format(CaptureSource())));
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

// Random ops without an explicit generator draw from the device's generator, when they execute.
void UseDeviceGenerator(const c10::FunctionSchema& schema, std::vector<c10::IValue>* args) {
  for (size_t j = 0; j < args->size() && j < schema.arguments().size(); ++j) {
    if ((*args)[j].isNone() && schema.arguments()[j].name() == "generator") {
      (*args)[j] = DeviceGenerator();
    }
  }
}

// Meta inference through the process-wide cache (see meta_cache.h).
std::shared_ptr<const MetaOutcome> InferCached(DeviceState& state, const c10::OperatorHandle& op,
                                               const std::vector<c10::IValue>& args) {
  thread_local std::string key_buffer;  // (a hit allocates nothing)
  std::optional<std::string> key;
  if (MetaCache::KeyInto(op, args, &key_buffer)) {
    if (auto hit = state.meta_cache.Find(key_buffer)) {
      return hit;
    }
    key = key_buffer;  // (copied before the Meta kernel runs, which may record on this thread)
  }
  auto inferred = std::make_shared<MetaOutcome>(InferWithMeta(op, args));
  MatchCpuSizes(op, args, inferred.get());
  std::shared_ptr<const MetaOutcome> outcome = std::move(inferred);
  if (key.has_value()) {
    state.meta_cache.Insert(std::move(*key), outcome);
  }
  return outcome;
}

}  // namespace

void RecordingFallback(const c10::OperatorHandle& orig_op, torch::jit::Stack* stack) {
  // (The profile's clock only while profiling: one clock read less per op.)
  const double record_begin_us = base::profiler::Enabled() ? base::profiler::NowUs() : 0;
  const int64_t begin_ns = base::MonotonicNs();
  const int64_t flush_ns_before = scheduler::FlushNsOnThisThread();
  const size_t nargs = orig_op.schema().arguments().size();
  std::vector<c10::IValue> args(std::make_move_iterator(stack->end() - nargs), std::make_move_iterator(stack->end()));
  stack->erase(stack->end() - nargs, stack->end());
  const c10::OperatorHandle op = Canonical(orig_op, &args);
  const c10::FunctionSchema& schema = op.schema();
  DeviceState& state = State();
  // A non-scalar host tensor next to device tensors: refused before anything runs or is recorded.
  if (absl::Status mismatch = CheckSameDevice(op, args); !mismatch.ok()) {
    ThrowIfError(base::WithOpContext(mismatch, runtime::OpName(op),
                                     base::GlobalSourceTable().Format(CaptureSource())));
  }
  UseDeviceGenerator(schema, &args);

  // Decide whether the op can be recorded.
  std::string reason;
  if (IsHostRead(schema.name())) {
    reason = "host read";
  } else if (IsDataDependent(schema.name())) {
    reason = "data-dependent output shape";
  } else {
    reason = SizeDisagreementReason(op);
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
  std::shared_ptr<const MetaOutcome> meta;
  if (reason.empty()) {
    meta = InferCached(state, op, args);
    reason = meta->fallback_reason;
  }
  if (!reason.empty()) {
    if (reason != "host read") {
      state.stats.CountHostFallback(schema.name(), reason, base::GlobalSourceTable().Format(CaptureSource()));
    }
    RunNow(op, args, stack);
    return;
  }

  // Outputs: in-place/out= returns are the written argument; views share their base's storage;
  // everything else is a fresh device allocation the queued op will fill.
  const size_t nret = schema.returns().size();
  absl::InlinedVector<c10::IValue, 2> outs(nret);
  std::vector<c10::IValue> fresh(nret);
  bool executes = nret == 0;
  for (size_t j = 0; j < args.size(); ++j) {
    executes = executes || WritesArg(schema, j);
    // out= kernels resize their outputs (abs.out(x, out=empty(0))): do it now, as eager would.
    if (WritesArg(schema, j) && schema.arguments()[j].is_out() && args[j].isTensor() &&
        meta->written[j].has_value()) {
      const at::Tensor& real = args[j].toTensor();
      if (real.sizes() != c10::IntArrayRef(meta->written[j]->sizes)) {
        real.resize_(meta->written[j]->sizes);
      }
    }
  }
  for (size_t i = 0; i < nret; ++i) {
    const int j = AliasedArg(schema, i);
    const ValueGeometry& m = meta->returns[i];
    if (j >= 0 && WritesArg(schema, j)) {
      outs[i] = args[j];
    } else if (m.kind == ValueGeometry::Kind::kNone) {
      outs[i] = c10::IValue();
    } else if (j >= 0 && args[j].isTensor() && m.kind == ValueGeometry::Kind::kTensor) {  // a view of argument j
      outs[i] = MakeView(args[j].toTensor(), m.tensors.at(0));
    } else if (j >= 0 && args[j].isTensor()) {  // a list of views of argument j
      c10::List<at::Tensor> views;
      for (const Geometry& g : m.tensors) {
        views.push_back(MakeView(args[j].toTensor(), g));
      }
      outs[i] = m.kind == ValueGeometry::Kind::kTensor ? c10::IValue(views.get(0)) : c10::IValue(views);
    } else if (m.kind == ValueGeometry::Kind::kTensor) {  // the common case: one fresh tensor
      const Geometry& g = m.tensors.at(0);
      if (g.defined) {
        at::Tensor made = FreshLike(g);
        fresh[i] = Snapshot(made);
        outs[i] = std::move(made);
        executes = true;
      } else {
        outs[i] = at::Tensor();  // a masked-out gradient
      }
    } else {
      c10::List<at::Tensor> made;
      bool any = false;
      for (const Geometry& g : m.tensors) {
        made.push_back(g.defined ? FreshLike(g) : at::Tensor());  // undefined: a masked-out gradient
        any = any || g.defined;
      }
      outs[i] = m.kind == ValueGeometry::Kind::kTensor ? c10::IValue(made.get(0)) : c10::IValue(made);
      if (any) {
        fresh[i] = MapTensors(outs[i], [](const at::Tensor& t) { return Snapshot(t); });
        executes = true;
      }
    }
  }

  if (executes) {
    // A structured op called functionally is recorded as its out= overload writing the fresh
    // outputs (structured_ops.h), as its composite kernel would have recorded it, when the two
    // layouts agree. The fresh geometry comes from the Meta kernel, in torch 2.14 often a Python
    // decomposition whose layout can differ from the C++ structured meta's, and an out= kernel
    // trusts a correctly sized out's strides where its meta asked for contiguous or for a memory
    // format (it copies through a proxy only where the meta named strides). So: contiguous
    // outputs only (on a transposed gradient _log_softmax_backward_data's decomposition gives a
    // transposed result), and no channels_last argument (the only way a C++ meta picks a memory
    // format: replication_pad2d's decomposition gives such an input a contiguous result, the CPU
    // kernel writes channels_last). Otherwise the call is recorded functionally and copied into.
    const c10::OperatorHandle* out_op = OutVariant(op);
    for (size_t i = 0; out_op != nullptr && i < nret; ++i) {
      out_op = fresh[i].isTensor() && fresh[i].toTensor().is_contiguous() ? out_op : nullptr;
    }
    for (size_t i = 0; out_op != nullptr && i < args.size(); ++i) {
      runtime::ForEachTensor(args[i], [&](const at::Tensor& t) {
        if (t.defined() && (t.dim() == 4 || t.dim() == 5) && !t.is_contiguous() &&
            t.suggest_memory_format() != c10::MemoryFormat::Contiguous) {
          out_op = nullptr;
        }
      });
    }
    std::vector<c10::IValue> private_args;
    private_args.reserve(args.size() + (out_op != nullptr ? nret : 0));
    for (const c10::IValue& a : args) {
      private_args.push_back(PrivateIndexArg(a));
    }
    if (out_op != nullptr) {
      for (c10::IValue& f : fresh) {
        private_args.push_back(std::move(f));
        f = c10::IValue();
      }
    }
    runtime::OpRecord record(out_op != nullptr ? *out_op : op, std::move(private_args));
    record.outputs = std::move(fresh);
    record.source = SourceForOp(state, args);
    AppendRecord(state, std::move(record), record_begin_us);
  } else {
    state.stats.CountView();
  }

  // In-place metadata ops (squeeze_, transpose_, as_strided_) change the written tensor's
  // geometry: mirror what the Meta kernel did to its twin (after snapshotting the old one).
  for (size_t j = 0; j < args.size(); ++j) {
    if (!WritesArg(schema, j) || schema.arguments()[j].is_out() || !args[j].isTensor() ||
        !meta->written[j].has_value()) {
      continue;
    }
    const at::Tensor& real = args[j].toTensor();
    const Geometry& g = *meta->written[j];
    if (real.sizes() != c10::IntArrayRef(g.sizes) || real.strides() != c10::IntArrayRef(g.strides) ||
        real.storage_offset() != g.offset) {
      CaptureRefuse("an in-place metadata change (squeeze_, transpose_, as_strided_, ...)");
      real.unsafeGetTensorImpl()->set_sizes_and_strides(g.sizes, g.strides, g.offset);
    }
  }
  for (c10::IValue& o : outs) {
    stack->push_back(std::move(o));
  }
  const int64_t flushed = scheduler::FlushNsOnThisThread() - flush_ns_before;
  state.stats.AddTime(base::HostTime::kRecord, base::MonotonicNs() - begin_ns - flushed, 1);
}

}  // namespace trn::trace
