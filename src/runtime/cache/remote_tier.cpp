#include "runtime/cache/remote_tier.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "base/stats.h"
#include "runtime/cache/disk_cache.h"
#include "runtime/cache/remote_auth.h"
#include "base/log.h"

namespace trn::runtime::cache {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The expiry of a lease value "<rank>:<pid>:<expiry ms>", or -1 if unparsable (treated as
// expired: nobody can renew a value that is not ours).
int64_t LeaseExpiry(const std::string& value) {
  std::vector<absl::string_view> parts = absl::StrSplit(value, ':');
  int64_t expiry = -1;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[2], &expiry)) return -1;
  return expiry;
}

absl::Mutex g_provider_mu;
RemoteStoreProvider* g_provider ABSL_GUARDED_BY(g_provider_mu) = nullptr;

std::atomic<int64_t> g_process_group_created_ns{-1};

RemoteStoreProvider GlobalProvider() {
  absl::MutexLock lock(&g_provider_mu);
  return g_provider == nullptr ? RemoteStoreProvider() : *g_provider;
}

}  // namespace

void SetRemoteStoreProvider(RemoteStoreProvider provider) {
  absl::MutexLock lock(&g_provider_mu);
  delete g_provider;
  g_provider = new RemoteStoreProvider(std::move(provider));
}

void NoteProcessGroupCreated() { g_process_group_created_ns.store(base::SteadyNs(), std::memory_order_release); }

int64_t ProcessGroupCreatedNs() { return g_process_group_created_ns.load(std::memory_order_acquire); }

bool RemoteRefreshDue(int64_t now_ns, int64_t last_asked_ns, int64_t group_created_ns) {
  if (last_asked_ns < 0) return true;
  if (group_created_ns >= 0 && now_ns - group_created_ns < kAskEveryFlushAfterGroupNs) return true;
  return now_ns - last_asked_ns >= kRemoteRefreshNs;
}

RemoteTier::RemoteTier(RemoteOptions options, RemoteStoreProvider provider, CacheStats* stats)
    : options_(std::move(options)), provider_(std::move(provider)), stats_(stats) {}

RemoteTier::~RemoteTier() { Shutdown(); }

std::shared_ptr<RemoteStore> RemoteTier::known_store() {
  absl::MutexLock lock(&mu_);
  return store_;
}

std::shared_ptr<RemoteStore> RemoteTier::store() {
  {
    // Asked again every time while there is none (once per flush that builds something, never
    // per op): the program may initialise torch.distributed at any point, and a build that
    // missed it would be compiled by every rank. Without a secret (refused once: the
    // environment and the file do not change) nothing is shared, so nothing is asked again.
    absl::MutexLock lock(&mu_);
    if (store_ != nullptr || stop_ || secret_refused_) return store_;
  }
  const RemoteStoreProvider provider = provider_ ? provider_ : GlobalProvider();
  std::shared_ptr<RemoteStore> s = provider ? provider() : nullptr;  // may take the GIL: not under mu_
  if (s == nullptr) return nullptr;
  // Builds are shared only under the job's secret (remote_auth.h): without one, nothing is.
  absl::StatusOr<std::string> secret =
      LoadJobSecret(options_.secret, options_.secret_file, ExpectedUid(options_.owner_uid));
  absl::MutexLock lock(&mu_);
  if (!secret.ok()) {
    if (!secret_refused_) {
      secret_refused_ = true;
      base::Log(base::LogLevel::kWarning,
                absl::StrCat("distributed compile cache off: no secret to sign shared builds with (",
                             secret.status().message(),
                             "); every rank compiles for itself. Set NEURON_CACHE_SECRET to the "
                             "same value on every rank (docs/cache.md)"));
    }
    return nullptr;
  }
  if (store_ == nullptr) {
    store_ = std::move(s);
    secret_ = std::move(*secret);
    base::Log(base::LogLevel::kInfo, absl::StrCat("distributed compile cache: rank ", store_->rank(),
                                                  " shares builds through torch.distributed's store"));
  }
  return store_;
}

int RemoteTier::rank() {
  std::shared_ptr<RemoteStore> s = store();
  return s == nullptr ? -1 : s->rank();
}

std::string RemoteTier::LeaseValue(int rank) const {
  return absl::StrCat(rank, ":", ::getpid(), ":", NowMs() + static_cast<int64_t>(options_.lease_s * 1000));
}

RemoteTier::Probe RemoteTier::FetchOrClaim(const std::string& name) {
  Probe p;
  std::shared_ptr<RemoteStore> s = store();
  if (s == nullptr) return p;
  auto error = [&](const absl::Status& status) {
    stats_->Update([](CacheCounters& c) { ++c.remote_errors; });
    p.state = State::kError;
    p.detail = std::string(status.message());
    return p;
  };
  absl::StatusOr<std::optional<std::string>> done = Done(name);
  if (!done.ok()) return error(done.status());
  if (done->has_value()) {
    const std::string& v = **done;
    if (absl::StartsWith(v, "failed:")) {
      p.state = State::kFailed;
      p.detail = v.substr(7);
    } else {
      p.state = State::kPublished;
      p.detail = absl::StartsWith(v, "ok:") ? v.substr(3) : "";
    }
    return p;
  }
  const std::string lease_key = name + "/lease";
  const std::string mine = LeaseValue(s->rank());
  absl::StatusOr<std::string> now = s->CompareSet(lease_key, "", mine);
  if (!now.ok()) return error(now.status());
  bool claimed = *now == mine;
  bool takeover = false;
  if (!claimed && LeaseExpiry(*now) < NowMs()) {  // the holder stopped renewing: it died
    absl::StatusOr<std::string> after = s->CompareSet(lease_key, *now, mine);
    if (!after.ok()) return error(after.status());
    claimed = takeover = *after == mine;
    if (!claimed) *now = *after;
  }
  if (!claimed) {
    p.state = State::kHeldElsewhere;
    p.holder = *now;
    return p;
  }
  stats_->Update([takeover](CacheCounters& c) {
    ++c.lease_claims;
    if (takeover) ++c.lease_takeovers;
  });
  if (takeover) {
    base::Log(base::LogLevel::kWarning, absl::StrCat("distributed compile cache: took over ", name,
                                                     " from a rank that stopped renewing its lease (", *now, ")"));
  }
  {
    absl::MutexLock lock(&mu_);
    held_[name] = mine;
    if (!heartbeat_.joinable() && !stop_) heartbeat_ = std::thread([this] { Heartbeat(); });
  }
  if (options_.test_fault == "kill_after_claim") {
    ::raise(SIGKILL);
  }
  p.state = State::kClaimed;
  return p;
}

std::string RemoteTier::Secret() {
  absl::MutexLock lock(&mu_);
  return secret_;
}

absl::StatusOr<std::string> RemoteTier::FetchBytes(const std::string& name) {
  std::shared_ptr<RemoteStore> s = store();
  if (s == nullptr) return absl::UnavailableError("no distributed store");
  const std::string key = name + "/bytes";
  absl::StatusOr<std::optional<std::string>> bytes = s->Get(key);
  if (!bytes.ok()) return bytes.status();
  if (!bytes->has_value()) return absl::NotFoundError(absl::StrCat(key, " is missing"));
  return Verify(Secret(), key, **bytes);
}

absl::StatusOr<std::optional<std::string>> RemoteTier::Done(const std::string& name) {
  std::shared_ptr<RemoteStore> s = store();
  if (s == nullptr) return absl::UnavailableError("no distributed store");
  const std::string key = name + "/done";
  absl::StatusOr<std::optional<std::string>> done = s->Get(key);
  if (!done.ok() || !done->has_value()) return done;
  absl::StatusOr<std::string> value = Verify(Secret(), key, **done);
  if (!value.ok()) return value.status();
  return std::optional<std::string>(std::move(*value));
}

void RemoteTier::Release(const std::string& name) {
  absl::MutexLock lock(&mu_);
  held_.erase(name);
}

void RemoteTier::Publish(const std::string& name, const std::string& bytes, const std::string& dir_token) {
  std::shared_ptr<RemoteStore> s = store();
  if (s != nullptr) {
    const std::string secret = Secret();
    absl::Status st = s->Set(name + "/bytes", Sign(secret, name + "/bytes", bytes));
    if (st.ok()) st = s->Set(name + "/done", Sign(secret, name + "/done", absl::StrCat("ok:", dir_token)));
    if (st.ok()) {
      stats_->Update([](CacheCounters& c) { ++c.remote_publishes; });
    } else {
      stats_->Update([](CacheCounters& c) { ++c.remote_errors; });
    }
    Retire(s.get(), name);
  }
  Release(name);
}

void RemoteTier::Retire(RemoteStore* s, const std::string& name) {
  std::vector<std::string> expired;
  {
    absl::MutexLock lock(&mu_);
    published_.push_back(name);
    while (published_.size() > options_.max_published) {
      expired.push_back(std::move(published_.front()));
      published_.pop_front();
    }
  }
  for (const std::string& old : expired) {
    // `done` first: a rank that no longer sees it does not look for the bytes.
    absl::Status st = s->DeleteKey(old + "/done");
    if (st.ok()) st = s->DeleteKey(old + "/bytes");
    if (st.ok()) st = s->DeleteKey(old + "/lease");
    stats_->Update([ok = st.ok()](CacheCounters& c) { ++(ok ? c.store_entries_deleted : c.remote_errors); });
  }
}

void RemoteTier::PublishFailure(const std::string& name, const std::string& reason) {
  std::shared_ptr<RemoteStore> s = store();
  if (s != nullptr && s->Set(name + "/done", Sign(Secret(), name + "/done", absl::StrCat("failed:", reason))).ok()) {
    stats_->Update([](CacheCounters& c) { ++c.failures_published; });
    Retire(s.get(), name);
  }
  Release(name);
}

void RemoteTier::Heartbeat() {
  const absl::Duration period = absl::Milliseconds(std::max(10.0, options_.lease_s * 1000 / 3));
  while (true) {
    std::vector<std::pair<std::string, std::string>> held;
    std::shared_ptr<RemoteStore> s;
    {
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
      mu_.AwaitWithTimeout(absl::Condition(&stopping), period);
      if (stop_) return;
      held.assign(held_.begin(), held_.end());
      s = store_;
    }
    if (s == nullptr) continue;
    for (const auto& [name, old_value] : held) {
      const std::string renewed = LeaseValue(s->rank());
      absl::StatusOr<std::string> now = s->CompareSet(name + "/lease", old_value, renewed);
      absl::MutexLock lock(&mu_);
      auto it = held_.find(name);
      if (it == held_.end() || it->second != old_value) continue;  // published meanwhile
      if (now.ok() && *now == renewed) {
        it->second = renewed;
      } else if (now.ok()) {
        held_.erase(it);  // taken over (we were too slow to renew): the new holder builds it too
      }
    }
  }
}

void RemoteTier::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (heartbeat_.joinable()) heartbeat_.join();
}

}  // namespace trn::runtime::cache
