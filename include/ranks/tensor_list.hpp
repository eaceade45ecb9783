#pragma once
// The tensors of one op request. Most ops carry one tensor each way, and every op builds, moves
// and frees a request on its hot path: a list of one keeps its tensor inline, so it costs no
// allocation, and an empty list (a barrier's) costs next to nothing to build, move or destroy.
// Longer lists live in a std::vector on the heap. (Not boost::container::small_vector: its moves
// go element by element and add ~180 instructions to every simulated barrier; a std::vector
// member instead of the pointer costs ~100.) A list of one keeps its tensor in a union, so an
// empty list never constructs or destroys one.

#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "ranks/tensor.hpp"

namespace ranks {

class TensorList {
 public:
  TensorList() noexcept {}  // NOLINT: the union member stays unconstructed while empty
  TensorList(std::initializer_list<Tensor> tensors) : TensorList() {
    assign(tensors.begin(), tensors.end());
  }
  template <class It>
  TensorList(It first, It last) : TensorList() {
    assign(first, last);
  }
  TensorList(const TensorList& other) : TensorList() { assign(other.begin(), other.end()); }
  TensorList(TensorList&& other) noexcept
      : many_(std::exchange(other.many_, nullptr)), size_(other.size_) {
    if (size_ == 1) take_one(other);
    other.size_ = 0;
  }
  // Inlined: every op destroys its request's two lists, usually empty or moved from, and g++
  // otherwise calls out of line for those two tests.
  [[gnu::always_inline]] ~TensorList() {
    if (size_ == 1) one_.~Tensor();
    if (many_ != nullptr) delete_many(many_);
  }
  TensorList& operator=(const TensorList& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  TensorList& operator=(TensorList&& other) noexcept {
    if (this == &other) return *this;
    clear();
    if (many_ != nullptr) delete_many(many_);
    many_ = std::exchange(other.many_, nullptr);
    size_ = other.size_;
    if (size_ == 1) take_one(other);
    other.size_ = 0;
    return *this;
  }

  template <class It>
  void assign(It first, It last) {
    // The new contents are built before the old are dropped: the range may be this list's own.
    const auto count = static_cast<size_t>(std::distance(first, last));
    if (count == 1) {
      Tensor only(*first);
      clear();
      new (&one_) Tensor(std::move(only));
    } else if (count > 1) {
      auto many = std::make_unique<std::vector<Tensor>>(first, last);
      clear();
      if (many_ != nullptr) delete_many(many_);
      many_ = many.release();
    } else {
      clear();
    }
    size_ = count;
  }
  void push_back(const Tensor& tensor) {
    if (size_ == 0) {
      new (&one_) Tensor(tensor);  // in place: an op's request copies its tensor this way
      size_ = 1;
    } else {
      push_back(Tensor(tensor));
    }
  }
  void push_back(Tensor&& tensor) {
    if (size_ == 0) {
      new (&one_) Tensor(std::move(tensor));
    } else {
      if (size_ == 1) {
        if (many_ == nullptr) many_ = new std::vector<Tensor>();
        many_->reserve(2);  // may throw; the two moves below then cannot
        many_->push_back(std::move(one_));
        one_.~Tensor();
      }
      many_->push_back(std::move(tensor));
    }
    ++size_;
  }
  void reserve(size_t count) {
    if (count <= 1) return;
    if (many_ == nullptr) many_ = new std::vector<Tensor>();
    many_->reserve(count);
  }
  void clear() {
    if (size_ == 1) one_.~Tensor();
    if (many_ != nullptr) many_->clear();
    size_ = 0;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Tensor* data() { return size_ <= 1 ? &one_ : many_->data(); }
  const Tensor* data() const { return size_ <= 1 ? &one_ : many_->data(); }
  Tensor& operator[](size_t i) { return data()[i]; }
  const Tensor& operator[](size_t i) const { return data()[i]; }
  Tensor& front() { return data()[0]; }
  const Tensor& front() const { return data()[0]; }
  Tensor* begin() { return data(); }
  Tensor* end() { return data() + size_; }
  const Tensor* begin() const { return data(); }
  const Tensor* end() const { return data() + size_; }

 private:
  void take_one(TensorList& other) noexcept {
    new (&one_) Tensor(std::move(other.one_));
    other.one_.~Tensor();
  }

  // The element of a list of one, alive only while size_ == 1: an empty list (a barrier's, a
  // send's outputs) then costs nothing to build, move or destroy.
  union {
    Tensor one_;
  };
  // Every element of a longer list (may be empty); owned. A raw pointer, freed out of line:
  // with a unique_ptr g++ stops inlining the destructor of every op's request.
  [[gnu::noinline]] static void delete_many(std::vector<Tensor>* many) noexcept { delete many; }
  std::vector<Tensor>* many_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ranks
