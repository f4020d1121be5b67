// The modeled NeuronCore behind NEURON_TARGET=trn2|trn3: runs compiled groups' instruction
// streams on runtime/neuroncore's model (values computed, time modeled), keeps the modeled
// device clock and its counters (torch_trn.stats()["device"]), charges the HBM <-> host
// transfers of work that runs on the host instead, and draws one profiler lane per engine.
//
// Charging host work: a group the trn pipeline could not lower (host code) or an op run op by
// op reads its inputs from HBM and writes its outputs back; the model charges those bytes at
// the core's DMA rate (16 engines x the per-engine rate of docs/trn_target.md §2.4), an
// optimistic bound: the real host link is not public (§2.5). The host compute itself is not
// device time.
//
// Thread-safety: thread-safe. Run may be called from any thread (the executor calls it); the
// counters take a mutex.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "runtime/neuroncore/instruction_stream.h"
#include "runtime/neuroncore/model.h"
#include "runtime/neuroncore/target.h"
#include "runtime/op_record.h"

namespace trn::runtime {

struct DeviceSnapshot {
  std::string target;
  double modeled_ns = 0;  // device time: groups on the core plus charged host transfers
  std::array<double, neuroncore::kEngines> engine_busy_ns{};
  int64_t instructions = 0;
  int64_t dma_bytes = 0;
  int64_t matmul_flops = 0;
  int64_t groups_on_device = 0;
  int64_t ops_on_device = 0;
  int64_t groups_on_host = 0;  // compiled groups that run as host code (no trn lowering)
  int64_t ops_on_host = 0;     // ops in those groups, and ops run op by op
  int64_t host_transfer_bytes = 0;
  double host_transfer_ns = 0;
  std::map<std::string, int64_t> ops_by_name;  // recorded ops run on the core, by ATen op
};

class DeviceModel {
 public:
  // The process's model for NEURON_TARGET, or null when the target is the host.
  static DeviceModel* Get();

  explicit DeviceModel(neuroncore::TargetSpec target) : target_(std::move(target)) {}
  const neuroncore::TargetSpec& target() const { return target_; }

  // Runs `stream` (the compiled group of `ops`) with `bindings`; accounts it and, when a profile
  // is active, adds its instructions to the engine lanes (grouped by op, tagged with the op's
  // source line).
  absl::Status Run(const neuroncore::InstructionStream& stream, const std::vector<neuroncore::HostBinding>& bindings,
                   const std::vector<OpRecord>& ops);
  // Charges `bytes` of HBM <-> host transfer for `ops` ops of host work (a host-code group when
  // `group`, else ops run one by one).
  void ChargeHost(int64_t bytes, int64_t ops, bool group);

  DeviceSnapshot Snapshot() const;
  void Reset();

 private:
  const neuroncore::TargetSpec target_;
  mutable absl::Mutex mu_;
  DeviceSnapshot c_ ABSL_GUARDED_BY(mu_);
};

// Bytes a view spans in its storage (0 when empty).
int64_t ViewBytes(const at::Tensor& t);

}  // namespace trn::runtime
