// Collectives in the device stream (trace/collective.h), without processes: a fake c10d backend
// stands in for gloo, so the tests see what the executor hands it and when.
#include <ATen/ATen.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "runtime/host_view.h"
#include "trace/collective.h"
#include "trace/device_state.h"

#include <catch2/catch.hpp>

namespace {

using trn::trace::CollectiveCall;
using trn::trace::CollectiveSignature;
using Tensors = std::vector<at::Tensor>;

at::TensorOptions Dev() { return at::TensorOptions().device(c10::DeviceType::PrivateUse1, 0); }

class DoneWork : public c10d::Work {
 public:
  explicit DoneWork(std::atomic<int>* waits = nullptr) : waits_(waits) {}
  bool wait(std::chrono::milliseconds) override {
    if (waits_ != nullptr) ++*waits_;
    return true;
  }

 private:
  std::atomic<int>* waits_;
};

// Two ranks' worth of behaviour on one process: all_reduce doubles (as if a peer held the same
// values), all_gather of signatures returns ours and a peer's (changed where `peer_differs`).
class FakeBackend : public c10d::Backend {
 public:
  explicit FakeBackend(bool peer_differs = false) : Backend(0, 2), peer_differs_(peer_differs) {}
  const std::string getBackendName() const override { return "fake"; }
  c10::intrusive_ptr<c10d::Work> allreduce(Tensors& tensors, const c10d::AllreduceOptions&) override {
    for (at::Tensor& t : tensors) {
      CHECK(t.device().is_cpu());  // a host alias of the device tensor
      t.mul_(2);
    }
    return c10::make_intrusive<DoneWork>();
  }
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& out, at::Tensor& in,
                                                 const c10d::AllgatherOptions&) override {
    ++signature_exchanges;
    out.narrow(0, 0, in.numel()).copy_(in);
    out.narrow(0, in.numel(), in.numel()).copy_(in);
    if (peer_differs_) out[in.numel() + CollectiveSignature::kNumelOut].fill_(99);
    return c10::make_intrusive<DoneWork>();
  }
  int signature_exchanges = 0;

 private:
  bool peer_differs_;
};

CollectiveSignature AllReduceSignature(const at::Tensor& t) {
  CollectiveSignature s;
  s.v[CollectiveSignature::kKind] = 2;  // all_reduce
  s.v[CollectiveSignature::kDtype] = static_cast<int64_t>(t.scalar_type());
  s.v[CollectiveSignature::kTensors] = 1;
  s.v[CollectiveSignature::kNumelOut] = t.numel();
  return s;
}

c10::intrusive_ptr<CollectiveCall> AllReduce(c10::intrusive_ptr<FakeBackend> backend,
                                             std::optional<CollectiveSignature> sig) {
  return c10::make_intrusive<CollectiveCall>(
      backend, "allreduce",
      [](c10d::Backend& b, Tensors& out, Tensors&) { return b.allreduce(out, c10d::AllreduceOptions()); },
      /*deferred=*/false, sig, std::vector<c10::Storage>{}, std::make_shared<std::atomic<int64_t>>(0));
}

}  // namespace

TEST_CASE("a collective reads what was recorded before it and later ops see its result", "[collective]") {
  auto backend = c10::make_intrusive<FakeBackend>();
  at::Tensor x = at::ones({4}).to(Dev()) * 3;  // recorded
  auto call = AllReduce(backend, AllReduceSignature(x));
  trn::trace::RecordCollective("allreduce", {x}, {}, call, trn::base::kNoSource);
  at::Tensor y = x + 1;  // recorded after the collective
  CHECK(at::equal(y.cpu(), at::full({4}, 7.0)));
  CHECK(call->Done());
  CHECK(call->Outcome().ok());
  CHECK(backend->signature_exchanges == 1);
  const auto collectives = trn::trace::State().stats.Snapshot().collectives;
  REQUIRE(collectives.count("allreduce") == 1);
  CHECK(collectives.at("allreduce").bytes >= 16);
}

TEST_CASE("a mismatched signature fails the collective at the next sync, naming both sides", "[collective]") {
  auto backend = c10::make_intrusive<FakeBackend>(/*peer_differs=*/true);
  at::Tensor x = at::ones({4}).to(Dev());
  trn::trace::RecordCollective("allreduce", {x}, {}, AllReduce(backend, AllReduceSignature(x)),
                               trn::base::kNoSource);
  try {
    (void)x.cpu();
    FAIL("expected a mismatch error");
  } catch (const c10::Error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("torch_trn::allreduce") != std::string::npos);
    CHECK(msg.find("collective mismatch") != std::string::npos);
    CHECK(msg.find("4 element(s) out") != std::string::npos);
    CHECK(msg.find("99 element(s) out") != std::string::npos);
  }
  // The collective did not run (its memory is untouched), and the stream goes on; the failed
  // collective's tensor raises its failure when read (runtime/poison.h).
  CHECK(at::equal(trn::runtime::HostAlias(x), at::ones({4})));
  CHECK_THROWS_WITH((void)x.cpu(), Catch::Contains("collective mismatch") && Catch::Contains("has no valid value"));
  at::Tensor y = at::ones({4}).to(Dev()) * 3;
  CHECK(at::equal(y.cpu(), at::full({4}, 3.0)));
}

TEST_CASE("a backend failure surfaces as its exception class at the next sync", "[collective]") {
  auto backend = c10::make_intrusive<FakeBackend>();
  at::Tensor x = at::ones({2}).to(Dev());
  auto call = c10::make_intrusive<CollectiveCall>(
      backend, "allreduce",
      [](c10d::Backend&, Tensors&, Tensors&) -> c10::intrusive_ptr<c10d::Work> {
        C10_THROW_ERROR(DistBackendError, "Connection closed by peer");
      },
      false, std::nullopt, std::vector<c10::Storage>{}, std::make_shared<std::atomic<int64_t>>(0));
  trn::trace::RecordCollective("allreduce", {x}, {}, call, trn::base::kNoSource);
  CHECK_THROWS_AS(trn::trace::SyncOrThrow("test"), c10::DistBackendError);
  CHECK(call->Done());
  CHECK_FALSE(call->Outcome().ok());
  CHECK(backend->signature_exchanges == 0);  // (no signature: no exchange)
}

TEST_CASE("a deferred collective is started by its op and waited for by c10d_wait", "[collective]") {
  auto backend = c10::make_intrusive<FakeBackend>();
  std::atomic<int> waits{0};
  at::Tensor x = at::ones({3}).to(Dev());
  auto call = c10::make_intrusive<CollectiveCall>(
      backend, "send", [&waits](c10d::Backend&, Tensors&, Tensors& in) -> c10::intrusive_ptr<c10d::Work> {
        CHECK(in.size() == 1);
        return c10::make_intrusive<DoneWork>(&waits);
      },
      /*deferred=*/true, std::nullopt, std::vector<c10::Storage>{x.storage()},
      std::make_shared<std::atomic<int64_t>>(0));
  trn::trace::RecordCollective("send", {}, {x}, call, trn::base::kNoSource);
  trn::trace::SyncOrThrow("test");
  CHECK(waits == 0);  // started, not waited for
  CHECK_FALSE(call->Done());
  trn::trace::RecordCollectiveWait({x}, call, trn::base::kNoSource);
  trn::trace::SyncOrThrow("test");
  CHECK(waits == 1);
  CHECK(call->Done());
}
