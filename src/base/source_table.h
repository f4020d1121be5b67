// Interned Python source locations. An OpRecord carries a 32-bit SourceId; id 0 means "no
// location" (C++ callers, the autograd engine's threads).
//
// Thread-safe: Intern and Lookup may be called from any thread (guarded by one mutex; Lookup is
// only used off the hot path: errors, last_ops, profiles).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace trn::base {

using SourceId = uint32_t;
inline constexpr SourceId kNoSource = 0;

struct SourceLocation {
  std::string file;
  int line = 0;
  std::string function;
};

// "file:line (function)", or "<unknown location>" for kNoSource.
std::string FormatSource(const SourceLocation& loc);

class SourceTable {
 public:
  SourceTable();
  SourceId Intern(const SourceLocation& loc);
  // The location of `id`, or an empty location for kNoSource / unknown ids.
  SourceLocation Lookup(SourceId id) const;
  std::string Format(SourceId id) const;
  size_t size() const;

 private:
  mutable absl::Mutex mu_;
  std::vector<SourceLocation> locations_ ABSL_GUARDED_BY(mu_);  // index = id
  absl::flat_hash_map<std::string, SourceId> index_ ABSL_GUARDED_BY(mu_);
};

// The process-wide table (never destroyed: lives until exit).
SourceTable& GlobalSourceTable();

}  // namespace trn::base
