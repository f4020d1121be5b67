// The instant tier's program (runtime/instant_program.h): which ops a group's records chain, what
// a chain stores (only what outlives it), and that running it gives ATen's CPU results.
#include <ATen/ATen.h>

#include "runtime/host_view.h"
#include "runtime/instant_kernels.h"
#include "runtime/instant_program.h"
#include "trace/snapshot.h"

#include <catch2/catch.hpp>

namespace {

using trn::runtime::HostAlias;
using trn::runtime::InstantProgram;
using trn::runtime::OpRecord;

at::TensorOptions Dev() { return at::TensorOptions().device(c10::DeviceType::PrivateUse1, 0); }

OpRecord Record(const char* name, const char* overload, std::vector<c10::IValue> args) {
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
  for (c10::IValue& v : args) v = trn::trace::PrivateArg(v);
  return OpRecord(op, std::move(args));
}

at::Tensor DeviceOf(const at::Tensor& cpu) {
  at::Tensor d = at::empty(cpu.sizes(), Dev());
  HostAlias(d).copy_(cpu);
  return d;
}

// t = a * b; y = t + alpha * a; z = y ** 2 (t a temporary; y too unless it is an output).
struct Group {
  at::Tensor a_cpu = at::randn({40, 100}), b_cpu = at::randn({40, 100});
  at::Tensor a = DeviceOf(a_cpu), b = DeviceOf(b_cpu);
  at::Tensor t = DeviceOf(at::full({40, 100}, -7.0)), y = DeviceOf(at::full({40, 100}, -7.0));
  at::Tensor z = at::empty({40, 100}, Dev());
  std::vector<OpRecord> records;
  Group() {
    records.push_back(Record("aten::mul", "out", {a, b, t}));
    records.push_back(Record("aten::add", "out", {t, a, c10::Scalar(0.5), y}));
    records.push_back(Record("aten::pow", "Tensor_Scalar_out", {y, c10::Scalar(2.0), z}));
  }
};

}  // namespace

TEST_CASE("instant: a chain stores only what outlives it and equals ATen") {
  REQUIRE(trn::runtime::instant::Available());  // (x86-64 with AVX2 + FMA: the kernels run)
  Group g;
  auto program = InstantProgram::Build(g.records, {g.z});
  REQUIRE(program->chains() == 1);
  REQUIRE(program->chained_ops() == 3);
  REQUIRE(program->steps().size() == 1);
  REQUIRE(program->RunChain(0, g.records));
  at::Tensor y_want = g.a_cpu * g.b_cpu + 0.5 * g.a_cpu;
  CHECK(at::allclose(HostAlias(g.z), y_want.pow(2), 1e-6, 1e-6));
  // The temporaries were never written: they still hold what they held before.
  CHECK(at::equal(HostAlias(g.t), at::full({40, 100}, -7.0)));
  CHECK(at::equal(HostAlias(g.y), at::full({40, 100}, -7.0)));

  // With y an output of the group, the chain stores it too.
  auto with_y = InstantProgram::Build(g.records, {g.y, g.z});
  REQUIRE(with_y->RunChain(0, g.records));
  CHECK(at::allclose(HostAlias(g.y), y_want, 1e-6, 1e-6));
  CHECK(at::equal(HostAlias(g.t), at::full({40, 100}, -7.0)));
}

TEST_CASE("instant: a value read after the chain by an ATen op is stored") {
  REQUIRE(trn::runtime::instant::Available());  // (x86-64 with AVX2 + FMA: the kernels run)
  Group g;
  at::Tensor s = at::empty({100}, Dev());
  // sum(t, dim 0) after the chain: not elementwise, so it runs with ATen and reads t.
  auto sum = c10::Dispatcher::singleton().findSchemaOrThrow("aten::sum", "IntList_out");
  std::vector<c10::IValue> args = {g.t, c10::IValue(std::vector<int64_t>{0}), false, c10::IValue(), s};
  for (c10::IValue& v : args) v = trn::trace::PrivateArg(v);
  g.records.emplace_back(sum, std::move(args));
  auto program = InstantProgram::Build(g.records, {g.z, s});
  REQUIRE(program->steps().size() == 2);
  CHECK(program->steps()[0].chain == 0);
  CHECK(program->steps()[1].chain < 0);
  REQUIRE(program->RunChain(0, g.records));
  CHECK(at::allclose(HostAlias(g.t), g.a_cpu * g.b_cpu, 1e-6, 1e-6));
  CHECK(at::equal(HostAlias(g.y), at::full({40, 100}, -7.0)));
}

TEST_CASE("instant: refusals end the chain and run with ATen") {
  at::Tensor a = DeviceOf(at::randn({40, 100})), row = DeviceOf(at::randn({100}));
  at::Tensor o1 = at::empty({40, 100}, Dev()), o2 = at::empty({40, 100}, Dev()), o3 = at::empty({40, 100}, Dev());
  at::Tensor d = DeviceOf(at::randn({40, 100}, at::kDouble)), o4 = at::empty({40, 100}, Dev().dtype(at::kDouble));
  std::vector<OpRecord> records;
  records.push_back(Record("aten::mul", "out", {a, c10::Scalar(2.0), o1}));        // chained
  records.push_back(Record("aten::add", "out", {o1, row, c10::Scalar(1), o2}));    // a broadcast row
  records.push_back(Record("aten::mul", "out", {a.t().t(), o2, o3}));              // chained again
  records.push_back(Record("aten::mul", "out", {d, c10::Scalar(3.0), o4}));        // float64
  auto program = InstantProgram::Build(records, {o3, o4});
  REQUIRE(program->steps().size() == 4);
  CHECK(program->steps()[0].chain == 0);
  CHECK(program->steps()[1].chain < 0);
  CHECK(program->steps()[2].chain == 1);
  CHECK(program->steps()[3].chain < 0);
  CHECK(program->chained_ops() == 2);
}

TEST_CASE("instant: views of one storage at other offsets never share a chain") {
  at::Tensor buf = DeviceOf(at::randn({1001}));
  at::Tensor lo = buf.narrow(0, 0, 1000), hi = buf.narrow(0, 1, 1000);
  at::Tensor a = at::empty({1000}, Dev()), c = at::empty({1000}, Dev());
  std::vector<OpRecord> records;
  records.push_back(Record("aten::mul", "out", {lo, c10::Scalar(2.0), a}));
  records.push_back(Record("aten::add_", "Tensor", {hi, a, c10::Scalar(1)}));
  records.push_back(Record("aten::add", "out", {lo, c10::Scalar(1.0), c10::Scalar(1), c}));
  auto program = InstantProgram::Build(records, {a, c, buf});
  // Each op alone is fine; together they would read buf[0:1000] after writing buf[1:1001].
  REQUIRE(program->chains() == 3);
}
