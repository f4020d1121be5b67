// Shape inference results, cached. Running an op's Meta kernel is the dominant cost of recording
// (in torch 2.14 most Meta kernels are Python functions: ~100-400 us each), but a Meta kernel
// cannot see tensor data, so its outcome is a pure function of the op, the arguments' geometry
// (sizes, strides, offset, storage extent, dtype, conj/neg bits) and the non-tensor arguments.
// A training loop issues the same ops with the same geometry every step: after the first step,
// recording needs no Meta kernel at all. For the ops of cpp_meta.h, a miss runs PyTorch's C++
// structured Meta function instead of the (Python) dispatcher kernel.
//
// Thread-safe: Find/Insert take one mutex (recording threads only; entries are immutable).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace trn::trace {

// A tensor's geometry (what a Meta tensor carries).
struct Geometry {
  bool defined = false;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  at::ScalarType dtype = at::kFloat;

  static Geometry Of(const at::Tensor& t);
};

// One return value: None / a non-tensor (not recordable), a tensor, or a tensor list.
struct ValueGeometry {
  enum class Kind { kNone, kTensor, kList } kind = Kind::kNone;
  std::vector<Geometry> tensors;
};

// What the Meta kernel said about one call.
struct MetaOutcome {
  // Non-empty when the op cannot be recorded (then `returns` is empty): the host-fallback reason.
  std::string fallback_reason;
  std::vector<ValueGeometry> returns;
  // Per argument: the geometry after the call of a written tensor argument (in-place metadata
  // ops and out= resizes change it), else nullopt.
  std::vector<std::optional<Geometry>> written;
};

// Runs the op's Meta kernel on Meta twins of `args`.
MetaOutcome InferWithMeta(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args);

class MetaCache {
 public:
  explicit MetaCache(size_t capacity = 1 << 16) : capacity_(capacity) {}

  // The cache key of a call, or nullopt when an argument is of a kind we do not key on.
  static std::optional<std::string> Key(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args);
  // The same into `*key` (its buffer reused: a hit allocates nothing); false: not keyed.
  static bool KeyInto(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args, std::string* key);

  std::shared_ptr<const MetaOutcome> Find(absl::string_view key) const;
  void Insert(std::string key, std::shared_ptr<const MetaOutcome> outcome);
  int64_t hits() const;
  int64_t misses() const;

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const MetaOutcome>> entries_ ABSL_GUARDED_BY(mu_);
  mutable int64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  mutable int64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace trn::trace
