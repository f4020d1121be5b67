// Authentication of what ranks publish through the distributed store (remote_tier.h).
//
// Threat: the store (c10d TCPStore) has no authentication; any process that reaches its port can
// read and rewrite keys, and a published build is native code the fetching rank links and runs.
// Content hashes and identity strings do not help: a store client can recompute them. So every
// published value (`bytes`, and `done` so that a forger cannot fail a job's builds either) is
// signed with HMAC-SHA256 under a per-job secret that never goes through the store, bound to its
// store key; a rank links peer bytes only after their MAC verifies, and only verified bytes reach
// its disk cache. docs/cache.md has the threat model.
//
// The secret: NEURON_CACHE_SECRET (set by the launcher, the same for every rank: the way for jobs
// that span hosts), else a per-user file that only the user can read (created with mode 0600 on
// first use; ranks of one user on one host share it). No secret: the ranks do not share builds.
//
// Thread-safe: all functions are reentrant.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trn::runtime::cache {

inline constexpr size_t kMacBytes = 32;  // HMAC-SHA256

// The job's secret: `env_secret` when non-empty, else the contents of `file` (created with 32
// random bytes and mode 0600 when absent; refused unless it is a regular file owned by
// `owner_uid` that nobody else can read or write, reached without a symlink). Errors say why.
absl::StatusOr<std::string> LoadJobSecret(const std::string& env_secret, const std::string& file, int64_t owner_uid);

// The default secret file: $XDG_CONFIG_HOME/torch_trn/cache_secret or ~/.config/torch_trn/cache_secret
// ("" when neither HOME nor XDG_CONFIG_HOME is set).
std::string DefaultSecretFile();

// `value` signed for store key `key`: kMacBytes of HMAC-SHA256(secret, key || 0 || value), then value.
std::string Sign(absl::string_view secret, absl::string_view key, absl::string_view value);

// The value of a signed store entry, or PermissionDenied when the MAC does not verify (forged,
// corrupted, signed under another secret or for another key).
absl::StatusOr<std::string> Verify(absl::string_view secret, absl::string_view key, absl::string_view signed_value);

}  // namespace trn::runtime::cache
