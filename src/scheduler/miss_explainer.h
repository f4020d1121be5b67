// MissExplainer: says why a group recompiles. When a group misses the memory cache but a group
// with the same sequence of source lines was seen before under another key, it names the first
// ops and properties that changed, e.g.
//   "group 3f2a... (12 ops at model.py:41) recompiles: aten::add.Tensor at model.py:41: input 1
//    sizes [8, 128] -> [8, 129]"
// Each explanation is produced once (per line sequence and change). Costs nothing on hits: it
// runs only for new keys. Bounded: at most `max_signatures` line sequences and `max_explained`
// explanations are remembered; beyond that it starts over (counted: a long run with ever new
// lines or shapes keeps flat memory, and may explain a change twice).
//
// Thread-safety: OnMiss may be called from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "runtime/op_record.h"

namespace trn::scheduler {

class MissExplainer {
 public:
  explicit MissExplainer(size_t max_signatures = 4096, size_t max_explained = 4096)
      : max_signatures_(max_signatures), max_explained_(max_explained) {}
  // `ops`: the group's records; `key_hex`: its (new) key. Returns the explanation, if any.
  // Adds to `*forgotten` (if given) the remembered entries this call dropped to stay bounded.
  std::optional<std::string> OnMiss(const std::string& key_hex, const std::vector<runtime::OpRecord>& ops,
                                    int64_t* forgotten = nullptr);
  // Remembered line sequences and explanations.
  size_t signatures() const;
  size_t explained() const;

  // One op's comparable properties ("input 1 sizes" -> "[8, 128]"), in argument order.
  struct OpDesc {
    std::string name;
    base::SourceId source = base::kNoSource;
    std::vector<std::pair<std::string, std::string>> props;
  };
  static OpDesc Describe(const runtime::OpRecord& op);
  // The changes from `before` to `after` (same length), formatted; empty if none is visible.
  static std::vector<std::string> Diff(const std::vector<OpDesc>& before, const std::vector<OpDesc>& after);

 private:
  struct Seen {
    std::string key_hex;
    std::vector<OpDesc> ops;
  };
  const size_t max_signatures_, max_explained_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Seen> seen_ ABSL_GUARDED_BY(mu_);  // by line signature
  absl::flat_hash_set<std::string> explained_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trn::scheduler
