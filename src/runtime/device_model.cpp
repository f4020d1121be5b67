#include "runtime/device_model.h"

#include "absl/strings/str_cat.h"
#include "base/knobs.h"
#include "runtime/op_runner.h"
#include "base/profiler.h"
#include "base/source_table.h"

namespace trn::runtime {

namespace nc = neuroncore;

DeviceModel* DeviceModel::Get() {
  static DeviceModel* model = []() -> DeviceModel* {
    const absl::StatusOr<base::Knobs>& k = base::GetKnobs();
    if (!k.ok() || k->target == "host") return nullptr;
    std::optional<nc::TargetSpec> spec = nc::TargetByName(k->target);
    return spec ? new DeviceModel(*spec) : nullptr;  // never destroyed: used until exit
  }();
  return model;
}

int64_t ViewBytes(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0) return 0;
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * std::abs(t.stride(d));
  return (last + 1) * static_cast<int64_t>(t.element_size());
}

absl::Status DeviceModel::Run(const nc::InstructionStream& stream, const std::vector<nc::HostBinding>& bindings,
                              const std::vector<OpRecord>& ops) {
  nc::RunOptions options;
  options.trace = base::profiler::Enabled();
  const double wall_begin = options.trace ? base::profiler::NowUs() : 0;
  absl::StatusOr<nc::RunReport> report = nc::Run(stream, target_, bindings, options);
  if (!report.ok()) return report.status();
  {
    absl::MutexLock lock(&mu_);
    c_.modeled_ns += report->modeled_ns;
    for (int e = 0; e < nc::kEngines; ++e) {
      c_.engine_busy_ns[e] += report->engines[e].busy_ns;
      c_.instructions += report->engines[e].instructions;
    }
    c_.dma_bytes += report->dma_bytes;
    c_.matmul_flops += report->matmul_flops;
    ++c_.groups_on_device;
    c_.ops_on_device += static_cast<int64_t>(ops.size());
    for (const OpRecord& op : ops) ++c_.ops_by_name[OpName(op.op)];
  }
  if (!options.trace) return absl::OkStatus();
  // One event per run of consecutive instructions from the same op on an engine, placed at the
  // wall time the group started, with modeled durations.
  std::array<size_t, nc::kEngines> open{};
  std::array<bool, nc::kEngines> has{};
  std::array<base::profiler::Event, nc::kEngines> pending;
  auto flush = [&](int e) {
    if (!has[e]) return;
    base::profiler::AddToLane(
        std::move(pending[e]),
        absl::StrCat("NeuronCore ", target_.name, " (modeled): ", nc::EngineName(static_cast<nc::Engine>(e))));
    has[e] = false;
  };
  for (const nc::InstructionSpan& s : report->trace) {
    const int e = static_cast<int>(s.engine);
    base::profiler::Event& ev = pending[e];
    if (has[e] && open[e] == s.source_op) {
      ev.end_us = wall_begin + s.end_ns / 1000.0;
      ev.nargs[0].second += 1;
      ev.nargs[1].second += s.end_ns - s.start_ns;
      continue;
    }
    flush(e);
    has[e] = true;
    open[e] = s.source_op;
    ev = base::profiler::Event();
    ev.cat = "device";
    const bool known = s.source_op < ops.size();
    ev.name = absl::StrCat(known ? OpName(ops[s.source_op].op) : std::string("?"), " (modeled)");
    ev.begin_us = wall_begin + s.start_ns / 1000.0;
    ev.end_us = wall_begin + s.end_ns / 1000.0;
    if (known) ev.lines = {ops[s.source_op].source};
    ev.nargs = {{"instructions", 1}, {"busy_ns", s.end_ns - s.start_ns}};
    ev.sargs = {{"time", "modeled"}, {"first_opcode", nc::OpcodeName(s.opcode)}};
  }
  for (int e = 0; e < nc::kEngines; ++e) flush(e);
  return absl::OkStatus();
}

void DeviceModel::ChargeHost(int64_t bytes, int64_t ops, bool group) {
  const double ns = static_cast<double>(bytes) / (target_.dma_bytes_per_ns_per_engine * target_.dma_engines);
  absl::MutexLock lock(&mu_);
  c_.host_transfer_bytes += bytes;
  c_.host_transfer_ns += ns;
  c_.modeled_ns += ns;
  c_.ops_on_host += ops;
  if (group) ++c_.groups_on_host;
}

DeviceSnapshot DeviceModel::Snapshot() const {
  absl::MutexLock lock(&mu_);
  DeviceSnapshot s = c_;
  s.target = target_.name;
  return s;
}

void DeviceModel::Reset() {
  absl::MutexLock lock(&mu_);
  c_ = DeviceSnapshot();
}

}  // namespace trn::runtime
