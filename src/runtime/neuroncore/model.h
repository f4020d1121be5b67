// The NeuronCore model: runs an instruction stream (instruction_stream.h) functionally and
// charges modeled time. Not hardware, not a cycle-accurate simulator: each instruction costs
// the public per-instruction cycle estimates (docs/trn_target.md §2.3) at its engine's clock;
// DMA costs its bytes at the per-engine rate; engines run concurrently and wait only on
// semaphores. Results are computed as the engines do: fp32 arithmetic, bf16 stored with
// round-to-nearest-even, matmul with fp32 accumulation in PSUM.
//
// Thread-safety: Run is a pure function of its arguments (each call owns its SBUF/PSUM); the
// caller must not touch the bound host memory while it runs.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/neuroncore/instruction_stream.h"
#include "runtime/neuroncore/target.h"

namespace trn::runtime::neuroncore {

// Host memory bound to the stream's HBM buffers (buffer.binding indexes this list).
struct HostBinding {
  void* data = nullptr;
  int64_t bytes = 0;
};

struct EngineReport {
  double busy_ns = 0;       // modeled time spent executing instructions
  int64_t instructions = 0;
};

// One executed instruction on the modeled timeline (RunOptions::trace).
struct InstructionSpan {
  Engine engine = Engine::kDma;
  Opcode opcode = Opcode::kMemset;
  uint32_t source_op = 0;
  double start_ns = 0, end_ns = 0;
};

struct RunReport {
  double modeled_ns = 0;  // when the last engine finished
  std::array<EngineReport, kEngines> engines{};
  int64_t dma_bytes = 0;
  int64_t matmul_flops = 0;
  std::vector<InstructionSpan> trace;  // with RunOptions::trace: every instruction but signal/wait
  double Utilisation(Engine e) const { return modeled_ns > 0 ? engines[static_cast<int>(e)].busy_ns / modeled_ns : 0; }
};

// Errors: InvalidArgument for a malformed stream (a tile outside SBUF/PSUM, an access outside
// its buffer, a missing binding, wrong operand count), FailedPrecondition for a deadlock (a wait
// no signal satisfies). Each message names the engine, the instruction and its source op.
absl::StatusOr<RunReport> Run(const InstructionStream& stream, const TargetSpec& target,
                              const std::vector<HostBinding>& bindings);
// The index of the recorded op whose instruction failed (an error from Run), if it names one.
inline constexpr char kSourceOpPayload[] = "trn.neuroncore/source_op";
std::optional<uint32_t> FailedSourceOp(const absl::Status& status);

struct RunOptions {
  // false: charge time only, touching no data (benchmarks of large streams); bounds are still
  // checked and the report is the same.
  bool functional = true;
  bool trace = false;  // record RunReport::trace (for the profiler's engine lanes)
};
absl::StatusOr<RunReport> Run(const InstructionStream& stream, const TargetSpec& target,
                              const std::vector<HostBinding>& bindings, const RunOptions& options);

}  // namespace trn::runtime::neuroncore
