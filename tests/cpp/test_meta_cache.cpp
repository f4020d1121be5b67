// Meta-inference cache keys: equal for calls the Meta kernel cannot tell apart, different when
// geometry, dtype or a non-tensor argument differs.
#include <ATen/ATen.h>

#include "trace/meta_cache.h"

#include <catch2/catch.hpp>

using trn::trace::MetaCache;

namespace {
c10::OperatorHandle Add() { return c10::Dispatcher::singleton().findSchemaOrThrow("aten::add", "Tensor"); }

std::string KeyOf(const at::Tensor& a, const at::Tensor& b, double alpha) {
  auto key = MetaCache::Key(Add(), {a, b, c10::IValue(at::Scalar(alpha))});
  REQUIRE(key.has_value());
  return *key;
}
}  // namespace

TEST_CASE("same geometry and scalars give the same key, whatever the data", "[meta_cache]") {
  CHECK(KeyOf(at::ones({2, 3}), at::ones({2, 3}), 1.0) == KeyOf(at::rand({2, 3}), at::zeros({2, 3}), 1.0));
}

TEST_CASE("geometry, dtype and scalar arguments change the key", "[meta_cache]") {
  const std::string base = KeyOf(at::ones({2, 3}), at::ones({2, 3}), 1.0);
  CHECK(base != KeyOf(at::ones({3, 2}), at::ones({2, 3}), 1.0));             // sizes
  CHECK(base != KeyOf(at::ones({3, 2}).t(), at::ones({2, 3}), 1.0));         // strides
  CHECK(base != KeyOf(at::ones({2, 3}, at::kDouble), at::ones({2, 3}), 1.0));  // dtype
  CHECK(base != KeyOf(at::ones({2, 3}), at::ones({2, 3}), 2.0));             // alpha
  CHECK(base != KeyOf(at::ones({4, 3}).narrow(0, 1, 2), at::ones({2, 3}), 1.0));  // offset + extent
}

TEST_CASE("host scalars are keyed by value", "[meta_cache]") {
  at::Tensor two = at::scalar_tensor(2.0);
  at::Tensor three = at::scalar_tensor(3.0);
  CHECK(KeyOf(at::ones({2}), two, 1.0) != KeyOf(at::ones({2}), three, 1.0));
}

TEST_CASE("outcomes are found after insertion", "[meta_cache]") {
  MetaCache cache(/*capacity=*/2);
  auto outcome = std::make_shared<const trn::trace::MetaOutcome>();
  cache.Insert("a", outcome);
  CHECK(cache.Find("a") == outcome);
  CHECK(cache.Find("b") == nullptr);
  cache.Insert("b", outcome);
  cache.Insert("c", outcome);  // over capacity: the cache starts over rather than growing
  CHECK(cache.Find("c") == outcome);
  CHECK(cache.hits() == 2);
  CHECK(cache.misses() == 1);
}
