#include "scheduler/miss_explainer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/op_runner.h"

namespace trn::scheduler {
namespace {

std::string List(c10::IntArrayRef v) { return absl::StrCat("[", absl::StrJoin(v, ", "), "]"); }

void DescribeValue(const std::string& what, const c10::IValue& v, MissExplainer::OpDesc* d) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) {
      d->props.emplace_back(what, "undefined");
      return;
    }
    d->props.emplace_back(absl::StrCat(what, " sizes"), List(t.sizes()));
    d->props.emplace_back(absl::StrCat(what, " dtype"), std::string(c10::toString(t.scalar_type())));
    d->props.emplace_back(absl::StrCat(what, " strides"), List(t.strides()));
    d->props.emplace_back(absl::StrCat(what, " storage offset"), absl::StrCat(t.storage_offset()));
    d->props.emplace_back(absl::StrCat(what, " device"), t.device().str());
  } else if (v.isTensorList()) {
    const auto list = v.toTensorList();
    d->props.emplace_back(absl::StrCat(what, " length"), absl::StrCat(list.size()));
    for (size_t i = 0; i < list.size(); ++i) {
      DescribeValue(absl::StrCat(what, "[", i, "]"), list.get(i), d);
    }
  } else if (v.isScalar()) {
    const c10::Scalar s = v.toScalar();
    d->props.emplace_back(what, s.isFloatingPoint() ? absl::StrCat(s.toDouble())
                                : s.isBoolean()     ? std::string(s.toBool() ? "True" : "False")
                                : s.isIntegral(false) ? absl::StrCat(s.toLong())
                                                      : "complex");
  } else if (v.isIntList()) {
    d->props.emplace_back(what, List(v.toIntVector()));
  } else if (v.isNone()) {
    d->props.emplace_back(what, "None");
  } else if (v.isString()) {
    d->props.emplace_back(what, v.toStringRef());
  } else {
    d->props.emplace_back(what, v.tagKind());
  }
}

}  // namespace

MissExplainer::OpDesc MissExplainer::Describe(const runtime::OpRecord& op) {
  OpDesc d;
  d.name = runtime::OpName(op.op);
  d.source = op.source;
  const auto& args = op.op.schema().arguments();
  for (size_t j = 0; j < op.args.size(); ++j) {
    const bool tensor = op.args[j].isTensor() || op.args[j].isTensorList();
    const std::string name = j < args.size() ? args[j].name() : absl::StrCat(j);
    DescribeValue(tensor ? absl::StrCat("input ", j, " (", name, ")") : absl::StrCat("argument ", name), op.args[j], &d);
  }
  return d;
}

std::vector<std::string> MissExplainer::Diff(const std::vector<OpDesc>& before, const std::vector<OpDesc>& after) {
  std::vector<std::string> changes;
  // Different ops from the same lines (e.g. an optimizer's first step initialising its state):
  // name the first one; property differences after it would be noise.
  for (size_t i = 0; i < before.size() && i < after.size(); ++i) {
    if (before[i].name != after[i].name) {
      return {absl::StrCat("op ", i, " at ", base::GlobalSourceTable().Format(after[i].source), " is ",
                           after[i].name, ", was ", before[i].name, " (the same lines issued different ops)")};
    }
  }
  for (size_t i = 0; i < before.size() && i < after.size(); ++i) {
    const OpDesc& b = before[i];
    const OpDesc& a = after[i];
    const std::string where =
        absl::StrCat(a.name, " at ", base::GlobalSourceTable().Format(a.source));
    for (size_t p = 0; p < a.props.size() && p < b.props.size(); ++p) {
      if (a.props[p] != b.props[p]) {
        changes.push_back(absl::StrCat(where, ": ", a.props[p].first, " ", b.props[p].second, " -> ", a.props[p].second));
      }
    }
    if (a.props.size() != b.props.size()) {
      changes.push_back(absl::StrCat(where, ": number of tensor properties changed"));
    }
  }
  return changes;
}

size_t MissExplainer::signatures() const {
  absl::MutexLock lock(&mu_);
  return seen_.size();
}

size_t MissExplainer::explained() const {
  absl::MutexLock lock(&mu_);
  return explained_.size();
}

std::optional<std::string> MissExplainer::OnMiss(const std::string& key_hex, const std::vector<runtime::OpRecord>& ops,
                                                 int64_t* forgotten) {
  std::string signature;
  bool any_line = false;
  for (const runtime::OpRecord& op : ops) {
    absl::StrAppend(&signature, op.source, ",");
    any_line |= op.source != base::kNoSource;
  }
  if (!any_line) return std::nullopt;
  std::vector<OpDesc> now;
  now.reserve(ops.size());
  for (const runtime::OpRecord& op : ops) now.push_back(Describe(op));
  absl::MutexLock lock(&mu_);
  auto it = seen_.find(signature);
  if (it == seen_.end()) {
    if (seen_.size() >= max_signatures_) {
      if (forgotten != nullptr) *forgotten += static_cast<int64_t>(seen_.size());
      seen_.clear();
    }
    seen_.emplace(signature, Seen{key_hex, std::move(now)});
    return std::nullopt;
  }
  if (it->second.key_hex == key_hex) return std::nullopt;  // evicted and seen again: no change
  std::vector<std::string> changes = Diff(it->second.ops, now);
  const std::string what =
      changes.empty()
          ? std::string("same ops and arguments; which of its results are used after the group changed (a tensor "
                        "was kept alive or freed), or how its buffers alias")
          : absl::StrJoin(changes.begin(), changes.begin() + std::min<size_t>(changes.size(), 3), "; ") +
                (changes.size() > 3 ? absl::StrCat(" (and ", changes.size() - 3, " more)") : "");
  const std::string previous = it->second.key_hex;
  it->second = Seen{key_hex, std::move(now)};
  std::string explanation_key = absl::StrCat(signature, "|", what);
  if (explained_.contains(explanation_key)) return std::nullopt;
  if (explained_.size() >= max_explained_) {
    if (forgotten != nullptr) *forgotten += static_cast<int64_t>(explained_.size());
    explained_.clear();
  }
  explained_.insert(std::move(explanation_key));
  return absl::StrCat("group ", key_hex, " (", ops.size(), " ops, first at ",
                      base::GlobalSourceTable().Format(ops.front().source), ") recompiles (was ", previous,
                      "): ", what);
}

}  // namespace trn::scheduler
