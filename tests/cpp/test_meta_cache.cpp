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
  CHECK(base != KeyOf(at::ones({4, 3}).narrow(0, 1, 2), at::ones({2, 3}), 1.0));  // offset + extent
}

TEST_CASE("pointwise ops are keyed on a float scalar's kind, not its value", "[meta_cache]") {
  // add is pointwise: its alpha's value cannot change the Meta outcome (AdamW passes a new
  // lr / bias_correction every step); an integer alpha is another kind (and keyed by value).
  CHECK(KeyOf(at::ones({2, 3}), at::ones({2, 3}), 1.0) == KeyOf(at::ones({2, 3}), at::ones({2, 3}), 2.5));
  auto int_alpha = [](int64_t alpha) {
    return *MetaCache::Key(Add(), {at::ones({2}), at::ones({2}), c10::IValue(at::Scalar(alpha))});
  };
  CHECK(int_alpha(1) != KeyOf(at::ones({2}), at::ones({2}), 1.0));
  CHECK(int_alpha(1) != int_alpha(2));
  // Host scalars: floating ones by kind and dtype only, integer ones by value.
  CHECK(KeyOf(at::ones({2}), at::scalar_tensor(2.0), 1.0) == KeyOf(at::ones({2}), at::scalar_tensor(3.0), 1.0));
  CHECK(KeyOf(at::ones({2}), at::scalar_tensor(2.0), 1.0) !=
        KeyOf(at::ones({2}), at::scalar_tensor(2.0, at::kDouble), 1.0));
  CHECK(KeyOf(at::ones({2}), at::scalar_tensor(2, at::kLong), 1.0) !=
        KeyOf(at::ones({2}), at::scalar_tensor(3, at::kLong), 1.0));
}

TEST_CASE("_foreach_ ScalarLists are keyed by length; other ops' floats by value", "[meta_cache]") {
  const c10::OperatorHandle foreach_add =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::_foreach_add_", "ScalarList");
  auto foreach_key = [&](std::vector<double> scalars) {
    std::vector<at::Tensor> tensors(scalars.size(), at::ones({3}));
    c10::impl::GenericList list(c10::NumberType::get());  // a Scalar[] arrives as a list of numbers
    for (double d : scalars) list.push_back(c10::IValue(d));
    auto key = MetaCache::Key(foreach_add, {c10::IValue(tensors), c10::IValue(list)});
    REQUIRE(key.has_value());
    return *key;
  };
  CHECK(foreach_key({0.1, 0.2}) == foreach_key({0.3, 0.4}));
  CHECK(foreach_key({0.1, 0.2}) != foreach_key({0.1, 0.2, 0.3}));
  // upsample's scale factors decide the output's size: keyed by value.
  const c10::OperatorHandle upsample =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::upsample_nearest2d", "vec");
  auto upsample_key = [&](double scale) {
    auto key = MetaCache::Key(upsample, {at::ones({1, 1, 4, 4}), c10::IValue(), c10::IValue(std::vector<double>{scale, scale})});
    REQUIRE(key.has_value());
    return *key;
  };
  CHECK(upsample_key(2.0) != upsample_key(3.0));
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
