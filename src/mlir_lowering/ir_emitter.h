// IrEmitter: builds one group's module with MLIR's builder API: `func.func @group(%ctx: i64,
// [%params: tensor<?xf64>], inputs...) -> (outputs...)` in linalg on tensors (the calling
// convention: README.md). GroupLowering (emitting) is its one user: it decides, the emitter
// builds. Values are IrValue handles and index maps AffineTerms, so this header includes no MLIR
// header; ir_emitter.cpp builds the ops, each at the location of the op being lowered (SetOp),
// and Finish verifies the module, so a malformed emission fails there, naming that op.
//
// Thread-safety: one thread (the compile thread replaying a group, or a test).
#pragma once

#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "mlir_lowering/ir_builder.h"
#include "mlir_lowering/ir_module.h"
#include "mlir_lowering/ir_value.h"

namespace trn::mlir_lowering {

// index = constant + sum(coeff * dim) over `coeffs` (dim, coefficient): one result of an affine
// index map (or one base dimension of a View: group_lowering.h).
struct AffineTerm {
  int64_t constant = 0;
  std::vector<std::pair<int, int64_t>> coeffs;
};

// An operand of a linalg.generic: a tensor (or a scalar: `map` empty, over no loops), its
// element dtype and its indexing map over the loops.
struct GenericOperand {
  IrValue value;
  c10::ScalarType dtype = c10::kFloat;
  std::vector<AffineTerm> map;
};

// What a runtime-call placeholder carries for the passes (host_passes.h's kExtern* attributes).
struct ExternAttrs {
  std::string call;                              // library_call: "trn_ext<N>_<k>"
  std::string op;                                // the ATen op's schema name
  std::vector<std::vector<int64_t>> perms;       // per operand; empty: none permuted
  std::vector<int64_t> rows;                     // scatter_add's row-varying operands
  std::vector<int64_t> ints;                     // int and bool arguments, schema order
  std::vector<std::vector<int64_t>> lists;       // int / bool list arguments, schema order
};

// A result of @group: its value, the strides compiled for, and the input argument it is
// written in place over (-1: none).
struct GroupResult {
  IrValue value;
  std::vector<int64_t> strides;
  int64_t tied_argument = -1;
};

class IrEmitter {
 public:
  // Body of a generic: the block's arguments (one element per input, then per output, in their
  // element types) -> the values to yield (one per output, in the outputs' element types).
  using Body = std::function<std::vector<IrValue>(ScalarBuilder&, const std::vector<IrValue>& args)>;

  explicit IrEmitter(std::string func_name = "group");
  ~IrEmitter();
  IrEmitter(const IrEmitter&) = delete;
  IrEmitter& operator=(const IrEmitter&) = delete;

  // Ops built from now on are located at op `index` of the group (`name`: its schema name), which
  // the model's line `file`:`line` issued (none when `file` is empty): `"op 3 aten::add.out"
  // (model.py:42:0)` in diagnostics and `-mlir-print-debuginfo` output.
  void SetOp(int64_t index, absl::string_view name, absl::string_view file = "", int line = 0);

  // The %ctx argument (i64).
  IrValue ctx() const;
  // A new input argument of that shape and dtype; `strides` become its trn.strides at Finish.
  IrValue AddInput(const std::vector<int64_t>& sizes, c10::ScalarType dtype, std::vector<int64_t> strides);
  // Runtime scalar `k` as an f64, extracted from %params (added on first use) at function entry.
  IrValue Param(int64_t k);
  // Whether `v` is an argument of @group (an input returned as is).
  bool IsArgument(IrValue v) const;

  // `arith.constant` of `value` stored as a `dtype` element (half types: their 16 bits).
  IrValue Constant(const c10::Scalar& value, c10::ScalarType dtype);
  // `tensor.empty`, or one filled with `value` (a scalar of the element type: linalg.fill).
  IrValue Empty(const std::vector<int64_t>& shape, c10::ScalarType dtype);
  IrValue Filled(const std::vector<int64_t>& shape, c10::ScalarType dtype, IrValue value);
  // One linalg.generic over `loops` loops (`reduced` of them reductions) reading `ins` and
  // writing into `outs` (their init tensors): its results, one per output.
  std::vector<IrValue> Generic(int64_t loops, const std::vector<int64_t>& reduced,
                               const std::vector<GenericOperand>& ins, const std::vector<GenericOperand>& outs,
                               const Body& body, const ExternAttrs* extern_attrs = nullptr);
  // linalg.matmul (or batch_matmul) of a and b (f32 tensors of those shapes) into a zero-filled
  // tensor of `shape`.
  IrValue MatMul(IrValue a, IrValue b, const std::vector<int64_t>& shape, bool batched);
  // `src` (of `sizes`) inserted into `dst` at `offsets` (unit strides): tensor.insert_slice.
  IrValue InsertSlice(IrValue src, IrValue dst, const std::vector<int64_t>& offsets,
                      const std::vector<int64_t>& sizes);

  // Returns `results` (and sets the function's type and argument / result attributes), verifies
  // the module and hands it over. InternalError with MLIR's diagnostics (their op locations) when
  // it does not verify. The emitter is spent afterwards.
  absl::StatusOr<IrModule> Finish(const std::vector<GroupResult>& results);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trn::mlir_lowering
