// Running compiled groups: the calling convention between the executor and code produced by
// src/mlir_lowering (see its README, "Calling convention"), and the runtime calls that compiled
// code makes back into ATen ("externs", used for contractions).
//
// The compiled entry point is `void f(int64_t ctx, Desc* in0, ..., Desc* out0, ...)` where each
// Desc is an MLIR StridedMemRefType descriptor {T* allocated; T* aligned; int64_t offset;
// int64_t sizes[rank]; int64_t strides[rank]} of a device view (device memory is host memory).
// `ctx` points at an ExternContext for this run. An extern call site is
// `void _mlir_ciface_trn_ext<N>_<k>(int64_t ctx, int64_t op_index, Desc* d0, ..., Desc* dN-1)`:
// it runs the group's op `op_index` with ATen's CPU kernel on those buffers (inputs first, in
// argument order, then one buffer per defined return).
//
// Thread-safety: RunCompiledUnit may run on any thread; concurrent runs of one CompiledCode are
// safe (the code is reentrant; buffers must not be shared between concurrent runs).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/op_error.h"
#include "runtime/op_record.h"

namespace trn::runtime {

inline constexpr int kMaxCompiledArgs = 256;   // ctx + inputs + outputs of one entry point
inline constexpr int kMaxExternOperands = 16;  // tensors of one extern call

namespace neuroncore {
struct InstructionStream;
}
struct CompiledUnit;

// What an executable says about itself: its entry point's arity and how it was built.
struct CodeInfo {
  int num_inputs = 0;   // buffers before the outputs: the runtime scalars' (when any) and the inputs
  int num_outputs = 0;  // outputs and check counters
  int opt_level = 0;
  int tier = 0;         // 0: first build; 1: optimised rebuild (adaptive tiering)
  int64_t bytes = 0;    // size of the artifact it was loaded from (memory-cache accounting)
};

// Loaded, callable code of one group for one target, behind one interface (the model: IREE's
// HAL local executables): the executor runs a unit through RunCompiledUnit and never asks what
// the code is made of. One implementation per target, each made by its loader
// (runtime/code_loader.h): host native code (an entry point of an object linked by the
// compiler's loader) and a NeuronCore instruction stream (run on DeviceModel).
class CompiledCode {
 public:
  explicit CompiledCode(CodeInfo info) : info_(info) {}
  virtual ~CompiledCode() = default;
  CompiledCode(const CompiledCode&) = delete;
  CompiledCode& operator=(const CompiledCode&) = delete;

  const CodeInfo& info() const { return info_; }
  // Whether it runs on the (modeled) NeuronCore; false: on the host CPU.
  virtual bool on_device() const = 0;
  // Runs `unit`, whose arity RunCompiledUnit checked against info(); see RunCompiledUnit.
  virtual absl::Status Run(const CompiledUnit& unit, const std::vector<OpRecord>& ops, int64_t* failed_op) const = 0;

 private:
  const CodeInfo info_;
};

// Host native code: `entry` is the C interface of the group's function (the calling convention
// above), valid while `keep_alive` (the loaded object) lives. A null entry makes code that
// only tests of the caches hold, never run.
std::shared_ptr<const CompiledCode> MakeHostCode(void* entry, std::shared_ptr<const void> keep_alive, CodeInfo info);
// A NeuronCore instruction stream (NEURON_TARGET=trn2|trn3), run on the DeviceModel.
std::shared_ptr<const CompiledCode> MakeNeuronCoreCode(std::shared_ptr<const neuroncore::InstructionStream> stream,
                                                       CodeInfo info);

struct OutputBuffer {
  at::Tensor tensor;    // device view written by the code
  bool staged = false;  // written to a scratch buffer, then copied into `tensor`
};

// A device-side check: the code returns a count; non-zero fails the run (an IndexError, or
// `kind`, blamed on the group's op `op_index`).
struct CheckSlot {
  int64_t op_index = 0;
  std::string message;
  base::ErrorKind kind = base::ErrorKind::kIndex;  // what the failure raises (ZeroDivisionError: kRuntime)
};

// One run of a compiled group: the code plus this run's buffers (same geometry as the buffers
// the code was compiled for: the group key guarantees it).
struct CompiledUnit {
  std::shared_ptr<const CompiledCode> code;
  // The runtime scalars (the entry point's first buffer after ctx, f64[n], when not empty).
  std::vector<double> params;
  std::vector<at::Tensor> inputs;
  std::vector<OutputBuffer> outputs;
  std::shared_ptr<const std::vector<CheckSlot>> checks;  // results after the outputs (may be null)
  int64_t bytes_written = 0;

  size_t num_checks() const { return checks == nullptr ? 0 : checks->size(); }
  // Buffers before the outputs: the runtime scalars' (when any) and the inputs.
  size_t num_in_buffers() const { return inputs.size() + (params.empty() ? 0 : 1); }
};

// Runs `unit` through its code after checking the arity; `ops` are the records of this run (the
// externs execute them). On an error in an extern, `*failed_op` is its index in `ops`.
absl::Status RunCompiledUnit(const CompiledUnit& unit, const std::vector<OpRecord>& ops, int64_t* failed_op);

// The C function serving extern call sites with `tensors` operands (1..kMaxExternOperands), to be
// registered with the loader under the prefix "_mlir_ciface_trn_ext<tensors>_".
void* ExternEntry(int tensors);

}  // namespace trn::runtime
