#include "runtime/code_cache.h"

namespace trn::runtime {

CodeSlot::Code CodeSlot::code() const {
  absl::MutexLock lock(&mu_);
  return code_;
}

std::shared_ptr<const InstantProgram> CodeSlot::instant() const {
  absl::MutexLock lock(&mu_);
  return instant_;
}

void CodeSlot::SetInstant(std::shared_ptr<const InstantProgram> program) const {
  absl::MutexLock lock(&mu_);
  instant_ = std::move(program);
}

absl::Status CodeSlot::failure() const {
  absl::MutexLock lock(&mu_);
  return code_ != nullptr ? absl::OkStatus() : failure_;
}

void CodeSlot::Publish(Code code, int tier) {
  absl::MutexLock lock(&mu_);
  if (code_ == nullptr || tier > tier_) {
    code_ = std::move(code);
    tier_ = tier;
  }
}

void CodeSlot::Fail(absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (failure_.ok()) {
    failure_ = std::move(status);
  }
}

bool CodeSlot::AwaitFor(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(this, &CodeSlot::Settled), timeout);
}

int64_t CodeSlot::bytes() const {
  absl::MutexLock lock(&mu_);
  return code_ == nullptr ? 0 : code_->info().bytes;
}

bool CodeSlot::settled() const {
  absl::MutexLock lock(&mu_);
  return Settled();
}

CodeCache::CodeCache(CodeCacheLimits limits, cache::CacheStats* stats) : limits_(limits), stats_(stats) {}

std::shared_ptr<CodeSlot> CodeCache::Lookup(const std::string& key, bool* created) {
  absl::MutexLock lock(&mu_);
  auto it = slots_.find(key);
  if (it != slots_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    *created = false;
    if (stats_ != nullptr) stats_->Update([](cache::CacheCounters& c) { ++c.mem_hits; });
    return it->second.slot;
  }
  EvictLocked(/*room=*/1);
  lru_.push_front(key);
  auto slot = std::make_shared<CodeSlot>();
  slots_.emplace(key, Entry{slot, lru_.begin()});
  *created = true;
  if (stats_ != nullptr) stats_->Update([](cache::CacheCounters& c) { ++c.mem_misses; });
  return slot;
}

void CodeCache::Trim() {
  absl::MutexLock lock(&mu_);
  EvictLocked(/*room=*/0);
}

void CodeCache::EvictLocked(int64_t room) {
  // Entries are bounded including the `room` about to be added; bytes are known only for code
  // already built. O(entries) per miss: misses are rare (a new group), hits stay O(1).
  int64_t total = 0;
  for (const auto& [key, e] : slots_) total += e.slot->bytes();
  int64_t evicted = 0;
  for (auto it = lru_.end(); it != lru_.begin();) {
    if (static_cast<int64_t>(slots_.size()) + room <= limits_.max_entries && total <= limits_.max_bytes) break;
    --it;
    auto entry = slots_.find(*it);
    if (!entry->second.slot->settled()) continue;  // still building: its builder will publish into it
    total -= entry->second.slot->bytes();
    slots_.erase(entry);
    it = lru_.erase(it);
    ++evicted;
  }
  if (evicted > 0 && stats_ != nullptr) {
    stats_->Update([evicted](cache::CacheCounters& c) { c.mem_evictions += evicted; });
  }
}

void CodeCache::Erase(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = slots_.find(key);
  if (it != slots_.end()) {
    lru_.erase(it->second.lru);
    slots_.erase(it);
  }
}

int64_t CodeCache::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(slots_.size());
}

int64_t CodeCache::bytes() const {
  absl::MutexLock lock(&mu_);
  int64_t total = 0;
  for (const auto& [key, e] : slots_) total += e.slot->bytes();
  return total;
}

void CodeCache::Clear() {
  absl::MutexLock lock(&mu_);
  slots_.clear();
  lru_.clear();
}

}  // namespace trn::runtime
