#include "runtime/neuroncore/target.h"

namespace trn::runtime::neuroncore {

std::optional<TargetSpec> TargetByName(const std::string& name) {
  TargetSpec t;
  t.name = name;
  if (name == "trn2") {
    t.sbuf_bytes_per_partition = 224 * 1024;  // [G3]: 28 MiB = 224 KiB x 128
    t.tensor_ghz = 2.4;                       // [G3] "Compute Engine Specifications"
    t.vector_ghz = 0.96;
    t.scalar_ghz = 1.2;
    t.gpsimd_ghz = 1.2;
    t.dma_bytes_per_ns_per_engine = 23;       // [DMABW] sustained, NeuronCore-v3
    t.peak_bf16_tflops = 79;                  // [G3], [C3]
    return t;
  }
  if (name == "trn3") {
    t.sbuf_bytes_per_partition = 256 * 1024;  // [G4]: 32 MiB (derived: 256 KiB x 128)
    t.tensor_ghz = 2.4;                       // [G4] "Compute Engine Specifications"
    t.vector_ghz = 1.2;
    t.scalar_ghz = 1.2;
    t.gpsimd_ghz = 1.2;
    t.dma_bytes_per_ns_per_engine = 33;       // [DMABW] sustained, NeuronCore-v4
    t.peak_bf16_tflops = 79;                  // [G4], [C4]
    return t;
  }
  return std::nullopt;
}

}  // namespace trn::runtime::neuroncore
