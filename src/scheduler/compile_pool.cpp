#include "scheduler/compile_pool.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "runtime/profiler.h"

namespace trn::scheduler {

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

void CompilePool::Shutdown() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    // Dropped first builds leave their slots empty forever: those groups keep running op by op
    // (only at exit, where it does not matter).
    first_.clear();
    tier_up_.clear();
    threads.swap(threads_);
  }
  for (std::thread& t : threads) {
    t.join();
  }
}

void CompilePool::Worker(int index) {
  // Below the recording and executor threads (Linux: nice is per thread).
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), options_.nice);
  runtime::profiler::NameThisThread(absl::StrCat("compile worker ", index));
  while (true) {
    Job job;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &CompilePool::HasJob));
      if (stop_) {
        return;
      }
      std::deque<Job>& queue = first_.empty() ? tier_up_ : first_;
      job = std::move(queue.front());
      queue.pop_front();
      ++running_;
    }
    // Tier 0 of a tiered build: IR -O1 with codegen -O0 (see host_jit.h: ~2.5x faster to build
    // than -O3; plain -O0 code runs ~2.5x slower than eager, so it would slow the steps down).
    const bool tiered = options_.tiering && options_.opt_level > 1;
    const bool fast = tiered && job.tier == 0;
    absl::StatusOr<runtime::CodeSlot::Code> code =
        compiler_->Compile(job.request, fast ? 1 : options_.opt_level, job.tier, fast ? 0 : -1);
    if (code.ok()) {
      job.slot->Publish(*code, job.tier);
    } else {
      job.slot->Fail(code.status());  // a failed tier-up keeps the -O0 code
    }
    absl::MutexLock lock(&mu_);
    --running_;
    if (code.ok() && tiered && job.tier == 0 && !stop_) {
      job.tier = 1;
      tier_up_.push_back(std::move(job));
    }
  }
}

}  // namespace trn::scheduler
