// Python source capture for OpRecords: the innermost Python frame whose file is outside torch's
// (and torch_trn's) package directories, interned as (file, line, function).
//
// Thread-safety: Capture() may be called from any thread; it takes the GIL only on threads that
// run Python code (the autograd engine's threads get kNoSource without touching the GIL).
#pragma once

#include <string>
#include <vector>

#include "runtime/source_table.h"

namespace trn::python {

// Frames whose file starts with one of `prefixes` are library code and skipped.
void SetLibraryPrefixes(std::vector<std::string> prefixes);
runtime::SourceId CaptureSource();

}  // namespace trn::python
