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
#include "runtime/op_error.h"
#include "runtime/op_record.h"

namespace trn::runtime {

inline constexpr int kMaxCompiledArgs = 96;    // ctx + inputs + outputs of one entry point
inline constexpr int kMaxExternOperands = 16;  // tensors of one extern call

// Loaded, callable code of one group. `keep_alive` owns the code (the loaded object).
namespace neuroncore {
struct InstructionStream;
}

struct CompiledCode {
  void* entry = nullptr;  // host code; null when `stream` is set
  // NEURON_TARGET=trn2|trn3: the group's NeuronCore instruction stream, run by DeviceModel.
  std::shared_ptr<const neuroncore::InstructionStream> stream;
  std::shared_ptr<const void> keep_alive;
  int num_inputs = 0;
  int num_outputs = 0;
  int opt_level = 0;
  int tier = 0;  // 0: first build; 1: optimised rebuild (adaptive tiering)
  int64_t bytes = 0;  // size of the object code (memory-cache accounting)
};

struct OutputBuffer {
  at::Tensor tensor;    // device view written by the code
  bool staged = false;  // written to a scratch buffer, then copied into `tensor`
};

// A device-side check: the code returns a count; non-zero fails the run (an IndexError, or
// `kind`, blamed on the group's op `op_index`).
struct CheckSlot {
  int64_t op_index = 0;
  std::string message;
  ErrorKind kind = ErrorKind::kIndex;  // what the failure raises (ZeroDivisionError: kRuntime)
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

// Runs `unit`; `ops` are the records of this run (the externs execute them). On an error in an
// extern, `*failed_op` is its index in `ops`.
absl::Status RunCompiledUnit(const CompiledUnit& unit, const std::vector<OpRecord>& ops, int64_t* failed_op);

// The C function serving extern call sites with `tensors` operands (1..kMaxExternOperands), to be
// registered with the loader under the prefix "_mlir_ciface_trn_ext<tensors>_".
void* ExternEntry(int tensors);

}  // namespace trn::runtime
