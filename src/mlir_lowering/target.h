// Target: what one compilation target can run, answered in one place.
//
// NEURON_TARGET names the process's target: `host` (groups become native code for this CPU) or
// a NeuronCore generation, `trn2` / `trn3` (groups become an instruction stream for the modeled
// core; a group the trn pipeline refuses at compile time runs as host code). The stream reads the
// knob once and passes its Target down: the grouper asks it which ops may join a group
// (CanGroup), the lowering which form an op takes (is_trn: a matrix product is linalg for
// TensorE on trn, a call of ATen's kernel on the host), the compiler which pipeline builds a
// group, and `torch_trn.lowered_ops(target)` lists what it runs compiled (LoweredOps).
//
// What a trn target takes (docs/trn_pipeline.md): every op lowered to linalg, and of the runtime
// calls those the trn pipeline lowers itself (LoweringRegistry::TrnLowers), within their limits
// (LoweringRegistry::TrnAcceptsCall); f32, bf16, f16, bool and integer tensors (int64 narrowed to
// i32 tiles), no f64 and no int16 (an i16 in a trn module is a bfloat16: trn/TrnHalfTypes.cpp).
// Anything else runs op by op on the host, outside the groups, so it does not send a whole
// group there.
//
// Thread-safety: Targets are immutable singletons (Host(), Named(), Process()); share freely.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/op_record.h"

namespace trn::mlir_lowering {

class Target {
 public:
  // The host CPU.
  static const Target& Host();
  // "host", "trn2" or "trn3" (the values of NEURON_TARGET); InvalidArgument otherwise.
  static absl::StatusOr<const Target*> Named(absl::string_view name);
  // The process's target: NEURON_TARGET, read once (the host when the knobs do not parse: the
  // runtime reports that error when it starts).
  static const Target& Process();

  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;

  const std::string& name() const { return name_; }
  // A NeuronCore generation (trn2, trn3): groups are built for the modeled core first.
  bool is_trn() const { return trn_; }

  // Whether `record` may join a compiled group here: a registered lowering this target runs,
  // dtypes it takes, no write through a self-overlapping view, no empty or host (non-scalar)
  // tensors. Otherwise `why` says why and the op runs op by op. Cheap; the lowering may still
  // refuse particular arguments (GroupLowering::Add).
  bool CanGroup(const runtime::OpRecord& record, std::string* why) const;
  // The ATen ops (schema names without overload, sorted) this target runs compiled.
  std::vector<std::string> LoweredOps() const;

 private:
  Target(std::string name, bool trn) : name_(std::move(name)), trn_(trn) {}
  // Whether a tensor of `dtype` can be in one of this target's groups (`device`: a device
  // tensor, else a host scalar).
  bool TakesDtype(c10::ScalarType dtype, bool device) const;

  const std::string name_;
  const bool trn_;
};

}  // namespace trn::mlir_lowering
