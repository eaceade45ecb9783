#pragma once
// The tensors of one op request. Most ops carry one tensor each way, and every op builds, moves
// and frees a request on its hot path: a list of one keeps its tensor inline, so it costs no
// allocation, and an empty list (a barrier's) costs next to nothing to build, move or destroy.
// Longer lists live in a std::vector on the heap. (boost::container::small_vector was measured
// first: its moves go element by element and added ~180 instructions to every simulated barrier;
// a std::vector member instead of the pointer cost ~100.)

#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "ranks/tensor.hpp"

namespace ranks {

class TensorList {
 public:
  TensorList() = default;
  TensorList(std::initializer_list<Tensor> tensors) { assign(tensors.begin(), tensors.end()); }
  template <class It>
  TensorList(It first, It last) {
    assign(first, last);
  }
  TensorList(const TensorList& other) { assign(other.begin(), other.end()); }
  TensorList(TensorList&& other) noexcept
      : one_(std::move(other.one_)), many_(std::move(other.many_)), size_(other.size_) {
    other.size_ = 0;
  }
  ~TensorList() = default;
  TensorList& operator=(const TensorList& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  TensorList& operator=(TensorList&& other) noexcept {
    one_ = std::move(other.one_);
    many_ = std::move(other.many_);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }

  template <class It>
  void assign(It first, It last) {
    clear();
    const auto count = static_cast<size_t>(std::distance(first, last));
    if (count == 1) {
      one_ = *first;
    } else if (count > 1) {
      many_ = std::make_unique<std::vector<Tensor>>(first, last);
    }
    size_ = count;
  }
  void push_back(Tensor tensor) {
    if (size_ == 0) {
      one_ = std::move(tensor);
    } else {
      if (size_ == 1) {
        if (!many_) many_ = std::make_unique<std::vector<Tensor>>();
        many_->push_back(std::move(one_));
      }
      many_->push_back(std::move(tensor));
    }
    ++size_;
  }
  void reserve(size_t count) {
    if (count <= 1) return;
    if (!many_) many_ = std::make_unique<std::vector<Tensor>>();
    many_->reserve(count);
  }
  void clear() {
    one_ = Tensor{};
    if (many_) many_->clear();
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
  Tensor one_;                                 // the element of a list of one
  std::unique_ptr<std::vector<Tensor>> many_;  // every element of a longer list (may be empty)
  size_t size_ = 0;
};

}  // namespace ranks
