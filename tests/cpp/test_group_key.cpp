// Group keys: equal for structurally equal groups (two identical steps: fresh storages, same
// shapes and wiring), different when only the wiring differs. Records are built by hand and
// lowered with GroupLowering, as the grouper does.
#include <ATen/ATen.h>

#include "mlir_lowering/group_lowering.h"
#include "scheduler/group_key.h"
#include "trace/device_state.h"
#include "trace/snapshot.h"

#include <catch2/catch.hpp>

namespace {

using trn::runtime::OpRecord;

at::TensorOptions Dev() { return at::TensorOptions().device(c10::DeviceType::PrivateUse1, 0); }

// As the recording fallback does: records hold private snapshots (their own TensorImpls over
// the same storage), so a storage referenced by a user's tensor has more references than the
// records account for (that is how liveness is decided).
OpRecord Binary(const char* name, const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, "out");
  std::vector<c10::IValue> args = {a, b, out};
  if (std::string(name) == "aten::add") {
    args = {a, b, c10::Scalar(1), out};
  }
  for (c10::IValue& v : args) {
    v = trn::trace::PrivateArg(v);
  }
  return OpRecord(op, std::move(args));
}

// t = a * b; y = t + (second_is_a ? a : b). Returns the key; `y` stays alive (an output).
trn::scheduler::GroupKey KeyOf(bool second_is_a, at::Tensor* y) {
  at::Tensor a = at::empty({4, 8}, Dev()), b = at::empty({4, 8}, Dev());
  at::Tensor t = at::empty({4, 8}, Dev());
  *y = at::empty({4, 8}, Dev());
  std::vector<OpRecord> records;
  records.push_back(Binary("aten::mul", a, b, t));
  records.push_back(Binary("aten::add", t, second_is_a ? a : b, *y));
  t.reset();  // dead after the group: an internal temporary
  trn::mlir_lowering::GroupLowering lowering(trn::mlir_lowering::Target::Host());
  for (const OpRecord& r : records) {
    REQUIRE(lowering.Add(r).ok());
  }
  auto lowered = lowering.Finish();
  REQUIRE(lowered.ok());
  std::vector<trn::runtime::OutputBuffer> outputs;
  for (const auto& o : lowered->outputs) {
    outputs.push_back({o.tensor, o.staged});
  }
  std::vector<const OpRecord*> ops = {&records[0], &records[1]};
  CHECK(lowered->outputs.size() == 1);
  CHECK(lowered->temporaries == 1);
  return trn::scheduler::MakeGroupKey(ops, lowered->inputs, outputs);
}

}  // namespace

TEST_CASE("group keys repeat across identical steps and change with the wiring", "[group_key]") {
  trn::trace::State();  // registers the device
  at::Tensor y1, y2, y3;
  auto step1 = KeyOf(true, &y1);
  auto step2 = KeyOf(true, &y2);
  CHECK(step1 == step2);
  CHECK(step1.Hex() == step2.Hex());
  auto rewired = KeyOf(false, &y3);
  CHECK_FALSE(rewired == step1);
  CHECK(rewired.Hex() != step1.Hex());
}

TEST_CASE("group keys include shapes and scalar arguments", "[group_key]") {
  trn::trace::State();
  auto key = [](int64_t cols, double alpha) {
    at::Tensor a = at::empty({2, cols}, Dev()), b = at::empty({2, cols}, Dev());
    at::Tensor y = at::empty({2, cols}, Dev());
    auto op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::add", "out");
    std::vector<OpRecord> records;
    records.emplace_back(op, std::vector<c10::IValue>{a, b, c10::Scalar(alpha), y});
    std::vector<const OpRecord*> ops = {&records[0]};
    return trn::scheduler::MakeGroupKey(ops, {a, b}, {{y, false}}).Hex();
  };
  CHECK(key(3, 1.0) == key(3, 1.0));
  CHECK(key(3, 1.0) != key(4, 1.0));
  CHECK(key(3, 1.0) != key(3, 2.0));
}
