// The group lowering's emitter (mlir_lowering/ir_emitter.h): ops carry the location of the
// recorded op they lower and the model's line, and a malformed emission fails at Finish with
// the verifier's message naming that op, not later on a compile thread.
#include <string>
#include <vector>

#include "mlir_lowering/ir_builder.h"
#include "mlir_lowering/ir_emitter.h"

#include <catch2/catch.hpp>

namespace {

using trn::mlir_lowering::AffineTerm;
using trn::mlir_lowering::GenericOperand;
using trn::mlir_lowering::GroupResult;
using trn::mlir_lowering::IrEmitter;
using trn::mlir_lowering::IrValue;
using trn::mlir_lowering::ScalarBuilder;

const std::vector<AffineTerm> kIdentity = {AffineTerm{0, {{0, 1}}}};

}  // namespace

TEST_CASE("emitted ops are located at the recorded op and the model's line", "[mlir][emitter]") {
  IrEmitter e;
  const IrValue in = e.AddInput({8}, c10::kFloat, {1});
  e.SetOp(3, "aten::relu", "model.py", 42);
  const std::vector<IrValue> out = e.Generic(
      1, {}, {GenericOperand{in, c10::kFloat, kIdentity}}, {GenericOperand{e.Empty({8}, c10::kFloat), c10::kFloat, kIdentity}},
      [](ScalarBuilder& b, const std::vector<IrValue>& args) {
        const trn::mlir_lowering::Scalar x = b.Load(args[0], c10::kFloat);
        return std::vector<IrValue>{b.Store(b.Max(x, b.Constant(0, c10::kFloat)))};
      });
  auto module = e.Finish({GroupResult{out[0], {1}, -1}});
  REQUIRE(module.ok());
  const std::string text = module->Print(/*locations=*/true);
  INFO(text);
  CHECK(text.find("linalg.generic") != std::string::npos);
  // The printer hoists locations into aliases: #loc1 = loc("model.py":42:0), #loc2 =
  // loc("op 3 aten::relu"(#loc1)).
  CHECK(text.find("loc(\"op 3 aten::relu\"(") != std::string::npos);
  CHECK(text.find("loc(\"model.py\":42:0)") != std::string::npos);
  CHECK(module->Print().find("model.py") == std::string::npos);  // without locations by default
}

TEST_CASE("a malformed emission fails at Finish, naming the op", "[mlir][emitter]") {
  IrEmitter e;
  const IrValue in = e.AddInput({8}, c10::kFloat, {1});
  e.SetOp(5, "aten::bad_op", "model.py", 7);
  // The body yields an f32 into an i64 output: linalg.yield's verifier rejects it.
  const std::vector<IrValue> out = e.Generic(
      1, {}, {GenericOperand{in, c10::kFloat, kIdentity}}, {GenericOperand{e.Empty({8}, c10::kLong), c10::kLong, kIdentity}},
      [](ScalarBuilder&, const std::vector<IrValue>& args) { return std::vector<IrValue>{args[0]}; });
  auto module = e.Finish({GroupResult{out[0], {1}, -1}});
  REQUIRE_FALSE(module.ok());
  CHECK(module.status().code() == absl::StatusCode::kInternal);
  const std::string message(module.status().message());
  INFO(message);
  CHECK(message.find("does not verify") != std::string::npos);
  CHECK(message.find("op 5 aten::bad_op") != std::string::npos);
  CHECK(message.find("model.py") != std::string::npos);
}
