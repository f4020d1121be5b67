// The lowering registry: ATen op -> the function that lowers it into a GroupLowering.
//
// Keyed by schema name with in-place spelling folded ("aten::add_" -> "aten::add"), so one
// lowering serves every overload of an op (add.Tensor, add.Scalar, add.out, add_.Tensor): it
// reads arguments by name and writes GroupLowering::Destination(i), which is the fresh output,
// the out= argument or self as the overload dictates. Overloads count once in Names().
// Each op family lives in its own file under ops/ and exports one Populate... function.
//
// Thread-safety: Global() is built once (thread-safe static init) and immutable afterwards;
// Find and Names may be called from any thread.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "runtime/op_record.h"

namespace trn::mlir_lowering {

class GroupLowering;

using LowerFn = absl::Status (*)(GroupLowering&, const runtime::OpRecord&);

struct OpLowering {
  LowerFn fn = nullptr;
  std::string family;         // "elementwise", "reduction", ...
  bool runtime_call = false;  // lowered to a call of ATen's kernel (contractions), not to linalg
};

class LoweringRegistry {
 public:
  static const LoweringRegistry& Global();

  // `name` is a schema name without overload ("aten::add"); a trailing '_' is folded.
  void Register(absl::string_view name, std::string family, LowerFn fn, bool runtime_call = false);
  const OpLowering* Find(const c10::OperatorHandle& op) const;
  const OpLowering* Find(absl::string_view schema_name) const;
  // Registered names, sorted (what a target runs compiled: Target::LoweredOps).
  std::vector<std::string> Names() const;
  // Whether the trn pipeline lowers this op's lowering: every lowering to linalg, and of the
  // runtime calls the matrix products, the gathers embedding and index_select, convolutions and
  // 2-D pooling (within the limits TrnAcceptsCall checks); the other runtime calls run op by op
  // on the host on a trn target, outside the groups.
  bool TrnLowers(absl::string_view name) const;
  // For a runtime call the trn pipeline lowers itself (TrnLowers): whether this record is within
  // that lowering's limits (trn/LowerGather.cpp, trn/LowerConv.cpp, trn/LowerPool.cpp); if not,
  // `why` says what is outside them and the op runs on the host.
  static bool TrnAcceptsCall(const runtime::OpRecord& record, std::string* why);

 private:
  absl::flat_hash_map<std::string, OpLowering> ops_;
};

// The op families (ops/*.cpp).
void PopulateElementwise(LoweringRegistry& registry);
void PopulateReductions(LoweringRegistry& registry);
void PopulateNormalization(LoweringRegistry& registry);
void PopulateContractions(LoweringRegistry& registry);
void PopulateBackward(LoweringRegistry& registry);
void PopulateShape(LoweringRegistry& registry);
void PopulateIndexing(LoweringRegistry& registry);
void PopulatePooling(LoweringRegistry& registry);

}  // namespace trn::mlir_lowering
