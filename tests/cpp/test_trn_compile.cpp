// CompileToTrnStream tells a refusal (data: the op and why) from an internal failure (an error
// status): a group the NeuronCore target cannot run is refused, a pipeline that fails without
// refusing (here: an injected failing pass, as a pass with a bug) is an error, never a refusal.
#include "mlir_lowering/trn_compile.h"

#include <string>

#include "absl/strings/str_replace.h"

#include <catch2/catch.hpp>

namespace {

using trn::mlir_lowering::CompileToTrnStream;
using trn::mlir_lowering::TrnCompileOptions;

// A group module as GroupLowering writes it: out = OP(in), elementwise over 4x8.
std::string Group(const std::string& op) {
  return absl::StrReplaceAll(R"mlir(
func.func @group(%ctx: i64, %in0: tensor<4x8xf32> {trn.strides = array<i64: 8, 1>}) -> (tensor<4x8xf32> {trn.strides = array<i64: 8, 1>}) {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%in0 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %v = OP %x : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
)mlir",
                             {{"OP", op}});
}

}  // namespace

TEST_CASE("a group the trn pipeline lowers gives an instruction stream", "[trn_compile]") {
  auto r = CompileToTrnStream(Group("math.exp"), "group", "trn2");
  REQUIRE(r.ok());
  CHECK_FALSE(r->refusal.has_value());
  CHECK_FALSE(r->stream.empty());
}

TEST_CASE("an op the NeuronCore cannot run is a refusal, with the op and the reason as data", "[trn_compile]") {
  auto r = CompileToTrnStream(Group("math.atan"), "group", "trn2");
  REQUIRE(r.ok());  // not an error: the caller runs the group as host code
  REQUIRE(r->refusal.has_value());
  CHECK(r->refusal->op == "math.atan");
  CHECK(r->refusal->reason == "has no trn lowering");
  CHECK(r->refusal->Message() == "'math.atan' op has no trn lowering");
  CHECK(r->stream.empty());
}

TEST_CASE("an injected internal failure of the trn pipeline is an error, not a refusal", "[trn_compile]") {
  TrnCompileOptions options;
  options.inject_internal_failure = true;
  auto r = CompileToTrnStream(Group("math.exp"), "group", "trn2", options);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kInternal);
  CHECK(std::string(r.status().message()).find("without refusing") != std::string::npos);
  CHECK(std::string(r.status().message()).find("injected internal failure") != std::string::npos);
  // A refusal earlier in the pipeline still wins: the group is refused before the fault.
  auto refused = CompileToTrnStream(Group("math.atan"), "group", "trn2", options);
  REQUIRE(refused.ok());
  CHECK(refused->refusal.has_value());
}

TEST_CASE("a module that does not parse or lacks the entry is an internal failure", "[trn_compile]") {
  auto bad = CompileToTrnStream("func.func @group(", "group", "trn2");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kInternal);
  auto missing = CompileToTrnStream(Group("math.exp"), "other", "trn2");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kInternal);
}
