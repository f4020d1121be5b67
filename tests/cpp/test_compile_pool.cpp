// CompilePool shutdown (scheduler/compile_pool.h): every build it drops fails its slot, so that
// nobody awaits a slot that will never settle.
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "fake_store.h"
#include "runtime/cache/remote_tier.h"
#include "runtime/code_cache.h"
#include "base/stats.h"
#include "scheduler/compile_pool.h"
#include "scheduler/group_compiler.h"
#include <catch2/catch.hpp>

namespace cache = trn::runtime::cache;
using trn::scheduler::CompilePool;
using trn::scheduler::CompileRequest;

namespace {

// A store where rank 0 holds every build's lease for ever. Once armed, the first lease claim
// blocks until released: the test shuts the pool down while a build is asking about its lease.
class HeldLeaseStore : public trn::testing::FakeStore {
 public:
  HeldLeaseStore()
      : FakeStore(1, std::make_shared<std::map<std::string, std::string>>(), std::make_shared<absl::Mutex>()) {}
  absl::StatusOr<std::string> CompareSet(const std::string& key, const std::string& expected,
                                         const std::string& desired) override {
    if (!entered_.HasBeenNotified()) entered_.Notify();
    release_.WaitForNotification();
    return std::string("0:1:99999999999999");  // "<rank>:<pid>:<expiry ms>": never expires
  }
  absl::Notification entered_, release_;
};

CompileRequest Request(const std::string& key) {
  CompileRequest r;
  r.key_hex = key;
  r.key_material = "material of " + key;
  return r;
}

trn::scheduler::CompilerOptions DistributedOptions() {
  trn::scheduler::CompilerOptions options;
  options.distributed = true;
  options.remote.secret = trn::testing::kTestSecret;
  return options;
}

trn::scheduler::CompilePoolOptions PoolOptions() {
  trn::scheduler::CompilePoolOptions options;
  options.tiering = false;
  options.poll_ms = 5;
  options.nice = 0;
  return options;
}

// Makes `store` the remote store while in scope.
struct StoreProviderGuard {
  explicit StoreProviderGuard(std::shared_ptr<HeldLeaseStore> store) {
    cache::SetRemoteStoreProvider([store] { return store; });
  }
  ~StoreProviderGuard() { cache::SetRemoteStoreProvider(nullptr); }
};

// A compile pool whose compiler shares its builds through `store`, which it has found (as a
// flush finds it before queueing builds). Members go in reverse order: the store last.
struct PoolOnStore {
  explicit PoolOnStore(std::shared_ptr<HeldLeaseStore> store)
      : provider(std::move(store)), compiler(DistributedOptions(), &stats, &cache_stats),
        pool((compiler.RefreshRemote(), PoolOptions()), &compiler) {}
  StoreProviderGuard provider;
  trn::base::Stats stats;
  cache::CacheStats cache_stats;
  trn::scheduler::GroupCompiler compiler;
  CompilePool pool;
};

}  // namespace

TEST_CASE("a build waiting on another rank's lease when the pool shuts down fails its slot", "[compile_pool]") {
  auto store = std::make_shared<HeldLeaseStore>();
  {
    PoolOnStore setup(store);
    CompilePool& pool = setup.pool;
    REQUIRE(setup.compiler.remote()->known_store() != nullptr);
    auto slot = std::make_shared<trn::runtime::CodeSlot>();
    REQUIRE(pool.Submit(Request("held"), slot));
    REQUIRE(store->entered_.WaitForNotificationWithTimeout(absl::Seconds(30)));

    // Shut down while the worker asks about the lease; Submit refuses from then on.
    std::thread shutdown([&pool] { pool.Shutdown(); });
    auto queued = std::make_shared<trn::runtime::CodeSlot>();
    int accepted = 0;
    while (pool.Submit(Request("late"), queued)) {  // queued before the stop: failed by Shutdown
      ++accepted;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    store->release_.Notify();  // the worker sees the lease held elsewhere, after the stop
    shutdown.join();

    CHECK(slot->settled());
    CHECK(slot->code() == nullptr);
    CHECK(absl::IsCancelled(slot->failure()));
    CHECK(std::string(slot->failure().message()).find("held") != std::string::npos);
    CHECK(std::string(slot->failure().message()).find("lease") != std::string::npos);
    CHECK(slot->AwaitFor(absl::ZeroDuration()));
    if (accepted > 0) CHECK(absl::IsCancelled(queued->failure()));
    CHECK(setup.cache_stats.Snapshot().lease_waits == 1);
  }
}

TEST_CASE("jobs parked on a lease when the pool shuts down fail their slots", "[compile_pool]") {
  auto store = std::make_shared<HeldLeaseStore>();
  store->release_.Notify();  // never blocks: every build parks
  {
    PoolOnStore setup(store);
    CompilePool& pool = setup.pool;
    cache::CacheStats& cache_stats = setup.cache_stats;
    auto a = std::make_shared<trn::runtime::CodeSlot>();
    auto b = std::make_shared<trn::runtime::CodeSlot>();
    REQUIRE(pool.Submit(Request("a"), a));
    REQUIRE(pool.Submit(Request("b"), b));
    // Both are parked (waited for) and retried while rank 0 holds their leases.
    for (int i = 0; i < 3000 && cache_stats.Snapshot().lease_waits < 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    REQUIRE(cache_stats.Snapshot().lease_waits == 2);
    CHECK_FALSE(a->settled());
    pool.Shutdown();
    for (const auto& slot : {a, b}) {
      CHECK(absl::IsCancelled(slot->failure()));
      CHECK(std::string(slot->failure().message()).find("lease") != std::string::npos);
    }
  }
}

TEST_CASE("the compile history keeps the most recent builds only, counting what it dropped", "[compile_pool][bounded]") {
  trn::scheduler::CompilerOptions options;
  options.history_limit = 8;
  trn::base::Stats stats;
  cache::CacheStats cache_stats;
  trn::scheduler::GroupCompiler compiler(options, &stats, &cache_stats);
  // Requests without records fail at once, after their first build was recorded.
  for (int i = 0; i < 20; ++i) {
    trn::scheduler::BuildResult r = compiler.Build(Request("k" + std::to_string(i)), compiler.FinalLevels(), 0);
    REQUIRE_FALSE(r.code.ok());
  }
  const std::vector<std::string> keys = compiler.CompiledKeys();
  REQUIRE(keys.size() == 8);
  CHECK(keys.front() == "k12");
  CHECK(keys.back() == "k19");
  CHECK(cache_stats.Snapshot().history_dropped == 12);
}
