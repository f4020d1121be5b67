// A structural check of object bytes before they are linked: LLVM's RuntimeDyld trusts the
// object it links, and a malformed one (a corrupt cache entry a same-user writer re-hashed) made
// it call report_fatal_error / reach llvm_unreachable, which aborts the process. Every check here
// is one the linker relies on without checking it itself.
//
// What it does not check: the machine code. A writer that can re-hash an entry can also write
// valid code that does anything; that is the trust model of the disk cache (docs/cache.md).
//
// Thread-safe: a pure function.
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace trn::mlir_lowering {

// OK when `bytes` is a relocatable 64-bit little-endian ELF object for the host's architecture
// whose sections, symbols and relocations are all well formed (offsets and indices inside the
// file and their tables, supported relocation and symbol kinds, sane sizes and alignments).
// Otherwise InvalidArgument with the first problem found ("section 3 (.rela.text): ...").
absl::Status CheckObject(std::string_view bytes);

}  // namespace trn::mlir_lowering
