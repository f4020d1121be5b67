#include "runtime/group_bench.h"

#include <algorithm>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "runtime/host_view.h"
#include "runtime/op_runner.h"
#include "runtime/schema_util.h"
#include "base/stats.h"

namespace trn::runtime {

int64_t GroupBench::RunOpByOpAndRestore(const std::vector<OpRecord>& ops) {
  // Every storage the ops write (written arguments and fresh outputs), saved whole.
  absl::flat_hash_map<const c10::StorageImpl*, std::pair<void*, std::vector<char>>> saved;
  auto save = [&](const at::Tensor& t) {
    if (!t.defined() || !IsDeviceTensor(t) || !t.has_storage()) return;
    const c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
    void* data = t.storage().mutable_data();
    if (data == nullptr || saved.contains(s)) return;
    const char* p = static_cast<const char*>(data);
    saved.emplace(s, std::make_pair(data, std::vector<char>(p, p + t.storage().nbytes())));
  };
  for (const OpRecord& r : ops) {
    const c10::FunctionSchema& schema = r.op.schema();
    for (size_t j = 0; j < r.args.size(); ++j) {
      if (WritesArg(schema, j)) ForEachTensor(r.args[j], save);
    }
    for (const c10::IValue& o : r.outputs) ForEachTensor(o, save);
  }
  auto restore = [&] {
    for (auto& [storage, copy] : saved) std::memcpy(copy.first, copy.second.data(), copy.second.size());
  };
  // Once untimed, so the timed run and the compiled run after it both find the inputs in cache
  // and the outputs' pages faulted in (otherwise whichever runs first pays for both).
  bool ok = true;
  for (const OpRecord& r : ops) ok = ok && ExecuteRecord(r).ok();
  restore();
  const int64_t begin = base::MonotonicNs();
  for (const OpRecord& r : ops) ok = ok && ExecuteRecord(r).ok();
  const int64_t ns = base::MonotonicNs() - begin;
  restore();
  return ok ? ns : -1;
}

GroupBench::Entry& GroupBench::EntryFor(const std::string& key, const std::vector<OpRecord>& ops) {
  Entry& entry = rows_[key];
  GroupBenchRow& row = entry.row;
  if (row.key.empty()) {
    row.key = key;
    row.num_ops = static_cast<int64_t>(ops.size());
    for (const OpRecord& r : ops) {
      if (!row.ops.empty()) row.ops += ' ';
      row.ops += OpName(r.op);
    }
  }
  return entry;
}

void GroupBench::RecordInstant(const std::string& key, const std::vector<OpRecord>& ops, int64_t op_by_op_ns,
                               int64_t instant_ns) {
  if (op_by_op_ns < 0) return;
  absl::MutexLock lock(&mu_);
  Entry& entry = EntryFor(key, ops);
  ++entry.row.instant_runs;
  entry.instant.push_back(instant_ns);
  entry.instant_op_by_op.push_back(op_by_op_ns);
}

void GroupBench::Record(const std::string& key, const std::vector<OpRecord>& ops, int64_t op_by_op_ns,
                        int64_t compiled_ns) {
  absl::MutexLock lock(&mu_);
  Entry& entry = EntryFor(key, ops);
  GroupBenchRow& row = entry.row;
  ++row.runs;
  row.op_by_op_ns += op_by_op_ns;
  row.compiled_ns += compiled_ns;
  entry.compiled.push_back(compiled_ns);
  entry.op_by_op.push_back(op_by_op_ns);
}

namespace {

int64_t Median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace

std::vector<GroupBenchRow> GroupBench::Rows() const {
  absl::MutexLock lock(&mu_);
  std::vector<GroupBenchRow> out;
  for (const auto& [key, entry] : rows_) {
    out.push_back(entry.row);
    out.back().compiled_median_ns = Median(entry.compiled);
    out.back().op_by_op_median_ns = Median(entry.op_by_op);
    out.back().instant_median_ns = Median(entry.instant);
    out.back().instant_op_by_op_median_ns = Median(entry.instant_op_by_op);
    std::vector<double> ratios;
    for (size_t i = 0; i < entry.instant.size(); ++i) {
      ratios.push_back(static_cast<double>(entry.instant[i]) / static_cast<double>(std::max<int64_t>(entry.instant_op_by_op[i], 1)));
    }
    if (!ratios.empty()) {
      std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
      out.back().instant_ratio_median = ratios[ratios.size() / 2];
    }
  }
  return out;
}

}  // namespace trn::runtime
