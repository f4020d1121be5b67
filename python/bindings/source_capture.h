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

#include "base/source_table.h"

namespace trn::python {

// Frames whose file starts with one of `prefixes` are library code and skipped.
void SetLibraryPrefixes(std::vector<std::string> prefixes);
base::SourceId CaptureSource();

// A torch.compile graph's generated code (`file`, e.g. "<eval_with_key>.3"): its line -> the model
// line that the graph node on it came from (FX's stack_trace). A frame in such a file is
// attributed to the mapped line; on a line without one it is skipped (its caller is used).
// Call with the GIL held.
void SetGraphLines(const std::string& file, const std::vector<std::pair<int, base::SourceLocation>>& lines);

// The code objects the capture keeps a reference to (so their addresses are not reused while
// they key its memo): at most `limit` (default 16384); when a new one would exceed it, every
// reference is dropped and the memo starts over (a program that exec()s new code in a loop
// keeps flat memory). Call with the GIL held.
void SetCodeObjectLimit(size_t limit);
size_t CodeObjectsKept();
int64_t CodeObjectsReleased();  // references dropped so far

}  // namespace trn::python
