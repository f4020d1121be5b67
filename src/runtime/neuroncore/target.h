// The modeled NeuronCore's constants, per target. Every value cites its public source by the
// keys of docs/trn_target.md §6; values the pages do not give are marked as the model's own
// assumption (§2.5).
//
// Thread-safety: immutable values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace trn::runtime::neuroncore {

struct TargetSpec {
  std::string name;
  int partitions = 128;                     // [G2] "NeuronCore-v2 Compute Engines"; [MEM]
  int64_t sbuf_bytes_per_partition = 0;     // [G3] / [G4] "Compute Engine Updates"
  int64_t psum_bytes_per_partition = 16384; // [G2] "Near-memory accumulation in PSUM": 8 x 2 KiB
  // Engine clocks, GHz: [G3] / [G4] "Compute Engine Specifications".
  double tensor_ghz = 0, vector_ghz = 0, scalar_ghz = 0, gpsimd_ghz = 0;
  // DMA: 16 engines per core ([DMA], [G3]) at the sustained per-engine rate of [DMABW]
  // (B/ns). One dma_copy is spread over min(16, partitions) engines (our assumption, §2.5/Q4);
  // a 32 KiB single-engine copy then takes 1425 ns against the 1416 ns of the profile in [DMA]
  // "Example 1".
  int dma_engines = 16;
  double dma_bytes_per_ns_per_engine = 0;
  double dma_fixed_ns = 0;  // assumption: no fixed cost beyond the bytes (calibration above)
  int min_ii_cycles = 64;   // [COST] MIN_II ~ 64 cycles
  int semaphores = 32;      // assumption: not public (§2.5)
  double peak_bf16_tflops = 0;  // [G3] / [G4]: TensorE dense bf16 per core (utilisation reports)
};

// "trn2" (NeuronCore-v3) or "trn3" (NeuronCore-v4); nullopt for any other name.
std::optional<TargetSpec> TargetByName(const std::string& name);

}  // namespace trn::runtime::neuroncore
