#include "scheduler/grouper.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "runtime/log.h"
#include "runtime/op_runner.h"
#include "scheduler/cut_policy.h"

namespace trn::scheduler {
namespace {

using mlir_lowering::GroupLowering;

class Cutter {
 public:
  Cutter(std::vector<runtime::OpRecord>& records, int64_t max_ops, runtime::Stats* stats,
         const mlir_lowering::EarlierRefs* earlier)
      : records_(records), policy_(CutPolicy::UpTo(max_ops)), stats_(stats), earlier_(earlier) {}

  std::vector<PlannedUnit> Run() {
    for (size_t i = 0; i < records_.size(); ++i) {
      const runtime::OpRecord& r = records_[i];
      if (i > 0 && r.thread != records_[i - 1].thread) {
        Close(i);  // forward | backward | optimizer: the phases' own groups, the same every step
      }
      std::string why;
      if (!GroupLowering::CanLower(r, &why)) {
        Close(i);
        OpByOp(i);
        continue;
      }
      if (TryAdd(i)) {
        continue;
      }
      if (cut_) {
        Close(i);  // (TryAdd replayed the group without op i)
        if (TryAdd(i)) {
          continue;
        }
      }
      Close(i);
      OpByOp(i);
    }
    Close(records_.size());
    return std::move(units_);
  }

 private:
  // Adds op i to the open group (opening one if needed). On failure the group is rebuilt
  // without op i and `cut_` says whether the lowering asked for a cut.
  bool TryAdd(size_t i) {
    if (!group_) {
      group_ = std::make_unique<GroupLowering>();
      start_ = i;
    }
    absl::Status status = group_->Add(records_[i]);
    if (status.ok()) {
      if (policy_.Ends(group_->size(), records_[i].cut_fp, group_->HalfFull())) {
        Close(i + 1);
      }
      return true;
    }
    cut_ = mlir_lowering::IsCut(status) && static_cast<size_t>(start_) < i;
    if (mlir_lowering::IsCut(status)) {
      runtime::Log(runtime::LogLevel::kDebug,
                   absl::StrCat("group cut before ", runtime::OpName(records_[i].op), " at ",
                                runtime::GlobalSourceTable().Format(records_[i].source), ": ", status.message()));
    }
    if (!mlir_lowering::IsCut(status) && status.code() != absl::StatusCode::kUnimplemented) {
      stats_->CountCompileFailure(std::string(status.message()));
    }
    // Replay the ops before i into a fresh lowering (deterministic: they succeeded before).
    auto replay = std::make_unique<GroupLowering>();
    for (size_t j = start_; j < i; ++j) {
      if (!replay->Add(records_[j]).ok()) {
        replay.reset();  // cannot happen; be safe: run them op by op
        for (size_t k = start_; k < i; ++k) OpByOp(k);
        break;
      }
    }
    group_ = std::move(replay);
    return false;
  }

  // Ends the open group at op `end` (exclusive).
  void Close(size_t end) {
    if (!group_ || group_->size() == 0) {
      group_.reset();
      return;
    }
    PlannedUnit unit;
    absl::StatusOr<mlir_lowering::LoweredGroup> lowered = group_->Finish(earlier_);
    group_.reset();
    if (lowered.ok()) {
      unit.lowered = std::move(*lowered);
    } else {
      stats_->CountCompileFailure(std::string(lowered.status().message()));
    }
    for (size_t j = start_; j < end; ++j) {
      unit.ops.push_back(std::move(records_[j]));
    }
    units_.push_back(std::move(unit));
  }

  void OpByOp(size_t i) {
    stats_->CountUnlowered(runtime::OpName(records_[i].op));
    PlannedUnit unit;
    unit.ops.push_back(std::move(records_[i]));
    units_.push_back(std::move(unit));
  }

  std::vector<runtime::OpRecord>& records_;
  const CutPolicy policy_;
  runtime::Stats* stats_;
  const mlir_lowering::EarlierRefs* earlier_;
  std::unique_ptr<GroupLowering> group_;
  size_t start_ = 0;
  bool cut_ = false;
  std::vector<PlannedUnit> units_;
};

}  // namespace

std::vector<PlannedUnit> CutIntoUnits(std::vector<runtime::OpRecord> records, int64_t max_group_ops,
                                      runtime::Stats* stats, const mlir_lowering::EarlierRefs* earlier) {
  return Cutter(records, max_group_ops, stats, earlier).Run();
}

}  // namespace trn::scheduler
