#include "mlir_lowering/target.h"

#include <ATen/MemoryOverlap.h>

#include "absl/strings/str_cat.h"
#include "base/knobs.h"
#include "mlir_lowering/lowering_registry.h"
#include "mlir_lowering/ir_builder.h"
#include "runtime/host_view.h"
#include "runtime/schema_util.h"

namespace trn::mlir_lowering {

const Target& Target::Host() {
  static const Target* const host = new Target("host", /*trn=*/false);
  return *host;
}

absl::StatusOr<const Target*> Target::Named(absl::string_view name) {
  static const Target* const trn2 = new Target("trn2", /*trn=*/true);
  static const Target* const trn3 = new Target("trn3", /*trn=*/true);
  if (name == "host") return &Host();
  if (name == "trn2") return trn2;
  if (name == "trn3") return trn3;
  return absl::InvalidArgumentError(absl::StrCat("unknown target '", name, "' (host, trn2 or trn3)"));
}

const Target& Target::Process() {
  static const Target* const process = [] {
    const absl::StatusOr<base::Knobs>& knobs = base::GetKnobs();
    if (!knobs.ok()) return &Host();
    absl::StatusOr<const Target*> t = Named(knobs->target);
    return t.ok() ? *t : &Host();
  }();
  return *process;
}

bool Target::TakesDtype(c10::ScalarType dtype, bool device) const {
  if (trn_ && (device || dtype == c10::kShort)) {
    return dtype == c10::kFloat || IsHalf(dtype) || dtype == c10::kBool || dtype == c10::kInt || dtype == c10::kLong;
  }
  return true;
}

bool Target::CanGroup(const runtime::OpRecord& record, std::string* why) const {
  const LoweringRegistry& registry = LoweringRegistry::Global();
  const OpLowering* lowering = registry.Find(record.op);
  if (lowering == nullptr) {
    *why = "no lowering";
    return false;
  }
  if (trn_ && !registry.TrnLowers(record.op.schema().name())) {
    *why = lowering->runtime_call ? "runtime call (no trn lowering)" : "data-dependent reads (no trn lowering)";
    return false;
  }
  if (trn_ && lowering->runtime_call && !LoweringRegistry::TrnAcceptsCall(record, why)) return false;
  // A write through a view whose elements overlap (an expand): ATen decides per op what that
  // means (fill_ writes it, copy_ raises), so the op runs op by op with ATen's kernel.
  const c10::FunctionSchema& schema = record.op.schema();
  for (size_t j = 0; j < record.args.size(); ++j) {
    if (!runtime::WritesArg(schema, static_cast<int>(j))) continue;
    bool overlapping = false;
    runtime::ForEachTensor(record.args[j], [&](const at::Tensor& t) {
      overlapping = overlapping || (t.defined() && at::has_internal_overlap(t) == at::MemOverlap::Yes);
    });
    if (overlapping) {
      *why = "writes a self-overlapping view";
      return false;
    }
  }
  bool ok = true;
  auto check = [&](const c10::IValue& v) {
    runtime::ForEachTensor(v, [&](const at::Tensor& t) {
      if (!ok || !t.defined()) {
        return;
      }
      const bool device = runtime::IsDeviceTensor(t);
      if (!TakesDtype(t.scalar_type(), device)) {
        *why = absl::StrCat("dtype ", c10::toString(t.scalar_type()), " (no trn lowering)");
        ok = false;
      } else if (!Supported(t.scalar_type())) {
        *why = absl::StrCat("dtype ", c10::toString(t.scalar_type()));
        ok = false;
      } else if (!device && t.dim() != 0) {
        *why = "host tensor argument";
        ok = false;
      } else if (t.numel() == 0) {
        *why = "empty tensor";
        ok = false;
      }
    });
  };
  for (const c10::IValue& a : record.args) {
    check(a);
  }
  for (const c10::IValue& o : record.outputs) {
    check(o);
  }
  return ok;
}

std::vector<std::string> Target::LoweredOps() const {
  const LoweringRegistry& registry = LoweringRegistry::Global();
  std::vector<std::string> names = registry.Names();
  if (trn_) std::erase_if(names, [&](const std::string& n) { return !registry.TrnLowers(n); });
  return names;
}

}  // namespace trn::mlir_lowering
