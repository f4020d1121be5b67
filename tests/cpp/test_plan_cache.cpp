// Plan, then emit only on a miss: a planning lowering decides what an emitting one decides, its
// records replay into the same IR away from the flush, and a flush finds a group it planned
// before by content (PlanCache) and binds its own tensors, with the guards and liveness checked.
#include <ATen/ATen.h>

#include "mlir_lowering/group_lowering.h"
#include "mlir_lowering/group_replay.h"
#include "scheduler/plan_cache.h"
#include "scheduler/segment_planner.h"
#include "trace/device_state.h"
#include "trace/snapshot.h"

#include <catch2/catch.hpp>

namespace {

using trn::mlir_lowering::GroupLowering;
using trn::mlir_lowering::LoweredGroup;
using trn::runtime::OpRecord;

at::TensorOptions Dev() { return at::TensorOptions().device(c10::DeviceType::PrivateUse1, 0); }

OpRecord Record(const char* name, std::vector<c10::IValue> args) {
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, "out");
  for (c10::IValue& v : args) v = trn::trace::PrivateArg(v);
  return OpRecord(op, std::move(args));
}

// One "step": t = a * b; y = t + alpha * a; z = y.pow(p). `t` dies (a temporary).
struct Step {
  at::Tensor a, b, y, z;
  std::vector<OpRecord> records;
};
Step MakeStep(double alpha, double p, bool keep_t = false, at::Tensor* t_out = nullptr) {
  Step s;
  s.a = at::empty({4, 8}, Dev());
  s.b = at::empty({4, 8}, Dev());
  at::Tensor t = at::empty({4, 8}, Dev());
  s.y = at::empty({4, 8}, Dev());
  s.z = at::empty({4, 8}, Dev());
  s.records.push_back(Record("aten::mul", {s.a, s.b, t}));
  s.records.push_back(Record("aten::add", {t, s.a, c10::Scalar(alpha), s.y}));
  auto pow = c10::Dispatcher::singleton().findSchemaOrThrow("aten::pow", "Tensor_Scalar_out");
  std::vector<c10::IValue> args = {s.y, c10::Scalar(p), s.z};
  for (c10::IValue& v : args) v = trn::trace::PrivateArg(v);
  s.records.emplace_back(pow, std::move(args));
  if (keep_t && t_out != nullptr) *t_out = t;
  return s;
}

LoweredGroup Lower(const std::vector<OpRecord>& records, bool emit) {
  GroupLowering lowering(trn::mlir_lowering::Target::Host(), emit);
  for (const OpRecord& r : records) {
    REQUIRE(lowering.Add(r).ok());
  }
  auto lowered = lowering.Finish();
  REQUIRE(lowered.ok());
  return std::move(*lowered);
}

}  // namespace

TEST_CASE("a planning lowering decides what an emitting one does, and its replay emits the same IR", "[plan]") {
  trn::trace::State();
  Step s = MakeStep(2.0, 3.0);
  const LoweredGroup planned = Lower(s.records, /*emit=*/false);
  const LoweredGroup emitted = Lower(s.records, /*emit=*/true);
  CHECK(planned.module == nullptr);
  REQUIRE(emitted.module != nullptr);
  CHECK(trn::mlir_lowering::PlanShape::Of(planned) == trn::mlir_lowering::PlanShape::Of(emitted));
  CHECK(planned.live_buffers == emitted.live_buffers);
  CHECK(planned.temporaries == 1);
  CHECK(planned.param_args == emitted.param_args);
  // alpha is a runtime scalar; the pow exponent is read as a constant (a value the plan needs).
  CHECK(planned.param_args == std::vector<std::pair<int64_t, int64_t>>{{1, 2}});
  CHECK(std::find(planned.value_args.begin(), planned.value_args.end(), std::make_pair(int64_t{2}, int64_t{1})) !=
        planned.value_args.end());

  // The replay holds no reference to the group's storages.
  const auto uses = c10::raw::intrusive_ptr::use_count(s.y.storage().unsafeGetStorageImpl());
  auto replay = trn::mlir_lowering::GroupReplay::Detach(s.records, planned.live_buffers,
                                                        trn::mlir_lowering::PlanShape::Of(planned),
                                                        trn::mlir_lowering::Target::Host());
  CHECK(c10::raw::intrusive_ptr::use_count(s.y.storage().unsafeGetStorageImpl()) == uses);
  bool first = false, second = true;
  auto module = replay->Emit(&first);
  REQUIRE(module.ok());
  CHECK(module->Print() == emitted.module->Print());
  CHECK(first);
  auto again = replay->Emit(&second);
  REQUIRE(again.ok());
  CHECK_FALSE(second);  // the group's second emission (a tier-up build): not counted again
  CHECK(again->Print() == emitted.module->Print());

  // A replay whose plan disagrees with the IR is an internal error, never silently different.
  trn::mlir_lowering::PlanShape wrong = trn::mlir_lowering::PlanShape::Of(planned);
  wrong.outputs.pop_back();
  auto bad = trn::mlir_lowering::GroupReplay::Detach(s.records, planned.live_buffers, wrong,
                                                     trn::mlir_lowering::Target::Host())
                 ->Emit();
  CHECK(bad.status().code() == absl::StatusCode::kInternal);
}

TEST_CASE("group content hashes repeat across steps and leave runtime values out", "[plan]") {
  trn::trace::State();
  auto hash = [](const Step& s) {
    trn::scheduler::GroupHasher h(s.records, 0);
    trn::scheduler::Hash128 k;
    while (!h.at_end()) k = h.Add();
    return h.End();
  };
  Step a = MakeStep(2.0, 3.0), b = MakeStep(2.0, 3.0), c = MakeStep(0.5, 3.0), d = MakeStep(2.0, 2.0);
  CHECK(hash(a) == hash(b));  // fresh storages, same structure
  CHECK(hash(a) == hash(c));  // alpha: a value, left out
  CHECK(hash(a) == hash(d));  // the exponent too: the plan guards it
  // Rewired: the add reads b instead of a.
  Step e = MakeStep(2.0, 3.0);
  e.records[1] = Record("aten::add", {e.records[0].args[2].toTensor(), e.b, c10::Scalar(2.0), e.y});
  CHECK_FALSE(hash(a) == hash(e));
}

TEST_CASE("a flush finds a planned group again, binds its own tensors and checks guards and liveness", "[plan]") {
  trn::trace::State();
  trn::base::Stats stats;
  trn::scheduler::PlanCache cache;
  auto plan_step = [&](Step& s) {
    trn::scheduler::SegmentPlanner planner(std::move(s.records), &cache, 256, trn::mlir_lowering::Target::Host(), &stats,
                                           nullptr);
    std::vector<trn::scheduler::PlannedUnit> units;
    while (!planner.Done()) units.push_back(planner.Next());
    return std::make_pair(std::move(units), std::make_pair(planner.cache_hits(), planner.cache_misses()));
  };
  Step s1 = MakeStep(2.0, 3.0);
  auto [u1, c1] = plan_step(s1);
  REQUIRE(u1.size() == 1);
  REQUIRE(u1[0].plan != nullptr);
  CHECK(c1 == std::make_pair(int64_t{0}, int64_t{1}));
  CHECK(u1[0].params == std::vector<double>{2.0});

  Step s2 = MakeStep(0.25, 3.0);  // a new step: fresh storages, another runtime scalar
  auto [u2, c2] = plan_step(s2);
  REQUIRE(u2.size() == 1);
  CHECK(c2 == std::make_pair(int64_t{1}, int64_t{0}));
  CHECK(u2[0].plan == u1[0].plan);
  CHECK(u2[0].params == std::vector<double>{0.25});
  // Bound to this step's tensors: the outputs are s2's y and z.
  for (const auto& [pos, staged] : u2[0].plan->outputs) {
    const at::Tensor t = trn::scheduler::TensorAt(u2[0].ops, pos);
    CHECK((t.storage().unsafeGetStorageImpl() == s2.y.storage().unsafeGetStorageImpl() ||
           t.storage().unsafeGetStorageImpl() == s2.z.storage().unsafeGetStorageImpl()));
  }

  Step s3 = MakeStep(2.0, 2.0);  // the exponent is a guard: another plan (and key)
  auto [u3, c3] = plan_step(s3);
  CHECK(c3 == std::make_pair(int64_t{0}, int64_t{1}));
  REQUIRE(u3[0].plan != nullptr);
  CHECK(u3[0].plan->key_hex != u1[0].plan->key_hex);

  at::Tensor kept;
  Step s4 = MakeStep(2.0, 3.0, /*keep_t=*/true, &kept);  // t is live now: an output, another plan
  auto [u4, c4] = plan_step(s4);
  CHECK(c4 == std::make_pair(int64_t{0}, int64_t{1}));
  REQUIRE(u4[0].plan != nullptr);
  CHECK(u4[0].plan->outputs.size() == u1[0].plan->outputs.size() + 1);
  CHECK(u4[0].plan->temporaries == 0);
}
