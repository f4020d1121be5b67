#include "runtime/code_cache.h"

namespace trn::runtime {

CodeSlot::Code CodeSlot::code() const {
  absl::MutexLock lock(&mu_);
  return code_;
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

absl::StatusOr<CodeSlot::Code> CodeSlot::Await() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &CodeSlot::Settled));
  if (code_ != nullptr) {
    return code_;
  }
  return failure_;
}

std::shared_ptr<CodeSlot> CodeCache::Lookup(const std::string& key, bool* created) {
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = slots_.try_emplace(key);
  if (inserted) {
    it->second = std::make_shared<CodeSlot>();
  }
  *created = inserted;
  return it->second;
}

void CodeCache::Erase(const std::string& key) {
  absl::MutexLock lock(&mu_);
  slots_.erase(key);
}

int64_t CodeCache::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(slots_.size());
}

void CodeCache::Clear() {
  absl::MutexLock lock(&mu_);
  slots_.clear();
}

}  // namespace trn::runtime
