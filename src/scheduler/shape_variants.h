// ShapeVariants: bounds how many shape variants of one group get compiled.
//
// A group whose shapes change at every step (greedy generate(): the attention of each new token
// sees one more position) gets a new key every time, and compiling each variant costs far more
// than running it op by op once (1.6 s per token for a tiny Llama in compile mode). Groups are
// told apart here by what issued them: the sequence of (op, source line) of their records. The
// first `limit` keys of such a sequence compile as usual; a further key of the same sequence is
// refused (its slot fails with a reason): it runs op by op, and the keys compiled already keep
// running compiled. So N new tokens cost at most `limit` compiles per attention group.
//
// Thread-safety: Admit may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "runtime/op_record.h"

namespace trn::scheduler {

class ShapeVariants {
 public:
  explicit ShapeVariants(int64_t limit) : limit_(limit) {}  // limit 0: no bound

  // Whether the new key `key_hex` of the group `ops` may be compiled; false once its issuing
  // sequence already has `limit` compiled keys. Records without any source line are admitted.
  bool Admit(const std::string& key_hex, const std::vector<runtime::OpRecord>& ops);
  int64_t limit() const { return limit_; }

 private:
  static constexpr size_t kMaxSequences = 4096;
  const int64_t limit_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> keys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trn::scheduler
