// The plan cache's disk tier (scheduler/plan_store.h): plans round-trip through their payload and
// the disk cache; malformed payloads (every truncation, out-of-range positions) are errors, never
// a crash; a verified entry whose payload does not decode is rejected and deleted.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "runtime/cache/disk_cache.h"
#include "scheduler/plan_store.h"

#include <catch2/catch.hpp>

namespace {

namespace cache = trn::runtime::cache;
using trn::scheduler::DecodePlans;
using trn::scheduler::EncodePlans;
using trn::scheduler::GroupPlan;
using trn::scheduler::Hash128;
using trn::scheduler::PlanStore;
using trn::scheduler::SamePlan;
using trn::scheduler::StoredPlan;

const cache::Identity kId{"torch-trn test build", "test-target"};

std::string TempDir() {
  char tmpl[] = "/tmp/trn_plan_store_XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  return tmpl;
}

std::vector<StoredPlan> SomePlans() {
  auto group = std::make_shared<GroupPlan>();
  group->kind = GroupPlan::Kind::kGroup;
  group->len = 3;
  group->next_op_by_op = true;
  group->guards = {{1, 2, 'd', 0x3ff0000000000000ULL}, {3, 0, 'i', 7}};
  group->key.material = std::string("key material\0with a zero", 24);
  group->live = {true, false, true};
  group->inputs = {{0, 0, 0}, {1, 1, 0}};
  group->outputs = {{{2, 3, 0}, false}, {{1, 2, 1}, true}};
  group->param_args = {{1, 2}};
  auto checks = std::make_shared<std::vector<trn::runtime::CheckSlot>>();
  checks->push_back({2, "index out of range"});
  group->checks = checks;
  group->bytes_written = 4096;
  group->temporaries = 1;
  group->func = "group_main";
  auto op = std::make_shared<GroupPlan>();
  op->kind = GroupPlan::Kind::kOpByOp;
  op->len = 1;
  op->guards = {{0, 1, 'h', 42}};
  return {StoredPlan{Hash128{1, 2}, group}, StoredPlan{Hash128{3, 4}, op}};
}

}  // namespace

TEST_CASE("plans round-trip through their payload, marked as loaded from disk", "[plan][store]") {
  const std::vector<StoredPlan> plans = SomePlans();
  absl::StatusOr<std::vector<StoredPlan>> back = DecodePlans(EncodePlans(plans));
  REQUIRE(back.ok());
  REQUIRE(back->size() == plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    CHECK((*back)[i].hash == plans[i].hash);
    CHECK(SamePlan(*(*back)[i].plan, *plans[i].plan));
    CHECK((*back)[i].plan->from_disk);
  }
  const GroupPlan& g = *(*back)[0].plan;
  CHECK(g.key_hex == g.key.Hex());
  CHECK(g.key.material == plans[0].plan->key.material);
  REQUIRE(g.checks != nullptr);
  CHECK(g.checks->size() == 1);
  CHECK((*g.checks)[0].message == "index out of range");
  CHECK(g.func == "group_main");
  CHECK(g.bytes_written == 4096);
}

TEST_CASE("every truncation and every flipped byte of a payload decodes or fails, never crashes", "[plan][store]") {
  const std::string bytes = EncodePlans(SomePlans());
  for (size_t n = 0; n < bytes.size(); ++n) {
    CHECK_FALSE(DecodePlans(bytes.substr(0, n)).ok());
  }
  CHECK_FALSE(DecodePlans(bytes + "x").ok());  // trailing bytes
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0xff);
    absl::StatusOr<std::vector<StoredPlan>> d = DecodePlans(flipped);
    if (!d.ok()) continue;
    for (const StoredPlan& s : *d) {  // whatever decodes stays inside its unit
      CHECK(s.plan->len >= 1);
      for (const auto& p : s.plan->inputs) CHECK(p.op < static_cast<uint64_t>(s.plan->len));
      for (const auto& [p, staged] : s.plan->outputs) CHECK(p.op < static_cast<uint64_t>(s.plan->len));
    }
  }
}

TEST_CASE("a plan naming a tensor outside its group does not decode", "[plan][store]") {
  std::vector<StoredPlan> plans = SomePlans();
  auto bad = std::make_shared<GroupPlan>(*plans[0].plan);
  bad->inputs.push_back({3, 0, 0});  // op 3 of a 3-op group
  plans[0].plan = bad;
  absl::StatusOr<std::vector<StoredPlan>> d = DecodePlans(EncodePlans(plans));
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().message().find("outside the group") != std::string::npos);
}

TEST_CASE("plan store: save, load, other contexts miss, an undecodable entry is rejected", "[plan][store]") {
  const std::string dir = TempDir() + "/cache";
  cache::CacheStats stats;
  cache::DiskCache disk({dir, false, int64_t{1} << 30, -1, ""}, kId, &stats);
  PlanStore store(&disk, "compile ops 256 target host");
  const Hash128 key{11, 22};
  CHECK_FALSE(store.Load(key).has_value());
  store.Save(key, SomePlans());
  std::optional<std::vector<StoredPlan>> loaded = store.Load(key);
  REQUIRE(loaded.has_value());
  REQUIRE(loaded->size() == 2);
  CHECK(SamePlan(*(*loaded)[0].plan, *SomePlans()[0].plan));
  cache::CacheCounters c = stats.Snapshot();
  CHECK(c.plan_writes == 1);
  CHECK(c.plan_hits == 1);
  CHECK(c.plan_misses == 1);
  CHECK(c.disk_writes == 0);  // plan entries have counters of their own
  // The same segment under other knobs (another cut size) is another entry.
  PlanStore other(&disk, "compile ops 64 target host");
  CHECK_FALSE(other.Load(key).has_value());
  // A code entry is never read as plans, nor plans as code.
  CHECK_FALSE(disk.Load("compile ops 256 target host 00000000000000160000000000000000b", cache::Levels{3, 3}).has_value());

  SECTION("an entry that verifies but does not decode is rejected and deleted") {
    const std::string material = "compile ops 256 target host garbage";
    REQUIRE(disk.StorePlans(material, "not a payload").ok());
    const std::string path = disk.PlanPath(material);
    struct stat st;
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(disk.LoadPlans(material).has_value());  // the entry itself verifies
    disk.RejectLoadedPlans(material, "malformed plan entry: test");
    CHECK(stats.Snapshot().plan_rejected["load_failed"] == 1);
    CHECK(::stat(path.c_str(), &st) != 0);
  }
  SECTION("read-only: nothing is written") {
    cache::DiskCache ro({dir, true, int64_t{1} << 30, -1, ""}, kId, &stats);
    PlanStore ro_store(&ro, "ctx");
    ro_store.Save(Hash128{5, 6}, SomePlans());
    CHECK_FALSE(ro_store.Load(Hash128{5, 6}).has_value());
  }
}
