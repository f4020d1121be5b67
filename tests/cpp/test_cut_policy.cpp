// Content-defined cuts (scheduler/cut_policy.h): group sizes stay within the policy's bounds,
// and an op inserted early in a stream moves only the cuts up to the next anchor op, so the
// groups after it are the same as without the insertion. Fingerprints see op names and tensor
// geometry, never scalar values or storage.
#include <ATen/ATen.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "scheduler/cut_policy.h"

#include <catch2/catch.hpp>

namespace {

using trn::scheduler::CutPolicy;

// The stream positions (exclusive ends) where `policy` cuts a stream of fingerprints.
std::vector<size_t> Cuts(const CutPolicy& policy, const std::vector<uint64_t>& fps) {
  std::vector<size_t> cuts;
  int64_t size = 0;
  for (size_t i = 0; i < fps.size(); ++i) {
    if (policy.Ends(++size, fps[i])) {
      cuts.push_back(i + 1);
      size = 0;
    }
  }
  return cuts;
}

std::vector<uint64_t> RandomFingerprints(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> fps(n);
  for (uint64_t& f : fps) f = rng();
  return fps;
}

}  // namespace

TEST_CASE("cut policy bounds") {
  CutPolicy p = CutPolicy::UpTo(64);
  CHECK(p.min_ops == 32);
  CHECK(p.max_ops == 64);
  CHECK(p.mask == 7);
  CutPolicy one = CutPolicy::UpTo(1);
  CHECK(one.Ends(1, 12345));  // groups of one op: a cut after every op
  CHECK(CutPolicy::UpTo(0).max_ops == 1);
  // An anchor (fingerprint's low bits zero) ends a group from min_ops on, or earlier when the
  // group has used half of its lowering's inputs or writes; a non-anchor only at max_ops.
  CHECK_FALSE(p.Ends(10, 0));
  CHECK(p.Ends(10, 0, /*half_full=*/true));
  CHECK_FALSE(p.Ends(10, 1, /*half_full=*/true));
  CHECK(p.Ends(32, 8));
  CHECK_FALSE(p.Ends(63, 1));
  CHECK(p.Ends(64, 1));
  // A coarser policy's anchors are anchors of a finer one (power-of-two masks).
  CutPolicy fine = CutPolicy::UpTo(256), coarse = CutPolicy::UpTo(4096);
  CHECK((coarse.mask & fine.mask) == fine.mask);

  const std::vector<uint64_t> fps = RandomFingerprints(20000, 1);
  const std::vector<size_t> cuts = Cuts(p, fps);
  size_t prev = 0, total = 0, forced = 0;
  for (size_t c : cuts) {
    const size_t size = c - prev;
    CHECK(size >= 32);
    CHECK(size <= 64);
    forced += size == 64 && (fps[c - 1] & p.mask) != 0;
    total += size;
    prev = c;
  }
  const double mean = static_cast<double>(total) / cuts.size();
  CHECK(mean > 36);  // min 32 + ~8 to the next anchor, less the forced cuts at 64
  CHECK(mean < 44);
  CHECK(forced < cuts.size() / 20);  // (7/8)^32 ≈ 1.4% of the groups reach the cap
}

TEST_CASE("an inserted op moves the cuts only up to the next anchor") {
  const CutPolicy p = CutPolicy::UpTo(64);
  std::vector<double> resync;  // ops after the insertion until the cuts are back in step
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const std::vector<uint64_t> base = RandomFingerprints(5000, 100 + seed);
    for (size_t inserted : {1, 7, 40, 300}) {
      // `inserted` extra ops at position 10 (as AdamW's state creation before its first update)
      std::vector<uint64_t> shifted(base.begin(), base.begin() + 10);
      const std::vector<uint64_t> extra = RandomFingerprints(inserted, 900 + seed);
      shifted.insert(shifted.end(), extra.begin(), extra.end());
      shifted.insert(shifted.end(), base.begin() + 10, base.end());
      std::set<size_t> want;
      for (size_t c : Cuts(p, base)) want.insert(c);
      size_t first_shared = SIZE_MAX;
      INFO("seed " << seed << ", " << inserted << " ops inserted");
      for (size_t c : Cuts(p, shifted)) {
        if (c <= 10 + inserted) continue;
        if (want.count(c - inserted)) {
          first_shared = std::min(first_shared, c - inserted);
        } else {
          CHECK(first_shared == SIZE_MAX);  // once in step, the cuts stay in step
        }
      }
      REQUIRE(first_shared != SIZE_MAX);
      resync.push_back(static_cast<double>(first_shared - 10));
    }
  }
  // A fixed-size cutter would never get back in step (unless `inserted` is a multiple of 64).
  double sum = 0, worst = 0;
  for (double r : resync) {
    sum += r;
    worst = std::max(worst, r);
  }
  CHECK(sum / resync.size() < 3 * 64);
  CHECK(worst < 12 * 64);
}

TEST_CASE("fingerprints see names and geometry, not values or storage") {
  using trn::runtime::OpRecord;
  auto add = c10::Dispatcher::singleton().findSchemaOrThrow("aten::add", "Tensor");
  auto mul = c10::Dispatcher::singleton().findSchemaOrThrow("aten::mul", "Tensor");
  auto rec = [](const c10::OperatorHandle& op, const at::Tensor& a, const at::Tensor& b, double alpha) {
    std::vector<c10::IValue> args = {a, b};
    if (op.schema().arguments().size() == 3) args.emplace_back(c10::Scalar(alpha));
    return OpRecord(op, std::move(args));
  };
  at::Tensor a = at::ones({4, 8}), b = at::zeros({4, 8}), c = at::ones({4, 9});
  const uint64_t fp = trn::scheduler::CutFingerprint(rec(add, a, b, 1.0));
  CHECK(trn::scheduler::CutFingerprint(rec(add, at::ones({4, 8}), at::ones({4, 8}), 0.5)) == fp);
  CHECK(trn::scheduler::CutFingerprint(rec(add, c, c, 1.0)) != fp);
  CHECK(trn::scheduler::CutFingerprint(rec(add, a.to(at::kDouble), b.to(at::kDouble), 1.0)) != fp);
  CHECK(trn::scheduler::CutFingerprint(rec(mul, a, b, 1.0)) != fp);
}
