// Executor: stream order, stored errors with op context, poisoning until the next Wait,
// backpressure, last-ops ring.
#include <ATen/ATen.h>

#include "runtime/executor.h"
#include "base/op_error.h"
#include "base/source_table.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

using trn::runtime::Executor;
using trn::runtime::ExecutorOptions;
using trn::runtime::OpRecord;
using trn::base::Stats;

namespace {
c10::OperatorHandle Op(const char* name, const char* overload) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
}

// add_(dst, src): an in-place op on host tensors, so the test needs no device.
OpRecord AddInPlace(const at::Tensor& dst, const at::Tensor& src) {
  return OpRecord(Op("aten::add_", "Tensor"), {dst, src, c10::IValue(at::Scalar(1))});
}
}  // namespace

TEST_CASE("ops run in submission order", "[executor]") {
  Stats stats;
  Executor ex(ExecutorOptions{}, &stats);
  at::Tensor acc = at::zeros({3});
  for (int i = 1; i <= 100; ++i) {
    ex.Submit(AddInPlace(acc, at::full({3}, static_cast<double>(i))));
  }
  REQUIRE(ex.Wait().ok());
  CHECK(acc[0].item<double>() == 5050.0);
  CHECK(stats.Snapshot().ops_executed == 100);
  auto last = ex.LastOps(3);
  REQUIRE(last.size() == 3);
  CHECK(last.back().op() == "aten::add_.Tensor");
}

TEST_CASE("an error is stored with the op and its source line, later ops are skipped", "[executor]") {
  Stats stats;
  Executor ex(ExecutorOptions{}, &stats);
  trn::base::SourceLocation loc{"model.py", 41, "forward"};
  const auto id = trn::base::GlobalSourceTable().Intern(loc);
  at::Tensor a = at::zeros({3});
  OpRecord bad = AddInPlace(a, at::ones({4}));  // shape mismatch: the CPU kernel throws
  bad.source = id;
  ex.Submit(std::move(bad));
  ex.Submit(AddInPlace(a, at::ones({3})));  // skipped: submitted after the failure
  absl::Status status = ex.Wait();
  REQUIRE_FALSE(status.ok());
  const std::string msg(status.message());
  CHECK(msg.find("aten::add_.Tensor at model.py:41 (forward)") == 0);
  CHECK(msg.find("must match") != std::string::npos);
  CHECK(a.sum().item<double>() == 0.0);
  // The error was consumed: the stream works again.
  ex.Submit(AddInPlace(a, at::ones({3})));
  CHECK(ex.Wait().ok());
  CHECK(a.sum().item<double>() == 3.0);
}

TEST_CASE("the error class survives as a kind", "[executor]") {
  Stats stats;
  Executor ex(ExecutorOptions{}, &stats);
  at::Tensor x = at::zeros({3});
  ex.Submit(OpRecord(Op("aten::select", "int"), {x, c10::IValue(int64_t{0}), c10::IValue(int64_t{7})}));
  absl::Status status = ex.Wait();
  REQUIRE_FALSE(status.ok());
  CHECK(trn::base::KindOf(status) == trn::base::ErrorKind::kIndex);
}

TEST_CASE("a full queue blocks the producer instead of growing", "[executor]") {
  Stats stats;
  Executor ex(ExecutorOptions{/*max_pending=*/2, /*last_ops_capacity=*/4}, &stats);
  at::Tensor acc = at::zeros({1});
  for (int i = 0; i < 50; ++i) {
    ex.Submit(AddInPlace(acc, at::ones({1})));
    CHECK(ex.Pending() <= 3);  // queued (<= 2) plus the one running
  }
  REQUIRE(ex.Wait().ok());
  CHECK(acc.item<double>() == 50.0);
  CHECK(ex.LastOps(100).size() == 4);
}

namespace {
class Recorder final : public c10::WarningHandler {
 public:
  void process(const c10::Warning& w) override { messages.push_back(w.msg()); }
  std::vector<std::string> messages;
};
}  // namespace

TEST_CASE("kernel warnings are re-raised on the waiting thread", "[executor]") {
  Stats stats;
  Executor ex(ExecutorOptions{}, &stats);
  Recorder recorder;
  c10::WarningUtils::WarningHandlerGuard guard(&recorder);
  // aten::cross without dim: its CPU kernel warns (once per process) about the deprecated default.
  at::Tensor v = at::ones({3, 3});
  ex.Submit(OpRecord(Op("aten::cross", ""), {v, v, c10::IValue()}));
  REQUIRE(ex.Wait().ok());
  REQUIRE(recorder.messages.size() == 1);
  CHECK(recorder.messages[0].find("torch.cross without specifying the dim") != std::string::npos);
}

TEST_CASE("Wait never returns while a taken unit is still running", "[executor]") {
  // Regression: the unit was popped in one critical section and marked running in the next, so
  // a Wait() in between saw an idle executor and returned before the op ran (1 in ~500).
  Stats stats;
  Executor ex(ExecutorOptions{}, &stats);
  at::Tensor acc = at::zeros({1});
  int stale = 0;
  for (int i = 1; i <= 3000; ++i) {
    ex.Submit(AddInPlace(acc, at::ones({1})));
    REQUIRE(ex.Wait().ok());
    stale += acc[0].item<double>() != static_cast<double>(i);
  }
  CHECK(stale == 0);
}

TEST_CASE("a multi-op unit runs its ops in order, counted per op", "[executor]") {
  Stats stats;
  Executor ex(ExecutorOptions{}, &stats);
  at::Tensor acc = at::zeros({2});
  trn::runtime::ExecUnit unit;
  for (int i = 0; i < 5; ++i) {
    unit.ops.push_back(AddInPlace(acc, at::full({2}, static_cast<double>(i))));
  }
  ex.Submit(std::move(unit));
  REQUIRE(ex.Wait().ok());
  CHECK(acc[1].item<double>() == 10.0);
  CHECK(stats.Snapshot().ops_executed == 5);
  CHECK(ex.LastOps(10).size() == 5);
}

TEST_CASE("a finished op's tensors are released by Wait, or by the executor once it is idle", "[executor]") {
  Stats stats;
  Executor ex(ExecutorOptions{}, &stats);
  at::Tensor dst = at::zeros({3});
  auto submit_one = [&] {
    at::Tensor src = at::ones({3});
    c10::weak_intrusive_ptr<c10::StorageImpl> weak(src.storage().getWeakStorageImpl());
    ex.Submit(AddInPlace(dst, src));
    return weak;  // src's only strong reference left is the record's
  };
  // Fewer than the recording thread's release batch: only Wait (or an idle executor) frees them.
  auto first = submit_one();
  REQUIRE(ex.Wait().ok());
  CHECK(first.expired());
  auto second = submit_one();
  // No Wait: no more work comes for kQuietBeforeRelease, so the executor releases what it ran.
  bool released = false;
  for (int i = 0; i < 2000 && !released; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    released = second.expired();
  }
  CHECK(released);
  // Many submits (the recording thread releases finished units in batches), then a sync.
  std::vector<c10::weak_intrusive_ptr<c10::StorageImpl>> many;
  for (size_t i = 0; i < 4 * Executor::kReleaseBatch; ++i) many.push_back(submit_one());
  REQUIRE(ex.Wait().ok());
  for (auto& w : many) CHECK(w.expired());
  CHECK(dst[0].item<double>() == 2.0 + 4 * Executor::kReleaseBatch);
}

namespace {
trn::runtime::ExecUnit UnitOf(OpRecord op, uint64_t batch) {
  trn::runtime::ExecUnit unit;
  unit.ops.push_back(std::move(op));
  unit.batch = batch;
  return unit;
}
}  // namespace

TEST_CASE("WaitThrough waits for the units of earlier batches and loses no error", "[executor]") {
  Stats stats;
  Executor ex(ExecutorOptions{}, &stats);
  at::Tensor read = at::zeros({3});
  at::Tensor other = at::zeros({3});
  SECTION("an error in a later batch is reported by WaitThrough or by the next Wait, once") {
    for (int i = 0; i < 50; ++i) ex.Submit(UnitOf(AddInPlace(read, at::ones({3})), 1));
    ex.Submit(UnitOf(AddInPlace(other, at::ones({4})), 2));  // fails when it runs
    const absl::Status through = ex.WaitThrough(1);
    if (through.ok()) {
      CHECK(read[0].item<double>() == 50.0);  // batch 1 ran
    }
    const absl::Status rest = ex.Wait();
    CHECK(through.ok() != rest.ok());  // exactly one of them reports it
    CHECK(read[0].item<double>() == 50.0);
    CHECK(ex.Wait().ok());
  }
  SECTION("an error in the batch waited for is reported by WaitThrough") {
    ex.Submit(UnitOf(AddInPlace(read, at::ones({4})), 1));
    ex.Submit(UnitOf(AddInPlace(other, at::ones({3})), 2));
    CHECK_FALSE(ex.WaitThrough(1).ok());
    CHECK(ex.Wait().ok());
  }
  SECTION("nothing to wait for returns at once") {
    CHECK(ex.WaitThrough(0).ok());
    ex.Submit(UnitOf(AddInPlace(read, at::ones({3})), 3));
    CHECK(ex.WaitThrough(3).ok());
    CHECK(read[0].item<double>() == 1.0);
  }
}
