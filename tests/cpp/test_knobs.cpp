// Knob registry: defaults, valid values, and errors that name the knob and the allowed values.
#include <map>
#include <string>

#include "base/knobs.h"

#include <catch2/catch.hpp>

using trn::base::Knobs;
using trn::base::Mode;
using trn::base::ParseKnobs;

namespace {
trn::base::EnvLookup Env(std::map<std::string, std::string> env) {
  return [env](absl::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) {
      return std::nullopt;
    }
    return it->second;
  };
}
}  // namespace

TEST_CASE("defaults when nothing is set", "[knobs]") {
  auto knobs = ParseKnobs(Env({}));
  REQUIRE(knobs.ok());
  CHECK(knobs->mode == Mode::kEager);
  CHECK_FALSE(knobs->launch_blocking);
  CHECK(knobs->max_pending_ops == 4096);
}

TEST_CASE("modes parse case-insensitively", "[knobs]") {
  CHECK(ParseKnobs(Env({{"NEURON_MODE", "adaptive"}}))->mode == Mode::kAdaptive);
  CHECK(ParseKnobs(Env({{"NEURON_MODE", "COMPILE"}}))->mode == Mode::kCompile);
  CHECK(ParseKnobs(Env({{"NEURON_MODE", "eager"}}))->mode == Mode::kEager);
}

TEST_CASE("a bad mode names the knob, the value and the allowed values", "[knobs]") {
  auto knobs = ParseKnobs(Env({{"NEURON_MODE", "turbo"}}));
  REQUIRE_FALSE(knobs.ok());
  CHECK(knobs.status().code() == absl::StatusCode::kInvalidArgument);
  const std::string msg(knobs.status().message());
  CHECK(msg.find("NEURON_MODE") != std::string::npos);
  CHECK(msg.find("turbo") != std::string::npos);
  CHECK(msg.find("eager | adaptive | compile") != std::string::npos);
}

TEST_CASE("booleans and integers are validated", "[knobs]") {
  CHECK(ParseKnobs(Env({{"NEURON_LAUNCH_BLOCKING", "1"}}))->launch_blocking);
  CHECK_FALSE(ParseKnobs(Env({{"NEURON_LAUNCH_BLOCKING", "0"}}))->launch_blocking);
  CHECK_FALSE(ParseKnobs(Env({{"NEURON_LAUNCH_BLOCKING", "maybe"}})).ok());
  CHECK(ParseKnobs(Env({{"NEURON_MAX_PENDING_OPS", "7"}}))->max_pending_ops == 7);
  CHECK_FALSE(ParseKnobs(Env({{"NEURON_MAX_PENDING_OPS", "0"}})).ok());
  CHECK_FALSE(ParseKnobs(Env({{"NEURON_MAX_PENDING_OPS", "lots"}})).ok());
  CHECK_FALSE(ParseKnobs(Env({{"NEURON_LOG_LEVEL", "9"}})).ok());
}

TEST_CASE("every knob is documented in the registry", "[knobs]") {
  for (const auto& spec : trn::base::KnobSpecs()) {
    CHECK(spec.name.rfind("NEURON_", 0) == 0);
    CHECK_FALSE(spec.help.empty());
    CHECK_FALSE(spec.allowed.empty());
  }
}
