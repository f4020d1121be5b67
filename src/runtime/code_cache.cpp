#include "runtime/code_cache.h"

namespace trn::runtime {

CodeCache::Entry CodeCache::GetOrCompile(const std::string& key, const std::function<Entry()>& compile, bool* hit) {
  {
    absl::MutexLock lock(&mu_);
    auto ready = [this, &key]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !in_flight_.contains(key); };
    mu_.Await(absl::Condition(&ready));
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      *hit = true;
      return it->second;
    }
    in_flight_.insert(key);
  }
  *hit = false;
  Entry entry = compile();
  absl::MutexLock lock(&mu_);
  in_flight_.erase(key);
  entries_.insert_or_assign(key, entry);
  return entry;
}

int64_t CodeCache::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(entries_.size());
}

void CodeCache::Clear() {
  absl::MutexLock lock(&mu_);
  entries_.clear();
}

}  // namespace trn::runtime
