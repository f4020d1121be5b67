#include "base/source_table.h"

#include "absl/strings/str_cat.h"

namespace trn::base {

std::string FormatSource(const SourceLocation& loc) {
  if (loc.file.empty()) {
    return "<unknown location>";
  }
  std::string out = absl::StrCat(loc.file, ":", loc.line);
  if (!loc.function.empty()) {
    absl::StrAppend(&out, " (", loc.function, ")");
  }
  return out;
}

SourceTable::SourceTable() { locations_.emplace_back(); }

SourceId SourceTable::Intern(const SourceLocation& loc) {
  if (loc.file.empty()) {
    return kNoSource;
  }
  std::string key = absl::StrCat(loc.file, "\n", loc.line, "\n", loc.function);
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = index_.try_emplace(std::move(key), static_cast<SourceId>(locations_.size()));
  if (inserted) {
    locations_.push_back(loc);
  }
  return it->second;
}

SourceLocation SourceTable::Lookup(SourceId id) const {
  absl::MutexLock lock(&mu_);
  if (id >= locations_.size()) {
    return {};
  }
  return locations_[id];
}

std::string SourceTable::Format(SourceId id) const { return FormatSource(Lookup(id)); }

size_t SourceTable::size() const {
  absl::MutexLock lock(&mu_);
  return locations_.size() - 1;
}

SourceTable& GlobalSourceTable() {
  // Intentionally never destroyed: ops may be formatted by threads still running at exit.
  static SourceTable* table = new SourceTable();
  return *table;
}

}  // namespace trn::base
