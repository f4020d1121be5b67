#include "scheduler/plan_store.h"

#include <xxhash.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace trn::scheduler {
namespace {

constexpr uint32_t kPayloadVersion = 2;  // 2: a check's error kind
// Bounds a decoded plan must respect (far above any real one; they keep a corrupted count from
// allocating much).
constexpr int64_t kMaxPlanOps = int64_t{1} << 20;

class Writer {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U16(uint16_t v) { Le(v, 2); }
  void U32(uint32_t v) { Le(v, 4); }
  void U64(uint64_t v) { Le(v, 8); }
  void I64(int64_t v) { Le(static_cast<uint64_t>(v), 8); }
  void Str(absl::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    out_.append(s.data(), s.size());
  }
  void Pos(const TensorPos& p) {
    U32(p.op);
    U16(p.value);
    U16(p.elem);
  }
  std::string Take() { return std::move(out_); }

 private:
  void Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

// Reads what Writer wrote; every read past the end fails (and every later read too).
class Reader {
 public:
  explicit Reader(absl::string_view b) : b_(b) {}
  bool ok() const { return ok_; }
  bool done() const { return at_ == b_.size(); }
  size_t left() const { return b_.size() - at_; }
  uint8_t U8() { return static_cast<uint8_t>(Le(1)); }
  uint16_t U16() { return static_cast<uint16_t>(Le(2)); }
  uint32_t U32() { return static_cast<uint32_t>(Le(4)); }
  uint64_t U64() { return Le(8); }
  int64_t I64() { return static_cast<int64_t>(Le(8)); }
  std::string Str() {
    const uint32_t n = U32();
    if (!ok_ || n > left()) {
      ok_ = false;
      return "";
    }
    std::string s(b_.data() + at_, n);
    at_ += n;
    return s;
  }
  TensorPos Pos() {
    TensorPos p;
    p.op = U32();
    p.value = U16();
    p.elem = U16();
    return p;
  }
  // A count of items each at least `min_bytes` long: fails when the bytes left cannot hold them.
  uint32_t Count(size_t min_bytes) {
    const uint32_t n = U32();
    if (!ok_ || static_cast<uint64_t>(n) * min_bytes > left()) ok_ = false;
    return ok_ ? n : 0;
  }

 private:
  uint64_t Le(int n) {
    if (!ok_ || left() < static_cast<size_t>(n)) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(b_[at_ + i])) << (8 * i);
    at_ += static_cast<size_t>(n);
    return v;
  }
  absl::string_view b_;
  size_t at_ = 0;
  bool ok_ = true;
};

void EncodePlan(const StoredPlan& s, Writer* w) {
  const GroupPlan& p = *s.plan;
  w->U64(s.hash.lo);
  w->U64(s.hash.hi);
  w->U8(p.kind == GroupPlan::Kind::kGroup ? 1 : 0);
  w->U8(p.next_op_by_op ? 1 : 0);
  w->I64(p.len);
  w->U32(static_cast<uint32_t>(p.guards.size()));
  for (const Guard& g : p.guards) {
    w->U32(g.op);
    w->U16(g.arg);
    w->U8(g.kind);
    w->U64(g.bits);
  }
  if (p.kind != GroupPlan::Kind::kGroup) return;
  w->Str(p.key.material);
  w->U32(static_cast<uint32_t>(p.live.size()));
  for (bool l : p.live) w->U8(l ? 1 : 0);
  w->U32(static_cast<uint32_t>(p.inputs.size()));
  for (const TensorPos& t : p.inputs) w->Pos(t);
  w->U32(static_cast<uint32_t>(p.outputs.size()));
  for (const auto& [t, staged] : p.outputs) {
    w->Pos(t);
    w->U8(staged ? 1 : 0);
  }
  w->U32(static_cast<uint32_t>(p.param_args.size()));
  for (const auto& [op, arg] : p.param_args) {
    w->I64(op);
    w->I64(arg);
  }
  const size_t checks = p.checks == nullptr ? 0 : p.checks->size();
  w->U32(static_cast<uint32_t>(checks));
  for (size_t i = 0; i < checks; ++i) {
    w->I64((*p.checks)[i].op_index);
    w->Str((*p.checks)[i].message);
    w->U32(static_cast<uint32_t>((*p.checks)[i].kind));
  }
  w->I64(p.bytes_written);
  w->I64(p.temporaries);
  w->Str(p.func);
}

absl::Status Malformed(size_t index, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("malformed plan entry: plan ", index, ": ", what));
}

absl::StatusOr<StoredPlan> DecodePlan(Reader* r, size_t index) {
  auto plan = std::make_shared<GroupPlan>();
  plan->from_disk = true;
  StoredPlan s;
  s.hash.lo = r->U64();
  s.hash.hi = r->U64();
  const uint8_t kind = r->U8();
  plan->kind = kind == 1 ? GroupPlan::Kind::kGroup : GroupPlan::Kind::kOpByOp;
  plan->next_op_by_op = r->U8() != 0;
  plan->len = r->I64();
  if (!r->ok()) return Malformed(index, "truncated");
  if (kind > 1) return Malformed(index, absl::StrCat("unknown kind ", kind));
  if (plan->len < 1 || plan->len > kMaxPlanOps || (kind == 0 && plan->len != 1)) {
    return Malformed(index, absl::StrCat("length ", plan->len));
  }
  const uint32_t guards = r->Count(15);
  for (uint32_t i = 0; i < guards && r->ok(); ++i) {
    Guard g;
    g.op = r->U32();
    g.arg = r->U16();
    g.kind = r->U8();
    g.bits = r->U64();
    // A guard may look at the op after the unit (what made the grouper close it).
    if (g.op > static_cast<uint64_t>(plan->len)) return Malformed(index, "a guard outside the unit");
    if (g.kind != 'd' && g.kind != 'i' && g.kind != 'h') return Malformed(index, "a guard of unknown kind");
    plan->guards.push_back(g);
  }
  if (kind == 1) {
    plan->key.material = r->Str();
    plan->key.hash = XXH3_64bits(plan->key.material.data(), plan->key.material.size());
    plan->key_hex = plan->key.Hex();
    const uint32_t live = r->Count(1);
    for (uint32_t i = 0; i < live && r->ok(); ++i) plan->live.push_back(r->U8() != 0);
    auto in_unit = [&](const TensorPos& p) { return p.op < static_cast<uint64_t>(plan->len); };
    const uint32_t inputs = r->Count(8);
    for (uint32_t i = 0; i < inputs && r->ok(); ++i) {
      plan->inputs.push_back(r->Pos());
      if (!in_unit(plan->inputs.back())) return Malformed(index, "an input outside the group");
    }
    const uint32_t outputs = r->Count(9);
    for (uint32_t i = 0; i < outputs && r->ok(); ++i) {
      const TensorPos p = r->Pos();
      const bool staged = r->U8() != 0;
      if (!in_unit(p)) return Malformed(index, "an output outside the group");
      plan->outputs.emplace_back(p, staged);
    }
    const uint32_t params = r->Count(16);
    for (uint32_t i = 0; i < params && r->ok(); ++i) {
      const int64_t op = r->I64();
      const int64_t arg = r->I64();
      if (op < 0 || op >= plan->len || arg < 0 || arg > 0xffff) return Malformed(index, "a runtime scalar outside the group");
      plan->param_args.emplace_back(op, arg);
    }
    auto checks = std::make_shared<std::vector<runtime::CheckSlot>>();
    const uint32_t n_checks = r->Count(16);
    for (uint32_t i = 0; i < n_checks && r->ok(); ++i) {
      runtime::CheckSlot c;
      c.op_index = r->I64();
      c.message = r->Str();
      const uint32_t kind = r->U32();
      if (kind > static_cast<uint32_t>(base::ErrorKind::kDistBackend)) return Malformed(index, "a check of no error kind");
      c.kind = static_cast<base::ErrorKind>(kind);
      if (c.op_index < 0 || c.op_index >= plan->len) return Malformed(index, "a check outside the group");
      checks->push_back(std::move(c));
    }
    plan->checks = std::move(checks);
    plan->bytes_written = r->I64();
    plan->temporaries = r->I64();
    plan->func = r->Str();
  }
  if (!r->ok()) return Malformed(index, "truncated");
  s.plan = std::move(plan);
  return s;
}

}  // namespace

std::string EncodePlans(const std::vector<StoredPlan>& plans) {
  Writer w;
  w.U32(kPayloadVersion);
  w.U32(static_cast<uint32_t>(plans.size()));
  for (const StoredPlan& s : plans) EncodePlan(s, &w);
  return w.Take();
}

absl::StatusOr<std::vector<StoredPlan>> DecodePlans(absl::string_view bytes) {
  Reader r(bytes);
  const uint32_t version = r.U32();
  if (!r.ok() || version != kPayloadVersion) {
    return absl::DataLossError(absl::StrCat("malformed plan entry: payload version ", version, ", this build reads ",
                                            kPayloadVersion));
  }
  const uint32_t n = r.Count(30);
  std::vector<StoredPlan> plans;
  plans.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    absl::StatusOr<StoredPlan> s = DecodePlan(&r, i);
    if (!s.ok()) return s.status();
    plans.push_back(std::move(*s));
  }
  if (!r.ok() || !r.done()) return absl::DataLossError("malformed plan entry: its length does not match its plans");
  return plans;
}

bool SamePlan(const GroupPlan& a, const GroupPlan& b) {
  auto same_guards = [&] {
    if (a.guards.size() != b.guards.size()) return false;
    for (size_t i = 0; i < a.guards.size(); ++i) {
      const Guard& x = a.guards[i];
      const Guard& y = b.guards[i];
      if (x.op != y.op || x.arg != y.arg || x.kind != y.kind || x.bits != y.bits) return false;
    }
    return true;
  };
  auto same_pos = [](const TensorPos& x, const TensorPos& y) { return x.op == y.op && x.value == y.value && x.elem == y.elem; };
  if (a.kind != b.kind || a.len != b.len || a.next_op_by_op != b.next_op_by_op || !same_guards()) return false;
  if (a.kind != GroupPlan::Kind::kGroup) return true;
  if (a.key.material != b.key.material || a.live != b.live || a.param_args != b.param_args || a.inputs.size() != b.inputs.size() ||
      a.outputs.size() != b.outputs.size()) {
    return false;
  }
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    if (!same_pos(a.inputs[i], b.inputs[i])) return false;
  }
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    if (!same_pos(a.outputs[i].first, b.outputs[i].first) || a.outputs[i].second != b.outputs[i].second) return false;
  }
  return true;
}

PlanStore::PlanStore(runtime::cache::DiskCache* disk, std::string context, size_t max_written)
    : disk_(disk), context_(std::move(context)), max_written_(max_written) {}

std::string PlanStore::KeyMaterial(const Hash128& key) const {
  return absl::StrFormat("%s %016x%016x", context_, key.hi, key.lo);
}

std::optional<std::vector<StoredPlan>> PlanStore::Load(const Hash128& key) {
  const std::string material = KeyMaterial(key);
  std::optional<std::string> payload = disk_->LoadPlans(material);
  if (!payload.has_value()) return std::nullopt;
  absl::StatusOr<std::vector<StoredPlan>> plans = DecodePlans(*payload);
  if (!plans.ok()) {
    disk_->RejectLoadedPlans(material, std::string(plans.status().message()));
    return std::nullopt;
  }
  return std::move(*plans);
}

void PlanStore::Save(const Hash128& key, const std::vector<StoredPlan>& plans) {
  if (plans.empty() || written_.contains(key)) return;
  if (written_.size() >= max_written_) written_.clear();  // bounded: a key may be written again
  written_.insert(key);
  disk_->StorePlans(KeyMaterial(key), EncodePlans(plans)).IgnoreError();  // errors are counted and warned about
}

}  // namespace trn::scheduler
