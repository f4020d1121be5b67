// Adaptive mode's group growth (scheduler/group_growth.h): the phase a sync point leaves the
// stream in, from what the stream has done so far.
#include "scheduler/group_growth.h"

#include <catch2/catch.hpp>

namespace trn::scheduler {
namespace {

using Phase = GroupGrowth::Phase;

// A stream's running totals, advanced one window (the ops between two sync points) at a time.
struct Totals {
  GroupGrowth::Progress p;
  // A window of `ops` ops in `flushes` segments, all planned unless `planned_behind` of them are
  // not yet, with `misses` units planned from scratch.
  GroupGrowth::Progress Window(int64_t ops, int64_t misses = 0, bool compiling = false, uint64_t flushes = 3,
                               uint64_t planned_behind = 0) {
    p.ops_recorded += ops;
    p.plan_misses += misses;
    p.flushed += flushes;
    p.planned = p.flushed - planned_behind;
    p.compiling = compiling;
    return p;
  }
};

TEST_CASE("growth: small groups while windows plan new groups or compiles are queued") {
  GroupGrowth g(true);
  Totals t;
  CHECK(g.phase() == Phase::kSmall);
  CHECK(g.OnSync(t.Window(100, /*misses=*/4, /*compiling=*/true)) == Phase::kSmall);
  CHECK(g.OnSync(t.Window(100, /*misses=*/0, /*compiling=*/true)) == Phase::kSmall);  // still building
  CHECK(g.OnSync(t.Window(100, /*misses=*/1, /*compiling=*/false)) == Phase::kSmall);  // a new group
  // Caught up: no miss, nothing compiling, every flushed segment planned.
  CHECK(g.OnSync(t.Window(100)) == Phase::kProbe);
  CHECK(GroupGrowth::Large(Phase::kProbe));
  CHECK_FALSE(GroupGrowth::Large(Phase::kSmall));
}

TEST_CASE("growth: a window whose segments are not all planned is not judged; its misses count later") {
  GroupGrowth g(true);
  Totals t;
  // The executor is behind: the window cannot be judged, whatever the counters say so far.
  CHECK(g.OnSync(t.Window(100, 0, false, 3, /*planned_behind=*/2)) == Phase::kSmall);
  // The late segments missed: planned now, and their misses keep the stream small.
  t.p.plan_misses += 2;
  CHECK(g.OnSync(t.Window(100)) == Phase::kSmall);
  CHECK(g.OnSync(t.Window(100)) == Phase::kProbe);
}

TEST_CASE("growth: a loop whose reads return before its last segment is planned still grows") {
  // loss.item() after opt.step() waits for the forward's segments only: at every sync point the
  // optimizer's last segment is not planned yet, and is by the next one.
  GroupGrowth g(true);
  Totals t;
  CHECK(g.OnSync(t.Window(100, 5, true, 3, /*planned_behind=*/1)) == Phase::kSmall);
  // The first window's last segment, planned since, missed: not caught up yet.
  CHECK(g.OnSync(t.Window(100, /*misses=*/2, false, 3, 1)) == Phase::kSmall);
  CHECK(g.OnSync(t.Window(100, 0, false, 3, 1)) == Phase::kProbe);
}

TEST_CASE("growth: the probe lasts as many ops as the largest recent window, then awaits its builds") {
  GroupGrowth g(true);
  Totals t;
  CHECK(g.OnSync(t.Window(500, 3, true)) == Phase::kSmall);  // a training step
  CHECK(g.OnSync(t.Window(20, 0, true)) == Phase::kSmall);   // a small window (e.g. an eval read)
  CHECK(g.OnSync(t.Window(20)) == Phase::kProbe);
  // The probe: large groups until it has recorded 500 ops.
  CHECK(g.OnSync(t.Window(20, 2, true)) == Phase::kProbe);
  CHECK(g.OnSync(t.Window(500, 6, true)) == Phase::kAwaitBig);
  const uint64_t probe_end = t.p.flushed;
  // Small groups again while the probe's groups build; a sync with no op recorded changes nothing.
  CHECK(g.OnSync(t.Window(500, 0, true)) == Phase::kAwaitBig);
  CHECK(g.OnSync(t.Window(0)) == Phase::kAwaitBig);
  // The builds are done, but the probe's last segment is not planned yet.
  GroupGrowth::Progress behind = t.Window(20);
  behind.planned = probe_end - 1;
  CHECK(g.OnSync(behind) == Phase::kAwaitBig);
  CHECK(g.OnSync(t.Window(20)) == Phase::kBig);
  // Grown for good: new groups (misses, compiles) do not shrink them again.
  CHECK(g.OnSync(t.Window(500, 9, true)) == Phase::kBig);
  CHECK(GroupGrowth::Large(Phase::kBig));
  CHECK(GroupGrowth::Name(Phase::kBig) == "grown");
}

TEST_CASE("growth: disabled stays small") {
  GroupGrowth g(false);
  Totals t;
  for (int i = 0; i < 10; ++i) CHECK(g.OnSync(t.Window(100)) == Phase::kSmall);
}

}  // namespace
}  // namespace trn::scheduler
