// The on-disk (and on-the-wire) format of one compiled-group artifact, and the names entries
// get. Shared by the disk tier (disk_cache.h), the distributed tier (remote_tier.h) and the
// `python3 -m torch_trn cache` tool.
//
// Layout (little-endian; docs/cache.md has the table):
//   0  "TRNCACHE"  8  u32 format version  12  u32 header size  16  u64 object size
//   24 u64 XXH3-64 of bytes [32, end)
//   32 u32 tier, opt level, codegen level, inputs, outputs, kind (0 code, 1 plans)
//   56 strings (u32 length + bytes): compiler version, target, key material, entry symbol
//   header size: the object (ELF) bytes
// The hash covers everything after itself, so any flipped byte in the header or the object is
// caught; the version fields come before it so a future format is reported as such.
//
// Thread-safety: pure functions on values.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trn::runtime::cache {

inline constexpr uint32_t kFormatVersion = 1;
inline constexpr absl::string_view kMagic = "TRNCACHE";
inline constexpr size_t kFixedHeaderBytes = 56;

// Who built an artifact, for whom: entries built by another compiler or for another CPU are
// never loaded.
struct Identity {
  std::string compiler_version;  // "torch-trn <git revision>; MLIR <version>; key salt"
  std::string target;            // mlir_lowering::HostTargetKey()
};

// The optimisation levels of one build. Part of the entry's name: a cache may hold a fast
// first build and an optimised rebuild of the same group side by side.
struct Levels {
  int opt = 3;
  int codegen = 3;
  std::string Suffix() const;  // "O3c3"
  bool operator==(const Levels& o) const { return opt == o.opt && codegen == o.codegen; }
};

// What an entry holds: a group's object code, or the plans of a flushed segment
// (scheduler/plan_store.h: the plan cache's disk tier). Code entries written before plan
// entries existed hold 0 there (the field was reserved), so the format version stays 1.
enum class EntryKind : uint32_t { kCode = 0, kPlans = 1 };

struct Artifact {
  EntryKind kind = EntryKind::kCode;
  std::string key_material;  // the group key's full material (a hash collision cannot alias)
  std::string object;        // relocatable ELF object for the target (plans: their payload)
  std::string entry_symbol;
  Levels levels;
  int tier = 0;
  int num_inputs = 0;
  int num_outputs = 0;
};

// Why an entry was not used. Names are stable: they are the keys of
// cache_stats()["disk"]["rejected"] and appear in warnings and in `cache verify`.
enum class Reject {
  kNone,
  kTruncated,
  kBadMagic,
  kFormatVersion,
  kHashMismatch,
  kCompilerVersion,
  kTarget,
  kKeyMismatch,
  kInsecureOwner,
  kInsecureMode,
  kUnreadable,
  kLoadFailed,
  kNotRegularFile,  // a FIFO, device or directory at an entry's path (never opened blocking)
  kTooLarge,        // larger than kMaxEntryBytes (never read)
};
// No compiled group comes near this; a larger file at an entry path is not read.
inline constexpr int64_t kMaxEntryBytes = int64_t{64} << 20;
absl::string_view RejectName(Reject reason);
// Content problems: the entry is wrong, not merely untrusted; ours get deleted.
bool IsContentReject(Reject reason);

std::string Encode(const Artifact& artifact, const Identity& identity);

// Parsed header fields, available even when the entry is rejected for its identity.
struct Header {
  uint32_t format_version = 0;
  Identity identity;
  Levels levels;
  int tier = 0;
  EntryKind kind = EntryKind::kCode;
};

// Decodes and verifies `bytes`. Checks, in order: sizes (kTruncated), magic, format version,
// hash, entry kind (a known one), then (when `expected` is given) compiler version, target and
// (when `key_material` is non-null) the key and that the entry is of kind `kind`. On failure returns the reason in `*reject` and an error status whose
// message names it; `*header` gets whatever was parsed.
absl::StatusOr<Artifact> Decode(absl::string_view bytes, const Identity* expected,
                                const std::string* key_material, Reject* reject, Header* header = nullptr,
                                EntryKind kind = EntryKind::kCode);

// The 32-hex-digit name of a group's entries: XXH3-128 of the format version, the identity and
// the key material.
std::string EntryHash(const Identity& identity, absl::string_view key_material);

}  // namespace trn::runtime::cache
