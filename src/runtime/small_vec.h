// A vector of at most N elements kept inline, spilling to the heap beyond: the runtime's shapes,
// strides and access boxes (rank <= 8) without a malloc per launch.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

namespace pypto {

template <class T, size_t N>
class SmallVec {
 public:
  SmallVec() = default;
  SmallVec(std::initializer_list<T> v) { assign(v.begin(), v.end()); }
  SmallVec(size_t n, const T& x) { resize(n, x); }
  SmallVec(const std::vector<T>& v) { assign(v.begin(), v.end()); }  // NOLINT: as the vector it replaces
  SmallVec(const SmallVec& o) { assign(o.begin(), o.end()); }
  SmallVec(SmallVec&& o) noexcept { *this = std::move(o); }
  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVec& operator=(SmallVec&& o) noexcept {
    if (this == &o) return *this;
    if (o.heap_) {
      heap_ = std::move(o.heap_);
      cap_ = o.cap_;
    } else {
      heap_.reset();
      cap_ = N;
      std::copy(o.inline_, o.inline_ + o.size_, inline_);
    }
    size_ = o.size_;
    o.size_ = 0;
    o.cap_ = N;
    return *this;
  }
  SmallVec& operator=(const std::vector<T>& v) {
    assign(v.begin(), v.end());
    return *this;
  }
  SmallVec& operator=(std::initializer_list<T> v) {
    assign(v.begin(), v.end());
    return *this;
  }
  operator std::vector<T>() const { return std::vector<T>(begin(), end()); }  // NOLINT: cold paths

  template <class It>
  void assign(It first, It last) {
    size_ = 0;
    reserve(static_cast<size_t>(std::distance(first, last)));
    for (; first != last; ++first) data()[size_++] = *first;
  }
  void reserve(size_t n) {
    if (n <= cap_) return;
    std::unique_ptr<T[]> bigger(new T[n]);
    std::copy(data(), data() + size_, bigger.get());
    heap_ = std::move(bigger);
    cap_ = n;
  }
  void resize(size_t n, const T& x = T()) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data()[i] = x;
    size_ = n;
  }
  void push_back(const T& x) {
    if (size_ == cap_) reserve(cap_ * 2);
    data()[size_++] = x;
  }
  T& emplace_back(const T& x) {
    push_back(x);
    return back();
  }
  void clear() { size_ = 0; }

  T* data() { return heap_ ? heap_.get() : inline_; }
  const T* data() const { return heap_ ? heap_.get() : inline_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

  friend bool operator==(const SmallVec& a, const SmallVec& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const SmallVec& a, const SmallVec& b) { return !(a == b); }

 private:
  T inline_[N] = {};
  std::unique_ptr<T[]> heap_;
  size_t size_ = 0;
  size_t cap_ = N;
};

/// A shape, strides or an access box: rank <= 8 (PYPTO_MAX_RANK) stays inline.
using DimVec = SmallVec<int64_t, 8>;

}  // namespace pypto
