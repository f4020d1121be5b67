#include "scheduler/segment_planner.h"

#include <c10/util/intrusive_ptr.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "runtime/host_view.h"
#include "base/log.h"
#include "runtime/op_runner.h"
#include "scheduler/grouper.h"

namespace trn::scheduler {
namespace {

// Positions of every device tensor of `ops` [begin, begin + len), by TensorImpl (first seen).
absl::flat_hash_map<const c10::TensorImpl*, TensorPos> Positions(const std::vector<runtime::OpRecord>& ops,
                                                                size_t begin, int64_t len) {
  absl::flat_hash_map<const c10::TensorImpl*, TensorPos> pos;
  for (int64_t i = 0; i < len; ++i) {
    const runtime::OpRecord& r = ops[begin + static_cast<size_t>(i)];
    auto visit = [&](const c10::IValue& v, size_t value) {
      uint16_t elem = 0;
      runtime::ForEachTensor(v, [&](const at::Tensor& t) {
        if (t.defined() && runtime::IsDeviceTensor(t)) {
          pos.try_emplace(t.unsafeGetTensorImpl(),
                          TensorPos{static_cast<uint32_t>(i), static_cast<uint16_t>(value), elem});
        }
        ++elem;
      });
    };
    for (size_t j = 0; j < r.args.size(); ++j) visit(r.args[j], j);
    for (size_t j = 0; j < r.outputs.size(); ++j) visit(r.outputs[j], r.args.size() + j);
  }
  return pos;
}

// The plan of a planned group of records [begin, begin + len); null when a tensor of the plan is
// not found in the records by position (then the group runs op by op).
std::shared_ptr<GroupPlan> PlanOf(const std::vector<runtime::OpRecord>& records, size_t begin, int64_t len,
                                  const mlir_lowering::LoweredGroup& lowered) {
  auto plan = std::make_shared<GroupPlan>();
  plan->kind = GroupPlan::Kind::kGroup;
  plan->len = len;
  const absl::flat_hash_map<const c10::TensorImpl*, TensorPos> pos = Positions(records, begin, len);
  auto find = [&](const at::Tensor& t, TensorPos* out) {
    auto it = pos.find(t.unsafeGetTensorImpl());
    if (it == pos.end()) return false;
    *out = it->second;
    return true;
  };
  for (const at::Tensor& t : lowered.inputs) {
    TensorPos p;
    if (!find(t, &p)) return nullptr;
    plan->inputs.push_back(p);
  }
  for (const mlir_lowering::GroupOutput& o : lowered.outputs) {
    TensorPos p;
    if (!find(o.tensor, &p)) return nullptr;
    plan->outputs.emplace_back(p, o.staged);
  }
  plan->param_args = lowered.param_args;
  auto checks = std::make_shared<std::vector<runtime::CheckSlot>>();
  for (const mlir_lowering::GroupCheck& c : lowered.checks) {
    checks->push_back(runtime::CheckSlot{c.op_index, c.message, c.kind});
  }
  plan->checks = std::move(checks);
  plan->bytes_written = lowered.bytes_written;
  plan->temporaries = lowered.temporaries;
  plan->live = lowered.live_buffers;
  plan->func = lowered.func;
  std::vector<const runtime::OpRecord*> ops;
  for (int64_t i = 0; i < len; ++i) ops.push_back(&records[begin + static_cast<size_t>(i)]);
  std::vector<runtime::OutputBuffer> outputs;
  for (const mlir_lowering::GroupOutput& o : lowered.outputs) outputs.push_back(runtime::OutputBuffer{o.tensor, o.staged});
  plan->key = MakeGroupKey(ops, lowered.inputs, outputs, lowered.param_args);
  plan->key_hex = plan->key.Hex();
  return plan;
}

}  // namespace

SegmentPlanner::SegmentPlanner(std::vector<runtime::OpRecord> segment, PlanCache* cache, int64_t max_group_ops,
                               const mlir_lowering::Target& target, base::Stats* stats, const SegmentRefs* refs,
                               PlanStore* store)
    : records_(std::move(segment)),
      cache_(cache),
      max_group_ops_(max_group_ops),
      target_(target),
      stats_(stats),
      store_(store) {
  if (refs == nullptr) {
    own_refs_ = SegmentRefs::Of(records_);
    refs = &*own_refs_;
  }
  refs_ = refs;
}

PlannedUnit SegmentPlanner::Take(size_t begin, int64_t len) {
  PlannedUnit u;
  u.begin = begin;
  u.ops.reserve(static_cast<size_t>(len));
  for (int64_t i = 0; i < len; ++i) {
    u.ops.push_back(std::move(records_[begin + static_cast<size_t>(i)]));
  }
  return u;
}

bool SegmentPlanner::TensorsExist(const GroupPlan& plan) const {
  auto exists = [&](TensorPos p) {
    p.op += static_cast<uint32_t>(pos_);
    const at::Tensor t = TensorAt(records_, p);
    return t.defined() && runtime::IsDeviceTensor(t);
  };
  for (const TensorPos& p : plan.inputs) {
    if (!exists(p)) return false;
  }
  for (const auto& [p, staged] : plan.outputs) {
    if (!exists(p)) return false;
  }
  return true;
}

bool SegmentPlanner::Applies(const GroupPlan& plan, const GroupHasher& hasher, std::vector<double>* params) const {
  if (!GuardsHold(plan, records_, pos_)) return false;
  if (plan.kind == GroupPlan::Kind::kOpByOp) return true;
  if (plan.from_disk && !TensorsExist(plan)) return false;
  if (!ReadParams(plan, records_, pos_, params)) return false;
  // Liveness, as GroupLowering::Finish decided it when the plan was made: read after the group.
  size_t count = 0;
  const c10::StorageImpl* const* buffers = hasher.Buffers(plan.len, &count);
  if (count != plan.live.size()) return false;
  const size_t end = pos_ + static_cast<size_t>(plan.len);
  for (size_t b = 0; b < count; ++b) {
    if (refs_->LiveAfter(buffers[b], end) != plan.live[b]) return false;
  }
  return true;
}

bool SegmentPlanner::FromCache(PlannedUnit* out) {
  if (cache_ == nullptr || cache_->max_len() == 0) return false;
  GroupHasher hasher(records_, pos_);
  std::vector<double> params;
  auto try_plans = [&](const Hash128& h) -> bool {
    const std::vector<std::shared_ptr<const GroupPlan>>* plans = cache_->Find(h);
    if (plans == nullptr) return false;
    for (const std::shared_ptr<const GroupPlan>& plan : *plans) {
      if (!Applies(*plan, hasher, &params)) continue;
      if (probed_) Use(h, plan);
      const size_t begin = pos_;
      if (plan->kind == GroupPlan::Kind::kOpByOp) {
        *out = Take(begin, 1);
        out->unlowered = true;
        stats_->CountUnlowered(runtime::OpName(out->ops[0].op));
        pos_ += 1;
        return true;
      }
      *out = Take(begin, plan->len);
      out->plan = plan;
      out->params = std::move(params);
      pos_ += static_cast<size_t>(plan->len);
      if (plan->next_op_by_op && pos_ < records_.size()) {
        PlannedUnit next = Take(pos_, 1);
        next.unlowered = true;
        stats_->CountUnlowered(runtime::OpName(next.ops[0].op));
        ready_.push_back(std::move(next));
        pos_ += 1;
      }
      return true;
    }
    return false;
  };
  while (!hasher.at_end() && hasher.ops() < cache_->max_len()) {
    if (try_plans(hasher.Add())) return true;
  }
  return hasher.at_end() && try_plans(hasher.End());
}

void SegmentPlanner::CachePlans(const std::vector<CutUnit>& cut,
                                const std::vector<std::shared_ptr<GroupPlan>>& plans) {
  if (cache_ == nullptr) return;
  for (size_t k = 0; k < cut.size(); ++k) {
    const CutUnit& u = cut[k];
    if (u.failed) continue;
    if (!u.lowered.has_value()) {
      // An op by op unit at a start; not the op after a group (decided in that group's context).
      if (k > 0 && cut[k - 1].lowered.has_value() && cut[k - 1].next_op_by_op) continue;
      auto plan = std::make_shared<GroupPlan>();
      plan->kind = GroupPlan::Kind::kOpByOp;
      plan->len = 1;
      std::vector<std::pair<int64_t, int64_t>> args;
      for (int64_t a : u.failed_value_args) args.emplace_back(0, a);
      plan->guards = GuardsOf(records_, u.begin, args);
      GroupHasher h(records_, u.begin);
      const Hash128 key = h.Add();
      if (probed_) Use(key, plan);
      cache_->Insert(key, std::move(plan));
      continue;
    }
    std::shared_ptr<GroupPlan> plan = plans[k];
    if (plan == nullptr) continue;
    // The hashed content: the group, plus the op after it when that op made the grouper close it.
    const bool lookahead = u.why == CloseReason::kThreadChange || u.why == CloseReason::kCannotLower ||
                           u.why == CloseReason::kAddFailed;
    // Guards: what the lowering read besides runtime scalars, in the group and, when it refused
    // or cut at the op after the group, in that op.
    std::vector<std::pair<int64_t, int64_t>> args = u.lowered->value_args;
    for (int64_t a : u.failed_value_args) args.emplace_back(u.len, a);
    plan->guards = GuardsOf(records_, u.begin, args);
    GroupHasher h(records_, u.begin);
    Hash128 key;
    for (int64_t i = 0; i < u.len + (lookahead ? 1 : 0); ++i) key = h.Add();
    if (u.why == CloseReason::kEnd) key = h.End();
    size_t buffers = 0;
    h.Buffers(u.len, &buffers);
    if (buffers != plan->live.size()) continue;  // (cannot happen: the lowering's buffers)
    if (probed_) Use(key, plan);
    cache_->Insert(key, std::move(plan));
  }
}

void SegmentPlanner::Cut() {
  std::vector<CutUnit> cut = CutNext(records_, pos_, max_group_ops_, target_, stats_, refs_);
  std::vector<std::shared_ptr<GroupPlan>> plans(cut.size());
  for (size_t k = 0; k < cut.size(); ++k) {
    const CutUnit& u = cut[k];
    if (!u.lowered.has_value()) continue;
    plans[k] = PlanOf(records_, u.begin, u.len, *u.lowered);
    if (plans[k] == nullptr) {
      stats_->CountCompileFailure("a planned group's tensor is not found in its records");
      continue;
    }
    plans[k]->next_op_by_op = u.next_op_by_op;
  }
  CachePlans(cut, plans);
  for (size_t k = 0; k < cut.size(); ++k) {
    const CutUnit& u = cut[k];
    std::vector<double> params;
    if (plans[k] != nullptr && u.lowered->params.defined()) {
      const double* p = u.lowered->params.data_ptr<double>();
      params.assign(p, p + u.lowered->params.numel());
    }
    PlannedUnit unit = Take(u.begin, u.len);
    unit.plan = plans[k];
    unit.params = std::move(params);
    unit.unlowered = !u.lowered.has_value();
    ready_.push_back(std::move(unit));
    pos_ = u.begin + static_cast<size_t>(u.len);
  }
}

void SegmentPlanner::Use(const Hash128& h, std::shared_ptr<const GroupPlan> plan) {
  if (used_set_.insert(plan.get()).second) used_.push_back(StoredPlan{h, std::move(plan)});
}

bool SegmentPlanner::LoadStored() {
  if (store_ == nullptr || probed_) return false;
  probed_ = true;
  GroupHasher hasher(records_, pos_);
  while (!hasher.at_end()) hasher.Add();
  store_key_ = hasher.End();
  std::optional<std::vector<StoredPlan>> stored = store_->Load(store_key_);
  if (!stored.has_value()) return false;
  for (StoredPlan& s : *stored) {
    const std::vector<std::shared_ptr<const GroupPlan>>* held = cache_->Find(s.hash);
    bool known = false;
    for (size_t i = 0; held != nullptr && i < held->size() && !known; ++i) known = SamePlan(*(*held)[i], *s.plan);
    if (!known) cache_->Insert(s.hash, std::move(s.plan));
  }
  return true;
}

void SegmentPlanner::Persist() {
  if (store_ != nullptr && probed_ && misses_ > 0) store_->Save(store_key_, used_);
}

PlannedUnit SegmentPlanner::Next() {
  if (next_ready_ < ready_.size()) {
    PlannedUnit u = std::move(ready_[next_ready_++]);
    if (next_ready_ == ready_.size()) {
      ready_.clear();
      next_ready_ = 0;
    }
    return u;
  }
  PlannedUnit out;
  if (FromCache(&out) || (LoadStored() && FromCache(&out))) {
    ++hits_;
    return out;
  }
  ++misses_;
  if (base::LogEnabled(base::LogLevel::kDebug)) {
    base::Log(base::LogLevel::kDebug,
              absl::StrCat("plan cache miss at op ", pos_, " of ", records_.size(), " (", runtime::OpName(records_[pos_].op),
                           " at ", base::GlobalSourceTable().Format(records_[pos_].source), ")"));
  }
  Cut();
  return Next();
}

}  // namespace trn::scheduler
