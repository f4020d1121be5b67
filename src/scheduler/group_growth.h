// Adaptive mode's group growth (NEURON_ADAPTIVE_GROW): small groups while the background compiler
// catches up, compile mode's larger groups once it has.
//
// Why: adaptive mode cuts the stream into groups of at most NEURON_ADAPTIVE_GROUP_OPS ops (64) so
// that each compiles quickly on a busy machine. Once every group is compiled, those small groups
// cost a steady step what compile mode's (NEURON_MAX_GROUP_OPS, 256) do not: more flushes, more
// units, values stored between groups that one larger group keeps in registers (measured on cnn:
// 1.58 ms a step against 1.04 ms with 256-op groups; docs/adaptive.md, "Groups grow once
// compiled").
//
// How, at sync points only (the phase applies to the ops recorded after it):
//   kSmall    small groups. Once a window between two sync points planned no new group (no
//             plan-cache miss; judged when its segments are planned, usually at the next sync
//             point) and no compile is queued or running, the program is caught up: -> kProbe.
//   kProbe    large groups for about one training step (as many ops as the largest of the
//             recent windows): they are planned and their builds queued, and they run without
//             code (the instant tier, or op by op) this once. -> kAwaitBig.
//   kAwaitBig small groups again, compiled, while the large ones build in the background.
//             Once the probe's segments are planned and no compile is queued or running: -> kBig.
//   kBig      large groups from then on; a new one runs without code until built, as any new
//             group of adaptive mode does.
// Within a phase the cuts depend on the recorded ops only, so keys repeat step after step; when
// the phase changes depends on the compiler's progress. Execution never waits for a compile.
//
// Thread-safety: not thread-safe; the Stream calls it at its sync points under its own lock.
#pragma once

#include <array>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace trn::scheduler {

class GroupGrowth {
 public:
  enum class Phase { kSmall, kProbe, kAwaitBig, kBig };

  // What the stream has done so far, read at a sync point (running totals, not deltas).
  struct Progress {
    int64_t ops_recorded = 0;     // ops recorded
    int64_t plan_misses = 0;      // units planned from scratch (the plan cache missed)
    uint64_t flushed = 0;         // segments flushed
    uint64_t planned = 0;         // segments the executor has planned (<= flushed)
    bool compiling = false;       // a compile is queued or running
  };

  // `enabled` false: always kSmall.
  explicit GroupGrowth(bool enabled) : enabled_(enabled) {}

  // At a sync point: the phase of the ops recorded from here on.
  Phase OnSync(const Progress& p);
  Phase phase() const { return phase_; }
  // Whether the ops recorded in `phase` are cut into the large groups.
  static bool Large(Phase phase) { return phase == Phase::kProbe || phase == Phase::kBig; }
  static absl::string_view Name(Phase phase);

  // The windows (ops between two sync points) remembered to size the probe.
  static constexpr int kWindows = 8;

 private:
  const bool enabled_;
  Phase phase_ = Phase::kSmall;
  Progress last_;                       // at the previous sync point
  int64_t misses_at_judged_ = 0;        // plan misses when the last window was judged
  uint64_t judge_through_ = 0;          // the segments planned before the next window is judged
  std::array<int64_t, kWindows> windows_{};  // ops of the recent windows (a ring)
  int next_window_ = 0;
  int64_t probe_ops_ = 0;               // ops recorded in the probe so far
  int64_t probe_target_ = 0;            // ... and how many it needs
  uint64_t probe_last_flush_ = 0;       // the probe's last segment
};

}  // namespace trn::scheduler
