// Target: one answer to "can this target run this op", the same for the grouper, the lowering
// and lowered_ops(). Records are built by hand, as the recording fallback makes them.
#include <ATen/ATen.h>

#include <algorithm>

#include "mlir_lowering/target.h"
#include "trace/device_state.h"
#include "trace/snapshot.h"

#include <catch2/catch.hpp>

namespace {

using trn::mlir_lowering::Target;
using trn::runtime::OpRecord;

at::TensorOptions Dev(c10::ScalarType dtype) {
  return at::TensorOptions().device(c10::DeviceType::PrivateUse1, 0).dtype(dtype);
}

OpRecord Op(const char* name, const char* overload, std::vector<c10::IValue> args) {
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
  for (c10::IValue& v : args) v = trn::trace::PrivateArg(v);
  return OpRecord(op, std::move(args));
}

const Target& Named(const char* name) {
  auto t = Target::Named(name);
  REQUIRE(t.ok());
  return **t;
}

}  // namespace

TEST_CASE("targets are named singletons; an unknown name is an error") {
  CHECK(&Named("host") == &Target::Host());
  CHECK(&Named("trn2") == &Named("trn2"));
  CHECK_FALSE(Target::Host().is_trn());
  CHECK(Named("trn2").is_trn());
  CHECK(Named("trn3").name() == "trn3");
  auto bad = Target::Named("trn1");
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(bad.status().message()).find("trn1") != std::string::npos);
}

TEST_CASE("an f32 add groups everywhere; f64 groups on the host only, with the reason on trn") {
  for (c10::ScalarType dtype : {c10::kFloat, c10::kDouble}) {
    at::Tensor a = at::empty({4, 8}, Dev(dtype)), b = at::empty({4, 8}, Dev(dtype)), y = at::empty({4, 8}, Dev(dtype));
    OpRecord add = Op("aten::add", "out", {a, b, c10::Scalar(1), y});
    std::string why;
    CHECK(Target::Host().CanGroup(add, &why));
    const bool trn = Named("trn2").CanGroup(add, &why);
    CHECK(trn == (dtype == c10::kFloat));
    if (!trn) CHECK(why == "dtype Double (no trn lowering)");
  }
}

TEST_CASE("a runtime call the trn pipeline does not lower runs op by op on trn, grouped on the host") {
  // gather is a runtime call of ATen's kernel on every target; trn lowers embedding and
  // index_select itself, not gather.
  at::Tensor x = at::empty({4, 8}, Dev(c10::kFloat)), y = at::empty({4, 8}, Dev(c10::kFloat));
  at::Tensor idx = at::zeros({4, 8}, Dev(c10::kLong));
  OpRecord gather = Op("aten::gather", "out", {x, int64_t{1}, idx, false, y});
  std::string why;
  CHECK(Target::Host().CanGroup(gather, &why));
  CHECK_FALSE(Named("trn2").CanGroup(gather, &why));
  CHECK(why == "runtime call (no trn lowering)");
}

TEST_CASE("lowered ops: trn's are a subset of the host's, with the matrix products") {
  const auto host = Target::Host().LoweredOps(), trn = Named("trn2").LoweredOps();
  CHECK(trn.size() < host.size());
  CHECK(std::is_sorted(host.begin(), host.end()));
  CHECK(std::includes(host.begin(), host.end(), trn.begin(), trn.end()));
  CHECK(std::binary_search(trn.begin(), trn.end(), "aten::mm"));
  CHECK(std::binary_search(host.begin(), host.end(), "aten::gather"));
  CHECK_FALSE(std::binary_search(trn.begin(), trn.end(), "aten::gather"));
}
