#include "scheduler/compile_pool.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/profiler.h"

namespace trn::scheduler {

namespace {
absl::Status LeaseCancelled(const CompileRequest& request) {
  return absl::CancelledError(absl::StrCat("the compile pool shut down while group ", request.key_hex,
                                           " waited for another rank's build of it (that rank holds its lease)"));
}
}  // namespace

CompilePool::CompilePool(CompilePoolOptions options, GroupCompiler* compiler)
    : options_(options), compiler_(compiler) {}

CompilePool::~CompilePool() { Shutdown(); }

bool CompilePool::Submit(CompileRequest request, std::shared_ptr<runtime::CodeSlot> slot) {
  absl::MutexLock lock(&mu_);
  if (stop_ || static_cast<int64_t>(first_.size()) >= options_.queue_capacity) {
    return false;
  }
  first_.push_back(Job{std::move(request), std::move(slot), 0});
  if (threads_.empty()) {
    for (int i = 0; i < options_.workers; ++i) {
      threads_.emplace_back([this, i] { Worker(i); });
    }
  }
  return true;
}

void CompilePool::WaitIdle() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &CompilePool::Idle));
}

bool CompilePool::Busy() const {
  absl::MutexLock lock(&mu_);
  return !Idle();
}

void CompilePool::Shutdown() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    // Dropped first builds fail their slots: those groups run op by op (only at exit), and a
    // compile-mode flush awaiting one returns instead of waiting forever. A dropped tier-up
    // leaves its slot's fast build in place.
    for (Job& job : first_) {
      job.slot->Fail(absl::CancelledError(
          absl::StrCat("the compile pool shut down before building group ", job.request.key_hex)));
    }
    first_.clear();
    for (Job& job : parked_) job.slot->Fail(LeaseCancelled(job.request));
    parked_.clear();
    tier_up_.clear();
    threads.swap(threads_);
  }
  for (std::thread& t : threads) {
    t.join();
  }
}

namespace {
double MonotonicS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

bool CompilePool::ParkedDue() const { return !parked_.empty() && parked_.front().not_before_s <= MonotonicS(); }

void CompilePool::Worker(int index) {
  // Below the recording and executor threads (Linux: nice is per thread).
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), options_.nice);
  base::profiler::NameThisThread(absl::StrCat(options_.thread_name, " ", index));
  while (true) {
    Job job;
    {
      absl::MutexLock lock(&mu_);
      // Parked jobs become due with time, which no Condition sees: wake up to re-check them.
      while (!HasJob()) {
        mu_.AwaitWithTimeout(absl::Condition(this, &CompilePool::HasJob), absl::Milliseconds(options_.poll_ms));
      }
      if (stop_) {
        return;
      }
      std::deque<Job>& queue = !first_.empty() ? first_ : ParkedDue() ? parked_ : tier_up_;
      // Compile what pays first: the queued group with the most observed payoff (op-by-op
      // time while it waited for code; fast-tier time for a tier-up), the earliest on ties.
      auto best = queue.begin();
      if (&queue != &parked_) {
        for (auto it = queue.begin(); it != queue.end(); ++it) {
          if (it->slot->payoff_ns() > best->slot->payoff_ns()) best = it;
        }
      }
      job = std::move(*best);
      queue.erase(best);
      ++running_;
    }
    Run(std::move(job));
    absl::MutexLock lock(&mu_);
    --running_;
  }
}

void CompilePool::Run(Job job) {
  // Tier 0 of a tiered build: IR -O1 with codegen -O0 (see host_jit.h: ~9x faster to build
  // than -O3 on the zoo's groups; plain -O0 code runs ~2.5x slower than eager, so it would slow
  // the steps down).
  const bool tiered = options_.tiering && options_.opt_level > 1;
  const runtime::cache::Levels final_levels = compiler_->FinalLevels();
  if (tiered && job.tier == 0) {
    // A final build made earlier (this user's disk cache, or a peer rank) beats a fast one.
    if (std::optional<runtime::CodeSlot::Code> code = compiler_->Find(job.request, final_levels, 1)) {
      job.slot->Publish(*code, 1);
      return;
    }
  }
  const runtime::cache::Levels levels = tiered && job.tier == 0 ? GroupCompiler::FastLevels() : final_levels;
  BuildResult built = compiler_->Build(job.request, levels, job.tier);
  if (built.pending) {
    if (!job.parked) {
      job.parked = true;
      compiler_->CountLeaseWait();
    }
    job.not_before_s = MonotonicS() + static_cast<double>(options_.poll_ms) / 1000;
    {
      absl::MutexLock lock(&mu_);
      if (!stop_) {
        parked_.push_back(std::move(job));
        return;
      }
    }
    // Shutdown ran while this build asked about the lease: it emptied the parked queue before
    // this job could join it. Fail the slot as Shutdown fails the parked ones, or a compile-mode
    // flush awaiting it would wait forever (a failed tier-up keeps its fast build).
    job.slot->Fail(LeaseCancelled(job.request));
    return;
  }
  if (built.code.ok()) {
    job.slot->Publish(*built.code, job.tier);
  } else {
    job.slot->Fail(built.code.status());  // a failed tier-up keeps the fast build's code
  }
  absl::MutexLock lock(&mu_);
  if (built.code.ok() && tiered && job.tier == 0 && !stop_) {
    job.tier = 1;
    tier_up_.push_back(std::move(job));
  }
}

}  // namespace trn::scheduler
