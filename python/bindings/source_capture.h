// Python source capture for OpRecords: the innermost Python frame whose file is outside torch's
// (and torch_trn's) package directories, interned as (file, line, function).
//
// Thread-safety: Capture() may be called from any thread; it takes the GIL only on threads that
// run Python code (the autograd engine's threads get kNoSource without touching the GIL).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/source_table.h"

namespace trn::python {

// Frames whose file starts with one of `prefixes` are library code and skipped.
void SetLibraryPrefixes(std::vector<std::string> prefixes);
runtime::SourceId CaptureSource();

// The code objects the capture keeps a reference to (so their addresses are not reused while
// they key its memo): at most `limit` (default 16384); when a new one would exceed it, every
// reference is dropped and the memo starts over (a program that exec()s new code in a loop
// keeps flat memory). Call with the GIL held.
void SetCodeObjectLimit(size_t limit);
size_t CodeObjectsKept();
int64_t CodeObjectsReleased();  // references dropped so far

}  // namespace trn::python
