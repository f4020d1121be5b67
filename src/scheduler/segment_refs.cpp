#include "scheduler/segment_refs.h"

#include <c10/util/intrusive_ptr.h>

#include <algorithm>
#include <tuple>

#include "runtime/host_view.h"

namespace trn::scheduler {

std::vector<SegmentRefs::Use> SegmentRefs::Uses(const std::vector<runtime::OpRecord>& records) {
  // Every device tensor of every record as (storage, tensor, record), sorted: distinct tensors per
  // storage and each storage's last record fall out of one pass (a hash set per storage cost
  // more, in allocations, than the sort).
  thread_local std::vector<std::tuple<c10::StorageImpl*, const c10::TensorImpl*, size_t>> seen;
  seen.clear();
  for (size_t i = 0; i < records.size(); ++i) {
    auto note = [&](const at::Tensor& t) {
      if (t.defined() && t.has_storage() && runtime::IsDeviceTensor(t)) {
        seen.emplace_back(t.storage().unsafeGetStorageImpl(), t.unsafeGetTensorImpl(), i);
      }
    };
    for (const c10::IValue& v : records[i].args) runtime::ForEachTensor(v, note);
    for (const c10::IValue& v : records[i].outputs) runtime::ForEachTensor(v, note);
  }
  std::sort(seen.begin(), seen.end());
  std::vector<Use> uses;
  for (size_t k = 0; k < seen.size();) {
    c10::StorageImpl* storage = std::get<0>(seen[k]);
    Use use{storage, 0, 0};
    const c10::TensorImpl* previous = nullptr;
    for (; k < seen.size() && std::get<0>(seen[k]) == storage; ++k) {
      use.impls += std::get<1>(seen[k]) != previous ? 1 : 0;
      previous = std::get<1>(seen[k]);
      use.last = std::max(use.last, std::get<2>(seen[k]));
    }
    uses.push_back(use);
  }
  return uses;
}

void SegmentRefs::Decide(const Use& use, int64_t outside) {
  info_.emplace(use.storage, Info{use.last, outside > 0});
  if (outside <= 0 && use.storage->nbytes() > 0) {
    releases_.emplace_back(use.last, use.storage);
  }
}

SegmentRefs SegmentRefs::Of(const std::vector<runtime::OpRecord>& records) {
  SegmentRefs refs;
  for (const Use& use : Uses(records)) {
    refs.Decide(use, static_cast<int64_t>(c10::raw::intrusive_ptr::use_count(use.storage)) - use.impls);
  }
  std::sort(refs.releases_.begin(), refs.releases_.end());
  return refs;
}

bool SegmentRefs::LiveAfter(const c10::StorageImpl* storage, size_t end) const {
  auto it = info_.find(storage);
  return it == info_.end() || it->second.outside || it->second.last >= end;
}

SegmentRefs RefLedger::Hold(const std::vector<runtime::OpRecord>& records, uint64_t batch) {
  const std::vector<SegmentRefs::Use> uses = SegmentRefs::Uses(records);
  SegmentRefs refs;
  refs.info_.reserve(uses.size());
  std::vector<std::pair<const c10::StorageImpl*, int64_t>> holding;
  holding.reserve(uses.size());
  {
    absl::MutexLock lock(&mu_);
    for (const SegmentRefs::Use& use : uses) {
      int64_t& held = held_[use.storage];
      refs.Decide(use, static_cast<int64_t>(c10::raw::intrusive_ptr::use_count(use.storage)) - held - use.impls);
      held += use.impls;
      holding.emplace_back(use.storage, use.impls);
    }
    flushes_.emplace_back(batch, std::move(holding));
  }
  std::sort(refs.releases_.begin(), refs.releases_.end());
  return refs;
}

void RefLedger::Release(uint64_t batch, const std::function<void()>& drop) {
  absl::MutexLock lock(&mu_);
  drop();
  while (!flushes_.empty() && flushes_.front().first <= batch) {
    for (const auto& [storage, n] : flushes_.front().second) {
      auto it = held_.find(storage);
      if (it != held_.end() && (it->second -= n) <= 0) {
        held_.erase(it);
      }
    }
    flushes_.pop_front();
  }
}

uint64_t RefLedger::LastReferencing(const c10::StorageImpl* storage) {
  absl::MutexLock lock(&mu_);
  if (!held_.contains(storage)) {
    return 0;
  }
  for (auto flush = flushes_.rbegin(); flush != flushes_.rend(); ++flush) {
    for (const auto& [held, n] : flush->second) {
      if (held == storage) return flush->first;
    }
  }
  return 0;
}

}  // namespace trn::scheduler
