#pragma once
// A FIFO over one power-of-two ring that doubles when full: the scheduler's ready queue. It
// takes every rank once per collective and its scheduler looks a few places down it on every
// switch; std::deque does both through a map of blocks (an index costs a division, a push a
// block check), which costs 5 % of the instructions of an all_reduce at 16,384 ranks.

#include <cstddef>
#include <memory>
#include <utility>

namespace ranks::sim::detail {

template <class T>
class RingQueue {
 public:
  bool empty() const noexcept { return head_ == tail_; }
  size_t size() const noexcept { return tail_ - head_; }

  // i-th from the front; i < size().
  T& operator[](size_t i) noexcept { return slots_[(head_ + i) & mask_]; }
  const T& operator[](size_t i) const noexcept { return slots_[(head_ + i) & mask_]; }
  T& front() noexcept { return (*this)[0]; }

  void push_back(const T& value) {
    if (size() == capacity_) grow();
    slots_[tail_++ & mask_] = value;
  }
  void pop_front() noexcept { ++head_; }

 private:
  void grow() {
    const size_t capacity = capacity_ == 0 ? 64 : capacity_ * 2;
    auto slots = std::make_unique_for_overwrite<T[]>(capacity);
    const size_t count = size();
    for (size_t i = 0; i < count; ++i) slots[i] = (*this)[i];
    slots_ = std::move(slots);
    capacity_ = capacity;
    mask_ = capacity - 1;
    head_ = 0;
    tail_ = count;
  }

  std::unique_ptr<T[]> slots_;
  size_t capacity_ = 0;
  size_t mask_ = 0;
  // Positions that only grow (wrapping is masked off when indexing): size() is tail_ - head_.
  size_t head_ = 0;
  size_t tail_ = 0;
};

// A seeded interleaving: any queued entry may go next. Swapping the choice to the front keeps this
// O(1) and the sequence a pure function of the seed (both schedulers pick with it).
template <class T, class Rng>
void bring_seeded_pick_to_front(RingQueue<T>& queue, Rng& rng) {
  if (queue.size() > 1) std::swap(queue[0], queue[static_cast<size_t>(rng.next() % queue.size())]);
}

}  // namespace ranks::sim::detail
