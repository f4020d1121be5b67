// trn::ir::refuse: how a trn pass refuses an op the NeuronCore target cannot run (TrnRefusal.h:
// a refusal is data, anything else that fails the pipeline is an internal failure).
//
//   if (!Supported(t)) return refuse(op, "element type has no trn lowering");
//   return refuse(op) << "compares " << what << ", which has no trn lowering";
//
// Both emit the same diagnostic as op->emitOpError(...) and note Refusal{op name, reason}.
// The InFlightDiagnostic is destroyed (reported) after the refusal is noted.
//
// Thread-safety: as MLIR's diagnostics; the refusal goes to the calling thread's RefusalScope.
#pragma once

#include <string>
#include <utility>

#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"
#include "mlir_lowering/trn/TrnRefusal.h"

namespace trn::ir {

// A refusal being written: streams into the diagnostic and the reason. Its end (the end of the
// statement) reports the diagnostic and notes the refusal; as a LogicalResult it is failure().
class RefusalBuilder {
 public:
  // `op_prefix`: the diagnostic starts with "'<op>' op " (emitOpError) or not (emitError).
  RefusalBuilder(mlir::Operation* op, bool op_prefix)
      : op_(op), diag_(op_prefix ? op->emitOpError() : op->emitError()), os_(reason_) {}
  RefusalBuilder(const RefusalBuilder&) = delete;
  RefusalBuilder& operator=(const RefusalBuilder&) = delete;
  ~RefusalBuilder() { RefusalScope::Note(Refusal{op_->getName().getStringRef().str(), os_.str()}); }

  template <typename T>
  RefusalBuilder& operator<<(const T& v) {
    diag_ << v;
    os_ << v;
    return *this;
  }
  // NOLINTNEXTLINE(google-explicit-constructor): `return refuse(op) << ...;` in a LogicalResult function
  operator mlir::LogicalResult() const { return mlir::failure(); }

 private:
  mlir::Operation* op_;
  mlir::InFlightDiagnostic diag_;
  std::string reason_;
  llvm::raw_string_ostream os_;
};

// As op->emitOpError() << ...: "'<op>' op <reason>".
inline RefusalBuilder refuse(mlir::Operation* op) { return RefusalBuilder(op, /*op_prefix=*/true); }
inline mlir::LogicalResult refuse(mlir::Operation* op, const std::string& reason) { return refuse(op) << reason; }
// As op->emitError() << ... (no op prefix).
inline RefusalBuilder refuseWithoutPrefix(mlir::Operation* op) { return RefusalBuilder(op, /*op_prefix=*/false); }

}  // namespace trn::ir
