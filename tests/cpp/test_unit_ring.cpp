// UnitRing (runtime/unit_ring.h): first in, first out across wrap-around and growth; Replace
// keeps the order; a popped slot keeps nothing of its element; swap exchanges contents.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "runtime/unit_ring.h"

using trn::runtime::UnitRing;

namespace {
std::vector<int> Contents(const UnitRing<int>& ring) {
  std::vector<int> out;
  for (size_t i = 0; i < ring.size(); ++i) out.push_back(ring[i]);
  return out;
}
}  // namespace

TEST_CASE("UnitRing is first in, first out across wrap-around and growth") {
  UnitRing<int> ring;
  int next_in = 0, next_out = 0;
  // Interleave pushes and pops so the head moves around the array, and grow past 16 and 32.
  for (int round = 0; round < 50; ++round) {
    for (int k = 0; k < 3; ++k) ring.push_back(next_in++);
    REQUIRE(ring.front() == next_out);
    REQUIRE(ring.pop_front() == next_out++);
  }
  REQUIRE(ring.size() == 100);
  for (size_t i = 0; i < ring.size(); ++i) REQUIRE(ring[i] == next_out + static_cast<int>(i));
  while (!ring.empty()) REQUIRE(ring.pop_front() == next_out++);
  REQUIRE(next_out == next_in);
}

TEST_CASE("UnitRing::Replace puts the values in the element's place, in order") {
  UnitRing<int> ring;
  for (int i = 0; i < 20; ++i) ring.push_back(i);
  for (int i = 0; i < 10; ++i) ring.pop_front();  // head in the middle of the array
  for (int i = 20; i < 30; ++i) ring.push_back(i);  // wraps
  ring.Replace(3, {100, 101, 102});
  std::vector<int> expected = {10, 11, 12, 100, 101, 102};
  for (int i = 14; i < 30; ++i) expected.push_back(i);
  REQUIRE(Contents(ring) == expected);
  ring.Replace(0, {});  // an element replaced by nothing is removed
  expected.erase(expected.begin());
  REQUIRE(Contents(ring) == expected);
}

TEST_CASE("UnitRing releases what it pops and clears, and swaps contents") {
  auto tracked = std::make_shared<std::string>("unit");
  std::weak_ptr<std::string> alive = tracked;
  UnitRing<std::shared_ptr<std::string>> ring;
  ring.push_back(std::move(tracked));
  ring.push_back(std::make_shared<std::string>("other"));
  std::shared_ptr<std::string> popped = ring.pop_front();
  popped.reset();
  REQUIRE(alive.expired());  // the slot kept no copy

  UnitRing<std::shared_ptr<std::string>> other;
  ring.swap(other);
  REQUIRE(ring.empty());
  REQUIRE(other.size() == 1);
  std::weak_ptr<std::string> second = other.front();
  other.clear();
  REQUIRE(other.empty());
  REQUIRE(second.expired());
  other.push_back(std::make_shared<std::string>("again"));  // usable after clear
  REQUIRE(*other.front() == "again");
}
