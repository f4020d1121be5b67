// Poisoned storages (runtime/poison.h): a mark keeps its failure (class and message), lasts as
// long as its storage, and is gone once the storage is freed or rewritten.
#include <ATen/ATen.h>

#include "base/op_error.h"
#include "runtime/poison.h"

#include <catch2/catch.hpp>

using trn::runtime::CheckReadable;
using trn::base::ErrorKind;

namespace {
c10::StorageImpl* StorageOf(const at::Tensor& t) { return t.storage().unsafeGetStorageImpl(); }
}  // namespace

TEST_CASE("a poisoned storage reports its failure with the failure's class", "[poison]") {
  at::Tensor a = at::zeros({4});
  at::Tensor b = at::zeros({4});
  at::Tensor view = a.narrow(0, 1, 2);  // same storage
  const absl::Status origin =
      trn::base::MakeOpError(ErrorKind::kIndex, "aten::index_select at model.py:7 (forward): index out of range");
  trn::runtime::Poison(StorageOf(a), origin);
  CHECK(trn::runtime::AnyPoisoned());
  const absl::Status read = CheckReadable(StorageOf(view));
  REQUIRE_FALSE(read.ok());
  CHECK(trn::base::KindOf(read) == ErrorKind::kIndex);
  const std::string msg(read.message());
  CHECK(msg.find("has no valid value") != std::string::npos);
  CHECK(msg.find("aten::index_select at model.py:7 (forward): index out of range") != std::string::npos);
  CHECK(CheckReadable(StorageOf(b)).ok());
  // A second failure does not replace the first one's mark.
  trn::runtime::Poison(StorageOf(a), trn::base::MakeOpError(ErrorKind::kValue, "later"));
  CHECK(trn::base::KindOf(CheckReadable(StorageOf(a))) == ErrorKind::kIndex);
  trn::runtime::ClearPoison(StorageOf(a));
  CHECK(CheckReadable(StorageOf(view)).ok());
  CHECK(trn::runtime::PrunePoison() == 0);
}

TEST_CASE("a freed storage's mark is pruned and never matches a new storage", "[poison]") {
  const absl::Status origin = trn::base::MakeOpError(ErrorKind::kRuntime, "boom");
  const c10::StorageImpl* dead = nullptr;
  {
    at::Tensor a = at::zeros({8});
    dead = StorageOf(a);
    trn::runtime::Poison(StorageOf(a), origin);
    CHECK(trn::runtime::PrunePoison() == 1);
  }
  // The mark's weak reference keeps the freed StorageImpl's address from being reused.
  for (int i = 0; i < 100; ++i) {
    at::Tensor fresh = at::zeros({8});
    CHECK(StorageOf(fresh) != dead);
    CHECK(CheckReadable(StorageOf(fresh)).ok());
  }
  CHECK(trn::runtime::PrunePoison() == 0);
  CHECK_FALSE(trn::runtime::AnyPoisoned());
}
