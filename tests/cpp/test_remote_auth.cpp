// The distributed tier's authentication (runtime/cache/remote_auth.h): a store client without the
// job's secret can neither make a rank link its bytes nor fail or redirect a build.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "fake_store.h"
#include "runtime/cache/remote_auth.h"
#include "runtime/cache/remote_tier.h"
#include <catch2/catch.hpp>

namespace cache = trn::runtime::cache;
using trn::testing::FakeStore;
using trn::testing::kTestSecret;

namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/trn_auth_XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  return tmpl;
}

struct Job {
  std::shared_ptr<std::map<std::string, std::string>> kv = std::make_shared<std::map<std::string, std::string>>();
  std::shared_ptr<absl::Mutex> mu = std::make_shared<absl::Mutex>();
  cache::CacheStats stats;
  std::unique_ptr<cache::RemoteTier> Rank(int rank, const std::string& secret) {
    auto store = std::make_shared<FakeStore>(rank, kv, mu);
    return std::make_unique<cache::RemoteTier>(cache::RemoteOptions{5, 10, "", secret}, [store] { return store; },
                                               &stats);
  }
};

}  // namespace

TEST_CASE("a signed value verifies only under its secret and its key", "[cache][auth]") {
  const std::string s = cache::Sign(kTestSecret, "k/bytes", "payload");
  CHECK(s.size() == cache::kMacBytes + 7);
  CHECK(*cache::Verify(kTestSecret, "k/bytes", s) == "payload");
  CHECK(absl::IsPermissionDenied(cache::Verify("another secret of 32 characters", "k/bytes", s).status()));
  CHECK(absl::IsPermissionDenied(cache::Verify(kTestSecret, "other/bytes", s).status()));
  std::string flipped = s;
  flipped.back() ^= 1;
  CHECK(absl::IsPermissionDenied(cache::Verify(kTestSecret, "k/bytes", flipped).status()));
  CHECK(absl::IsPermissionDenied(cache::Verify(kTestSecret, "k/bytes", "short").status()));
}

TEST_CASE("forged bytes and done values from a store client are refused", "[cache][auth]") {
  Job job;
  auto r0 = job.Rank(0, kTestSecret);
  auto r1 = job.Rank(1, kTestSecret);
  using State = cache::RemoteTier::State;
  REQUIRE(r0->FetchOrClaim("g").state == State::kClaimed);
  r0->Publish("g", "genuine object code", "");
  REQUIRE(r1->FetchOrClaim("g").state == State::kPublished);
  CHECK(*r1->FetchBytes("g") == "genuine object code");

  // A client that knows the protocol but not the secret rewrites the build, unsigned or re-signed
  // under a secret of its own: the rank gets an error, never the bytes.
  (*job.kv)["g/bytes"] = "evil object code";
  CHECK(absl::IsPermissionDenied(r1->FetchBytes("g").status()));
  (*job.kv)["g/bytes"] = cache::Sign("the attacker's own secret, 32 ch", "g/bytes", "evil object code");
  CHECK(absl::IsPermissionDenied(r1->FetchBytes("g").status()));

  // A forged "failed" (or "ok") done makes the probe an error (the rank compiles it itself).
  (*job.kv)["h/done"] = "failed:forged";
  CHECK(r1->FetchOrClaim("h").state == State::kError);
  CHECK(absl::IsPermissionDenied(r1->Done("h").status()));

  // A rank of another job (another secret) cannot read this job's builds either.
  Job other;
  other.kv = job.kv;
  other.mu = job.mu;
  auto stranger = other.Rank(2, "a different job secret, 32 chars");
  CHECK(absl::IsPermissionDenied(stranger->FetchBytes("g").status()));
}

TEST_CASE("without a secret nothing is shared", "[cache][auth]") {
  Job job;
  cache::CacheStats stats;
  auto store = std::make_shared<FakeStore>(0, job.kv, job.mu);
  cache::RemoteTier tier(cache::RemoteOptions{5, 10, "", "", "", static_cast<int64_t>(::geteuid())},
                         [store] { return store; }, &stats);
  CHECK(tier.store() == nullptr);
  CHECK(tier.FetchOrClaim("g").state == cache::RemoteTier::State::kError);
}

TEST_CASE("the secret file: created private, refused when others can read it or it is a link", "[cache][auth]") {
  const std::string dir = TempDir();
  const std::string file = dir + "/sub/cache_secret";
  const int64_t uid = ::geteuid();
  absl::StatusOr<std::string> created = cache::LoadJobSecret("", file, uid);
  REQUIRE(created.ok());
  CHECK(created->size() == 32);
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(*cache::LoadJobSecret("", file, uid) == *created);  // a second rank reads the same one

  ::chmod(file.c_str(), 0644);
  CHECK(absl::IsPermissionDenied(cache::LoadJobSecret("", file, uid).status()));
  ::chmod(file.c_str(), 0600);
  CHECK(absl::IsPermissionDenied(cache::LoadJobSecret("", file, uid + 1).status()));  // another owner

  const std::string link = dir + "/link";
  REQUIRE(::symlink(file.c_str(), link.c_str()) == 0);
  CHECK(!cache::LoadJobSecret("", link, uid).ok());

  const std::string fifo = dir + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(absl::IsPermissionDenied(cache::LoadJobSecret("", fifo, uid).status()));  // no hang either

  CHECK(*cache::LoadJobSecret("from the environment, long enough", file, uid) == "from the environment, long enough");
  CHECK(absl::IsInvalidArgument(cache::LoadJobSecret("short", file, uid).status()));
  std::remove(link.c_str());
  std::remove(fifo.c_str());
  std::remove(file.c_str());
}
