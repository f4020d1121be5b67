// Small questions about an op's schema shared by the recording fallback, the lowering and the
// runtime: which argument a return aliases, which arguments an op writes.
//
// Thread-safety: pure functions.
#pragma once

#include <ATen/core/function_schema.h>

#include <cstddef>

namespace trn::runtime {

// Index of the argument whose alias set return `ret` belongs to (in-place self, out=, or the
// base of a view), or -1.
inline int AliasedArg(const c10::FunctionSchema& schema, size_t ret) {
  const c10::AliasInfo* r = schema.returns()[ret].alias_info();
  if (r == nullptr) {
    return -1;
  }
  for (size_t j = 0; j < schema.arguments().size(); ++j) {
    const c10::AliasInfo* a = schema.arguments()[j].alias_info();
    if (a == nullptr) {
      continue;
    }
    for (const auto& set : r->beforeSets()) {
      if (a->beforeSets().count(set) != 0) {
        return static_cast<int>(j);
      }
    }
  }
  return -1;
}

// Whether the op writes argument `j` (in-place self, out=, or another mutated argument).
inline bool WritesArg(const c10::FunctionSchema& schema, size_t j) {
  const c10::AliasInfo* a = schema.arguments()[j].alias_info();
  return a != nullptr && a->isWrite();
}

}  // namespace trn::runtime
