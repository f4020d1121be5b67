// IrValue: an SSA value of the module a GroupLowering builds, as the op lowerings see it: a
// handle they pass around and never look into. Only the emitter's own files (ir_emitter.cpp,
// ir_builder.cpp: the ones that include MLIR) turn it into an mlir::Value and back, so the
// torch-facing op files and the scheduler include no MLIR header (tools/check_layers.py, rule 2).
// A planning lowering (no IR) hands out null values.
//
// Thread-safety: a value; valid while the module it belongs to lives.
#pragma once

namespace trn::mlir_lowering {

class IrValue {
 public:
  IrValue() = default;
  static IrValue FromOpaque(void* impl) {
    IrValue v;
    v.impl_ = impl;
    return v;
  }
  void* opaque() const { return impl_; }
  explicit operator bool() const { return impl_ != nullptr; }
  bool operator==(const IrValue& o) const { return impl_ == o.impl_; }
  bool operator!=(const IrValue& o) const { return impl_ != o.impl_; }

 private:
  void* impl_ = nullptr;  // mlir::Value::getAsOpaquePointer()
};

}  // namespace trn::mlir_lowering
