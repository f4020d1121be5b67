// In-place outputs: a view the group both reads (as an input) and writes is staged (written to
// scratch, copied into place after the call) unless the compiled code cannot read an old element
// after writing it: a chain of in-place pointwise ops, each reading the view's previous value,
// is the only reader of the old contents (GroupLowering::NeedsStaging).
#include <ATen/ATen.h>

#include "mlir_lowering/group_lowering.h"
#include "trace/device_state.h"
#include "trace/snapshot.h"

#include <catch2/catch.hpp>

namespace {

using trn::mlir_lowering::GroupLowering;
using trn::mlir_lowering::LoweredGroup;
using trn::runtime::OpRecord;

at::Tensor Dev(std::vector<int64_t> sizes) {
  return at::empty(sizes, at::TensorOptions().device(c10::DeviceType::PrivateUse1, 0));
}

// A Python number as the recorder passes it: a wrapped 0-dim host tensor.
at::Tensor Num(double v) {
  at::Tensor t = at::scalar_tensor(v, at::kDouble);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

OpRecord Record(const char* name, const char* overload, std::vector<c10::IValue> args) {
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
  for (c10::IValue& v : args) v = trn::trace::PrivateArg(v);
  return OpRecord(op, std::move(args));
}

LoweredGroup Lower(const std::vector<OpRecord>& records, bool emit = false) {
  GroupLowering lowering(trn::mlir_lowering::Target::Host(), emit);
  for (const OpRecord& r : records) {
    REQUIRE(lowering.Add(r).ok());
  }
  auto lowered = lowering.Finish();
  REQUIRE(lowered.ok());
  return std::move(*lowered);
}

// Whether the group's output that is `t`'s storage is staged.
bool StagedOutput(const LoweredGroup& g, const at::Tensor& t) {
  for (const auto& o : g.outputs) {
    if (o.tensor.storage().unsafeGetStorageImpl() == t.storage().unsafeGetStorageImpl()) return o.staged;
  }
  FAIL("no output for the tensor");
  return false;
}

// v.mul_(0.9); v.addcmul_(g, g, value=0.1)  (AdamW's second moment): an in-place chain.
std::vector<OpRecord> SecondMoment(const at::Tensor& v, const at::Tensor& g) {
  std::vector<OpRecord> records;
  records.push_back(Record("aten::mul", "out", {v, Num(0.9), v}));
  records.push_back(Record("aten::addcmul", "out", {v, g, g, c10::Scalar(0.1), v}));
  return records;
}

// a = x * 3; x.mul_(2); b = a + 1: fusing a into b would read the old x after x's write.
std::vector<OpRecord> OldValueReadOutsideChain(const at::Tensor& x, const at::Tensor& a, const at::Tensor& b) {
  std::vector<OpRecord> records;
  records.push_back(Record("aten::mul", "out", {x, Num(3.0), a}));
  records.push_back(Record("aten::mul", "out", {x, Num(2.0), x}));
  records.push_back(Record("aten::add", "out", {a, Num(1.0), c10::Scalar(1), b}));
  return records;
}

}  // namespace

TEST_CASE("an in-place pointwise chain writes straight into its input", "[staging]") {
  trn::trace::State();
  at::Tensor v = Dev({4, 8}), g = Dev({4, 8});
  CHECK_FALSE(StagedOutput(Lower(SecondMoment(v, g)), v));
}

TEST_CASE("an old value read by an op outside the chain keeps the output staged", "[staging]") {
  trn::trace::State();
  at::Tensor x = Dev({16}), a = Dev({16}), b = Dev({16});
  CHECK(StagedOutput(Lower(OldValueReadOutsideChain(x, a, b)), x));
}

TEST_CASE("a write that does not read the previous value breaks the chain", "[staging]") {
  trn::trace::State();
  at::Tensor x = Dev({16}), y = Dev({16}), z = Dev({16}), w = Dev({16});
  // x.mul_(2); z = x + 1; torch.mul(y, y, out=x); w = z * 5: z's loop (after x's final write,
  // once fused into w) would read the old x.
  std::vector<OpRecord> records;
  records.push_back(Record("aten::mul", "out", {x, Num(2.0), x}));
  records.push_back(Record("aten::add", "out", {x, Num(1.0), c10::Scalar(1), z}));
  records.push_back(Record("aten::mul", "out", {y, y, x}));
  records.push_back(Record("aten::mul", "out", {z, Num(5.0), w}));
  CHECK(StagedOutput(Lower(records), x));
}

TEST_CASE("a view read through other strides keeps the output staged", "[staging]") {
  trn::trace::State();
  at::Tensor x = Dev({8, 8});
  // x.copy_(x.t() * 2) written as mul.out(x.t(), 2, out=x): element (i, j) reads (j, i).
  std::vector<OpRecord> records;
  records.push_back(Record("aten::mul", "out", {x.t(), Num(2.0), x}));
  CHECK(StagedOutput(Lower(records), x));
}

TEST_CASE("an unstaged in-place output is tied to its input's argument in the emitted module", "[staging]") {
  trn::trace::State();
  at::Tensor v = Dev({4, 8}), g = Dev({4, 8});
  LoweredGroup lowered = Lower(SecondMoment(v, g), /*emit=*/true);
  REQUIRE(lowered.outputs.size() == 1);
  CHECK_FALSE(lowered.outputs[0].staged);
  // %ctx, %params (0.9 and 0.1 are runtime scalars), then v's input: argument #2.
  REQUIRE(lowered.inputs.size() == 2);
  CHECK(lowered.inputs[0].data_ptr() == v.data_ptr());
  REQUIRE(lowered.module != nullptr);
  CHECK(lowered.module->Print().find("trn.tied_input = 2 : i64") != std::string::npos);
}

TEST_CASE("a staged output is not tied", "[staging]") {
  trn::trace::State();
  at::Tensor x = Dev({16}), a = Dev({16}), b = Dev({16});
  LoweredGroup lowered = Lower(OldValueReadOutsideChain(x, a, b), /*emit=*/true);
  CHECK(StagedOutput(lowered, x));
  REQUIRE(lowered.module != nullptr);
  CHECK(lowered.module->Print().find("trn.tied_input") == std::string::npos);
}
