// GroupKey: the structural identity of a group, the key of every compiled-code cache.
//
// The material is a canonical byte string of: each op's schema name, every non-tensor argument
// (exact bits), and for every tensor its dtype, sizes, strides, storage offset and buffer
// number (storages renamed by first appearance, which encodes the aliasing pattern and the
// wiring of inputs and outputs to ops); 0-dim host tensors by value; then the group's inputs
// and outputs (buffer number, geometry, staged or not). Runtime scalars contribute their type
// only (a learning rate that changes every step does not change the key). It excludes source lines, process,
// rank, pointers and debug flags, so two identical training steps, or two processes running
// the same program, produce equal keys. `hash` is XXH3-64 of the material.
//
// Thread-safety: pure functions; a GroupKey is a value.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/compiled_run.h"
#include "runtime/op_record.h"

namespace trn::scheduler {

struct GroupKey {
  std::string material;
  uint64_t hash = 0;

  std::string Hex() const;  // 16 hex digits of hash
  bool operator==(const GroupKey& o) const { return hash == o.hash && material == o.material; }
};

// The key of `material` (its hash computed), e.g. of a disk entry's stored material.
GroupKey GroupKeyOf(std::string material);

// `ops` in stream order; `inputs` / `outputs` as the lowering decided (argument order);
// `runtime_scalars`: (op index, argument index) of scalars passed at run time, whose values are
// left out of the key (only their type is recorded).
GroupKey MakeGroupKey(const std::vector<const runtime::OpRecord*>& ops, const std::vector<at::Tensor>& inputs,
                      const std::vector<runtime::OutputBuffer>& outputs,
                      const std::vector<std::pair<int64_t, int64_t>>& runtime_scalars = {});

}  // namespace trn::scheduler
