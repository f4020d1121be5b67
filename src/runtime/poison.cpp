#include "runtime/poison.h"

#include <atomic>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace trn::runtime {
namespace {

struct Mark {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;  // pins the address (see poison.h)
  absl::Status origin;
};

class Table {
 public:
  void Add(c10::StorageImpl* storage, const absl::Status& origin) {
    absl::MutexLock lock(&mu_);
    if (marks_.size() >= prune_at_) {
      PruneLocked();
      prune_at_ = std::max<size_t>(64, 2 * marks_.size());
    }
    if (!marks_.contains(storage)) {  // (the first failure stays)
      marks_.emplace(storage, Mark{c10::weak_intrusive_ptr<c10::StorageImpl>(
                                       c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(storage)),
                                   origin});
    }
    count_.store(marks_.size(), std::memory_order_relaxed);
  }

  absl::Status Find(const c10::StorageImpl* storage) {
    absl::MutexLock lock(&mu_);
    auto it = marks_.find(storage);
    if (it == marks_.end() || it->second.storage.expired()) {
      return absl::OkStatus();
    }
    return it->second.origin;
  }

  void Erase(const c10::StorageImpl* storage) {
    absl::MutexLock lock(&mu_);
    marks_.erase(storage);
    count_.store(marks_.size(), std::memory_order_relaxed);
  }

  size_t Prune() {
    absl::MutexLock lock(&mu_);
    PruneLocked();
    return marks_.size();
  }

  bool Any() const { return count_.load(std::memory_order_relaxed) != 0; }

 private:
  void PruneLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::erase_if(marks_, [](const auto& entry) { return entry.second.storage.expired(); });
    count_.store(marks_.size(), std::memory_order_relaxed);
  }

  absl::Mutex mu_;
  absl::flat_hash_map<const c10::StorageImpl*, Mark> marks_ ABSL_GUARDED_BY(mu_);
  size_t prune_at_ ABSL_GUARDED_BY(mu_) = 64;
  std::atomic<size_t> count_{0};
};

// Never destroyed: storages may be freed (and checked) during process exit.
Table& Marks() {
  static auto* table = new Table();
  return *table;
}

}  // namespace

bool AnyPoisoned() { return Marks().Any(); }

void Poison(c10::StorageImpl* storage, const absl::Status& origin) {
  if (storage != nullptr && !origin.ok()) Marks().Add(storage, origin);
}

absl::Status PoisonOf(const c10::StorageImpl* storage) {
  if (storage == nullptr || !AnyPoisoned()) return absl::OkStatus();
  return Marks().Find(storage);
}

void ClearPoison(const c10::StorageImpl* storage) {
  if (storage != nullptr && AnyPoisoned()) Marks().Erase(storage);
}

size_t PrunePoison() { return AnyPoisoned() ? Marks().Prune() : 0; }

absl::Status CheckReadable(const c10::StorageImpl* storage) {
  const absl::Status origin = PoisonOf(storage);
  if (origin.ok()) return origin;
  absl::Status out(origin.code(),
                   absl::StrCat("neuron: this tensor has no valid value: the op that writes it failed, or was skipped "
                                "after this error: ",
                                origin.message()));
  origin.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

}  // namespace trn::runtime
