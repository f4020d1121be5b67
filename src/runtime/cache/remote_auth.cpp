#include "runtime/cache/remote_auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace trn::runtime::cache {
namespace {

constexpr size_t kFileSecretBytes = 32;
constexpr size_t kMinSecretBytes = 16;

std::string Errno(absl::string_view what, const std::string& path) {
  return absl::StrCat(what, " ", path, ": ", std::strerror(errno));
}

std::string Mac(absl::string_view secret, absl::string_view key, absl::string_view value) {
  // OpenSSL 3's EVP_MAC interface (the HMAC_CTX functions are deprecated there).
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  EVP_MAC_CTX* ctx = mac != nullptr ? EVP_MAC_CTX_new(mac) : nullptr;
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0), OSSL_PARAM_construct_end()};
  const unsigned char zero = 0;
  unsigned char out[EVP_MAX_MD_SIZE];
  size_t len = 0;
  const bool ok = ctx != nullptr &&
                  EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), params) == 1 &&
                  EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size()) == 1 &&
                  EVP_MAC_update(ctx, &zero, 1) == 1 &&
                  EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(value.data()), value.size()) == 1 &&
                  EVP_MAC_final(ctx, out, &len, sizeof(out)) == 1;
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  if (!ok || len != kMacBytes) return std::string();  // never verifies (Verify requires kMacBytes)
  return std::string(reinterpret_cast<const char*>(out), len);
}

// mkdir -p with mode 0700 for the directories we create.
void MakeParents(const std::string& file) {
  for (size_t pos = file.find('/', 1); pos != std::string::npos; pos = file.find('/', pos + 1)) {
    ::mkdir(file.substr(0, pos).c_str(), 0700);  // existing directories: EEXIST, ignored
  }
}

absl::StatusOr<std::string> ReadTrusted(const std::string& path, int64_t owner_uid) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const std::string why = Errno("cannot open the cache secret", path);
    return errno == ENOENT ? absl::NotFoundError(why) : absl::PermissionDeniedError(why);
  }
  struct stat st {};
  std::string secret;
  absl::Status status;
  if (::fstat(fd, &st) != 0) {
    status = absl::InternalError(Errno("cannot stat the cache secret", path));
  } else if (!S_ISREG(st.st_mode)) {
    status = absl::PermissionDeniedError(absl::StrCat("the cache secret ", path, " is not a regular file"));
  } else if (static_cast<int64_t>(st.st_uid) != owner_uid) {
    status = absl::PermissionDeniedError(
        absl::StrCat("the cache secret ", path, " is owned by uid ", st.st_uid, ", not by this user"));
  } else if ((st.st_mode & 077) != 0) {
    status = absl::PermissionDeniedError(
        absl::StrCat("the cache secret ", path, " is readable or writable by others (chmod 600 it)"));
  } else if (st.st_size > 4096) {
    status = absl::PermissionDeniedError(absl::StrCat("the cache secret ", path, " is larger than 4 KiB"));
  } else {
    secret.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < secret.size()) {
      const ssize_t n = ::read(fd, secret.data() + got, secret.size() - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    secret.resize(got);
  }
  ::close(fd);
  if (!status.ok()) return status;
  return secret;
}

absl::Status CreateSecretFile(const std::string& path) {
  MakeParents(path);
  unsigned char bytes[kFileSecretBytes];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) return absl::InternalError("no random bytes for the cache secret");
  // Written to a private temporary name, then linked into place: a reader never sees a partial
  // secret, and of two ranks creating it at once, one file wins (link fails with EEXIST).
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return absl::PermissionDeniedError(Errno("cannot create the cache secret", tmp));
  const bool written = ::write(fd, bytes, sizeof(bytes)) == static_cast<ssize_t>(sizeof(bytes)) && ::fsync(fd) == 0;
  ::close(fd);
  const bool linked = written && (::link(tmp.c_str(), path.c_str()) == 0 || errno == EEXIST);
  ::unlink(tmp.c_str());
  if (!linked) return absl::PermissionDeniedError(Errno("cannot write the cache secret", path));
  return absl::OkStatus();
}

}  // namespace

std::string DefaultSecretFile() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && xdg[0] == '/') {
    return absl::StrCat(xdg, "/torch_trn/cache_secret");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') {
    return absl::StrCat(home, "/.config/torch_trn/cache_secret");
  }
  return "";
}

absl::StatusOr<std::string> LoadJobSecret(const std::string& env_secret, const std::string& file, int64_t owner_uid) {
  if (!env_secret.empty()) {
    if (env_secret.size() < kMinSecretBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("NEURON_CACHE_SECRET is shorter than ", kMinSecretBytes, " characters"));
    }
    return env_secret;
  }
  if (file.empty()) return absl::NotFoundError("no NEURON_CACHE_SECRET and no home directory for the secret file");
  absl::StatusOr<std::string> secret = ReadTrusted(file, owner_uid);
  if (absl::IsNotFound(secret.status())) {
    absl::Status created = CreateSecretFile(file);
    if (!created.ok()) return created;
    secret = ReadTrusted(file, owner_uid);
  }
  if (secret.ok() && secret->size() < kMinSecretBytes) {
    return absl::PermissionDeniedError(absl::StrCat("the cache secret ", file, " holds fewer than ",
                                                    kMinSecretBytes, " bytes"));
  }
  return secret;
}

std::string Sign(absl::string_view secret, absl::string_view key, absl::string_view value) {
  return absl::StrCat(Mac(secret, key, value), value);
}

absl::StatusOr<std::string> Verify(absl::string_view secret, absl::string_view key, absl::string_view signed_value) {
  if (signed_value.size() < kMacBytes) {
    return absl::PermissionDeniedError(absl::StrCat(key, " carries no authenticator"));
  }
  const absl::string_view value = signed_value.substr(kMacBytes);
  const std::string want = Mac(secret, key, value);
  if (want.size() != kMacBytes || CRYPTO_memcmp(want.data(), signed_value.data(), kMacBytes) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat(key, " is not signed with this job's secret (forged, corrupted, or another job's)"));
  }
  return std::string(value);
}

}  // namespace trn::runtime::cache
