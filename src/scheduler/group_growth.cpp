#include "scheduler/group_growth.h"

#include <algorithm>

namespace trn::scheduler {

absl::string_view GroupGrowth::Name(Phase phase) {
  switch (phase) {
    case Phase::kSmall:
      return "small";
    case Phase::kProbe:
      return "probe";
    case Phase::kAwaitBig:
      return "await";
    case Phase::kBig:
      return "grown";
  }
  return "?";
}

GroupGrowth::Phase GroupGrowth::OnSync(const Progress& p) {
  const int64_t window = p.ops_recorded - last_.ops_recorded;
  last_ = p;
  if (!enabled_ || window == 0) return phase_;
  switch (phase_) {
    case Phase::kSmall: {
      windows_[static_cast<size_t>(next_window_)] = window;
      next_window_ = (next_window_ + 1) % kWindows;
      // A window is judged once the executor has planned every segment flushed before it
      // ended, typically at the next sync point: a host read returns before the segments
      // recorded after what it reads (the optimizer step after the loss) are planned. Misses of
      // later segments counted by then count against it too, as do those of windows that
      // could not be judged.
      if (p.planned < judge_through_) return phase_;
      const bool caught_up = p.plan_misses == misses_at_judged_ && !p.compiling && judge_through_ > 0;
      misses_at_judged_ = p.plan_misses;
      judge_through_ = p.flushed;
      if (caught_up) {
        phase_ = Phase::kProbe;
        probe_ops_ = 0;
        probe_target_ = *std::max_element(windows_.begin(), windows_.end());
      }
      return phase_;
    }
    case Phase::kProbe:
      probe_ops_ += window;
      if (probe_ops_ >= probe_target_) {
        phase_ = Phase::kAwaitBig;
        probe_last_flush_ = p.flushed;
      }
      return phase_;
    case Phase::kAwaitBig:
      if (p.planned >= probe_last_flush_ && !p.compiling) phase_ = Phase::kBig;
      return phase_;
    case Phase::kBig:
      return phase_;
  }
  return phase_;
}

}  // namespace trn::scheduler
