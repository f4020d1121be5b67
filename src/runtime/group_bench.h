// Group bench (NEURON_BENCH_GROUPS=1, for bench/steady.py --groups): every compiled group also
// runs op by op on the same buffers, so the two can be compared group by group. Before the
// compiled run, the group's ops run one by one twice (untimed, then timed); every storage they wrote is saved
// before and restored after, so the compiled run starts from the same state and the program's
// results are the compiled code's. Much slower than a normal run: a measuring tool only.
//
// Thread-safety: Record and Rows may be called from any thread (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "runtime/op_record.h"

namespace trn::runtime {

struct GroupBenchRow {
  std::string key;
  std::string ops;  // the group's op names, in order ("aten::mul.out aten::add.out ...")
  int64_t num_ops = 0;
  int64_t runs = 0;
  int64_t compiled_ns = 0;   // summed over runs
  int64_t op_by_op_ns = 0;
  // Medians over runs: robust to a run preempted on a loaded machine, which dominates a sum.
  int64_t compiled_median_ns = 0;
  int64_t op_by_op_median_ns = 0;
  // Runs through the group's instant program (instant_program.h) while it had no code, with
  // the op-by-op time of the same runs (medians).
  int64_t instant_runs = 0;
  int64_t instant_median_ns = 0;
  int64_t instant_op_by_op_median_ns = 0;
  // Median over runs of instant / op by op of the same run (paired: robust to a loaded machine).
  double instant_ratio_median = 0;
};

class GroupBench {
 public:
  // Runs `ops` one by one and restores every storage they wrote; returns the time of the runs
  // (ns), or -1 when an op failed (the state is restored either way).
  static int64_t RunOpByOpAndRestore(const std::vector<OpRecord>& ops);

  void Record(const std::string& key, const std::vector<OpRecord>& ops, int64_t op_by_op_ns, int64_t compiled_ns);
  // A run through the instant tier instead of compiled code.
  void RecordInstant(const std::string& key, const std::vector<OpRecord>& ops, int64_t op_by_op_ns,
                     int64_t instant_ns);
  std::vector<GroupBenchRow> Rows() const;

 private:
  mutable absl::Mutex mu_;
  struct Entry {
    GroupBenchRow row;  // medians filled in by Rows()
    std::vector<int64_t> compiled, op_by_op;  // one time per run
    std::vector<int64_t> instant, instant_op_by_op;
  };
  Entry& EntryFor(const std::string& key, const std::vector<OpRecord>& ops) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::map<std::string, Entry> rows_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trn::runtime
