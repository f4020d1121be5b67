// UnitRing: a first-in first-out queue on one growable circular array, for the executor's queue
// of units and its finished units. A std::deque of 272-byte units holds one unit per 512-byte
// node, so every push and every pop was a malloc or a free, on alternating threads (perf, the
// tiny add of bench/record_overhead.py). Here a slot is allocated once and reused: a push
// move-assigns into a free slot, a pop moves the element out and leaves a default one behind.
//
// Thread-safety: none; the executor guards each ring with its mutex.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace trn::runtime {

template <typename T>
class UnitRing {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  T& front() { return slots_[head_]; }
  const T& front() const { return slots_[head_]; }
  T& operator[](size_t i) { return slots_[Slot(i)]; }
  const T& operator[](size_t i) const { return slots_[Slot(i)]; }

  void push_back(T value) {
    if (size_ == slots_.size()) Grow();
    slots_[Slot(size_)] = std::move(value);
    ++size_;
  }
  // The first element, moved out; its slot keeps a default element (nothing of the old one).
  T pop_front() {
    T value = std::move(slots_[head_]);
    slots_[head_] = T();
    head_ = (head_ + 1) & (slots_.size() - 1);
    --size_;
    return value;
  }
  // Destroys every element (in queue order); the slots stay allocated.
  void clear() {
    while (!empty()) pop_front();
    head_ = 0;
  }
  // Replaces element `index` by `values`, in order (rare: the executor's segment planning).
  void Replace(size_t index, std::vector<T> values) {
    std::vector<T> order;
    order.reserve(size_ - 1 + values.size());
    for (size_t i = 0; i < size_; ++i) {
      if (i == index) {
        for (T& v : values) order.push_back(std::move(v));
      } else {
        order.push_back(std::move((*this)[i]));
      }
    }
    Rebuild(std::move(order));
  }
  void swap(UnitRing& other) noexcept {
    slots_.swap(other.slots_);
    std::swap(head_, other.head_);
    std::swap(size_, other.size_);
  }

 private:
  size_t Slot(size_t i) const { return (head_ + i) & (slots_.size() - 1); }
  void Grow() {
    std::vector<T> order;
    order.reserve(size_);
    for (size_t i = 0; i < size_; ++i) order.push_back(std::move((*this)[i]));
    Rebuild(std::move(order));
  }
  // The elements of `order`, in a new array of a power-of-two size with room for one more.
  void Rebuild(std::vector<T> order) {
    size_t capacity = slots_.empty() ? 16 : slots_.size();
    while (capacity < order.size() + 1) capacity *= 2;
    std::vector<T> slots(capacity);
    for (size_t i = 0; i < order.size(); ++i) slots[i] = std::move(order[i]);
    slots_ = std::move(slots);
    head_ = 0;
    size_ = order.size();
  }

  std::vector<T> slots_;  // size 0 or a power of two
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace trn::runtime
