// Where the recorded stream is cut into groups (and, in adaptive mode, into flushes): at points
// chosen by the ops themselves (content-defined chunking, as rsync and deduplicating stores do),
// not every N ops counted from the last sync.
//
// Why: with fixed-size cuts, one extra op early in a segment shifts every later boundary, so
// every later group gets a new key. A training loop's first optimizer step does exactly that
// (AdamW creates its state with `zero_` ops before the update loop), and so do a conditional op
// in a model or a logging line: adaptive mode's second step then ran its whole optimizer op by op
// again (measured: 25% of resnet18's second step ran compiled, against 100% from the third step;
// now 75%).
// Here a group ends after an "anchor" op once it holds at least `min_ops` ops; an op is an anchor
// when its fingerprint (op name and its tensors' dtypes and sizes, never values or addresses)
// has its low bits zero. An insertion moves the boundaries only up to the next anchor after it;
// from there the groups, and their keys, are the same as before.
//
// Masks are powers of two minus one, so a coarser policy's anchors are a subset of a finer one's:
// compile mode's segment flushes (NEURON_MAX_GROUP_OPS) end where a group may end.
//
// Thread-safety: CutFingerprint is reentrant (it reads the record only); CutPolicy is a value.
#pragma once

#include <cstdint>

#include "runtime/op_record.h"

namespace trn::scheduler {

// The record's content fingerprint: stable across steps and processes (op name and overload,
// each tensor argument's dtype and sizes, int and bool arguments; floating-point scalars and
// other arguments by kind only).
uint64_t CutFingerprint(const runtime::OpRecord& record);

struct CutPolicy {
  int64_t min_ops = 1;  // no anchor cut before this many ops
  int64_t max_ops = 1;  // always cut at this many ops
  uint64_t mask = 0;    // an anchor has (fingerprint & mask) == 0

  // For groups of at most `max_ops` ops: anchors from max_ops / 2 ops on, one op in ~max_ops / 8
  // an anchor (groups of ~0.62 max_ops on average; max_ops 1 cuts after every op).
  static CutPolicy UpTo(int64_t max_ops);

  // Whether a group holding `size` ops, the last with fingerprint `fp`, ends here. `half_full`:
  // the group has used half of another limit (its lowering's inputs or writes), so an anchor
  // ends it even before `min_ops`: a limit reached later cuts wherever it falls, like a fixed
  // size, and an optimizer's groups (4 writes a parameter) reach the 32 writes long before 128
  // ops.
  bool Ends(int64_t size, uint64_t fp, bool half_full = false) const {
    return size >= max_ops || ((size >= min_ops || half_full) && (fp & mask) == 0);
  }
};

}  // namespace trn::scheduler
