// The compiled-code cache tiers: entry format (every corruption is detected), the trust rule,
// the disk tier (atomic publish, rejection, deletion, eviction, read-only), the memory LRU, the
// distributed lease protocol over a fake store, and miss explanations.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "runtime/cache/disk_cache.h"
#include "runtime/cache/entry_format.h"
#include "runtime/cache/remote_tier.h"
#include "runtime/code_cache.h"
#include "runtime/code_loader.h"
#include "runtime/neuroncore/instruction_stream.h"
#include "base/stats.h"
#include "runtime/op_record.h"
#include "base/source_table.h"
#include "scheduler/miss_explainer.h"
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include "fake_store.h"

#include <catch2/catch.hpp>

namespace cache = trn::runtime::cache;
using cache::Artifact;
using cache::Identity;
using cache::Reject;

namespace {

const Identity kId{"torch-trn test build; MLIR/LLVM 16", "x86_64;znver3;+avx2"};

Artifact MakeArtifact(const std::string& key, int size = 1000) {
  Artifact a;
  a.key_material = key;
  a.object = std::string(static_cast<size_t>(size), '\0');
  for (int i = 0; i < size; ++i) a.object[static_cast<size_t>(i)] = static_cast<char>(i * 7 + 3);
  a.entry_symbol = "_mlir_ciface_group";
  a.levels = {3, 3};
  a.num_inputs = 2;
  a.num_outputs = 1;
  return a;
}

std::string TempDir() {
  char tmpl[] = "/tmp/trn_cache_test_XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  return tmpl;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("an entry round-trips and every flipped byte or truncation is rejected", "[cache][format]") {
  const Artifact a = MakeArtifact("key-material");
  const std::string bytes = cache::Encode(a, kId);
  Reject r;
  absl::StatusOr<Artifact> back = cache::Decode(bytes, &kId, &a.key_material, &r);
  REQUIRE(back.ok());
  CHECK(r == Reject::kNone);
  CHECK(back->object == a.object);
  CHECK(back->entry_symbol == a.entry_symbol);
  CHECK(back->num_inputs == 2);
  CHECK(back->num_outputs == 1);
  CHECK(back->levels == a.levels);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    INFO("flipped byte " << i);
    CHECK_FALSE(cache::Decode(bad, &kId, &a.key_material, &r).ok());
    CHECK(r != Reject::kNone);
  }
  for (size_t n = 0; n < bytes.size(); n += 7) {
    INFO("truncated to " << n);
    CHECK_FALSE(cache::Decode(bytes.substr(0, n), &kId, &a.key_material, &r).ok());
    CHECK((r == Reject::kTruncated || r == Reject::kBadMagic));
  }
}

TEST_CASE("format version, identity and key mismatches have their own reasons", "[cache][format]") {
  const Artifact a = MakeArtifact("k");
  std::string bytes = cache::Encode(a, kId);
  Reject r;
  std::string v2 = bytes;
  v2[8] = 99;
  CHECK_FALSE(cache::Decode(v2, &kId, nullptr, &r).ok());
  CHECK(r == Reject::kFormatVersion);
  Identity other = kId;
  other.compiler_version = "torch-trn other build";
  CHECK_FALSE(cache::Decode(bytes, &other, nullptr, &r).ok());
  CHECK(r == Reject::kCompilerVersion);
  other = kId;
  other.target = "aarch64";
  CHECK_FALSE(cache::Decode(bytes, &other, nullptr, &r).ok());
  CHECK(r == Reject::kTarget);
  const std::string other_key = "another key";
  CHECK_FALSE(cache::Decode(bytes, &kId, &other_key, &r).ok());
  CHECK(r == Reject::kKeyMismatch);
  CHECK(cache::Decode("not an entry at all, but long enough to hold a header.........", &kId, nullptr, &r).status().message().find("bad_magic") != std::string::npos);
  CHECK(cache::EntryHash(kId, "k") != cache::EntryHash(other, "k"));
  CHECK(cache::EntryHash(kId, "k").size() == 32);
}

TEST_CASE("the trust rule: owner must match, no group/world write", "[cache][trust]") {
  CHECK(cache::CheckTrusted({1000, S_IFDIR | 0700}, 1000) == Reject::kNone);
  CHECK(cache::CheckTrusted({1000, S_IFREG | 0644}, 1000) == Reject::kNone);
  CHECK(cache::CheckTrusted({0, S_IFREG | 0600}, 1000) == Reject::kInsecureOwner);
  CHECK(cache::CheckTrusted({1000, S_IFDIR | 0770}, 1000) == Reject::kInsecureMode);
  CHECK(cache::CheckTrusted({1000, S_IFDIR | 0702}, 1000) == Reject::kInsecureMode);
  CHECK(cache::CheckTrusted({1000, S_IFDIR | 01777}, 1000) == Reject::kInsecureMode);
}

TEST_CASE("disk tier: store, load, reject, delete, read-only", "[cache][disk]") {
  const std::string dir = TempDir() + "/not/yet/cache";  // created with its parents
  cache::CacheStats stats;
  cache::DiskCache disk({dir, false, int64_t{1} << 30, -1, ""}, kId, &stats);
  const Artifact a = MakeArtifact("group-a");
  CHECK_FALSE(disk.Load(a.key_material, a.levels).has_value());
  REQUIRE(disk.Store(a).ok());
  const std::string path = disk.EntryPath(a.key_material, a.levels);
  REQUIRE(Exists(path));
  struct stat st;
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  std::optional<Artifact> hit = disk.Load(a.key_material, a.levels);
  REQUIRE(hit.has_value());
  CHECK(hit->object == a.object);
  CHECK_FALSE(disk.Load(a.key_material, cache::Levels{1, 0}).has_value());  // other levels: other entry

  SECTION("a flipped byte is rejected, counted and the file deleted") {
    std::string bytes = ReadFile(path);
    bytes[bytes.size() - 10] ^= 0x40;
    WriteFile(path, bytes);
    CHECK_FALSE(disk.Load(a.key_material, a.levels).has_value());
    CHECK(stats.Snapshot().disk_rejected["hash_mismatch"] == 1);
    CHECK_FALSE(Exists(path));
  }
  SECTION("a group-writable entry is ignored but not deleted") {
    REQUIRE(::chmod(path.c_str(), 0664) == 0);
    CHECK_FALSE(disk.Load(a.key_material, a.levels).has_value());
    CHECK(stats.Snapshot().disk_rejected["insecure_mode"] == 1);
    CHECK(Exists(path));
  }
  SECTION("a world-writable shard directory makes its entries untrusted") {
    const std::string shard = path.substr(0, path.rfind('/'));
    REQUIRE(::chmod(shard.c_str(), 0777) == 0);
    CHECK_FALSE(disk.Load(a.key_material, a.levels).has_value());
    CHECK(stats.Snapshot().disk_rejected["insecure_mode"] == 1);
    // Never written there either: not over the entry it rejected, not by a fresh process.
    CHECK(disk.Store(MakeArtifact("group-a")).ok());
    CHECK(stats.Snapshot().disk_writes == 1);
    cache::DiskCache fresh({dir, false, int64_t{1} << 30, -1, ""}, kId, &stats);
    CHECK_FALSE(fresh.Store(MakeArtifact("group-a")).ok());
    CHECK(stats.Snapshot().disk_write_errors == 1);
  }
  SECTION("entries owned by another uid are ignored") {
    cache::DiskCache foreign({dir, false, int64_t{1} << 30, static_cast<int64_t>(::geteuid()) + 1, ""}, kId, &stats);
    CHECK_FALSE(foreign.Load(a.key_material, a.levels).has_value());
    CHECK(stats.Snapshot().disk_rejected["insecure_owner"] == 1);
    CHECK(Exists(path));
  }
  SECTION("a FIFO at an entry path is rejected at once, never opened blocking (it hung a run)") {
    REQUIRE(::unlink(path.c_str()) == 0);
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    CHECK_FALSE(disk.Load(a.key_material, a.levels).has_value());  // returns: no writer needed
    CHECK(stats.Snapshot().disk_rejected["not_regular_file"] == 1);
    for (const cache::EntryInfo& e : cache::ListEntries(dir, true)) {  // returns: nothing blocks
      if (e.path == path) CHECK(e.status != "ok");
    }
  }
  SECTION("a file larger than any entry is rejected without being read") {
    REQUIRE(::truncate(path.c_str(), cache::kMaxEntryBytes + 1) == 0);  // sparse: no disk used
    CHECK_FALSE(disk.Load(a.key_material, a.levels).has_value());
    CHECK(stats.Snapshot().disk_rejected["too_large"] == 1);
  }
  SECTION("read-only mode loads and never writes") {
    cache::DiskCache ro({dir, true, int64_t{1} << 30, -1, ""}, kId, &stats);
    CHECK(ro.Load(a.key_material, a.levels).has_value());
    const Artifact b = MakeArtifact("group-b");
    CHECK(ro.Store(b).ok());
    CHECK_FALSE(Exists(ro.EntryPath(b.key_material, b.levels)));
  }
  SECTION("the listing classifies entries, temps and foreign files") {
    const std::string shard = path.substr(0, path.rfind('/'));
    const std::string name = path.substr(path.rfind('/') + 1);
    WriteFile(shard + "/." + name + ".tmp.123.abcd", "partial");
    WriteFile(shard + "/notes.txt", "junk");
    WriteFile(dir + "/README", "junk");
    std::map<std::string, int> kinds;
    for (const cache::EntryInfo& e : cache::ListEntries(dir, true)) {
      ++kinds[e.kind];
      if (e.kind == "entry") {
        CHECK(e.status == "ok");
        CHECK(e.compiler_version == kId.compiler_version);
      }
    }
    CHECK(kinds["entry"] == 1);
    CHECK(kinds["temp"] == 1);
    CHECK(kinds["foreign"] == 2);
    CHECK(cache::ClearEntries(dir) == 2);  // the entry and the temp; foreign files stay
    CHECK(Exists(dir + "/README"));
  }
}

TEST_CASE("disk tier: a directory that cannot be created fails every write, counted", "[cache][disk]") {
  const std::string base = TempDir();
  WriteFile(base + "/file", "not a directory");
  cache::CacheStats stats;
  cache::DiskCache disk({base + "/file/cache", false, int64_t{1} << 30, -1, ""}, kId, &stats);
  CHECK_FALSE(disk.Store(MakeArtifact("a")).ok());
  CHECK_FALSE(disk.Store(MakeArtifact("b")).ok());
  CHECK(stats.Snapshot().disk_write_errors == 2);
  CHECK_FALSE(disk.Load("a", {3, 3}).has_value());
}

TEST_CASE("disk tier evicts the least recently used entries beyond its bound", "[cache][disk]") {
  const std::string dir = TempDir() + "/cache";
  cache::CacheStats stats;
  const int64_t entry = static_cast<int64_t>(cache::Encode(MakeArtifact("group-0"), kId).size());
  cache::DiskCache disk({dir, false, 3 * entry, -1, ""}, kId, &stats);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(disk.Store(MakeArtifact("group-" + std::to_string(i))).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // distinct mtimes
  }
  REQUIRE(disk.Load("group-0", {3, 3}).has_value());  // group-0 becomes the most recent
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(disk.Store(MakeArtifact("group-3")).ok());  // over the bound: group-1 goes
  CHECK(stats.Snapshot().disk_evictions == 1);
  CHECK(Exists(disk.EntryPath("group-0", {3, 3})));
  CHECK_FALSE(Exists(disk.EntryPath("group-1", {3, 3})));
  CHECK(Exists(disk.EntryPath("group-2", {3, 3})));
  CHECK(Exists(disk.EntryPath("group-3", {3, 3})));
}

TEST_CASE("memory tier: LRU by entries and bytes, never evicting a slot being built", "[cache][memory]") {
  cache::CacheStats stats;
  trn::runtime::CodeCache mem({2, int64_t{1} << 30}, &stats);
  auto publish = [](const std::shared_ptr<trn::runtime::CodeSlot>& slot, int64_t bytes) {
    trn::runtime::CodeInfo info;
    info.bytes = bytes;
    slot->Publish(trn::runtime::MakeHostCode(nullptr, nullptr, info), 0);
  };
  bool created = false;
  auto a = mem.Lookup("a", &created);
  CHECK(created);
  publish(a, 10);
  publish(mem.Lookup("b", &created), 10);
  mem.Lookup("a", &created);  // a is now more recent than b
  CHECK_FALSE(created);
  mem.Lookup("c", &created);  // evicts b
  CHECK(created);
  CHECK(stats.Snapshot().mem_evictions == 1);
  mem.Lookup("a", &created);
  CHECK_FALSE(created);
  mem.Lookup("b", &created);
  CHECK(created);  // b was evicted; c is unsettled, so a goes now
  mem.Lookup("c", &created);
  CHECK_FALSE(created);
  CHECK(mem.size() == 2);

  trn::runtime::CodeCache small({100, 15}, &stats);
  publish(small.Lookup("x", &created), 10);
  publish(small.Lookup("y", &created), 10);  // 20 bytes > 15: x goes at the next miss
  small.Lookup("z", &created);
  small.Lookup("x", &created);
  CHECK(created);

  // Several builds at once (compile mode's segment builders): slots still building are never
  // evicted, so the cache may pass its limit; Trim brings it back once they are built.
  trn::runtime::CodeCache busy({2, int64_t{1} << 30}, &stats);
  auto p = busy.Lookup("p", &created);
  auto q = busy.Lookup("q", &created);
  auto r = busy.Lookup("r", &created);
  CHECK(busy.size() == 3);
  busy.Trim();
  CHECK(busy.size() == 3);  // nothing settled: nothing to evict
  publish(p, 10);
  publish(q, 10);
  publish(r, 10);
  busy.Lookup("q", &created);  // p is now the least recently used
  busy.Trim();
  CHECK(busy.size() == 2);
  busy.Lookup("p", &created);
  CHECK(created);  // p went
}


TEST_CASE("distributed tier: one claim, the others wait, then fetch; expired leases are taken over",
          "[cache][remote]") {
  auto kv = std::make_shared<std::map<std::string, std::string>>();
  auto mu = std::make_shared<absl::Mutex>();
  cache::CacheStats s0, s1;
  auto store0 = std::make_shared<trn::testing::FakeStore>(0, kv, mu);
  auto store1 = std::make_shared<trn::testing::FakeStore>(1, kv, mu);
  cache::RemoteTier r0({0.3, 10, "", trn::testing::kTestSecret}, [store0] { return store0; }, &s0);
  cache::RemoteTier r1({0.3, 10, "", trn::testing::kTestSecret}, [store1] { return store1; }, &s1);
  using State = cache::RemoteTier::State;

  CHECK(r0.FetchOrClaim("g").state == State::kClaimed);
  cache::RemoteTier::Probe held = r1.FetchOrClaim("g");
  CHECK(held.state == State::kHeldElsewhere);
  CHECK(held.holder.rfind("0:", 0) == 0);  // "<rank>:<pid>:<expiry>" of rank 0
  // The holder's heartbeat keeps the lease alive well past its 0.3 s lifetime.
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  CHECK(r1.FetchOrClaim("g").state == State::kHeldElsewhere);
  r0.Publish("g", "entry-bytes", "dir-token");
  cache::RemoteTier::Probe p = r1.FetchOrClaim("g");
  CHECK(p.state == State::kPublished);
  CHECK(p.detail == "dir-token");
  CHECK(*r1.FetchBytes("g") == "entry-bytes");

  // A holder that stops renewing (it died): its lease expires and another rank takes over.
  CHECK(r0.FetchOrClaim("h").state == State::kClaimed);
  r0.Shutdown();  // no more heartbeats
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  CHECK(r1.FetchOrClaim("h").state == State::kClaimed);
  CHECK(s1.Snapshot().lease_takeovers == 1);
  r1.PublishFailure("h", "does not compile");
  p = r0.FetchOrClaim("h");
  CHECK(p.state == State::kFailed);
  CHECK(p.detail == "does not compile");
  CHECK(s0.Snapshot().lease_claims == 2);
}

TEST_CASE("miss explanations name the first changed op property", "[cache][explain]") {
  using trn::scheduler::MissExplainer;
  MissExplainer::OpDesc before{"aten::add.Tensor", trn::base::kNoSource,
                               {{"input 1 (other) sizes", "[8, 128]"}, {"input 1 (other) dtype", "Float"}}};
  MissExplainer::OpDesc after = before;
  after.props[0].second = "[8, 129]";
  std::vector<std::string> d = MissExplainer::Diff({before}, {after});
  REQUIRE(d.size() == 1);
  CHECK(d[0].find("aten::add.Tensor") != std::string::npos);
  CHECK(d[0].find("input 1 (other) sizes [8, 128] -> [8, 129]") != std::string::npos);
  CHECK(MissExplainer::Diff({before}, {before}).empty());
  MissExplainer::OpDesc other = before;
  other.name = "aten::mul.Tensor";
  d = MissExplainer::Diff({before, before}, {other, after});
  REQUIRE(d.size() == 1);  // a different op: the property noise after it is not reported
  CHECK(d[0].find("is aten::mul.Tensor, was aten::add.Tensor") != std::string::npos);
}

TEST_CASE("the store is asked at every flush only for a while after a process group was created", "[cache][remote]") {
  constexpr int64_t ms = 1'000'000;
  // Never asked: ask now.
  CHECK(cache::RemoteRefreshDue(10 * ms, -1, -1));
  // No process group: at most every kRemoteRefreshNs.
  CHECK_FALSE(cache::RemoteRefreshDue(10 * ms + 1, 10 * ms, -1));
  CHECK(cache::RemoteRefreshDue(10 * ms + cache::kRemoteRefreshNs, 10 * ms, -1));
  // Right after a group's creation: every flush (the store may be registered any moment now).
  const int64_t created = 1000 * ms;
  CHECK(cache::RemoteRefreshDue(created + 1, created, created));
  CHECK(cache::RemoteRefreshDue(created + cache::kAskEveryFlushAfterGroupNs - 1, created + cache::kAskEveryFlushAfterGroupNs - 2, created));
  // Long after it (a one-rank job never gets a store): throttled again.
  const int64_t later = created + cache::kAskEveryFlushAfterGroupNs + 10 * ms;
  CHECK_FALSE(cache::RemoteRefreshDue(later, later - 1, created));
  CHECK(cache::RemoteRefreshDue(later + cache::kRemoteRefreshNs, later, created));
}

TEST_CASE("distributed tier: a rank keeps at most max_published builds in the store", "[cache][remote][bounded]") {
  auto kv = std::make_shared<std::map<std::string, std::string>>();
  auto mu = std::make_shared<absl::Mutex>();
  cache::CacheStats s0;
  auto store0 = std::make_shared<trn::testing::FakeStore>(0, kv, mu);
  cache::RemoteOptions options{5, 10, "", trn::testing::kTestSecret};
  options.max_published = 3;
  cache::RemoteTier r0(options, [store0] { return store0; }, &s0);
  using State = cache::RemoteTier::State;
  for (int i = 0; i < 10; ++i) {
    const std::string name = "g" + std::to_string(i);
    REQUIRE(r0.FetchOrClaim(name).state == State::kClaimed);
    if (i % 2 == 0) {
      r0.Publish(name, "entry-bytes", "");
    } else {
      r0.PublishFailure(name, "does not compile");
    }
  }
  {
    absl::MutexLock lock(mu.get());
    for (const auto& [key, value] : *kv) {
      const bool recent = key.rfind("g7/", 0) == 0 || key.rfind("g8/", 0) == 0 || key.rfind("g9/", 0) == 0;
      CHECK(recent);  // the 7 oldest builds' lease, bytes and done are gone
    }
    CHECK(kv->count("g8/bytes") == 1);
    CHECK(kv->count("g9/done") == 1);
  }
  CHECK(s0.Snapshot().store_entries_deleted == 7);
  // A deleted build is absent for every rank: the next one to want it claims it.
  CHECK(r0.FetchOrClaim("g0").state == State::kClaimed);
  CHECK(r0.FetchOrClaim("g8").state == State::kPublished);
}

namespace {
trn::runtime::OpRecord AddAt(const at::Tensor& a, const at::Tensor& b, int line) {
  trn::runtime::OpRecord r(c10::Dispatcher::singleton().findSchemaOrThrow("aten::add", "Tensor"),
                           {a, b, c10::IValue(at::Scalar(1))});
  r.source = trn::base::GlobalSourceTable().Intern({"bounded_model.py", line, "forward"});
  return r;
}
}  // namespace

TEST_CASE("miss explainer: bounded signatures and explanations, forgetting counted", "[cache][explain][bounded]") {
  trn::scheduler::MissExplainer explainer(/*max_signatures=*/4, /*max_explained=*/3);
  int64_t forgotten = 0;
  // Ten different line sequences: at most 4 remembered.
  for (int line = 1; line <= 10; ++line) {
    CHECK_FALSE(explainer.OnMiss("k" + std::to_string(line), {AddAt(at::ones({2}), at::ones({2}), line)}, &forgotten)
                    .has_value());
    CHECK(explainer.signatures() <= 4);
  }
  CHECK(forgotten == 8);  // cleared twice, 4 each
  // One line sequence whose shape changes every time (generate()'s growing sequence): each
  // change is explained, and at most 3 explanations are remembered.
  forgotten = 0;
  int explained = 0;
  for (int n = 1; n <= 10; ++n) {
    std::optional<std::string> why =
        explainer.OnMiss("s" + std::to_string(n), {AddAt(at::ones({n}), at::ones({n}), 100)}, &forgotten);
    if (why.has_value()) {
      ++explained;
      CHECK(why->find("sizes [" + std::to_string(n - 1) + "] -> [" + std::to_string(n) + "]") != std::string::npos);
    }
    CHECK(explainer.explained() <= 3);
  }
  CHECK(explained == 9);
  CHECK(forgotten == 6);  // the 3 remembered explanations, dropped twice
}

TEST_CASE("stats keep a bounded number of distinct fallback and failure reasons", "[bounded]") {
  trn::base::Stats stats;
  const size_t n = trn::base::Stats::kMaxReasons + 10;
  int first_times = 0;
  for (size_t i = 0; i < n; ++i) {
    stats.CountHostFallback("aten::nonzero", "reason " + std::to_string(i));
    first_times += stats.CountCompileFailure("group " + std::to_string(i) + " failed") ? 1 : 0;
  }
  const trn::base::StatsSnapshot s = stats.Snapshot();
  CHECK(s.host_fallbacks.size() == trn::base::Stats::kMaxReasons + 1);
  CHECK(s.host_fallbacks.at({"aten::nonzero", trn::base::Stats::kOtherReasons}) == 10);
  CHECK(s.compile_failures.size() == trn::base::Stats::kMaxReasons + 1);
  CHECK(s.compile_failures.at(trn::base::Stats::kOtherReasons) == 10);
  // Each kept reason is logged once, and the overflow bucket once.
  CHECK(first_times == static_cast<int>(trn::base::Stats::kMaxReasons) + 1);
  // A reason seen before the cap keeps counting under its own name.
  stats.CountHostFallback("aten::nonzero", "reason 3");
  CHECK(stats.Snapshot().host_fallbacks.at({"aten::nonzero", "reason 3"}) == 2);
}

TEST_CASE("code loaders: each format by its loader, malformed bytes refused with a reason", "[cache][loader]") {
  std::vector<std::unique_ptr<trn::runtime::CodeLoader>> loaders;
  loaders.push_back(trn::runtime::MakeNeuronCoreLoader());
  cache::Artifact a;
  a.entry_symbol = "trn-stream:trn2";
  a.object = trn::runtime::neuroncore::Encode(trn::runtime::neuroncore::InstructionStream{});
  a.num_inputs = 2;
  a.num_outputs = 1;
  a.levels.opt = 3;
  auto code = trn::runtime::LoadArtifact(loaders, a, /*tier=*/1);
  REQUIRE(code.ok());
  CHECK((*code)->on_device());
  CHECK((*code)->info().num_inputs == 2);
  CHECK((*code)->info().num_outputs == 1);
  CHECK((*code)->info().opt_level == 3);
  CHECK((*code)->info().tier == 1);
  CHECK((*code)->info().bytes == static_cast<int64_t>(a.object.size()));
  // Malformed bytes of an accepted format: refused, never trusted.
  cache::Artifact bad = a;
  bad.object = "not a stream";
  auto refused = trn::runtime::LoadArtifact(loaders, bad, 0);
  REQUIRE_FALSE(refused.ok());
  CHECK_FALSE(refused.status().message().empty());  // the decoder says what is wrong
  // An arity no entry point takes, and a format no loader takes.
  cache::Artifact wide = a;
  wide.num_inputs = trn::runtime::kMaxCompiledArgs;
  CHECK(trn::runtime::LoadArtifact(loaders, wide, 0).status().code() == absl::StatusCode::kDataLoss);
  cache::Artifact host = a;
  host.entry_symbol = "_mlir_ciface_group";
  CHECK(trn::runtime::LoadArtifact(loaders, host, 0).status().code() == absl::StatusCode::kUnimplemented);
  // Host code (here without an entry: only a cache holds it) is not on the device.
  CHECK_FALSE(trn::runtime::MakeHostCode(nullptr, nullptr, {})->on_device());
}
