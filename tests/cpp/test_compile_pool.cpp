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
#include "runtime/stats.h"
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

}  // namespace

TEST_CASE("a build waiting on another rank's lease when the pool shuts down fails its slot", "[compile_pool]") {
  auto store = std::make_shared<HeldLeaseStore>();
  cache::SetRemoteStoreProvider([store] { return store; });
  trn::scheduler::CompilerOptions options;
  options.distributed = true;
  options.remote.secret = trn::testing::kTestSecret;
  trn::runtime::Stats stats;
  cache::CacheStats cache_stats;
  {
    trn::scheduler::GroupCompiler compiler(options, &stats, &cache_stats);
    compiler.RefreshRemote();  // finds the store (as a flush does before queueing builds)
    REQUIRE(compiler.remote()->known_store() != nullptr);
    trn::scheduler::CompilePoolOptions pool_options;
    pool_options.tiering = false;
    pool_options.poll_ms = 5;
    pool_options.nice = 0;
    CompilePool pool(pool_options, &compiler);
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
    CHECK(cache_stats.Snapshot().lease_waits == 1);
  }
  cache::SetRemoteStoreProvider(nullptr);
}

TEST_CASE("jobs parked on a lease when the pool shuts down fail their slots", "[compile_pool]") {
  auto store = std::make_shared<HeldLeaseStore>();
  store->release_.Notify();  // never blocks: every build parks
  cache::SetRemoteStoreProvider([store] { return store; });
  trn::scheduler::CompilerOptions options;
  options.distributed = true;
  options.remote.secret = trn::testing::kTestSecret;
  trn::runtime::Stats stats;
  cache::CacheStats cache_stats;
  {
    trn::scheduler::GroupCompiler compiler(options, &stats, &cache_stats);
    compiler.RefreshRemote();
    trn::scheduler::CompilePoolOptions pool_options;
    pool_options.tiering = false;
    pool_options.poll_ms = 5;
    pool_options.nice = 0;
    CompilePool pool(pool_options, &compiler);
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
  cache::SetRemoteStoreProvider(nullptr);
}

TEST_CASE("the compile history keeps the most recent builds only, counting what it dropped", "[compile_pool][bounded]") {
  trn::scheduler::CompilerOptions options;
  options.history_limit = 8;
  trn::runtime::Stats stats;
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
