#include "scheduler/grouper.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "runtime/op_runner.h"
#include "scheduler/cut_policy.h"

namespace trn::scheduler {
namespace {

using mlir_lowering::GroupLowering;

class Cutter {
 public:
  Cutter(const std::vector<runtime::OpRecord>& records, int64_t max_ops, const mlir_lowering::Target& target,
         base::Stats* stats, const SegmentRefs* refs)
      : records_(records), policy_(CutPolicy::UpTo(max_ops)), target_(target), stats_(stats), refs_(refs) {}

  std::vector<CutUnit> Run(size_t begin) {
    for (size_t i = begin; i < records_.size() && !closed_; ++i) {
      const runtime::OpRecord& r = records_[i];
      if (group_ && i > start_ && r.thread != records_[i - 1].thread) {
        Close(i, CloseReason::kThreadChange);  // forward | backward | optimizer: their own groups
        if (closed_) {
          return std::move(units_);  // op i starts the next cut
        }
      }
      std::string why;
      if (!target_.CanGroup(r, &why)) {
        base::Log(base::LogLevel::kDebug, absl::StrCat(runtime::OpName(r.op), " at ",
                                                       base::GlobalSourceTable().Format(r.source),
                                                       " runs op by op: ", why));
        const bool open = group_ && group_->size() > 0;
        Close(i, CloseReason::kCannotLower);
        if (open) units_.back().next_op_by_op = true;
        OpByOp(i, CloseReason::kCannotLower);
        continue;
      }
      if (TryAdd(i)) {
        continue;
      }
      if (cut_) {
        Close(i, CloseReason::kAddFailed);  // (TryAdd replayed the group without op i)
        return std::move(units_);           // op i starts the next cut, as a new group
      }
      const bool open = group_ && group_->size() > 0;
      Close(i, CloseReason::kAddFailed);
      if (open) units_.back().next_op_by_op = true;
      OpByOp(i, CloseReason::kAddFailed);
    }
    if (!closed_) {
      Close(records_.size(), CloseReason::kEnd);
    }
    return std::move(units_);
  }

 private:
  // Adds op i to the open group (opening one if needed). On failure the group is rebuilt
  // without op i and `cut_` says whether the lowering asked for a cut.
  bool TryAdd(size_t i) {
    if (!group_) {
      group_ = std::make_unique<GroupLowering>(target_, /*emit=*/false);
      start_ = i;
    }
    absl::Status status = group_->Add(records_[i]);
    if (status.ok()) {
      if (policy_.Ends(group_->size(), records_[i].cut_fp, group_->HalfFull())) {
        Close(i + 1, CloseReason::kPolicy);
      }
      return true;
    }
    cut_ = mlir_lowering::IsCut(status) && start_ < i;
    if (mlir_lowering::IsCut(status)) {
      base::Log(base::LogLevel::kDebug,
                absl::StrCat("group cut before ", runtime::OpName(records_[i].op), " at ",
                             base::GlobalSourceTable().Format(records_[i].source), ": ", status.message()));
    }
    const bool failure = !mlir_lowering::IsCut(status) && status.code() != absl::StatusCode::kUnimplemented;
    if (status.code() == absl::StatusCode::kUnimplemented) {
      base::Log(base::LogLevel::kDebug, absl::StrCat(runtime::OpName(records_[i].op), " at ",
                                                     base::GlobalSourceTable().Format(records_[i].source),
                                                     " runs op by op: ", status.message()));
    }
    if (failure) {
      stats_->CountCompileFailure(std::string(status.message()));
      failed_ = true;
    }
    failed_value_args_ = group_->ValueArgsOf(static_cast<int64_t>(i - start_));
    // Replay the ops before i into a fresh lowering (deterministic: they succeeded before).
    auto replay = std::make_unique<GroupLowering>(target_, /*emit=*/false);
    for (size_t j = start_; j < i; ++j) {
      if (!replay->Add(records_[j]).ok()) {
        replay.reset();  // cannot happen; be safe: run them op by op
        for (size_t k = start_; k < i; ++k) OpByOp(k, CloseReason::kAddFailed);
        failed_ = true;
        break;
      }
    }
    group_ = std::move(replay);
    return false;
  }

  // Ends the open group at op `end` (exclusive).
  void Close(size_t end, CloseReason why) {
    if (!group_ || group_->size() == 0) {
      group_.reset();
      return;
    }
    CutUnit unit;
    unit.begin = start_;
    unit.len = static_cast<int64_t>(end - start_);
    unit.why = why;
    if (why == CloseReason::kAddFailed) unit.failed_value_args = failed_value_args_;
    const mlir_lowering::LiveAfter live_after = [this, end](const c10::StorageImpl* s) {
      return refs_->LiveAfter(s, end);
    };
    absl::StatusOr<mlir_lowering::LoweredGroup> lowered = group_->Finish(refs_ != nullptr ? &live_after : nullptr);
    group_.reset();
    if (lowered.ok()) {
      unit.lowered = std::move(*lowered);
    } else {
      stats_->CountCompileFailure(std::string(lowered.status().message()));
      unit.failed = true;
    }
    unit.failed = unit.failed || failed_;
    units_.push_back(std::move(unit));
    closed_ = true;
  }

  void OpByOp(size_t i, CloseReason why) {
    stats_->CountUnlowered(runtime::OpName(records_[i].op));
    CutUnit unit;
    unit.begin = i;
    unit.len = 1;
    unit.why = why;
    if (why == CloseReason::kAddFailed) unit.failed_value_args = failed_value_args_;
    unit.failed = failed_;
    failed_ = false;
    units_.push_back(std::move(unit));
  }

  const std::vector<runtime::OpRecord>& records_;
  const CutPolicy policy_;
  const mlir_lowering::Target& target_;
  base::Stats* stats_;
  const SegmentRefs* refs_;
  std::unique_ptr<GroupLowering> group_;
  size_t start_ = 0;
  bool cut_ = false;
  bool closed_ = false;  // a group closed: the cut ends (after the op-by-op op that closed it, if any)
  bool failed_ = false;
  std::vector<int64_t> failed_value_args_;  // of the op the last failed TryAdd refused
  std::vector<CutUnit> units_;
};

}  // namespace

std::vector<CutUnit> CutNext(const std::vector<runtime::OpRecord>& records, size_t begin, int64_t max_group_ops,
                             const mlir_lowering::Target& target, base::Stats* stats, const SegmentRefs* refs) {
  return Cutter(records, max_group_ops, target, stats, refs).Run(begin);
}

}  // namespace trn::scheduler
