// The neuron device from C++ (no Python): recording, views, in-place, copies, sync, errors.
#include <ATen/ATen.h>

#include "trace/device_state.h"
#include "trace/snapshot.h"

#include <catch2/catch.hpp>

namespace {
at::TensorOptions Dev() { return at::TensorOptions().device(c10::DeviceType::PrivateUse1, 0); }
}  // namespace

TEST_CASE("ops are recorded, not run, until a sync point", "[device]") {
  auto& state = trn::trace::State();
  at::Tensor a = at::arange(6, at::kFloat).reshape({2, 3}).to(Dev());
  at::Tensor b = at::ones({2, 3}).to(Dev());
  const auto before = state.stats.Snapshot().ops_recorded;
  at::Tensor c = (a + b) * 2;
  CHECK(c.device().type() == c10::DeviceType::PrivateUse1);
  CHECK(c.sizes() == at::IntArrayRef({2, 3}));
  CHECK(state.stats.Snapshot().ops_recorded >= before + 2);
  at::Tensor expected = (at::arange(6, at::kFloat).reshape({2, 3}) + 1) * 2;
  CHECK(at::equal(c.cpu(), expected));
}

TEST_CASE("views share storage and in-place ops write through them", "[device]") {
  at::Tensor a = at::zeros({4, 4}).to(Dev());
  at::Tensor row = a.select(0, 1);
  row.fill_(3.0);
  at::Tensor t = a.t();
  CHECK(t.storage().is_alias_of(a.storage()));
  CHECK(a.cpu().sum().item<double>() == 12.0);
  CHECK(t.cpu()[0][1].item<double>() == 3.0);
}

TEST_CASE("copies convert dtypes in both directions", "[device]") {
  at::Tensor h = at::tensor({1.5, -2.5, 3.0}, at::kDouble);
  at::Tensor d = h.to(Dev().dtype(at::kFloat));
  CHECK(d.scalar_type() == at::kFloat);
  at::Tensor back = d.to(at::kCPU, at::kLong);
  CHECK(back.scalar_type() == at::kLong);
  CHECK(back[1].item<int64_t>() == -2);
}

TEST_CASE("a failing op raises the eager exception class, named with its op", "[device]") {
  at::Tensor a = at::ones({3}).to(Dev());
  at::Tensor idx = at::tensor({0, 5}, at::kLong).to(Dev());
  // Without Python, index_select has no Meta kernel (it is registered from Python), so the error
  // may surface at the op (host fallback) or at the sync: either way it is an IndexError.
  try {
    at::Tensor g = a.index_select(0, idx);
    (void)g.cpu();
    FAIL("expected an IndexError");
  } catch (const c10::IndexError& e) {
    CHECK(std::string(e.what()).find("aten::index_select") != std::string::npos);
  }
  // The stream recovers after the error was reported.
  CHECK(a.sum().item<double>() == 3.0);
}

TEST_CASE("a snapshot views its tensor's storage with the geometry of the moment, as an inference tensor", "[device]") {
  at::Tensor t = at::arange(6, at::kFloat).to(Dev()).reshape({2, 3});
  at::Tensor s = trn::trace::Snapshot(t);
  CHECK(s.storage().is_alias_of(t.storage()));
  CHECK(s.sizes() == t.sizes());
  CHECK(s.strides() == t.strides());
  // No autograd keys: no version counter to allocate for each argument of each recorded op.
  CHECK(s.is_inference());
  CHECK_FALSE(t.is_inference());
  t.unsafeGetTensorImpl()->set_sizes_and_strides(at::IntArrayRef({3, 2}), at::IntArrayRef({2, 1}), 0);  // as t_ would
  CHECK(s.sizes() == at::IntArrayRef({2, 3}));
}
