// An in-memory torch.distributed store for the distributed cache tier's tests (c10d semantics:
// get of an absent key answers nullopt, compare_set with "" as "absent"). Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "runtime/cache/remote_tier.h"

namespace trn::testing {

inline constexpr char kTestSecret[] = "a test secret of 32 characters!!";

// An in-memory store with the c10d semantics the tier relies on.
class FakeStore : public runtime::cache::RemoteStore {
 public:
  explicit FakeStore(int rank, std::shared_ptr<std::map<std::string, std::string>> kv,
                     std::shared_ptr<absl::Mutex> mu)
      : rank_(rank), kv_(std::move(kv)), mu_(std::move(mu)) {}
  int rank() const override { return rank_; }
  absl::StatusOr<std::optional<std::string>> Get(const std::string& key) override {
    absl::MutexLock lock(mu_.get());
    auto it = kv_->find(key);
    if (it == kv_->end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  absl::Status Set(const std::string& key, const std::string& value) override {
    absl::MutexLock lock(mu_.get());
    (*kv_)[key] = value;
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> CompareSet(const std::string& key, const std::string& expected,
                                         const std::string& desired) override {
    absl::MutexLock lock(mu_.get());
    auto it = kv_->find(key);
    const std::string current = it == kv_->end() ? "" : it->second;
    if (current == expected) {
      (*kv_)[key] = desired;
      return desired;
    }
    return current;
  }
  absl::Status DeleteKey(const std::string& key) override {
    absl::MutexLock lock(mu_.get());
    kv_->erase(key);
    return absl::OkStatus();
  }

 private:
  int rank_;
  std::shared_ptr<std::map<std::string, std::string>> kv_;
  std::shared_ptr<absl::Mutex> mu_;
};


}  // namespace trn::testing
