// Refusals of the trn pipeline as data.
//
// A trn pass that meets an op the NeuronCore target cannot run (an op, an element type, an access
// pattern or a size it has no lowering for) *refuses* it: `trn::ir::refuse` (TrnRefuse.h) emits
// the usual error diagnostic and also notes a Refusal{op, reason} in the RefusalScope of the
// calling thread. CompileToTrnStream (mlir_lowering/trn_compile.h) reads the scope after a failed
// pipeline: a failure with a refusal is a refusal (the group runs as host code, the reason
// counted in stats()["device"]["host_group_reasons"]); a failure without one (a verifier, a pass
// that found what it expects missing, the emitter) is an internal failure, reported as an error.
//
// This header is plain C++ (no MLIR), so the scheduler may hold a Refusal.
//
// Thread-safety: a RefusalScope belongs to the thread that made it; passes note refusals on the
// thread they run on (CompileToTrnStream runs its pipeline with MLIR threading disabled, so on
// the calling thread). A refusal made with no scope on the thread is only a diagnostic.
#pragma once

#include <string>
#include <vector>

namespace trn::ir {

struct Refusal {
  std::string op;      // the MLIR op refused, e.g. "math.sin"
  std::string reason;  // e.g. "has no trn lowering"
  // As MLIR prints the diagnostic: "'math.sin' op has no trn lowering".
  std::string Message() const { return "'" + op + "' op " + reason; }
};

// Collects the refusals noted on this thread while it lives (scopes nest: the innermost collects).
class RefusalScope {
 public:
  RefusalScope();
  ~RefusalScope();
  RefusalScope(const RefusalScope&) = delete;
  RefusalScope& operator=(const RefusalScope&) = delete;

  const std::vector<Refusal>& refusals() const { return refusals_; }
  // Notes `r` in the innermost scope of this thread, if any.
  static void Note(Refusal r);

 private:
  RefusalScope* outer_;
  std::vector<Refusal> refusals_;
};

}  // namespace trn::ir
