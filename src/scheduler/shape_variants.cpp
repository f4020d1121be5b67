#include "scheduler/shape_variants.h"

#include "absl/strings/str_cat.h"
#include "runtime/op_runner.h"

namespace trn::scheduler {

bool ShapeVariants::Admit(const std::string& key_hex, const std::vector<runtime::OpRecord>& ops) {
  if (limit_ <= 0) return true;
  std::string sequence;
  bool any_line = false;
  for (const runtime::OpRecord& op : ops) {
    absl::StrAppend(&sequence, runtime::OpName(op.op), "@", op.source, ",");
    any_line |= op.source != base::kNoSource;
  }
  if (!any_line) return true;
  absl::MutexLock lock(&mu_);
  if (keys_.size() >= kMaxSequences && !keys_.contains(sequence)) keys_.clear();
  absl::flat_hash_set<std::string>& keys = keys_[sequence];
  if (keys.contains(key_hex)) return true;
  if (static_cast<int64_t>(keys.size()) >= limit_) return false;
  keys.insert(key_hex);
  return true;
}

}  // namespace trn::scheduler
