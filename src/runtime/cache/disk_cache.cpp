#include "runtime/cache/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
#include <cerrno>
#include <cstring>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/log.h"

namespace trn::runtime::cache {
namespace {

std::string ErrnoText() { return std::strerror(errno); }

// Reads the whole file behind `fd`, failing (errno EFBIG) past `limit` bytes.
bool ReadAll(int fd, std::string* out, int64_t limit = kMaxEntryBytes) {
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) return true;
    if (static_cast<int64_t>(out->size()) + n > limit) {
      errno = EFBIG;
      return false;
    }
    out->append(buf, static_cast<size_t>(n));
  }
}

// What may be read at an entry path, decided from fstat before any byte is read: a regular file
// (a FIFO or device is never read: the open is non-blocking), trusted (owner, mode), not larger
// than kMaxEntryBytes.
Reject CheckEntryFile(const struct stat& st, uid_t uid) {
  if (!S_ISREG(st.st_mode)) return Reject::kNotRegularFile;
  const Reject trust = CheckTrusted(FileFacts{st.st_uid, st.st_mode}, uid);
  if (trust != Reject::kNone) return trust;
  if (st.st_size > kMaxEntryBytes) return Reject::kTooLarge;
  return Reject::kNone;
}

// Opens an entry path for CheckEntryFile: no symlink followed, never blocking on a FIFO.
int OpenEntry(const std::string& path) { return ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC); }

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

void FsyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::string Dirname(const std::string& path) { return path.substr(0, path.rfind('/')); }

// mkdir -p with mode 0700 for what it creates (existing directories are left as they are).
bool MakeDirs(const std::string& dir) {
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at == dir.size() || dir[at] == '/') {
      const std::string prefix = dir.substr(0, at);
      if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return false;
    }
  }
  return true;
}

// "<32 hex>.O<d>c<d>" (code) or "<32 hex>.plan" (plans).
bool IsEntryName(absl::string_view name, std::string* key, Levels* levels, EntryKind* kind = nullptr) {
  if (name.size() != 32 + 5) return false;
  for (size_t i = 0; i < 32; ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(name[i])) || std::isupper(static_cast<unsigned char>(name[i]))) {
      return false;
    }
  }
  if (name.substr(32) == kPlanSuffix) {
    if (key != nullptr) *key = std::string(name.substr(0, 32));
    if (levels != nullptr) *levels = Levels{-1, -1};
    if (kind != nullptr) *kind = EntryKind::kPlans;
    return true;
  }
  if (name[32] != '.' || name[33] != 'O' || name[35] != 'c' || !std::isdigit(static_cast<unsigned char>(name[34])) ||
      !std::isdigit(static_cast<unsigned char>(name[36]))) {
    return false;
  }
  if (key != nullptr) *key = std::string(name.substr(0, 32));
  if (levels != nullptr) *levels = Levels{name[34] - '0', name[36] - '0'};
  if (kind != nullptr) *kind = EntryKind::kCode;
  return true;
}

bool IsTempName(absl::string_view name) {
  return absl::StartsWith(name, ".") && absl::StrContains(name, ".tmp.") && name.size() > 1 + 37 &&
         IsEntryName(name.substr(1, 37), nullptr, nullptr);
}

bool IsHex2(absl::string_view name) {
  return name.size() == 2 && std::isxdigit(static_cast<unsigned char>(name[0])) &&
         std::isxdigit(static_cast<unsigned char>(name[1])) && !std::isupper(static_cast<unsigned char>(name[0])) &&
         !std::isupper(static_cast<unsigned char>(name[1]));
}

std::vector<std::string> DirNames(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}


Reject CheckPath(const std::string& path, uid_t uid, bool follow) {
  struct stat st;
  if ((follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0) {
    return Reject::kUnreadable;
  }
  return CheckTrusted(FileFacts{st.st_uid, st.st_mode}, uid);
}

double MtimeSeconds(const struct stat& st) {
  return static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) * 1e-9;
}

struct ScannedFile {
  std::string path;
  std::string name;
  std::string kind;
  int64_t size = 0;
  double mtime = 0;
};

// Every file two shard levels down (plus anything foreign anywhere in the tree).
std::vector<ScannedFile> Scan(const std::string& root) {
  std::vector<ScannedFile> files;
  auto add = [&](const std::string& path, const std::string& name, const std::string& kind) {
    struct stat st;
    ScannedFile f{path, name, kind};
    if (::lstat(path.c_str(), &st) == 0) {
      f.size = st.st_size;
      f.mtime = MtimeSeconds(st);
    }
    files.push_back(std::move(f));
  };
  for (const std::string& a : DirNames(root)) {
    const std::string pa = absl::StrCat(root, "/", a);
    if (a == ".id" || a == ".evict.lock") continue;  // ours, not entries
    if (!IsHex2(a)) {
      add(pa, a, "foreign");
      continue;
    }
    for (const std::string& b : DirNames(pa)) {
      const std::string pb = absl::StrCat(pa, "/", b);
      if (!IsHex2(b)) {
        add(pb, b, "foreign");
        continue;
      }
      for (const std::string& n : DirNames(pb)) {
        const std::string pn = absl::StrCat(pb, "/", n);
        struct stat st;
        const bool regular = ::lstat(pn.c_str(), &st) == 0 && S_ISREG(st.st_mode);
        std::string key;
        EntryKind kind = EntryKind::kCode;
        if (regular && IsEntryName(n, &key, nullptr, &kind) && absl::StartsWith(key, a + b)) {
          add(pn, n, kind == EntryKind::kPlans ? "plans" : "entry");
        } else if (regular && IsTempName(n)) {
          add(pn, n, "temp");
        } else {
          add(pn, n, "foreign");
        }
      }
    }
  }
  return files;
}

}  // namespace

uid_t ExpectedUid(int64_t expected) { return expected >= 0 ? static_cast<uid_t>(expected) : ::geteuid(); }

Reject CheckTrusted(const FileFacts& facts, uid_t expected_uid) {
  if (facts.uid != expected_uid) return Reject::kInsecureOwner;
  if ((facts.mode & (S_IWGRP | S_IWOTH)) != 0) return Reject::kInsecureMode;
  return Reject::kNone;
}

DiskCache::DiskCache(DiskCacheOptions options, Identity identity, CacheStats* stats)
    : options_(std::move(options)),
      identity_(std::move(identity)),
      stats_(stats),
      uid_(ExpectedUid(options_.expected_uid)) {}

std::string DiskCache::EntryPath(const std::string& key_material, const Levels& levels) const {
  const std::string h = EntryHash(identity_, key_material);
  return absl::StrCat(options_.dir, "/", h.substr(0, 2), "/", h.substr(2, 2), "/", h, ".", levels.Suffix());
}

std::string DiskCache::PlanPath(const std::string& key_material) const {
  const std::string h = EntryHash(identity_, absl::StrCat(kPlanKeyPrefix, key_material));
  return absl::StrCat(options_.dir, "/", h.substr(0, 2), "/", h.substr(2, 2), "/", h, kPlanSuffix);
}

void DiskCache::WarnOnce(const std::string& key, const std::string& message) {
  {
    absl::MutexLock lock(&mu_);
    if (!warned_.insert(key).second) return;
  }
  base::Log(base::LogLevel::kWarning, message);
}

Reject DiskCache::CheckDirs(const std::string& entry_path, std::string* which) const {
  // The root may be a symlink the user made (e.g. onto a bigger disk): follow it. The shard
  // directories are ours: a symlink there is not trusted.
  const std::string shard2 = Dirname(entry_path);
  const std::string shard1 = Dirname(shard2);
  for (const std::string* d : {&options_.dir, &shard1, &shard2}) {
    const Reject r = CheckPath(*d, uid_, /*follow=*/d == &options_.dir);
    if (r != Reject::kNone) {
      if (which != nullptr) *which = *d;
      return r;
    }
  }
  return Reject::kNone;
}

void DiskCache::Rejected(const std::string& path, Reject reason, const std::string& detail, bool ours, EntryKind kind) {
  stats_->Update([&](CacheCounters& c) {
    ++(kind == EntryKind::kPlans ? c.plan_rejected : c.disk_rejected)[std::string(RejectName(reason))];
  });
  absl::string_view why = detail;
  absl::ConsumePrefix(&why, absl::StrCat(RejectName(reason), ": "));  // Decode's messages start with it
  const bool remove = ours && IsContentReject(reason) && !options_.readonly;
  if (reason == Reject::kInsecureOwner || reason == Reject::kInsecureMode) {
    absl::MutexLock lock(&mu_);
    untrusted_.insert(path);
  }
  WarnOnce(absl::StrCat(path, "|", RejectName(reason)),
           absl::StrCat("cache entry ", path, " ignored (", RejectName(reason), "): ", why,
                        kind == EntryKind::kPlans ? (remove ? "; deleted, the segment is planned again" : "; the segment is planned again")
                        : remove                  ? "; deleted, the group is recompiled"
                                                  : "; the group is recompiled"));
  if (remove) {
    ::unlink(path.c_str());
  }
}

std::optional<Artifact> DiskCache::ReadEntry(const std::string& path, const std::string& key_material,
                                             EntryKind kind) {
  const int fd = OpenEntry(path);
  if (fd < 0) return std::nullopt;
  // Everything that decides whether the file may be read is checked before a byte is read.
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Rejected(path, Reject::kUnreadable, ErrnoText(), false, kind);
    ::close(fd);
    return std::nullopt;
  }
  Reject trust = CheckEntryFile(st, uid_);
  std::string where = "the file";
  if (trust == Reject::kNone) {
    trust = CheckDirs(path, &where);
  }
  if (trust != Reject::kNone) {
    ::close(fd);
    const std::string why =
        trust == Reject::kNotRegularFile ? std::string("not a regular file")
        : trust == Reject::kTooLarge
            ? absl::StrFormat("%d bytes, more than an entry can hold (%d)", st.st_size, kMaxEntryBytes)
            : absl::StrFormat("%s must be owned by uid %d and not be group/world-writable", where, uid_);
    Rejected(path, trust, why, false, kind);
    return std::nullopt;
  }
  std::string bytes;
  bytes.reserve(static_cast<size_t>(st.st_size));
  const bool read_ok = ReadAll(fd, &bytes);
  ::close(fd);
  if (!read_ok) {
    Rejected(path, Reject::kUnreadable, ErrnoText(), false, kind);
    return std::nullopt;
  }
  Reject reject = Reject::kNone;
  absl::StatusOr<Artifact> artifact = Decode(bytes, &identity_, &key_material, &reject, nullptr, kind);
  if (!artifact.ok()) {
    Rejected(path, reject, std::string(artifact.status().message()), /*ours=*/true, kind);
    return std::nullopt;
  }
  if (!options_.readonly) {
    const struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};  // recency: mtime = now
    ::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW);
  }
  return std::move(*artifact);
}

std::optional<Artifact> DiskCache::Load(const std::string& key_material, const Levels& levels) {
  std::optional<Artifact> artifact = ReadEntry(EntryPath(key_material, levels), key_material, EntryKind::kCode);
  const int64_t n = artifact.has_value() ? static_cast<int64_t>(artifact->object.size()) : 0;
  stats_->Update([&](CacheCounters& c) {
    if (artifact.has_value()) {
      ++c.disk_hits;
      c.disk_bytes_read += n;
    } else {
      ++c.disk_misses;
    }
  });
  return artifact;
}

std::optional<std::string> DiskCache::LoadPlans(const std::string& key_material) {
  const std::string material = absl::StrCat(kPlanKeyPrefix, key_material);
  std::optional<Artifact> artifact = ReadEntry(PlanPath(key_material), material, EntryKind::kPlans);
  const int64_t n = artifact.has_value() ? static_cast<int64_t>(artifact->object.size()) : 0;
  stats_->Update([&](CacheCounters& c) {
    if (artifact.has_value()) {
      ++c.plan_hits;
      c.plan_bytes_read += n;
    } else {
      ++c.plan_misses;
    }
  });
  if (!artifact.has_value()) return std::nullopt;
  return std::move(artifact->object);
}

void DiskCache::RejectLoaded(const std::string& key_material, const Levels& levels, const std::string& why) {
  stats_->Update([](CacheCounters& c) {
    --c.disk_hits;
    ++c.disk_misses;
  });
  Rejected(EntryPath(key_material, levels), Reject::kLoadFailed, why, /*ours=*/true, EntryKind::kCode);
}

void DiskCache::RejectLoadedPlans(const std::string& key_material, const std::string& why) {
  stats_->Update([](CacheCounters& c) {
    --c.plan_hits;
    ++c.plan_misses;
  });
  Rejected(PlanPath(key_material), Reject::kLoadFailed, why, /*ours=*/true, EntryKind::kPlans);
}

absl::Status DiskCache::Store(const Artifact& artifact) {
  if (options_.readonly) {
    return absl::OkStatus();
  }
  return WriteEntry(EntryPath(artifact.key_material, artifact.levels), Encode(artifact, identity_), EntryKind::kCode);
}

absl::Status DiskCache::StorePlans(const std::string& key_material, std::string payload) {
  if (options_.readonly) {
    return absl::OkStatus();
  }
  Artifact artifact;
  artifact.kind = EntryKind::kPlans;
  artifact.key_material = absl::StrCat(kPlanKeyPrefix, key_material);
  artifact.object = std::move(payload);
  artifact.levels = Levels{0, 0};
  return WriteEntry(PlanPath(key_material), Encode(artifact, identity_), EntryKind::kPlans);
}

absl::Status DiskCache::WriteEntry(const std::string& path, const std::string& bytes, EntryKind kind) {
  const bool plans = kind == EntryKind::kPlans;
  {
    absl::MutexLock lock(&mu_);
    if (untrusted_.contains(path)) return absl::OkStatus();
  }
  const std::string shard2 = Dirname(path);
  const std::string shard1 = Dirname(shard2);
  // `kind` groups failures for the warning: one warning per kind (e.g. a missing permission
  // would otherwise warn once per group), each failure counted.
  auto fail = [&](const std::string& group, const std::string& what) {
    stats_->Update([plans](CacheCounters& c) { ++(plans ? c.plan_write_errors : c.disk_write_errors); });
    const std::string message = absl::StrCat("cannot write the cache entry ", path, ": ", what);
    WarnOnce(group, absl::StrCat("disk cache: ", message, " (groups still compile; further entries failing this "
                                "way are not reported)"));
    return absl::UnavailableError(message);
  };
  if (!MakeDirs(options_.dir)) {
    return fail(absl::StrCat("mkdir ", ErrnoText()), absl::StrCat("creating ", options_.dir, ": ", ErrnoText()));
  }
  for (const std::string& d : {shard1, shard2}) {
    if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) {
      return fail(absl::StrCat("mkdir ", ErrnoText()), absl::StrCat("mkdir ", d, ": ", ErrnoText()));
    }
  }
  // Never write into a directory we would not load from (someone else could swap the file).
  std::string which;
  if (const Reject r = CheckDirs(path, &which); r != Reject::kNone) {
    return fail(absl::StrCat("untrusted ", which), absl::StrCat(which, " must be owned by uid ", uid_,
                                                               " and not be group/world-writable (", RejectName(r), ")"));
  }
  std::random_device rd;
  const std::string name = path.substr(shard2.size() + 1);
  const std::string temp = absl::StrFormat("%s/.%s.tmp.%d.%08x", shard2, name, ::getpid(), rd());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return fail(absl::StrCat("create ", ErrnoText()), absl::StrCat("create ", temp, ": ", ErrnoText()));
  }
  if (options_.test_fault == "kill_mid_write" && !plans) {
    static std::atomic<bool> killed{false};
    if (!killed.exchange(true)) {
      WriteAll(fd, bytes.data(), bytes.size() / 2);
      ::fsync(fd);
      ::raise(SIGKILL);
    }
  }
  // A plan entry is not fsynced: one torn by a crash fails its hash and is a miss (plans are
  // recomputed cheaply); code entries are, as a compile is expensive to lose.
  const bool ok = WriteAll(fd, bytes.data(), bytes.size()) && (plans || ::fsync(fd) == 0);
  const std::string write_error = ok ? "" : ErrnoText();
  ::close(fd);
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string why = ok ? absl::StrCat("rename: ", ErrnoText()) : absl::StrCat("write: ", write_error);
    ::unlink(temp.c_str());
    return fail(why, why);
  }
  if (!plans) FsyncDir(shard2);
  const int64_t n = static_cast<int64_t>(bytes.size());
  stats_->Update([n, plans](CacheCounters& c) {
    if (plans) {
      ++c.plan_writes;
      c.plan_bytes_written += n;
    } else {
      ++c.disk_writes;
      c.disk_bytes_written += n;
    }
  });
  if (plans) {
    // Counted, but never the write that scans the tree: plan entries are written on the
    // executor's thread (code writes, on compile threads, evict for both kinds).
    absl::MutexLock lock(&mu_);
    if (tracked_bytes_ >= 0) tracked_bytes_ += n;
  } else {
    MaybeEvict(n);
  }
  return absl::OkStatus();
}

void DiskCache::MaybeEvict(int64_t added_bytes) {
  {
    absl::MutexLock lock(&mu_);
    if (tracked_bytes_ >= 0) {
      tracked_bytes_ += added_bytes;
      if (tracked_bytes_ <= options_.max_bytes) return;
    }
  }
  // Over the bound (or never scanned): one process at a time scans and evicts.
  const std::string lock_path = absl::StrCat(options_.dir, "/.evict.lock");
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_fd < 0) return;
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd);
    return;  // another process is evicting
  }
  std::vector<ScannedFile> files = Scan(options_.dir);
  const double now = static_cast<double>(::time(nullptr));
  int64_t total = 0;
  std::vector<ScannedFile*> entries;
  for (ScannedFile& f : files) {
    if (f.kind == "entry" || f.kind == "plans") {
      total += f.size;
      entries.push_back(&f);
    } else if (f.kind == "temp" && now - f.mtime > 3600) {
      ::unlink(f.path.c_str());  // left by a process killed mid-write an hour ago
    }
  }
  std::sort(entries.begin(), entries.end(), [](const ScannedFile* a, const ScannedFile* b) { return a->mtime < b->mtime; });
  int64_t evicted = 0;
  for (ScannedFile* f : entries) {
    if (total <= options_.max_bytes) break;
    if (::unlink(f->path.c_str()) == 0) {
      total -= f->size;
      ++evicted;
    }
  }
  ::flock(lock_fd, LOCK_UN);
  ::close(lock_fd);
  if (evicted > 0) {
    stats_->Update([evicted](CacheCounters& c) { c.disk_evictions += evicted; });
  }
  absl::MutexLock lock(&mu_);
  tracked_bytes_ = total;
}

std::string DiskCache::DirToken() {
  absl::MutexLock lock(&mu_);
  if (!dir_token_.empty()) return dir_token_;
  const std::string path = absl::StrCat(options_.dir, "/.id");
  for (int attempt = 0; attempt < 2 && dir_token_.empty(); ++attempt) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);  // a FIFO: no wait
    if (fd >= 0) {
      std::string token;
      ReadAll(fd, &token);
      ::close(fd);
      if (token.size() == 32) dir_token_ = token;
      break;
    }
    if (options_.readonly || !MakeDirs(options_.dir)) break;
    std::random_device rd;
    const std::string token = absl::StrFormat("%08x%08x%08x%08x", rd(), rd(), rd(), rd());
    const std::string temp = absl::StrCat(path, ".tmp.", ::getpid());
    const int w = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (w < 0) break;
    const bool ok = WriteAll(w, token.data(), token.size());
    ::close(w);
    // link() fails if another process created .id first: then read theirs on the next pass.
    if (ok && ::link(temp.c_str(), path.c_str()) == 0) dir_token_ = token;
    ::unlink(temp.c_str());
  }
  return dir_token_;
}

std::vector<EntryInfo> ListEntries(const std::string& dir, bool verify, int64_t expected_uid) {
  const uid_t uid = ExpectedUid(expected_uid);
  std::vector<EntryInfo> out;
  const Reject root_trust = CheckPath(dir, uid, /*follow=*/true);
  for (const ScannedFile& f : Scan(dir)) {
    EntryInfo e;
    e.path = f.path;
    e.kind = f.kind;
    e.size = f.size;
    e.mtime = f.mtime;
    if (f.kind == "entry" || f.kind == "plans") {
      IsEntryName(f.name, &e.key, &e.levels);
      std::string bytes;
      const int fd = OpenEntry(f.path);
      struct stat st;
      // As in DiskCache::Load: the file and its directories are trusted before a byte is read.
      Reject r = Reject::kUnreadable;
      if (fd >= 0 && ::fstat(fd, &st) == 0) r = CheckEntryFile(st, uid);
      if (r == Reject::kNone) r = root_trust;
      if (r == Reject::kNone) r = CheckPath(Dirname(f.path), uid, false);
      if (r == Reject::kNone) r = CheckPath(Dirname(Dirname(f.path)), uid, false);
      if (r == Reject::kNone && !ReadAll(fd, &bytes)) r = Reject::kUnreadable;
      if (r == Reject::kNone) {
        Header header;
        Reject content = Reject::kNone;
        // Header fields are shown even unverified; the hash is only checked when asked.
        absl::StatusOr<Artifact> a = Decode(bytes, nullptr, nullptr, &content, &header);
        e.compiler_version = header.identity.compiler_version;
        e.target = header.identity.target;
        e.tier = header.tier;
        if (verify) r = content;
      }
      if (fd >= 0) ::close(fd);
      e.status = verify ? std::string(r == Reject::kNone ? "ok" : RejectName(r)) : "";
    }
    out.push_back(std::move(e));
  }
  return out;
}

int64_t ClearEntries(const std::string& dir) {
  int64_t removed = 0;
  for (const ScannedFile& f : Scan(dir)) {
    if ((f.kind == "entry" || f.kind == "plans" || f.kind == "temp") && ::unlink(f.path.c_str()) == 0) ++removed;
  }
  for (const std::string& a : DirNames(dir)) {  // empty shard directories
    if (!IsHex2(a)) continue;
    const std::string pa = absl::StrCat(dir, "/", a);
    for (const std::string& b : DirNames(pa)) {
      if (IsHex2(b)) ::rmdir(absl::StrCat(pa, "/", b).c_str());
    }
    ::rmdir(pa.c_str());
  }
  return removed;
}

}  // namespace trn::runtime::cache
