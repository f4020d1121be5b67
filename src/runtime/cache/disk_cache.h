// The disk tier of the compiled-code cache: one file per (group, optimisation levels) under
// NEURON_CACHE_DIR, shared by every process of the user, surviving restarts (DESIGN.md §3.8).
//
//   <dir>/<h[0:2]>/<h[2:4]>/<h>.O<opt>c<cg>      h = EntryHash(identity, key material)
//   <dir>/<h[0:2]>/<h[2:4]>/<h>.plan             h = EntryHash(identity, "plans:" + segment key)
//
//  - Plan entries (scheduler/plan_store.h: the plans of a flushed segment, so a restarted
//    process does not plan its first steps again) follow every rule below, with their own
//    counters (plan_*); they are not fsynced (a torn one fails its hash and is a miss).
//  - Publishing is atomic: the entry is written to a hidden temp file in its shard directory,
//    fsynced, then renamed over the final name (and the directory fsynced). Readers never see a
//    partial entry; processes writing one key at once each rename a complete file (the last
//    one wins; both are the same build). A process killed mid-write leaves only a temp file,
//    which eviction and `cache clear` remove.
//  - Trust: an entry is loaded as code only if its hash verifies and the cache root, its shard
//    directories and the file are owned by the expected user (the effective uid) and not group-
//    or world-writable. Anything else is ignored, with one warning naming the path and reason.
//    Wrong content (truncated, bad magic, other format, hash, compiler or target) is deleted
//    when the file is ours, and the group recompiles.
//  - Recency is recorded by us: a hit sets the entry's mtime to now. When the entries exceed
//    the size bound, the least recently used ones are deleted (one evicting process at a time,
//    under an flock on <dir>/.evict.lock).
//  - Read-only mode (shared mounts) loads entries and never writes, deletes or touches them.
//
// Thread-safety: every method may be called from any thread, concurrently; processes coordinate
// only through the file system (rename is atomic; eviction takes an flock).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "runtime/cache/cache_stats.h"
#include "runtime/cache/entry_format.h"

namespace trn::runtime::cache {

// The name suffix of plan entries, and the prefix of their key material (never a group key's).
inline constexpr char kPlanSuffix[] = ".plan";
inline constexpr char kPlanKeyPrefix[] = "torch-trn plans:";

struct DiskCacheOptions {
  std::string dir;
  bool readonly = false;
  int64_t max_bytes = int64_t{2} << 30;
  int64_t expected_uid = -1;  // -1: geteuid()
  std::string test_fault;     // "kill_mid_write": SIGKILL halfway through the first write
};

// What the trust check looks at, so the rule is testable without chown (tests run as root).
struct FileFacts {
  uid_t uid = 0;
  mode_t mode = 0;
};
// kNone if `facts` may be trusted by `expected_uid`; else kInsecureOwner or kInsecureMode.
Reject CheckTrusted(const FileFacts& facts, uid_t expected_uid);
// The uid whose files are trusted: `expected` (tests: NEURON_TEST_CACHE_UID) when >= 0, else
// the effective uid. The disk tier and the distributed tier's secret file use the same rule.
uid_t ExpectedUid(int64_t expected);

class DiskCache {
 public:
  DiskCache(DiskCacheOptions options, Identity identity, CacheStats* stats);

  const std::string& dir() const { return options_.dir; }
  bool readonly() const { return options_.readonly; }
  const Identity& identity() const { return identity_; }

  // The verified artifact of (key, levels), or nullopt (a miss, or an entry that was rejected:
  // counted, warned about once, deleted if it is ours and its content is wrong).
  std::optional<Artifact> Load(const std::string& key_material, const Levels& levels);
  // Publishes `artifact` atomically, then evicts if over the size bound. Errors are counted
  // and warned about once; the caller goes on without the disk tier for this build. An entry
  // that Load rejected as untrusted is never replaced (OK, nothing written).
  absl::Status Store(const Artifact& artifact);
  // The plan cache's entries (scheduler/plan_store.h): the verified payload stored under
  // `key_material`, or nullopt (a miss, or a rejected entry: checked, warned about and deleted
  // as Load's, counted as plan_*).
  std::optional<std::string> LoadPlans(const std::string& key_material);
  // A plan entry that verified but whose payload does not decode: counted, deleted if ours.
  void RejectLoadedPlans(const std::string& key_material, const std::string& why);
  // Publishes a plan entry atomically (as Store, without the fsyncs).
  absl::Status StorePlans(const std::string& key_material, std::string payload);
  // An entry that verified but whose object did not link: count it and delete it if ours.
  void RejectLoaded(const std::string& key_material, const Levels& levels, const std::string& why);
  // Shared-directory identity: a random token stored in <dir>/.id (created once), so ranks can
  // tell whether they share this directory. Empty when unavailable.
  std::string DirToken();
  // The path an entry of (key, levels) has.
  std::string EntryPath(const std::string& key_material, const Levels& levels) const;
  std::string PlanPath(const std::string& key_material) const;

 private:
  // The first untrusted directory on the way to `entry_path` (root, shard, shard) in `*which`.
  Reject CheckDirs(const std::string& entry_path, std::string* which) const;
  void Rejected(const std::string& path, Reject reason, const std::string& detail, bool ours, EntryKind kind);
  // The verified entry at `path` for `key_material` of `kind`, or nullopt (missing, or rejected:
  // counted by reason, warned once, deleted when ours and its content is wrong).
  std::optional<Artifact> ReadEntry(const std::string& path, const std::string& key_material, EntryKind kind);
  absl::Status WriteEntry(const std::string& path, const std::string& bytes, EntryKind kind);
  // Logs `message` the first time `key` is seen.
  void WarnOnce(const std::string& key, const std::string& message);
  void MaybeEvict(int64_t added_bytes);

  const DiskCacheOptions options_;
  const Identity identity_;
  CacheStats* const stats_;
  const uid_t uid_;
  absl::Mutex mu_;
  absl::flat_hash_set<std::string> warned_ ABSL_GUARDED_BY(mu_);
  // Entries ignored as untrusted: not ours to replace, so Store leaves them alone (silently: the
  // rejection already warned).
  absl::flat_hash_set<std::string> untrusted_ ABSL_GUARDED_BY(mu_);
  int64_t tracked_bytes_ ABSL_GUARDED_BY(mu_) = -1;  // entry bytes on disk as last seen (-1: not scanned)
  std::string dir_token_ ABSL_GUARDED_BY(mu_);
};

// --- The `python3 -m torch_trn cache` tool's view of a directory (no DiskCache needed). ---

struct EntryInfo {
  std::string path;
  std::string kind;  // "entry" (code) | "plans" | "temp" | "foreign"
  int64_t size = 0;
  double mtime = 0;  // seconds since the epoch
  std::string key;   // entries: the 32-hex name
  Levels levels;
  int tier = -1;
  std::string status;  // entries (when verified): "ok" or a Reject name
  std::string compiler_version;
  std::string target;
};

// Every file under `dir` (sorted by path). `verify` reads and checks each entry's header, hash
// and trust (not its identity: entries of other builds are intact, merely unused).
std::vector<EntryInfo> ListEntries(const std::string& dir, bool verify, int64_t expected_uid = -1);
// Removes every entry and temp file under `dir` (foreign files stay). Returns the count removed.
int64_t ClearEntries(const std::string& dir);

}  // namespace trn::runtime::cache
